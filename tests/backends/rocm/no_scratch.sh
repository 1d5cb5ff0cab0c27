#!/bin/sh
# no_scratch.sh FILE...: no scratch memory (private segment) in qmatmul's
# int8 entries (qmatmul_q8x, qmatmul_q8x_rec, qmatmul_q8x_mm) of each AMD
# code object, read from its metadata notes by llvm-readelf-15. Prints each
# entry that has some and exits 1; exits 77 without llvm-readelf-15. Used by
# rocm.cli (hipcc 5.2's images) and rocm.clang (clang 19's).
command -v llvm-readelf-15 >/dev/null 2>&1 || { echo "SKIP: no llvm-readelf-15"; exit 77; }
bad=0
for f in "$@"; do
  llvm-readelf-15 --notes "$f" | awk -v f="${f##*/}" '
    /\.name:/ { name = $2 }
    /\.private_segment_fixed_size:/ && name ~ /^qmatmul_q8x(_mm|_rec)?$/ && $2 != 0 {
      printf "%s %s: %s bytes of scratch memory\n", f, name, $2; bad = 1 }
    END { exit bad }' || bad=1
done
exit $bad
