#!/bin/sh
# check_vectorized.sh OUTDIR - the cpu qmatmul images of a build output
# folder (OUTDIR/cpu/qmatmul/LEVEL.bitsN.so, docs/manifest.md) really use
# the vector unit of their level, read from `objdump -d`:
#   x86-64, x86-64-v2  packed SSE (xmm), and no ymm or zmm at all;
#   x86-64-v3          ymm and FMA, and no zmm;
#   x86-64-v4          zmm and FMA.
# A register the level lacks would be an illegal instruction on the CPUs the
# image is for, so that is checked as well. The whole .text of the image is
# examined: it is qmatmul and the static helpers it calls (the compiler may
# keep them out of line), plus a few tiny C runtime stubs that use no
# vector registers. Each image must export exactly one function, qmatmul.
# Exit 0 when all 16 images pass, 1 otherwise, 77 when objdump is missing.
set -u
out=${1:?usage: check_vectorized.sh OUTDIR}
dir=$out/cpu/qmatmul
if ! command -v objdump >/dev/null 2>&1; then
  echo "SKIP: objdump not found on PATH (binutils)"
  exit 77
fi

failed=0
fail() {
  echo "FAIL: $*"
  failed=1
}

for level in x86-64 x86-64-v2 x86-64-v3 x86-64-v4; do
  for bits in 1 2 4 8; do
    so=$dir/$level.bits$bits.so
    name=$level.bits$bits.so
    if [ ! -f "$so" ]; then
      fail "$name: no such image in $dir"
      continue
    fi
    asm=$(objdump -d --no-show-raw-insn -j .text "$so") || {
      fail "$name: objdump could not disassemble it"
      continue
    }
    # grep -c prints 0 (and fails) when nothing matches; keep the count.
    xmm=$(printf '%s\n' "$asm" | grep -c '%xmm')
    ymm=$(printf '%s\n' "$asm" | grep -c '%ymm')
    zmm=$(printf '%s\n' "$asm" | grep -c '%zmm')
    fma=$(printf '%s\n' "$asm" | grep -c 'vfn\{0,1\}madd')
    packed=$(printf '%s\n' "$asm" | grep -Ec '[[:space:]]v?(add|mul)ps[[:space:]]')
    exports=$(objdump -T "$so" | awk '$4 == ".text" { print $NF }' | tr '\n' ' ')
    [ "$exports" = "qmatmul " ] ||
      fail "$name: exports [${exports% }], expected exactly [qmatmul]"
    case $level in
      x86-64 | x86-64-v2)
        [ "$packed" -gt 0 ] || fail "$name: no packed SSE arithmetic (not vectorized)"
        [ "$ymm" -eq 0 ] && [ "$zmm" -eq 0 ] ||
          fail "$name: uses ymm/zmm ($ymm/$zmm instructions), beyond $level" ;;
      x86-64-v3)
        [ "$ymm" -gt 0 ] || fail "$name: no ymm register in its code (not AVX2-vectorized)"
        [ "$fma" -gt 0 ] || fail "$name: no FMA instruction"
        [ "$zmm" -eq 0 ] || fail "$name: uses zmm ($zmm instructions), beyond $level" ;;
      x86-64-v4)
        [ "$zmm" -gt 0 ] || fail "$name: no zmm register in its code (not AVX-512-vectorized)"
        [ "$fma" -gt 0 ] || fail "$name: no FMA instruction" ;;
    esac
    echo "$name: xmm $xmm, ymm $ymm, zmm $zmm, fma $fma, packed add/mul $packed"
  done
done
if [ "$failed" -ne 0 ]; then
  echo "check_vectorized: some images are not vectorized as their level requires"
  exit 1
fi
echo "check_vectorized: all 16 images use their level's vector registers"
