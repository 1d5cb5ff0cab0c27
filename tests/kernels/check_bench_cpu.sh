#!/bin/sh
# check_bench_cpu.sh BUILD_DIR ARCHIVE WORK_DIR - bench/cpu.sh runs at tiny
# sizes on the test archive and writes a complete cpu.json: a row for every
# code width and every entry (original, packed, q8x) on the selected image, the
# repack times, STREAM (plain and with the kernels' prefetches) and GFLOP/s
# numbers. Speed is not checked (benchmarks are not timed tests).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$1 archive=$2 work=$3
rm -rf "$work"
GK_BENCH_ARCHIVE=$archive GK_BENCH_CPU_ARGS=--quick "$root/bench/cpu.sh" "$build" "$work" >"$work.md"
grep -q '^## CPU kernels against memory bandwidth' "$work.md" || { echo "FAIL: no markdown section"; exit 1; }
python3 - "$work/cpu.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["stream_read"]["gbps_median"] > 0, "no read bandwidth"
# The prefetching read is AVX-512 only: where the CPU has it, it is reported.
avx512 = "avx512f" in open("/proc/cpuinfo").read().split()
s = d["stream_read"]
assert ("prefetched_ratio" in s) == avx512, s
if avx512:
    assert s["prefetched_gbps_median"] > 0 and s["prefetched_ratio"] > 0, s
for lay in ("original", "packed", "q8x"):
    sel = {r["bits"] for r in d["qmatmul_m1"] if r["selected"] and r["layout"] == lay}
    assert sel == {1, 2, 4, 8}, "selected %s rows for bits %s" % (lay, sorted(sel))
assert {r["bits"] for r in d["repack"]} == {1, 2, 4, 8} and all(r["ms"] > 0 for r in d["repack"]), d["repack"]
for r in d["qmatmul_m1"]:
    assert r["gbps_median"] > 0 and r["ratio"] > 0 and "hot_gbps" in r, r
    assert r["steady_gbps"] > 0 and r["ratio_stream"] > 0, r
    if r["selected"]:
        assert r["one_thread_us"] > 0, r
assert all(b["gflops_median"] > 0 for b in d["qmatmul_batch"])
assert len(d["core_ns_per_block"]) == 12 and all(
    c["L1_ns_per_block"] > 0 and c["L2_ns_per_block"] > 0 and c["memory_ns_per_block"] > 0
    for c in d["core_ns_per_block"]), d["core_ns_per_block"]
assert set(d["goal"]) == {"bits4", "bits8"}
print("ok: bench/cpu.sh: %d m=1 rows, %d batch rows, read %.1f GB/s (tiny sizes: not a measurement)"
      % (len(d["qmatmul_m1"]), len(d["qmatmul_batch"]), d["stream_read"]["gbps_median"]))
PY
