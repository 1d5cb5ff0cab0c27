#!/bin/sh
# no_scratch.sh FILE...: no scratch memory (private segment) in qmatmul's
# int8 entries (qmatmul_q8x, qmatmul_q8x_rec, qmatmul_q8x_mm) of each AMD
# code object, read from its metadata notes by llvm-readelf-15; each of the
# three entries must be there. Prints each entry that has some (or a file
# that lacks one) and exits 1; exits 77 without llvm-readelf-15. Used by
# rocm.cli (hipcc 5.2's images), rocm.clang (clang 19's) and
# cuda.hip_compile (its own build).
command -v llvm-readelf-15 >/dev/null 2>&1 || { echo "SKIP: no llvm-readelf-15"; exit 77; }
bad=0
for f in "$@"; do
  llvm-readelf-15 --notes "$f" | awk -v f="${f##*/}" '
    /\.name:/ { name = $2 }
    /\.private_segment_fixed_size:/ && name ~ /^qmatmul_q8x(_mm|_rec)?$/ {
      seen++
      if ($2 != 0) { printf "%s %s: %s bytes of scratch memory\n", f, name, $2; bad = 1 } }
    END {
      if (seen != 3) { printf "%s: %d of qmatmul'"'"'s 3 int8 entries\n", f, seen; bad = 1 }
      exit bad }' || bad=1
done
exit $bad
