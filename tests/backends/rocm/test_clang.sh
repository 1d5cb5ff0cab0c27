#!/bin/sh
# test_clang.sh GK ARCHIVES RECIPES: the rocm images of the hipclang module
# (Debian's clang-19; fixture rocm_clang_archive), checked offline:
#   every image, by an ELF reader written apart from libgk's (check_amd.py):
#     e_machine 224, EI_OSABI 64, the code object version (v5 for processors,
#     v6 for generic targets), the processor and feature fields of e_flags,
#     the generic version, and for every entry point of the row its function
#     and its 64-byte kernel descriptor NAME.kd;
#   gk verify passes them all; rows say which compiler made them;
#   gk probe picks by the ROCm rule on the real rows (exact processor, then
#     the generic target of its family);
#   the generated device-library bitcode is made once per cache, and a
#     build in an empty cache gives the same bytes (images and bitcode);
#   a target no installed compiler can build is skipped with each reason.
set -u
GK=$1 ARCHIVES=$2 RECIPES=$3
if [ ! -f "$ARCHIVES/all.gkfat" ]; then
  echo "SKIP: no archive of clang-19 rocm images in $ARCHIVES; the fixture needs clang-19 and lld-19"
  exit 77
fi
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
run() { "$@" >"$T/stdout" 2>"$T/stderr"; status=$?; }
expect_status() {
  [ "$status" -eq "$1" ] || { fail "$2: exit $status, expected $1"; cat "$T/stderr" >&2; }
}
expect_err() { grep -qF -- "$1" "$T/stderr" || { fail "$2: stderr lacks '$1'"; cat "$T/stderr" >&2; }; }
py() { python3 -c "$@" || fail "python check failed: $(echo "$1" | head -c 100)"; }

# --- every image, by its own ELF reading.
run "$GK" extract "$ARCHIVES/all.gkfat" -o "$T/x" --backend rocm
expect_status 0 "extract the clang-19 images"
python3 "$HERE/check_amd.py" "$T/x" 308 || fail "an image is not what its row says (above)"

# --- gk verify agrees, on all three archives.
for a in all procs generic; do
  run "$GK" verify "$ARCHIVES/$a.gkfat"
  expect_status 0 "verify $a.gkfat"
done
run "$GK" verify "$ARCHIVES/all.gkfat"
n=$(grep -c '^ok   rocm ' "$T/stdout")
[ "$n" -eq 308 ] || fail "verify: $n ok rocm lines, expected 308 (44 variants x 7 targets)"

# --- probe: the ROCm rule on real rows.
for spec in gfx942:sramecc+:xnack-=gfx942 gfx942:sramecc-:xnack+=gfx942 gfx1100=gfx1100 \
    gfx1101=gfx11-generic gfx1102=gfx11-generic gfx1200=gfx1200 gfx1201=gfx12-generic \
    gfx1103=gfx11-generic gfx1150=gfx11-generic gfx1151=gfx11-generic \
    gfx1031=gfx10-3-generic gfx1036=gfx10-3-generic gfx900:xnack-=gfx9-generic \
    gfx90c:xnack+=gfx9-generic gfx941:sramecc+:xnack-=none; do
  dev=${spec%=*} want=${spec#*=}
  run "$GK" probe "$ARCHIVES/all.gkfat" --device "rocm:$dev" --json
  # gk probe exits 1 when some kernel has no image for the device.
  if [ "$want" = none ]; then expect_status 1 "probe rocm:$dev"; else expect_status 0 "probe rocm:$dev"; fi
  py 'import json,sys
d, want = json.load(open(sys.argv[1])), sys.argv[2]
got = {i.get("target", "none") for i in d["images"]}
assert len(d["images"]) == 44 and got == {want}, (sys.argv[3], got)' "$T/stdout" "$want" "$dev"
done

# --- qmatmul's int8 entries on the processors' byte dot products
# (gk_gpu.cuh's GK_AMD_SUDOT4 / GK_AMD_SDOT4): no scratch memory in
# qmatmul_q8x, qmatmul_q8x_rec or qmatmul_q8x_mm of any processor image (44 to 1908 bytes
# on plain-C byte products and the integer binary16 decode, docs/weights.md),
# and gfx11's sums on v_dot4_i32_iu8 (llvm-objdump-15 decodes gfx11, not
# gfx942 or gfx12).
if command -v llvm-readelf-15 >/dev/null 2>&1; then
  n=0
  for f in "$T"/x/rocm/qmatmul/gfx942.*.hsaco "$T"/x/rocm/qmatmul/gfx110[0-9].*.hsaco \
      "$T"/x/rocm/qmatmul/gfx120[0-9].*.hsaco; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    "$HERE/no_scratch.sh" "$f" || fail "scratch memory in qmatmul's int8 entries (above)"
  done
  [ "$n" -eq 12 ] || fail "qmatmul: $n images of gfx942, gfx1100 and gfx1200, expected 12 (3 x 4 BITS)"
fi
if command -v llvm-objdump-15 >/dev/null 2>&1; then
  for f in "$T"/x/rocm/qmatmul/gfx1100.*.hsaco; do
    [ "$(llvm-objdump-15 -d "$f" | grep -c 'v_dot4_i32_iu8')" -gt 0 ] ||
      fail "${f##*/}: no v_dot4_i32_iu8 (gk_dp4a_us on plain byte products)"
  done
fi

# --- reproducible, and the bitcode made once per cache: a one-kernel
# recipe with two variants for a processor and a generic target, built
# into two empty caches.
cat >"$T/r.lua" <<EOR
kernel "rmsnorm" {
  params = { copy = { 1, 2 } },
  rocm {
    source  = "$(cd "$RECIPES/.." && pwd)/kernelsrc/hip/rmsnorm.hip",
    targets = { "gfx11-generic", "gfx1201" },
  },
}
EOR
mkdir -p "$T/rec" && mv "$T/r.lua" "$T/rec/rmsnorm.lua"
for c in 1 2; do
  run "$GK" build --recipes "$T/rec" --cache "$T/c$c" --out "$T/o$c" --json
  expect_status 0 "build in empty cache $c"
  for f in oclc_isa_version_11-generic.bc oclc_abi_version_600.bc oclc_isa_version_1201.bc; do
    [ "$(grep -c "made $f" "$T/stderr")" -eq 1 ] || fail "cache $c: $f not made exactly once"
  done
done
for f in gfx11-generic.copy1 gfx11-generic.copy2 gfx1201.copy1 gfx1201.copy2; do
  cmp -s "$T/o1/rocm/rmsnorm/$f.hsaco" "$T/o2/rocm/rmsnorm/$f.hsaco" ||
    fail "rocm/rmsnorm/$f.hsaco differs between two builds in empty caches"
done
# The caches hold the same objects: images and generated bitcode alike.
(cd "$T/c1/v1/objects" && find . -type f | sort) >"$T/objs1"
(cd "$T/c2/v1/objects" && find . -type f | sort) >"$T/objs2"
cmp -s "$T/objs1" "$T/objs2" || fail "the two caches hold different objects"
# rmsnorm ignores COPY: 2 distinct images (one per target) + 3 bitcode files.
[ "$(wc -l <"$T/objs1")" -eq 5 ] || fail "expected 2 images + 3 bitcode files in the cache, got $(wc -l <"$T/objs1")"
run "$GK" build --recipes "$T/rec" --cache "$T/c1" --out "$T/o3" --json
expect_status 0 "build again"
grep -q 'made ' "$T/stderr" && fail "a second build made its bitcode again"
py 'import json,sys
s = json.load(open(sys.argv[1]))
assert s["compiled"] == 0 and s["cached"] == 4, s' "$T/stdout"

# --- a target neither hipcc 5.2 nor clang 19 knows: skipped with both reasons.
run "$GK" build --recipes "$T/rec" --targets rocm=gfx1201,gfx950 --cache "$T/c1" --out "$T/o4"
expect_status 0 "build with a target no compiler here knows"
expect_err "gk build: rocm gfx950: skipped, " "gfx950 skipped"
expect_err "clang 19" "the skip gives clang-19's reason"
if command -v hipcc >/dev/null 2>&1; then expect_err "hipcc 5.2 cannot target it" "and hipcc's"; fi
run "$GK" build --recipes "$T/rec" --targets rocm=gfx1201,gfx950 --cache "$T/c1" --out "$T/o4" --strict
expect_status 1 "--strict with gfx950"
expect_err "  rocm gfx950: " "--strict lists gfx950"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
