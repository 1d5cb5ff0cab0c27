#!/usr/bin/env python3
"""test_experiments.py SRCROOT - ci/gpu/experiments.py compares the
experiments right.

No GPU is needed: OUT is this test's own, laid out as ci/gpu/run.sh leaves it
(bench/gpu.json, NAME-bench.json, summary.txt), with numbers chosen so that
each experiment's fate is known: one timed (slower at the prefill, faster at the
decode), one failed, one never run, then failed, then timed. What is checked is the comparison, not any
kernel.
"""
import json
import os
import subprocess
import sys
import tempfile

root = sys.argv[1]
script = os.path.join(root, "ci", "gpu", "experiments.py")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        print("FAIL: " + what)
        failures += 1


def fa(d, causal, tflops, kind="prefill"):
    return dict(kind=kind, dtype="f16", head_dim=d, sq=4096, skv=4096, causal=causal,
                target="sm_90a", us=100.0, tflops=tflops)


def qm(m, tflops, entry="qmatmul_q8x_x+mm"):
    return dict(kernel="qmatmul", bits=4, m=m, n=8192, k=8192, entry=entry, target="sm_90a",
                us=100.0, tflops=tflops)


def run(out):
    p = subprocess.run([sys.executable, script, out], capture_output=True, text=True)
    return p.returncode, p.stdout


def step(out, name, verdict, data, report=None):
    """As run.sh leaves an experiment's step NAME (its JSON and its line of
    summary.txt; bench's gpu.json anew where REPORT is given), then run."""
    if report is not None:
        with open(os.path.join(out, "bench", "gpu.json"), "w") as f:
            json.dump(report, f)
    with open(os.path.join(out, name + "-bench.json"), "w") as f:
        json.dump(data, f)
    with open(os.path.join(out, "summary.txt"), "a") as f:
        f.write("%s: %s\n" % (name, verdict))
    return run(out)


def reverdict(out, line, new):
    """summary.txt's LINE replaced by NEW, as a later run.sh would leave it."""
    path = os.path.join(out, "summary.txt")
    with open(path) as f:
        text = f.read().replace(line, new)
    with open(path, "w") as f:
        f.write(text)


with tempfile.TemporaryDirectory() as out:
    # Nothing under OUT: says so, exit 0, still writes experiments.md.
    rc, text = run(out)
    check(rc == 0, "exit %d with an empty OUT" % rc)
    check("nothing to compare" in text, "empty OUT: no 'nothing to compare':\n" + text)

    os.mkdir(os.path.join(out, "bench"))
    report = dict(
        flash_attention=[fa(128, 1, 250.0), fa(128, 0, 300.0),
                         dict(fa(128, 0, 7.0, kind="decode"), sq=1, skv=8192)],
        qmatmul=[qm(512, 300.0), qm(4096, 350.0), qm(4096, 9.0, entry="qmatmul")],
        torch=dict(sdpa=[dict(name="prefill d128 sq4096 skv4096 c1", us=271.0, tflops=500.0),
                         dict(name="prefill d128 sq4096 skv4096 c0", us=426.0, tflops=600.0),
                         dict(name="decode d128 sq1 skv8192 c0", us=16.0, tflops=8.0)],
                   gemm=[dict(m=512, n=8192, k=8192, us=94.0, tflops=732.0),
                         dict(m=4096, n=8192, k=8192, us=704.0, tflops=781.0)]))
    with open(os.path.join(out, "bench", "gpu.json"), "w") as f:
        json.dump(report, f)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("smi: ok, 1 s\nbench: ok, 120 s\nwgmma5: ok, 20 s\nk32: FAILED (exit 1), 9 s\n")
    # wgmma5: slower at the prefill, faster at the decode; k32 failed: its numbers ignored
    exps = {"wgmma5": (200.0, 240.0, 7.5), "k32": (999.0, 999.0, 999.0)}
    for name, (causal1, causal0, dec) in exps.items():
        with open(os.path.join(out, name + "-bench.json"), "w") as f:
            json.dump(dict(flash_attention=[fa(128, 1, causal1), fa(128, 0, causal0),
                                            dict(fa(128, 0, dec, kind="decode"), sq=1,
                                                 skv=8192)]), f)
    rc, text = run(out)
    check(rc == 0, "exit %d" % rc)
    md = open(os.path.join(out, "experiments.md")).read() if os.path.exists(
        os.path.join(out, "experiments.md")) else ""
    check(md == text, "experiments.md differs from what was printed")
    check("`k32`: FAILED (exit 1); not compared." in text, "k32's failure not reported")
    check("999.0" not in text, "a failed experiment's numbers were compared")
    check("| default | wgmma5 |" in text, "the columns:\n" + text)
    check("| prefill | 128 | 1 | f16 | 4096 x 4096 | 500.0 | **250.0 (0.50)** | 200.0 (0.40) |"
          in text, "the causal row:\n" + text)
    check("| decode | 128 | 0 | f16 | 1 x 8192 | 8.0 | 7.0 (0.88) | **7.5 (0.94)** |" in text,
          "the decode row:\n" + text)
    check("- D = 128, causal 1: fastest `default`, 0.50x SDPA" in text, "the causal verdict")
    check("- D = 128, causal 0: fastest `default`, 0.50x SDPA" in text, "the non-causal verdict")
    check("- `q8mb2`: not run; not compared." in text, "q8mb2 not reported as not run:\n" + text)

    # q8mb2 timed, but failed at first: not compared; then passed: faster at
    # m = 512, slower at 4096; the f32 entry is not its table's.
    with open(os.path.join(out, "summary.txt"), "a") as f:
        f.write("q8mb2: FAILED (exit 1), 5 s\n")
    with open(os.path.join(out, "q8mb2-bench.json"), "w") as f:
        json.dump(dict(qmatmul=[qm(512, 366.0), qm(4096, 312.4), qm(4096, 8.0, entry="qmatmul")]),
                  f)
    rc, text = run(out)
    check("- `q8mb2`: FAILED (exit 1); not compared." in text, "q8mb2's failure:\n" + text)
    check("366.0" not in text, "a failed experiment's numbers were compared")
    reverdict(out, "q8mb2: FAILED (exit 1), 5 s", "q8mb2: ok, 5 s")
    rc, text = run(out)
    check(rc == 0, "exit %d with q8mb2" % rc)
    check("| default (128 x 128, 4 stages) | q8mb2 (2 blocks an SM) |" in text,
          "the columns:\n" + text)
    check("| 4 | 512 x 8192 x 8192 | 732.0 | 300.0 (0.41) | **366.0 (0.50)** |" in text,
          "the m = 512 row:\n" + text)
    check("| 4 | 4096 x 8192 x 8192 | 781.0 | **350.0 (0.45)** | 312.4 (0.40) |" in text,
          "the m = 4096 row:\n" + text)
    rows = [l for l in text.split("qmatmul_q8x_mm's tile")[-1].splitlines()
            if l.startswith("| 4 |")]
    check(len(rows) == 2, "the tile table has %d rows, not 2 (the f32 entry in it?)" % len(rows))
    check("- `base`: not run; not compared." in text, "base not reported as not run:\n" + text)

    # base timed: qmatmul_q8x at m = 1 and 16 faster on the default image, qmatmul
    # the same; a paged decode faster; cases only one side has are left out.
    report["copy"] = dict(gbps=4000.0)
    wb = 168e6
    report["qmatmul"] += [dict(qm(1, 1.0, entry="qmatmul_q8x"), n=32768, us=50.0, weight_bytes=wb),
                          dict(qm(1, 1.0, entry="qmatmul"), n=32768, us=60.0, weight_bytes=wb),
                          dict(qm(16, 1.0, entry="qmatmul_q8x"), n=32768, us=99.0)]
    paged = dict(kernel="paged_attention", page=64, seqs=1, len=8192, head_dim=128, heads=32,
                 kv_heads=8, us=20.0, sdpa_us=16.0, kv_gbps=1600.0)
    report["paged_attention"] = [paged, dict(paged, page=16, us=30.0)]
    report["flash_attention"].append(fa(64, 1, 150.0))
    rc, text = step(out, "base", "ok, 30 s",
                    dict(qmatmul=[dict(qm(1, 1.0, entry="qmatmul_q8x"), n=32768, us=80.0),
                                  dict(qm(1, 1.0, entry="qmatmul"), n=32768, us=60.0),
                                  dict(qm(16, 1.0, entry="qmatmul_q8x"), n=32768, us=150.0),
                                  dict(qm(512, 100.0), us=110.0, weight_bytes=wb),
                                  dict(qm(16, 1.0, entry="qmatmul"), n=32768, us=350.0)],
                         paged_attention=[dict(paged, us=24.0, kv_gbps=1333.3)],
                         flash_attention=[dict(fa(128, 1, 220.0), us=113.6),
                                          dict(fa(64, 1, 166.7), us=90.0)]), report)
    check(rc == 0, "exit %d with base" % rc)
    base = text.split("base commit's kernels")[-1]
    for row, what in (
            ("| qmatmul_q8x | 4 | 1 x 32768 x 8192 | 50.0 (0.84) | 80.0 (0.53) | 1.60 |",
             "the q8x m = 1 row"),
            ("| qmatmul | 4 | 1 x 32768 x 8192 | 60.0 (0.70) | 60.0 (0.70) | 1.00 |",
             "the qmatmul m = 1 row"),
            ("| qmatmul_q8x | 4 | 16 x 32768 x 8192 | 99.0 | 150.0 | 1.52 |", "the q8x m = 16 row"),
            ("| qmatmul_q8x_x+mm | 4 | 512 x 8192 x 8192 | 100.0 | 110.0 | 1.10 |",
             "the prefill pair's row (no share of copy)"),
            ("| 64 | 1 x 8192 | 128 | 16.0 | 20.0 (0.40) 1.25x | 24.0 (0.33) 1.50x | 1.20 |",
             "the paged row"),
            ("| prefill | 128 | 1 | f16 | 4096 x 4096 | 100.0 (250.0) | 113.6 (220.0) | 1.14 |",
             "the causal prefill's row (the one case the base timed)")):
        check(row in base, what + ":\n" + base)
    check("4096 x 8192" not in base, "a case the base lacks in the base table")
    check("| prefill | 64 | 1 | f16 | 4096 x 4096 | 100.0 (150.0) | 90.0 (166.7) | 0.90 |" in base,
          "the D 64 causal prefill's row:\n" + base)
    check("- The default more than 3% slower than `base`: flash_attention prefill D 64 causal 1 "
          "f16 4096 x 4096 (0.90) (what changed since in these kernels lost time there)." in base,
          "the one case slower than the base's:\n" + base)
    check("| 16 | 1 x 8192 |" not in base, "a paged case the base lacks was compared")
    check("| prefill | 128 | 0 |" not in base and "| decode | 128 |" not in base,
          "a flash_attention case the base lacks was compared:\n" + base)
    check("- `qmpf`: not run; not compared." in text, "qmpf not reported as not run:\n" + text)

    # qmpf timed: qmatmul at m = 16 faster with the prefetch; under its own
    # heading, beside (not inside) the base's table.
    report["qmatmul"].append(dict(qm(16, 1.0, entry="qmatmul"), n=32768, us=380.0))
    rc, text = step(out, "qmpf", "ok, 20 s",
                    dict(qmatmul=[dict(qm(16, 1.0, entry="qmatmul"), n=32768, us=304.0)]), report)
    check(rc == 0, "exit %d with qmpf" % rc)
    qmpf = text.split("W's L2 prefetch (qmpf)")[-1]
    check("| entry | bits | m x n x k | default | qmpf | qmpf / default |" in qmpf,
          "qmpf's columns:\n" + qmpf)
    check("| qmatmul | 4 | 16 x 32768 x 8192 | 380.0 | 304.0 | 0.80 |" in qmpf,
          "qmpf's m = 16 row:\n" + qmpf)
    check("| qmatmul_q8x |" not in qmpf.split("(qmxs)")[0], "a case qmpf lacks in its table:\n" + qmpf)
    check("- `qmpf` more than 3% faster than the default: qmatmul BITS 4 m = 16 (0.80)." in qmpf,
          "qmpf's verdict:\n" + qmpf)
    # The base's f32 m = 16 case, now that the report has it too: faster
    # than the default's, which the base table's verdict names.
    base = text.split("base commit's kernels")[-1].split("(qmpf)")[0]
    check("| qmatmul | 4 | 16 x 32768 x 8192 | 380.0 | 350.0 | 0.92 |" in base,
          "the base's m = 16 row:\n" + base)
    check("- The default more than 3% slower than `base`: qmatmul BITS 4 m = 16 (0.92); "
          "flash_attention prefill D 64 causal 1 f16 4096 x 4096 (0.90) (what changed since in "
          "these kernels lost time there)." in base,
          "the base's verdict:\n" + base)
    check("- `qmxs`: not run; not compared." in text, "qmxs not reported as not run:\n" + text)

    # qmxs failed its test_gpu: not compared, whatever it timed.
    rc, text = step(out, "qmxs", "FAILED (exit 1), 9 s",
                    dict(qmatmul=[dict(qm(16, 1.0, entry="qmatmul"), n=32768, us=111.0)]))
    check("- `qmxs`: FAILED (exit 1); not compared." in text, "qmxs's failure:\n" + text)
    check("111.0" not in text, "a failed experiment's numbers were compared")

    # dec6 timed: its flash_attention decode a column of the attention table,
    # its paged decode (faster) in a table of its own; no qmatmul case.
    rc, text = step(out, "dec6", "ok, 25 s",
                    dict(flash_attention=[dict(fa(128, 0, 8.4, kind="decode"), sq=1, skv=8192)],
                         paged_attention=[dict(paged, us=16.0, kv_gbps=2000.0)]))
    check(rc == 0, "exit %d with dec6" % rc)
    check("| default | wgmma5 | dec6 |" in text, "dec6's column:\n" + text)
    check("| decode | 128 | 0 | f16 | 1 x 8192 | 8.0 | 7.0 (0.88) | 7.5 (0.94) | **8.4 (1.05)** |"
          in text, "the decode row with dec6:\n" + text)
    check("| prefill | 128 | 1 | f16 | 4096 x 4096 | 500.0 | **250.0 (0.50)** | 200.0 (0.40) |  |"
          in text, "dec6 has no prefill (an empty cell):\n" + text)
    dec6 = text.split("ring of 6 tiles (dec6)")[-1]
    check("| 64 | 1 x 8192 | 128 | 16.0 | 20.0 (0.40) 1.25x | 16.0 (0.50) 1.00x | 0.80 |" in dec6,
          "dec6's paged row:\n" + dec6)
    check("| entry |" not in dec6, "a qmatmul table for dec6:\n" + dec6)

    # qmload (a diagnosis, timed without test_gpu): the m = 1 cases with W's
    # loads alone, faster than the kernels; no m = 16 or paged row of its.
    check("- `qmload`: not run; not compared." in text, "qmload not reported as not run:\n" + text)
    rc, text = step(out, "qmload", "ok, 12 s",
                    dict(qmatmul=[dict(qm(1, 1.0, entry="qmatmul_q8x"), n=32768, us=46.2),
                                  dict(qm(1, 1.0, entry="qmatmul"), n=32768, us=42.0)]))
    check(rc == 0, "exit %d with qmload" % rc)
    qmload = text.split("W's loads alone (qmload")[-1]
    check("| qmatmul | 4 | 1 x 32768 x 8192 | 60.0 (0.70) | 42.0 (1.00) | 0.70 |" in qmload,
          "qmload's qmatmul row:\n" + qmload)
    check("| qmatmul_q8x | 4 | 1 x 32768 x 8192 | 50.0 (0.84) | 46.2 (0.91) | 0.92 |" in qmload,
          "qmload's qmatmul_q8x row:\n" + qmload)
    check("16 x 32768" not in qmload and "| 64 |" not in qmload,
          "a case qmload lacks in its table:\n" + qmload)

    # The prefill diagnoses (timed without test_gpu): wsnosoft faster than
    # every image, yet never the fastest; wsbare timed out, then timed; the
    # line a prefill case sets them beside wgmma5's.
    check("What holds wgmma5's prefill" not in text, "a diagnosis line before any ran:\n" + text)
    rc, text = step(out, "wsnosoft", "ok, 8 s",
                    dict(flash_attention=[fa(128, 1, 300.0), fa(128, 0, 480.0)]))
    check(rc == 0, "exit %d with wsnosoft" % rc)
    rc, text = step(out, "wsbare", "TIMED OUT after 30 s, 30 s",
                    dict(flash_attention=[fa(128, 1, 777.0), fa(128, 0, 777.0)]))
    check("- `wsbare`: TIMED OUT after 30 s; not compared." in text, "wsbare's time-out:\n" + text)
    check("777.0" not in text, "a timed-out diagnosis's numbers were compared")
    reverdict(out, "wsbare: TIMED OUT after 30 s, 30 s", "")
    rc, text = step(out, "wsbare", "ok, 8 s",
                    dict(flash_attention=[fa(128, 1, 420.0), fa(128, 0, 500.0)]))
    check(rc == 0, "exit %d with wsbare" % rc)
    check("| default | wgmma5 | dec6 | wsnosoft | wsbare |" in text, "the diagnoses' columns:\n" + text)
    check("| prefill | 128 | 1 | f16 | 4096 x 4096 | 500.0 | **250.0 (0.50)** | 200.0 (0.40) |  | "
          "300.0 (0.60) | 420.0 (0.84) |" in text, "the causal row with the diagnoses:\n" + text)
    check("- D = 128, causal 1: fastest `default`, 0.50x SDPA" in text,
          "a diagnosis taken for the fastest:\n" + text)
    check("- wgmma5's prefill, D = 128, causal 1: 200.0 TFLOP/s; without softmax (`wsnosoft`) "
          "300.0, 1.50x; without softmax and copies (`wsbare`) 420.0, 2.10x." in text,
          "the causal diagnosis line:\n" + text)
    check("- wgmma5's prefill, D = 128, causal 0: 240.0 TFLOP/s; without softmax (`wsnosoft`) "
          "480.0, 2.00x; without softmax and copies (`wsbare`) 500.0, 2.08x." in text,
          "the non-causal diagnosis line:\n" + text)

    # Whether a wgmma image could be sm_90a's: wgmma5 slower at the prefill
    # (not ready); wgmma5t faster (ready, on wgmma5's decodes); then
    # wgmma5's decode slower: wgmma5t no longer ready.
    check("- `wgmma5` / default: prefill 0.80x (geometric mean of 2), slowest 0.80x (prefill D "
          "128 causal 0 f16 4096 x 4096); decodes slowest 1.07x (decode D 128 causal 0 f16 1 x "
          "8192): not ready (a prefill below 0.98x, the prefill's mean below 1.05x)." in text,
          "wgmma5's verdict:\n" + text)
    check("`wgmma5t` / default" not in text, "a verdict for an image not run:\n" + text)
    rc, text = step(out, "wgmma5t", "ok, 12 s",
                    dict(flash_attention=[fa(128, 1, 300.0), fa(128, 0, 330.0)]))
    check(rc == 0, "exit %d with wgmma5t" % rc)
    check("- `wgmma5t` / default: prefill 1.15x (geometric mean of 2), slowest 1.10x (prefill D "
          "128 causal 0 f16 4096 x 4096); decodes (`wgmma5`'s, the same code) slowest 1.07x "
          "(decode D 128 causal 0 f16 1 x 8192): **ready** to be sm_90a's flash_attention" in text,
          "wgmma5t's verdict:\n" + text)
    rc, text = step(out, "wgmma5", "ok, 20 s",
                    dict(flash_attention=[fa(128, 1, 200.0), fa(128, 0, 240.0),
                                          dict(fa(128, 0, 6.3, kind="decode"), sq=1, skv=8192)]))
    check("slowest 0.90x (decode D 128 causal 0 f16 1 x 8192): not ready (a decode below 0.97x)."
          in text.split("`wgmma5t` / default")[-1], "wgmma5t on a slower decode:\n" + text)
    # TMA against wgmma5's copies, each over bench's default (no case in turns)
    check("- `wgmma5t` (the producer by TMA) over `wgmma5`: D 128 causal 0 f16 4096 x 4096 1.38x; "
          "D 128 causal 1 f16 4096 x 4096 1.50x. 0 of 2 cases over the default timed in turns in "
          "both steps." in text, "wgmma5t over wgmma5:\n" + text)
    check("`wgmma5b` (" not in text, "a pair with an image not run:\n" + text)

# The same call with the experiments timed in turns with their reference
# in their own steps (run.sh's gk_bench_gpu --ref: ref_us): the verdicts
# take those times, not bench's, and say so.
with tempfile.TemporaryDirectory() as out:
    os.mkdir(os.path.join(out, "bench"))
    dec = lambda tflops, **kw: dict(fa(128, 0, tflops, kind="decode"), sq=1, skv=8192, **kw)
    wb = 168e6
    paged = dict(kernel="paged_attention", page=64, seqs=1, len=8192, head_dim=128, heads=32,
                 kv_heads=8, us=20.0, sdpa_us=16.0, kv_gbps=1600.0)
    report = dict(flash_attention=[fa(128, 1, 250.0), fa(128, 0, 300.0), dec(7.0)],
                  qmatmul=[dict(qm(1, 1.0, entry="qmatmul_q8x"), n=32768, us=50.0,
                                weight_bytes=wb)],
                  paged_attention=[paged], copy=dict(gbps=4000.0))
    with open(os.path.join(out, "bench", "gpu.json"), "w") as f:
        json.dump(report, f)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("smi: ok, 1 s\nbench: ok, 120 s\n")
    # wgmma5: against bench's default its prefill is slower (240 / 250), in
    # turns in its own step 1.10x and 1.12x faster, its decode 0.99x.
    rc, text = step(out, "wgmma5", "ok, 20 s",
                    dict(flash_attention=[dict(fa(128, 1, 240.0), ref_us=110.0),
                                          dict(fa(128, 0, 290.0), ref_us=112.0),
                                          dec(6.9, ref_us=99.0)]))
    check(rc == 0, "exit %d with wgmma5 in turns" % rc)
    check("- `wgmma5` / default: prefill 1.11x (geometric mean of 2), slowest 1.10x (prefill D "
          "128 causal 1 f16 4096 x 4096); decodes slowest 0.99x (decode D 128 causal 0 f16 1 x "
          "8192): **ready** to be sm_90a's flash_attention (its flags, blocks and `shared` as "
          "ci/gpu/prepare.sh builds it). Timed in turns with the default in its step, on the "
          "same inputs." in text, "wgmma5's verdict in turns:\n" + text)
    # wsnosoft: 1.50x wgmma5 timed in turns beside it (its TFLOP/s over
    # wgmma5's step's would say 1.25x).
    rc, text = step(out, "wsnosoft", "ok, 8 s",
                    dict(flash_attention=[dict(fa(128, 1, 300.0), ref_us=150.0)]))
    check("without softmax (`wsnosoft`) 300.0, 1.50x in turns." in text,
          "the diagnosis in turns:\n" + text)
    # wgmma5b, in turns in its step too: its speed over wgmma5's, each over
    # the default of its own step (bench's TFLOP/s would say otherwise).
    rc, text = step(out, "wgmma5b", "ok, 9 s",
                    dict(flash_attention=[dict(fa(128, 1, 900.0), ref_us=121.0),
                                          dict(fa(128, 0, 900.0), ref_us=112.0)]))
    check("- `wgmma5b` (the stages without the 128-byte swizzle) over `wgmma5`: D 128 causal 0 f16 "
          "4096 x 4096 1.00x; D 128 causal 1 f16 4096 x 4096 1.10x. Each over the default timed "
          "in turns in its own step." in text, "wgmma5b over wgmma5 in turns:\n" + text)
    # base: qmatmul_q8x and the paged decode with the default timed in
    # turns (marked, the ratio over that time); the decode without (bench's).
    rc, text = step(out, "base", "ok, 30 s",
                    dict(qmatmul=[dict(qm(1, 1.0, entry="qmatmul_q8x"), n=32768, us=80.0,
                                       ref_us=52.0)],
                         paged_attention=[dict(paged, us=24.0, kv_gbps=1333.3, ref_us=19.2)],
                         flash_attention=[dec(6.0)]))
    base = text.split("base commit's kernels")[-1]
    for row, what in (
            ("| qmatmul_q8x | 4 | 1 x 32768 x 8192 | 52.0* (0.81) | 80.0 (0.53) | 1.54 |",
             "the q8x m = 1 row in turns"),
            ("| 64 | 1 x 8192 | 128 | 16.0 | 19.2* (0.42) 1.20x | 24.0 (0.33) 1.50x | 1.25 |",
             "the paged row in turns"),
            ("| decode | 128 | 0 | f16 | 1 x 8192 | 100.0 (7.0) | 100.0 (6.0) | 1.00 |",
             "the decode row against bench's"),
            ("- *: the default's time in `base`'s step, timed in turns with it on the same inputs",
             "the footnote")):
        check(row in base, what + ":\n" + base)

print("%d failure(s)" % failures if failures else "ok: experiments.py compares the attention "
      "experiments (one timed, prefill and decode; one failed), an empty OUT, qmatmul_q8x_mm's "
      "(not run; failed, then timed), the base commit's m = 1, 16 and 512, paged and attention cases, and "
      "qmpf's m = 16 (qmxs failed: not compared), dec6's decodes, qmload's m = 1 loads, the "
      "prefill diagnoses (one timed out, then timed), each A/B's cases beyond 3% and whether a "
      "wgmma image is ready for sm_90a; and the same with the default timed in turns in the "
      "experiments' steps (--ref), which the verdicts take")
sys.exit(1 if failures else 0)
