#!/bin/sh
# gpu.sh BUILD_DIR WORK_DIR - the cuda kernels on this machine's NVIDIA GPU
# against the card's device-to-device copy bandwidth and PyTorch (issue 18),
# all measured in this run.
#
# Runs BUILD_DIR/bench/gk_bench_gpu (bench/gpu.c) on the archive
# $GK_GPU_ARCHIVE (default BUILD_DIR/test-out-cuda/cuda.gkfat, the cuda test
# archive); builds nothing. Then, when `import torch` works and sees the
# GPU, bench/gpu_torch.py on the same shapes: f16 GEMV/GEMM (cuBLAS), its own
# copy bandwidth, scaled_dot_product_attention. Prints a markdown section
# and writes WORK_DIR/gpu.json; without a GPU the section says so, gpu.json
# is {"skipped": "why"}, and the exit status is 0. GK_BENCH_GPU_ARGS passes
# options to gk_bench_gpu (--quick in tests); GK_GPU_LIB_PATH is prepended
# to LD_LIBRARY_PATH for gk_bench_gpu alone (libraries carried to a GPU
# machine must not reach PyTorch).
set -eu
case ${1:-} in -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -eq 2 ] || { echo "usage: bench/gpu.sh BUILD_DIR WORK_DIR (see --help)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1 work=$2
bench=$build/bench/gk_bench_gpu
[ -x "$bench" ] || { echo "bench/gpu.sh: $bench missing: build the project first (ci/configure.sh $build)" >&2; exit 1; }
mkdir -p "$work"
archive=${GK_GPU_ARCHIVE:-$build/test-out-cuda/cuda.gkfat}
rm -f "$work/gpu-kernels.json" "$work/gpu-torch.json"
# shellcheck disable=SC2086 # GK_BENCH_GPU_ARGS is a list of options
LD_LIBRARY_PATH="${GK_GPU_LIB_PATH:+$GK_GPU_LIB_PATH:}${LD_LIBRARY_PATH:-}" \
  "$bench" "$archive" --json "$work/gpu-kernels.json" ${GK_BENCH_GPU_ARGS:-}
torch_note=""
if python3 -c 'import json, sys; sys.exit("skipped" in json.load(open(sys.argv[1])))' \
     "$work/gpu-kernels.json"; then
  if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    echo "bench/gpu.sh: PyTorch on the same shapes ..." >&2
    python3 "$root/bench/gpu_torch.py" "$work/gpu-kernels.json" "$work/gpu-torch.json" ||
      torch_note="bench/gpu_torch.py failed (see stderr)"
  else
    torch_note="PyTorch with CUDA not available here (python3 -c 'import torch')"
  fi
fi
nvsmi=""
command -v nvidia-smi >/dev/null 2>&1 &&
  nvsmi=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || true)

python3 "$root/bench/gpu_report.py" "$work/gpu-kernels.json" "$work/gpu-torch.json" "$work/gpu.json" \
  "$torch_note" "$nvsmi"
