#!/bin/sh
# test_gpu_run.sh SRCROOT BUILD ARCHIVE: ci/gpu/run.sh leaves under $OUT what
# the device tool brings back: at most 8 plain files, no folder, names of
# letters, digits, '.', '_' and '-' (../.library/device/README.md, "Limits"),
# every step's log inside logs.tar.gz, and the summary last on stdout (the
# tool's output tail). Runs the real binaries of BUILD on the cuda test
# ARCHIVE in a pack laid out as ci/gpu/prepare.sh lays it out (no experiment
# archives, no Vulkan loader: those steps skip); without a GPU every step
# skips or fails fast. What is checked is run.sh's bookkeeping, not a kernel.
set -eu
root=$1 build=$2 archive=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
p=$T/pack
mkdir -p "$p/bench" "$p/tests/gpu" "$p/lib" "$p/debs" "$T/out"
for b in gk bench/gk_bench_gpu tests/gpu/test_gpu tests/gpu/test_wgmma_probe tests/gpu/test_tma_probe; do
  ln -s "$build/$b" "$p/$b"
done
ln -s "$archive" "$p/gpu.gkfat"
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

# A work folder inside $OUT would come back whole: refused.
if OUT=$T/out GK_GPU_WORK=$T/out/w GK_GPU_PACK=$p "$root/ci/gpu/run.sh" >"$T/refused" 2>&1; then
  no "GK_GPU_WORK inside OUT was accepted"
fi
grep -q "GK_GPU_WORK must lie outside" "$T/refused" || no "no reason given: $(cat "$T/refused")"

rc=0
OUT=$T/out GK_GPU_WORK=$T/work GK_GPU_PACK=$p GK_GPU_BUDGET=300 \
  "$root/ci/gpu/run.sh" >"$T/stdout" 2>&1 || rc=$?
[ "$rc" -le 1 ] || no "run.sh exited $rc"

n=$(find "$T/out" -mindepth 1 | wc -l)
[ "$n" -le 8 ] || no "$n entries under OUT (the tool brings back 8 files)"
find "$T/out" -mindepth 1 ! -type f | grep -q . && no "OUT holds more than plain files: $(find "$T/out" -mindepth 1 ! -type f)"
find "$T/out" -mindepth 1 -type f | sed 's|.*/||' | grep -v '^[A-Za-z0-9._-]*$' && no "a name the tool refuses"
for f in summary.txt logs.tar.gz; do [ -f "$T/out/$f" ] || no "OUT has no $f"; done
find "$T/out" -name '.*.tmp' | grep -q . && no "temporary files left in OUT"

steps="smi probe test bench probes wgmma5 wsnosoft wsbare k32 dec6 base qmpf qmxs qmload compare sass memcheck racecheck ncu vulkan"
tar -tzf "$T/out/logs.tar.gz" >"$T/logs" || no "logs.tar.gz does not list"
for s in $steps; do
  grep -q "^$s: " "$T/out/summary.txt" || no "summary.txt has no line for step $s"
  if grep -q "^$s: not run" "$T/out/summary.txt"; then continue; fi
  grep -qx "./$s.log" "$T/logs" || no "logs.tar.gz has no $s.log"
done
grep -q "vulkan-loader" "$T/logs" && no "logs.tar.gz carries the unpacked Vulkan loader"
# The test step ran the real test_gpu: without a GPU it skips, with one it
# passes (a GPU machine runs this test too).
grep -Eq "^test: (skipped|ok)" "$T/out/summary.txt" || no "test step: $(grep '^test:' "$T/out/summary.txt")"
tail -n 40 "$T/stdout" | grep -q "^==== summary.txt" || no "the summary is not at the end of stdout"
tail -n 1 "$T/stdout" | grep -q "^total [0-9]* s" || no "stdout does not end with the total"
[ -d "$T/work" ] || no "the work folder is gone"

if [ "$fail" -ne 0 ]; then
  echo "--- stdout"; cat "$T/stdout"; echo "--- OUT"; ls -la "$T/out"
  exit 1
fi
echo "ok: run.sh left $n files under OUT ($(ls "$T/out" | tr '\n' ' ')), $(wc -l <"$T/logs") entries in logs.tar.gz"
