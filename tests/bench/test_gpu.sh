#!/bin/sh
# test_gpu.sh SRCROOT BUILD ARCHIVE: bench/gpu.sh runs and writes its report.
# Without an NVIDIA GPU (these machines): the section says so, gpu.json is
# {"skipped": "why"} and the exit status 0. With one: --quick shapes, and
# gpu.json must hold a copy bandwidth and a time for every case. Not a
# timing test: no number is compared with a goal here.
set -eu
root=$1 build=$2 archive=$3
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
