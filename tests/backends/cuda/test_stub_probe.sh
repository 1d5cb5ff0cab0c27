#!/bin/sh
# test_stub_probe.sh GK STUB: `gk probe --json` with the CUDA toolkit's REAL
# stub libcuda on LD_LIBRARY_PATH (set by ctest), as on a machine with the
# toolkit but no driver: dlopen("libcuda.so") finds the stub, and the cuda
# backend is reported absent with the stub as the reason.
set -u
GK=$1 STUB=$2
if [ ! -f "$STUB" ]; then
  echo "SKIP: no CUDA stub library at $STUB"
  exit 77
fi
out=$("$GK" probe --json) || { echo "FAIL: gk probe failed"; exit 1; }
printf '%s\n' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
cuda = [b for b in d["backends"] if b["backend"] == "cuda"][0]
print("cuda:", cuda)
assert cuda["present"] is False, cuda
assert "is the CUDA toolkit" in cuda["why"] and "stub" in cuda["why"], cuda
assert "CUDA_ERROR_STUB_LIBRARY (34)" in cuda["why"], cuda
assert d["backend"] != "cuda", d["backend"]
' || { echo "FAIL: gk probe --json with the stub"; exit 1; }
echo "ok: the stub libcuda is reported as no CUDA device"
