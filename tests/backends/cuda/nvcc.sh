# shellcheck shell=sh
# nvcc.sh - sourced by the cuda tests' scripts: sets nvcc to the CUDA
# toolkit's compiler (PATH, then $CUDA_HOME, $CUDA_PATH, /usr/local/cuda),
# "" when there is none, and nvcc_skip to the line such a test prints
# before it exits 77.
nvcc=$(command -v nvcc || true)
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  if [ -z "$nvcc" ] && [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then nvcc=$d/bin/nvcc; fi
done
# shellcheck disable=SC2034 # used by the scripts that source this one
nvcc_skip="SKIP: nvcc not found (PATH, \$CUDA_HOME, \$CUDA_PATH, /usr/local/cuda); install the CUDA toolkit"
