#!/usr/bin/env python3
"""experiments.py OUT - ci/gpu/run.sh's last word on the experiments.

Reads what run.sh left under OUT: bench/gpu.json (bench/gpu_report.py's: the
default archive's flash_attention cases and PyTorch's SDPA on the same shapes),
NAME-bench.json for each experiment (gk_bench_gpu's cases on
gpu-pack/NAME.gkfat) and summary.txt (whether NAME's step passed: only an
experiment whose test_gpu passed is timed, and only those count). Prints, and
writes to OUT/experiments.md, two tables: each flash_attention case's TFLOP/s
(prefill and decode) on every archive and its ratio to SDPA's, the fastest
marked, so that the session that
made the run reads which schedule to put in the recipes (docs/gpu-speed.md) instead of adding it up; and qmatmul_q8x_mm's int8 prefill
(bench's qmatmul_q8x_x+mm cases) on the default image and on each
qmatmul experiment's (q8mb2: two blocks an SM), against
PyTorch's f16 GEMM; and, where the base step passed (base.gkfat: an earlier
commit's qmatmul, flash_attention and paged_attention, ci/gpu/prepare.sh's
GK_GPU_BASE), the m = 1 qmatmul cases, paged decodes and flash_attention's
decodes and causal prefills on the default image against the base's, so that
a change is timed against what it replaced in the same call;
and the same for the qmpf experiment's m = 16 qmatmul cases (the m > 1 tile
with W's L2 prefetch, -DGK_QM_TILE_PF=1) and qmxs's m = 1 and 16 (the m > 1
tile with x through shared memory, -DGK_QM_TILE_XS=1), and dec6's paged decodes
(a decode's ring of 6 tiles, -DGK_FA_DEC_STAGES=6; its flash_attention
decodes are a column of the first table), and qmload's m = 1 cases (the m = 1
loops' loads of W alone, -DGK_QM_LOADS_ONLY=1: run.sh times it without
test_gpu, its y not being qmatmul's), whose share of copy is what each loop's
loads allow. The prefill diagnoses (wsnosoft: wgmma5's prefill without
softmax, -DGK_FA_ABLATE=1; wsbare: without the producer's copies too, 3; timed
without test_gpu) are columns of the first table, never its fastest, and a
line a prefill case sets them beside wgmma5's: what holds it. Then, for each
wgmma image (wgmma5, wgmma5t) that timed prefills, its speed over the
default's and whether that makes it ready to be sm_90a's flash_attention (no
prefill case lost beyond noise, the prefill faster on the whole, no decode
more than 3% slower: a launch row serves every call of an image); wgmma5b
and wgmma5t against wgmma5 (the swizzle's and TMA's effect), each over the
default of its own step; and under
each A/B table, the cases where NAME took under 0.97 of the default's time
(for base: where the kernels since the base commit lost time).
Every A/B and verdict takes the default's time from NAME's own step where
gk_bench_gpu timed it there in turns with NAME on the same inputs (run.sh's
--ref: a case's ref_us; for the prefill diagnoses, wgmma5's), and says so; a
case without it is compared with bench's time, another moment of the card.
Exit 0 whatever it finds; 2 on bad usage.
tests/bench/test_experiments.py feeds it numbers of its own.
"""
import json
import os
import re
import statistics
import sys

EXPERIMENTS = ("wgmma5", "wgmma5b", "wgmma5t", "k32", "dec6")
# Diagnoses of wgmma5's prefill (GK_FA_ABLATE): columns, never the fastest.
DIAGNOSES = (("wsnosoft", "without softmax"), ("wsbare", "without softmax and copies"))
PAIR = "qmatmul_q8x_x+mm"  # gk_bench_gpu's name for the int8 prefill, timed from x


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def timed(out, steps, name):
    """NAME-bench.json's numbers where NAME's step passed, and None; else
    None and the line that says why NAME is not compared."""
    verdict = steps.get(name, "not run")
    data = load(os.path.join(out, name + "-bench.json"))
    if verdict == "ok" and data:
        return data, None
    why = verdict if verdict != "ok" else "passed, but no %s-bench.json" % name
    return None, "- `%s`: %s; not compared." % (name, why)


def key(c):
    return (c["kind"], c["head_dim"], c["causal"], c.get("dtype", "f16"), c["sq"], c["skv"])


def speed_over(c, d):
    """C's speed over D's (above 1, C is the faster) and whether the two
    were timed in turns: from C's ref_us where C's step timed its reference
    beside it on the same inputs (gk_bench_gpu --ref), else C's TFLOP/s over
    D's, timed in another step."""
    if c.get("ref_us"):
        return c["ref_us"] / c["us"], True
    return c["tflops"] / d["tflops"], False


def time_over(c, d):
    """C's time over its reference's (below 1, C is the faster), the
    reference's time and whether the two were timed in turns: C's ref_us
    where its step timed it (gk_bench_gpu --ref), else D's time."""
    if c.get("ref_us"):
        return c["us"] / c["ref_us"], c["ref_us"], True
    return c["us"] / d["us"], d["us"], False


def in_turns(n, total):
    """What a verdict says of how its N of TOTAL ratios were timed."""
    if n == total:
        return " Timed in turns with the default in its step, on the same inputs."
    if n == 0:
        return " Against bench's default, another moment of the card (no case timed in turns)."
    return " %d of its %d cases timed in turns with the default in its step; the others " \
        "against bench's, another moment of the card." % (n, total)


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    out = sys.argv[1]
    lines = ["## flash_attention on each archive (ci/gpu/experiments.py)", ""]
    report = load(os.path.join(out, "bench", "gpu.json"))
    if not report or "skipped" in report or "flash_attention" not in report:
        lines.append("No bench/gpu.json with flash_attention cases under %s: nothing to compare "
                     "(did the bench step run?)." % out)
        return finish(out, lines)
    steps = {}
    try:
        with open(os.path.join(out, "summary.txt")) as f:
            for line in f:
                m = re.match(r"^(\w+): (.*?)(, \d+ s)?$", line.strip())
                if m:
                    steps[m.group(1)] = m.group(2)
    except OSError:
        pass
    sdpa = {s["name"]: s for s in ((report.get("torch") or {}).get("sdpa") or [])}
    cases, cols = {}, ["default"]
    for c in report["flash_attention"]:
        cases.setdefault(key(c), {})["default"] = c
    for name in EXPERIMENTS + tuple(n for n, _ in DIAGNOSES):
        data, why = timed(out, steps, name)
        if why:
            lines.append(why)
            continue
        cols.append(name)
        for c in data.get("flash_attention", []):
            cases.setdefault(key(c), {})[name] = c
    if len(lines) > 2:
        lines.append("")
    lines.append("TFLOP/s (and / SDPA's where PyTorch ran); **bold**: the fastest of the row.")
    lines.append("")
    lines.append("| case | D | causal | dtype | sq x skv | SDPA | " + " | ".join(cols) + " |")
    lines.append("|---|---:|---:|---|---|---:|" + "---:|" * len(cols))
    best_of = {}
    for k in sorted(cases):
        kind, d, causal, dt, sq, skv = k
        name = "%s d%d sq%d skv%d c%d%s" % (kind, d, sq, skv, causal,
                                            " bf16" if dt == "bf16" else "")
        s = sdpa.get(name)
        row = cases[k]
        real = [n for n in row if n not in dict(DIAGNOSES)] or list(row)
        best = max(real, key=lambda n: row[n]["tflops"])
        best_of[k] = (best, row[best]["tflops"] / s["tflops"] if s else None)
        cells = []
        for col in cols:
            c = row.get(col)
            if not c:
                cells.append("")
                continue
            t = "%.1f" % c["tflops"] + (" (%.2f)" % (c["tflops"] / s["tflops"]) if s else "")
            cells.append("**%s**" % t if col == best else t)
        lines.append("| %s | %d | %d | %s | %d x %d | %s | %s |" % (
            kind, d, causal, dt, sq, skv, "%.1f" % s["tflops"] if s else "", " | ".join(cells)))
    lines.append("")
    for k in sorted(best_of):
        best, ratio = best_of[k]
        if k[0] == "prefill" and k[4] == 4096 and k[5] == 4096 and k[3] == "f16":
            lines.append("- D = %d, causal %d: fastest `%s`%s." % (
                k[1], k[2], best, ", %.2fx SDPA (issue 19: 0.9x with the sm_90a image)" % ratio
                if ratio is not None else ""))
    lines += diagnosis_lines(cases)
    lines += adoption_lines(cases)
    lines += versus_lines(cases)
    lines += q8m_lines(out, report, steps)
    for name, heading in AB_EXPERIMENTS:
        lines += ab_lines(out, report, steps, name, heading)
    return finish(out, lines)


def diagnosis_lines(cases):
    """For each f16 prefill at 4096 x 4096 that wgmma5 and a diagnosis
    timed: wgmma5's TFLOP/s and each diagnosis's over it, and what the
    three together say holds wgmma5's prefill."""
    lines = []
    for k in sorted(cases):
        row = cases[k]
        if k[0] != "prefill" or k[3] != "f16" or k[4] != 4096 or k[5] != 4096:
            continue
        if "wgmma5" not in row or not any(n in row for n, _ in DIAGNOSES):
            continue
        full = row["wgmma5"]["tflops"]
        parts = ["%s (`%s`) %.1f, %.2fx%s" % (what, n, row[n]["tflops"],
                                              speed_over(row[n], row["wgmma5"])[0],
                                              " in turns" if row[n].get("ref_us") else "")
                 for n, what in DIAGNOSES if n in row]
        lines.append("- wgmma5's prefill, D = %d, causal %d: %.1f TFLOP/s; %s." % (
            k[1], k[2], full, "; ".join(parts)))
    if lines:
        lines = ["", "What holds wgmma5's prefill (the diagnoses leave parts of its work out; "
                 "their o is not attention's): if `wsbare` is about as fast as wgmma5, the "
                 "schedule itself (its barriers, turns and wgmma issue); else if `wsnosoft` "
                 "is, the copies; else if `wsnosoft` is about as fast as `wsbare`, the "
                 "softmax; between those, both. A ratio \"in turns\" is over wgmma5 timed in "
                 "the diagnosis's step on the same inputs; the others over wgmma5's step.",
                 ""] + lines
    return lines


# The wgmma images that could be sm_90a's flash_attention (recipes/
# flash_attention.lua), and where their decodes were timed: wgmma5t's
# decodes are wgmma5's code (its TMA producer serves the prefill alone),
# so wgmma5's stand for them. (wgmma5b, an older commit's stages, is an A/B
# of the swizzle, not a candidate.)
CANDIDATES = (("wgmma5", "wgmma5"), ("wgmma5t", "wgmma5"))
READY_PREFILL_MIN = 0.98  # no prefill case slower than the default beyond noise
READY_PREFILL_MEAN = 1.05  # and the prefill faster, as a geometric mean
READY_DECODE_MIN = 0.97  # no decode more than 3% slower


def adoption_lines(cases):
    """For each candidate image that timed prefill cases beside the
    default: its TFLOP/s over the default's, case by case (the prefills'
    geometric mean and slowest, the decodes' slowest), and whether that
    makes it ready to be sm_90a's flash_attention: every prefill at least
    READY_PREFILL_MIN of the default's, their mean READY_PREFILL_MEAN, and
    every decode READY_DECODE_MIN (a launch row gives every call of an
    image the same blocks, so the decodes must not lose what the
    prefill wins)."""
    def name_of(k):
        return "%s D %d causal %d %s %d x %d" % (k[0], k[1], k[2], k[3], k[4], k[5])

    lines = []
    for cand, dec_from in CANDIDATES:
        pre = [speed_over(row[cand], row["default"]) + (k,)
               for k, row in sorted(cases.items())
               if k[0] == "prefill" and cand in row and "default" in row]
        if not pre:
            continue
        dec = [speed_over(row[dec_from], row["default"]) + (k,)
               for k, row in sorted(cases.items())
               if k[0] != "prefill" and dec_from in row and "default" in row]
        paired = sum(p for _, p, _ in pre + dec)
        pre = [(r, k) for r, _, k in pre]
        dec = [(r, k) for r, _, k in dec]
        mean = statistics.geometric_mean(r for r, _ in pre)
        worst = min(pre)
        text = "- `%s` / default: prefill %.2fx (geometric mean of %d), slowest %.2fx (%s)" % (
            cand, mean, len(pre), worst[0], name_of(worst[1]))
        if dec:
            dworst = min(dec)
            text += "; decodes%s slowest %.2fx (%s)" % (
                "" if dec_from == cand else " (`%s`'s, the same code)" % dec_from, dworst[0],
                name_of(dworst[1]))
        why = []
        if worst[0] < READY_PREFILL_MIN:
            why.append("a prefill below %.2fx" % READY_PREFILL_MIN)
        if mean < READY_PREFILL_MEAN:
            why.append("the prefill's mean below %.2fx" % READY_PREFILL_MEAN)
        if not dec:
            why.append("no decode timed")
        elif dworst[0] < READY_DECODE_MIN:
            why.append("a decode below %.2fx" % READY_DECODE_MIN)
        text += (": **ready** to be sm_90a's flash_attention (its flags, blocks and `shared` as "
                 "ci/gpu/prepare.sh builds it)." if not why else
                 ": not ready (%s)." % ", ".join(why))
        lines.append(text + in_turns(paired, len(pre) + len(dec)))
    if lines:
        lines = ["", "Whether a wgmma image could replace sm_90a's flash_attention (TFLOP/s over "
                 "the default's, every case it and the default timed; ready: no prefill below "
                 "%.2fx, their mean at least %.2fx, no decode below %.2fx):" % (
                     READY_PREFILL_MIN, READY_PREFILL_MEAN, READY_DECODE_MIN), ""] + lines
    return lines


# Pairs of wgmma images whose ratio answers a row of docs/gpu-speed.md's
# "What the next call decides": NAME over OTHER, what NAME changes.
VERSUS = (("wgmma5b", "wgmma5", "the stages without the 128-byte swizzle"),
          ("wgmma5t", "wgmma5", "the producer by TMA"))


def versus_lines(cases):
    """For each VERSUS pair that both timed a prefill case: NAME's speed
    over OTHER's, each taken over the default's (in turns in its own step
    where it was, so that the two steps' moments cancel), case by case."""
    lines = []
    for name, other, what in VERSUS:
        parts, turns = [], 0
        for k, row in sorted(cases.items()):
            if k[0] != "prefill" or name not in row or other not in row or "default" not in row:
                continue
            (a, pa), (b, pb) = (speed_over(row[n], row["default"]) for n in (name, other))
            turns += pa and pb
            parts.append("D %d causal %d %s %d x %d %.2fx" % (k[1], k[2], k[3], k[4], k[5], a / b))
        if parts:
            lines.append("- `%s` (%s) over `%s`: %s.%s" % (
                name, what, other, "; ".join(parts),
                " Each over the default timed in turns in its own step." if turns == len(parts)
                else " %d of %d cases over the default timed in turns in both steps." % (
                    turns, len(parts))))
    if lines:
        lines = ["", "The wgmma images against each other (speed over speed; above 1, the first "
                 "is faster):", ""] + lines
    return lines


# The qmatmul_q8x_mm experiments (ci/gpu/prepare.sh), each against the
# default image (128 x 128 tiles, one block an SM, 4 stages on sm_80+).
Q8M_EXPERIMENTS = (("q8mb2", "2 blocks an SM"),)


def q8m_lines(out, report, steps):
    """qmatmul_q8x_mm's default image (bench's) and each Q8M_EXPERIMENTS
    image whose step passed, against PyTorch's f16 GEMM of the same m, n,
    k: the int8 prefill's TFLOP/s, the fastest in bold."""
    lines = ["", "## qmatmul_q8x_mm's tile and stages (ci/gpu/experiments.py)", ""]
    default = [c for c in report.get("qmatmul", []) if c.get("entry") == PAIR]
    if not default:
        return lines + ["- no %s case in bench/gpu.json; not compared." % PAIR]
    cols = []
    for name, what in Q8M_EXPERIMENTS:
        data, why = timed(out, steps, name)
        if why:
            lines.append(why)
            continue
        cols.append((name, what, {(c["bits"], c["m"], c["n"], c["k"]): c
                                  for c in data.get("qmatmul", []) if c.get("entry") == PAIR}))
    if not cols:
        return lines
    if len(lines) > 3:
        lines.append("")
    gemm = {(g["m"], g["n"], g["k"]): g for g in ((report.get("torch") or {}).get("gemm") or [])}
    lines += ["TFLOP/s of `qmatmul_q8x_x` + `_mm` (and / PyTorch's f16 GEMM where it ran); "
              "**bold**: the fastest.", "",
              "| bits | m x n x k | PyTorch f16 | default (128 x 128, 4 stages) | "
              + " | ".join("%s (%s)" % (n, w) for n, w, _ in cols) + " |",
              "|---:|---|---:|---:|" + "---:|" * len(cols)]
    for c in sorted(default, key=lambda c: (c["bits"], c["m"], c["n"], c["k"])):
        key = (c["bits"], c["m"], c["n"], c["k"])
        times = [c] + [d.get(key) for _, _, d in cols]
        best = max(t["tflops"] for t in times if t)
        g = gemm.get((c["m"], c["n"], c["k"]))
        cells = []
        for t in times:
            if not t:
                cells.append("")
                continue
            v = "%.1f" % t["tflops"] + (" (%.2f)" % (t["tflops"] / g["tflops"]) if g else "")
            cells.append("**%s**" % v if len([x for x in times if x]) > 1 and t["tflops"] == best
                         else v)
        lines.append("| %d | %d x %d x %d | %s | %s |" % (
            c["bits"], c["m"], c["n"], c["k"], "%.1f" % g["tflops"] if g else "",
            " | ".join(cells)))
    return lines


# The A/B experiments: NAME.gkfat's cases against the same cases of the
# default image (bench's), each under its own heading.
AB_EXPERIMENTS = (
    ("base", "Against the base commit's kernels"),
    ("qmpf", "qmatmul's m > 1 tile with W's L2 prefetch (qmpf) against the default"),
    ("qmxs", "qmatmul's m > 1 tile with x through shared memory (qmxs) against the default"),
    ("dec6", "A decode's ring of 6 tiles (dec6) against the default"),
    ("qmload", "The m = 1 loops with W's loads alone (qmload: a diagnosis, no decode or product, "
               "its y not qmatmul's) against the default: what the loads allow"),
)


AB_FASTER = 0.97  # NAME's time over the default's below which NAME is faster, beyond noise


def ab_lines(out, report, steps, name, heading):
    """The default image's m = 1 and m = 16 qmatmul cases, qmatmul_q8x_x +
    _mm's, paged decodes and, where NAME is not a column of the attention
    table, flash_attention's cases (bench's) against NAME.gkfat's (NAME's step:
    base.gkfat, an earlier commit's kernels; qmpf.gkfat and qmxs.gkfat, the
    m > 1 tile's experiments; dec6.gkfat, a decode's ring of 6 tiles;
    qmload.gkfat, the m = 1 loops' loads alone): the time, its share of the copy
    bandwidth (weights, or K and V, over the default's copy in the same
    call) and, for the paged decodes, the ratio to SDPA's time (issue 19's
    target: at most 1.2)."""
    lines = ["", "## %s (ci/gpu/experiments.py)" % heading, ""]
    data, why = timed(out, steps, name)
    if why:
        return lines + [why]
    copy = (report.get("copy") or {}).get("gbps") or 0.0

    def share(gbps):
        return " (%.2f)" % (gbps / copy) if copy and gbps else ""

    qkey = lambda c: (c.get("entry"), c["bits"], c["m"], c["n"], c["k"])
    other = {qkey(c): c for c in data.get("qmatmul", [])}
    rows = [c for c in report.get("qmatmul", []) if qkey(c) in other and
            (c["m"] <= 16 or c.get("entry") == "qmatmul_q8x_x+mm")]
    faster = []  # the cases NAME ran in under AB_FASTER of the default's time
    turns = 0  # the rows whose default was timed in turns with NAME, in its step
    if rows:
        lines += ["Microseconds (and weight bytes a second over the copy's); %s / default: "
                  "above 1, the default is faster." % name, "",
                  "| entry | bits | m x n x k | default | %s | %s / default |" % (name, name),
                  "|---|---:|---|---:|---:|---:|"]
        for c in sorted(rows, key=qkey):
            b = other[qkey(c)]
            r, dus, paired = time_over(b, c)
            turns += paired
            wb = c.get("weight_bytes", 0) if c["m"] <= 16 else 0  # a prefill: no share
            lines.append("| %s | %d | %d x %d x %d | %.1f%s%s | %.1f%s | %.2f |" % (
                c["entry"], c["bits"], c["m"], c["n"], c["k"],
                dus, "*" if paired else "", share(wb / dus / 1e3), b["us"],
                share(wb / b["us"] / 1e3), r))
            if r < AB_FASTER:
                faster.append("%s BITS %d m = %d (%.2f)" % (c["entry"], c["bits"], c["m"], r))
    pkey = lambda c: (c["page"], c["seqs"], c["len"], c["head_dim"])
    pother = {pkey(c): c for c in data.get("paged_attention", [])}
    prows = [c for c in report.get("paged_attention", []) if pkey(c) in pother]
    if prows:
        if rows:
            lines.append("")
        lines += ["Paged decodes, microseconds (and K and V bytes a second over the copy's; "
                  "x SDPA's time on the contiguous cache).", "",
                  "| page | seqs x len | D | SDPA | default | %s | %s / default |" % (name, name),
                  "|---:|---|---:|---:|---:|---:|---:|"]
        for c in sorted(prows, key=pkey):
            b = pother[pkey(c)]
            r, dus, paired = time_over(b, c)
            turns += paired
            sd = c.get("sdpa_us")
            kvb = c["kv_gbps"] * c["us"] if c.get("kv_gbps") else 0.0  # K and V bytes, in kB
            cell = lambda us, mark: "%.1f%s%s%s" % (us, mark, share(kvb / us if kvb else 0.0),
                                                    " %.2fx" % (us / sd) if sd else "")
            lines.append("| %d | %d x %d | %d | %s | %s | %s | %.2f |" % (
                c["page"], c["seqs"], c["len"], c["head_dim"], "%.1f" % sd if sd else "",
                cell(dus, "*" if paired else ""), cell(b["us"], ""), r))
            if r < AB_FASTER:
                faster.append("paged decode, pages of %d, %d x %d (%.2f)" % (
                    c["page"], c["seqs"], c["len"], r))
    # flash_attention's cases, where NAME is not a column of the first table
    # (base: its decodes and causal prefills).
    fother = {key(c): c for c in data.get("flash_attention", [])} if name not in EXPERIMENTS \
        else {}
    frows = [c for c in report.get("flash_attention", []) if key(c) in fother]
    if frows:
        if rows or prows:
            lines.append("")
        lines += ["flash_attention, microseconds (and TFLOP/s).", "",
                  "| case | D | causal | dtype | sq x skv | default | %s | %s / default |" % (
                      name, name),
                  "|---|---:|---:|---|---|---:|---:|---:|"]
        for c in sorted(frows, key=key):
            b = fother[key(c)]
            r, dus, paired = time_over(b, c)
            turns += paired
            lines.append("| %s | %d | %d | %s | %d x %d | %.1f%s (%.1f) | %.1f (%.1f) | %.2f |" % (
                c["kind"], c["head_dim"], c["causal"], c.get("dtype", "f16"), c["sq"], c["skv"],
                dus, "*" if paired else "", c["tflops"] * c["us"] / dus, b["us"], b["tflops"], r))
            if r < AB_FASTER:
                faster.append("flash_attention %s D %d causal %d %s %d x %d (%.2f)" % (
                    c["kind"], c["head_dim"], c["causal"], c.get("dtype", "f16"), c["sq"],
                    c["skv"], r))
    if not rows and not prows and not frows:
        lines.append("- `%s`: no case of its in bench/gpu.json's; not compared." % name)
        return lines
    lines.append("")
    if turns:
        lines.append("- *: the default's time in `%s`'s step, timed in turns with it on the same "
                     "inputs (gk_bench_gpu --ref), which the ratio is over; unmarked: bench's, "
                     "another moment of the card." % name)
    if name == "base":
        lines.append("- The default more than %d%% slower than `base`: %s." % (
            round(100 * (1 - AB_FASTER)), "; ".join(faster) + " (what changed since in these "
            "kernels lost time there)" if faster else "none"))
    else:
        lines.append("- `%s` more than %d%% faster than the default: %s." % (
            name, round(100 * (1 - AB_FASTER)), "; ".join(faster) if faster else "nowhere"))
    return lines


def finish(out, lines):
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    path = os.path.join(out, "experiments.md")
    try:
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    except OSError as e:
        print("experiments.py: could not write %s: %s" % (path, e), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
