#!/usr/bin/env python3
"""test_stalls.py SRCROOT - ci/gpu/stalls.py reads an Nsight Compute raw page
right: a CSV of this test's own, laid out as `ncu --import R --page raw --csv`
prints it (names, units, a row a launch; numbers with thousands separators),
whose stall metrics come out largest first with their shares, launch by
launch; and a page with no stall metric exits 1. No GPU, no ncu.
"""
import subprocess
import sys

STALLS = sys.argv[1] + "/ci/gpu/stalls.py"
problems = []  # what failed, printed at the end


def check(cond, what):
    if not cond:
        problems.append(what)


def run(text):
    p = subprocess.run([sys.executable, STALLS], input=text, capture_output=True, text=True)
    return p.returncode, p.stdout


raw = "\n".join([
    '"ID","Kernel Name","Grid Size","Block Size",'
    '"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",'
    '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",'
    '"smsp__pcsamp_warps_issue_stalled_wait","smsp__pcsamp_warps_issue_stalled_selected",'
    '"dram__throughput.avg.pct_of_peak_sustained_elapsed"',
    '"","","","","inst","inst","warp","warp","%"',
    '"0","qmatmul_q8x_mm","(4, 64, 1)","(256, 1, 1)","0.25","0.75","1,000","3,000","2.4"',
    '"1","flash_attention","(9, 32, 1)","(128, 1, 1)","2.0","0","10","0","37"',
]) + "\n"
rc, text = run(raw)
check(rc == 0, "exit %d" % rc)
lines = text.splitlines()
check(lines and lines[0].startswith("== qmatmul_q8x_mm (4, 64, 1) (256, 1, 1)"),
      "the first launch's title:\n" + text)
names = [l.split()[0] for l in lines if l.startswith("  ")]
check(names[:4] == ["smsp__pcsamp_warps_issue_stalled_selected",
                    "smsp__pcsamp_warps_issue_stalled_wait",
                    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
                    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"],
      "the first launch's order (largest first, samples then averages):\n" + text)
check(any("3000.000" in l and "75.0%" in l for l in lines),
      "the thousands separator or the share (3,000 of 4,000 samples):\n" + text)
check(not any("dram__" in l for l in lines), "a metric that is no stall:\n" + text)
second = text.split("== flash_attention")[-1] if "== flash_attention" in text else ""
check("stalled_barrier" in second and "long_scoreboard" not in second,
      "the second launch (its zeros left out):\n" + text)
rc, text = run('"Kernel Name","dram__bytes"\n"","byte"\n"k","1"\n')
check(rc == 1 and "no issue_stalled metric" in text, "no stall metric: exit %d\n%s" % (rc, text))
rc, text = run("")
check(rc == 1, "an empty page: exit %d" % rc)

for what in problems:
    print("FAIL: " + what)
print("%d failure(s)" % len(problems) if problems else
      "ok: stalls.py orders two launches' stall reasons (samples, then averages) and refuses a "
      "page without them")
sys.exit(1 if problems else 0)
