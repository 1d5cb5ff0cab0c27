#!/bin/sh
# sanitize.sh TEST_GPU ARCHIVE [CPU_ARCHIVE] [TOOL...] - test_gpu on small
# shapes (--small: the selected images only) under compute-sanitizer, once
# per tool (default: memcheck racecheck). Exit 77 (SKIP, saying why) without
# compute-sanitizer or without a GPU; 1 when a tool reports an error or the
# test fails under it. compute-sanitizer comes from PATH, $CUDA_HOME/bin or
# /usr/local/cuda/bin.
set -u
bin=$1 archive=$2
shift 2
cpu=$archive
case ${1:-} in *.gkfat) cpu=$1; shift ;; esac
tools=${*:-memcheck racecheck}
cs=$(command -v compute-sanitizer || true)
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
  [ -z "$cs" ] && [ -n "$d" ] && [ -x "$d/bin/compute-sanitizer" ] && cs=$d/bin/compute-sanitizer
done
if [ -z "$cs" ]; then
  echo "SKIP: compute-sanitizer not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
  exit 77
fi
# Without a GPU the program says SKIP itself; no need to sanitize that.
"$bin" --probe || exit $?
status=0
for tool in $tools; do
  echo "== compute-sanitizer --tool $tool"
  # API statuses are test_gpu's to check (and libgk's probing of optional
  # entry points is not an error): the tools report the kernels' accesses.
  "$cs" --tool "$tool" --error-exitcode 1 --report-api-errors no \
    "$bin" "$archive" "$cpu" --small || {
    echo "FAIL: test_gpu under compute-sanitizer --tool $tool"
    status=1
  }
done
exit $status
