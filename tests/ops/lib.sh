# lib.sh - sourced by the ops tests: a scratch folder, assertions, SKIP.
# The tests get their inputs from the environment (tests/ops/CMakeLists.txt):
# GK (the gk binary), ARCHIVE (the fixture archive of real cpu images), OUT
# (the build folder it was packed from), MKARCHIVE (writes synthetic
# archives with the real packager).
set -u
SAN_FLAGS=${SAN_FLAGS:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

. "$(dirname "$0")/../common/check.sh"
# py DESCRIPTION ARGS... <<'PY': a Python check; its assertion fails the test.
py() {
  what=$1; shift
  python3 - "$@" || fail "$what"
}

# make_synthetic PATH: an archive with cpu, cuda and rocm rows. No GPU
# toolchain is needed to list them (the ELF check runs only when an image is
# read). Cells it gives:
#   qmatmul bits=4: cpu x86-64-v3 present; cuda sm_80, sm_90a present, cuda
#                   compute_90 ptx (beside cubins); rocm gfx90a:xnack+ present
#   qmatmul bits=8: cuda sm_100 present
#   softmax:        cpu x86-64 present; cuda compute_80 ptx-only
#   rmsnorm:        cuda compute_75 and compute_90 ptx-only
#   <b>&x (a hostile name): cpu x86-64 present
# ptx KERNEL SM: a minimal PTX module the loader's PTX check accepts
# (.version, .target on their own lines, an .entry for the kernel).
ptx() {
  printf '.version 8.0\n.target %s\n.address_size 64\n.visible .entry %s()\n{\n\tret;\n}\n' "$2" "$1"
}
make_synthetic() {
  so="$OUT/cpu/qmatmul/x86-64-v3.bits4.so"
  "$MKARCHIVE" "$1" \
    "qmatmul|cpu|x86-64-v3|bits=4|so|@$so" \
    "qmatmul|cuda|sm_80|bits=4|cubin|=cubin sm_80" \
    "qmatmul|cuda|sm_90a|bits=4|cubin|=cubin sm_90a" \
    "qmatmul|cuda|compute_90|bits=4|ptx|=$(ptx qmatmul sm_90)" \
    "qmatmul|rocm|gfx90a:xnack+|bits=4|hsaco|=hsaco gfx90a" \
    "qmatmul|cuda|sm_100|bits=8|cubin|=cubin sm_100" \
    "softmax|cpu|x86-64||so|@$so" \
    "softmax|cuda|compute_80||ptx|=$(ptx softmax sm_80)" \
    "rmsnorm|cuda|compute_75||ptx|=$(ptx rmsnorm sm_75)" \
    "rmsnorm|cuda|compute_90||ptx|=$(ptx rmsnorm sm_90)" \
    "<b>&x|cpu|x86-64||so|@$so" || fail "cannot write the synthetic archive $1"
}
