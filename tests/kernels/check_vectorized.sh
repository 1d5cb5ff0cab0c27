#!/bin/sh
# check_vectorized.sh OUTDIR - the cpu images of a build output folder
# (OUTDIR/cpu/KERNEL/LEVEL[.VARIANT].so, docs/manifest.md) really use the
# vector unit of their level, read from `objdump -d`:
#   x86-64, x86-64-v2  packed SSE arithmetic (xmm), and no ymm or zmm at all;
#   x86-64-v3          ymm, and no zmm;
#   x86-64-v4          zmm;
# plus FMA instructions on v3 and v4 for the kernels whose inner loops are
# multiply-adds (qmatmul, flash_attention, paged_attention, rmsnorm,
# sample's exp). kv_append is a copy (no arithmetic): only its registers
# are checked.
# A register the level lacks would be an illegal instruction on the CPUs the
# image is for, so that is checked for every image of every kernel. The whole
# .text of an image is examined: the kernel and the static helpers it calls
# (the compiler may keep them out of line), plus a few tiny C runtime stubs
# that use no vector registers. Each image must export exactly its entry
# points: one function named after its kernel (qmatmul: also qmatmul_packed, qmatmul_q8x
# and qmatmul_repack, docs/weights.md "Packed layout").
# Exit 0 when every image passes, 1 otherwise, 77 when objdump is missing.
set -u
out=${1:?usage: check_vectorized.sh OUTDIR}
if ! command -v objdump >/dev/null 2>&1; then
  echo "SKIP: objdump not found on PATH (binutils)"
  exit 77
fi

failed=0
checked=0
fail() {
  echo "FAIL: $*"
  failed=1
}

# check KERNEL FMA VARIANT...: every level of each variant ("" = none).
check() {
  kernel=$1 want_fma=$2
  shift 2
  for variant in "$@"; do
    for level in x86-64 x86-64-v2 x86-64-v3 x86-64-v4; do
      name=$level${variant:+.$variant}.so
      so=$out/cpu/$kernel/$name
      checked=$((checked + 1))
      if [ ! -f "$so" ]; then
        fail "$kernel/$name: no such image in $out/cpu/$kernel"
        continue
      fi
      asm=$(objdump -d --no-show-raw-insn -j .text "$so") || {
        fail "$kernel/$name: objdump could not disassemble it"
        continue
      }
      # grep -c prints 0 (and fails) when nothing matches; keep the count.
      xmm=$(printf '%s\n' "$asm" | grep -c '%xmm')
      ymm=$(printf '%s\n' "$asm" | grep -c '%ymm')
      zmm=$(printf '%s\n' "$asm" | grep -c '%zmm')
      fma=$(printf '%s\n' "$asm" | grep -c 'vfn\{0,1\}madd')
      packed=$(printf '%s\n' "$asm" | grep -Ec '[[:space:]]v?(add|sub|mul|max|min)ps[[:space:]]')
      exports=$(objdump -T "$so" | awk '$4 == ".text" { print $NF }' | sort | tr '\n' ' ')
      want="$kernel "
      [ "$kernel" = qmatmul ] && want="qmatmul qmatmul_packed qmatmul_q8x qmatmul_repack "
      [ "$exports" = "$want" ] ||
        fail "$kernel/$name: exports [${exports% }], expected exactly [${want% }]"
      case $level in
        x86-64 | x86-64-v2)
          [ "$want_fma" = copy ] || [ "$packed" -gt 0 ] ||
            fail "$kernel/$name: no packed SSE arithmetic (not vectorized)"
          [ "$ymm" -eq 0 ] && [ "$zmm" -eq 0 ] ||
            fail "$kernel/$name: uses ymm/zmm ($ymm/$zmm instructions), beyond $level" ;;
        x86-64-v3)
          [ "$ymm" -gt 0 ] || fail "$kernel/$name: no ymm register in its code (not AVX2-vectorized)"
          [ "$want_fma" != fma ] || [ "$fma" -gt 0 ] || fail "$kernel/$name: no FMA instruction"
          [ "$zmm" -eq 0 ] || fail "$kernel/$name: uses zmm ($zmm instructions), beyond $level" ;;
        x86-64-v4)
          [ "$zmm" -gt 0 ] || fail "$kernel/$name: no zmm register in its code (not AVX-512-vectorized)"
          [ "$want_fma" != fma ] || [ "$fma" -gt 0 ] || fail "$kernel/$name: no FMA instruction" ;;
      esac
      echo "$kernel/$name: xmm $xmm, ymm $ymm, zmm $zmm, fma $fma, packed $packed"
    done
  done
}

check qmatmul fma bits1 bits2 bits4 bits8
fa=
for c in 0 1; do
  for t in f16 bf16 f32; do
    for d in 64 128; do
      fa="$fa causal$c.dtype$t.head_dim$d"
    done
  done
done
# shellcheck disable=SC2086 # the variants are words
check flash_attention fma $fa
pa=
for t in f16 bf16 f32; do
  for d in 64 128; do
    for p in 16 64; do
      pa="$pa dtype$t.head_dim$d.page$p"
    done
  done
done
# shellcheck disable=SC2086
check paged_attention fma $pa
# shellcheck disable=SC2086
check kv_append copy $pa
check rmsnorm fma ""
check sample fma ""
check rope no ""
check argmax no ""

if [ "$failed" -ne 0 ]; then
  echo "check_vectorized: some images are not vectorized as their level requires"
  exit 1
fi
echo "check_vectorized: all $checked images use their level's vector registers"
