#!/bin/sh
# test_gpu.sh SRCROOT BUILD ARCHIVE CPU_ARCHIVE: bench/gpu.sh runs and writes
# its report.
# Without an NVIDIA GPU (these machines): the section says so, gpu.json is
# {"skipped": "why"} and the exit status 0. With one: --quick shapes, and
# gpu.json must hold a copy bandwidth and a time for every case; then
# gk_bench_gpu --ref must time a few cases in turns with a second archive,
# and alone where that archive has no image for them. Not a timing test: no
# number is compared with a goal here.
set -eu
root=$1 build=$2 archive=$3 cpu_archive=$4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
GK_GPU_ARCHIVE=$archive GK_BENCH_GPU_ARGS=--quick "$root/bench/gpu.sh" "$build" "$T" >"$T/out.md"
grep -q "^## GPU kernels" "$T/out.md" || { echo "FAIL: no markdown section" >&2; cat "$T/out.md"; exit 1; }
python3 - "$T/gpu.json" "$T/out.md" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
md = open(sys.argv[2]).read()
if "skipped" in r:
    assert set(r) == {"skipped"} and r["skipped"], r
    assert "No NVIDIA GPU here: " + r["skipped"] in md, md
    print("bench/gpu.sh ran without a GPU: " + r["skipped"])
    sys.exit(0)
assert r["copy"]["gbps"] > 0, r["copy"]
assert r["qmatmul"] and r["flash_attention"] and r["paged_attention"], r
for c in r["qmatmul"] + r["flash_attention"] + r["paged_attention"]:
    assert c["us"] > 0 and c["runs"] == 3, c
assert {c["bits"] for c in r["qmatmul"]} == {1, 2, 4, 8}, r["qmatmul"]
assert {c["entry"] for c in r["qmatmul"]} == {"qmatmul", "qmatmul_q8x", "qmatmul_q8x_rec",
                                             "qmatmul_q8x_x+rec", "qmatmul_q8x_x+mm"}, r["qmatmul"]
assert all(c["m"] > 16 for c in r["qmatmul"] if c["entry"] == "qmatmul_q8x_x+mm"), r["qmatmul"]
assert all(c["m"] <= 16 for c in r["qmatmul"] if "rec" in c["entry"]), r["qmatmul"]
assert "paged_attention f16 decode" in md, md
# The issues' targets: every one listed, judged or said why not (--quick
# shapes are not the issues': most say "not measured").
t = r["targets"]
assert {x["issue"] for x in t} == {18, 19} and all(x["verdict"] for x in t), t
assert sum(x["target"].startswith("qmatmul_q8x m = 16") for x in t) == 4, t
assert "| issue | target | measured | limit | verdict |" in md, md
print("bench/gpu.sh ran on %s: %d qmatmul, %d flash_attention and %d paged_attention cases" % (
    r["device"]["name"], len(r["qmatmul"]), len(r["flash_attention"]),
    len(r["paged_attention"])))
PY
# --ref (ci/gpu/run.sh's A/B of two archives): the archive against itself,
# every case timed in turns with the ref; then against the CPU archive, which
# (CPU_ARCHIVE) has no cuda image: each case timed alone, and said.
grep -q '"skipped"' "$T/gpu.json" && exit 0
bench=$build/bench/gk_bench_gpu
"$bench" "$archive" --quick --json "$T/ref.json" --ref "$archive" --filter "qmatmul bits=1 m=1 " \
  --filter "flash_attention decode" --filter "paged_attention" 2>"$T/ref.log" ||
  { echo "FAIL: gk_bench_gpu --ref:" >&2; cat "$T/ref.log" >&2; exit 1; }
"$bench" "$archive" --quick --json "$T/alone.json" --ref "$cpu_archive" \
  --filter "paged_attention" 2>"$T/alone.log" ||
  { echo "FAIL: gk_bench_gpu --ref (no cuda image):" >&2; cat "$T/alone.log" >&2; exit 1; }
python3 - "$T/ref.json" "$T/alone.json" "$T/alone.log" "$archive" <<'PY'
import json, sys
r, alone = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
log = open(sys.argv[3]).read()
assert r["ref_archive"] == sys.argv[4], r["ref_archive"]
assert r["qmatmul"] and r["flash_attention"] and r["paged_attention"], r
cases = r["qmatmul"] + r["flash_attention"] + r["paged_attention"]
for c in cases:
    assert c["ref_us"] > 0 and c["ref_best_us"] > 0 and c["ref_batch"] >= 1, c
    assert c["ref_target"] == c["target"], c
assert alone["paged_attention"], alone
assert all("ref_us" not in c for c in alone["paged_attention"]), alone
assert "--ref: paged_attention" in log and "timed alone" in log, log
print("gk_bench_gpu --ref: %d cases timed in turns with the ref archive, and alone where it has "
      "no image" % len(cases))
PY
