#!/bin/sh
# The scripts the workflow runs, run here the way a maintainer would:
# ci/regenerate.sh 2 (two shards through ci/part.sh, then ci/merge.sh) on
# a snapshot of the real recipes gives the archive one unsharded build
# gives, a SHA256SUMS that checks, the support matrix and the metadata.
# Usage: test_scripts.sh GK SOURCE_ROOT TEST_CACHE (warm: fixture.archive)
. "$(dirname "$0")/lib.sh"
SRC=$2 CACHE=$3
mkdir -p "$T/repo"
cp -r "$SRC/ci" "$SRC/recipes" "$SRC/kernelsrc" "$T/repo/"
GK_OUT="$T/out" GK_BUILD_OPTS="--backend cpu --cache $CACHE" GK="$GK" \
  run "$T/repo/ci/regenerate.sh" 2
expect_status 0 "ci/regenerate.sh 2"
R=$T/out/release
for f in kernels.gkfat SHA256SUMS support-matrix.txt support-matrix.json support-matrix.html meta.json; do
  [ -s "$R/$f" ] || fail "ci/merge.sh did not write $f"
done
[ -f "$T/out/parts/local-1.gkfat" ] && [ -f "$T/out/parts/local-2.gkfat" ] || fail "parts missing"
(cd "$R" && sha256sum -c --quiet SHA256SUMS) || fail "SHA256SUMS does not check"
run "$GK" build --recipes "$T/repo/recipes" --backend cpu --cache "$CACHE" --out "$T/full"
"$GK" pack "$T/full" -o "$T/full.gkfat" 2>/dev/null
cmp -s "$R/kernels.gkfat" "$T/full.gkfat" || fail "regenerate.sh 2 differs from one unsharded build"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["source_revision"] == "unknown" and "qmatmul.lua" in d["recipes"], d' \
  "$R/meta.json" || fail "meta.json"
grep -q qmatmul "$R/support-matrix.txt" || fail "support matrix lacks qmatmul"
# A modified checkout is refused as a release (GK_RELEASE=1), fine otherwise.
sqlite3 "$T/out/parts/local-1.gkfat" "UPDATE meta SET value = 'true' WHERE key = 'source_dirty'"
GK=$GK GK_RELEASE=1 run "$T/repo/ci/merge.sh" "$T/rel2" "$T/out/parts/local-1.gkfat" "$T/out/parts/local-2.gkfat"
expect_status 1 "a dirty release"
expect_err "built from a modified checkout; not a release" "dirty release explained"
GK=$GK run "$T/repo/ci/part.sh" "bad/name" --backend cpu
expect_status 2 "ci/part.sh with a bad name"

# Signing in the release step: the archive is signed after it is verified,
# the public key and its fingerprint are published and in SHA256SUMS.
"$GK" keygen --out "$T/release" >/dev/null 2>&1
sqlite3 "$T/out/parts/local-1.gkfat" "UPDATE meta SET value = 'false' WHERE key = 'source_dirty'"
pub=$(cut -d' ' -f2 "$T/release.pub")
GK=$GK GK_SIGN_KEY="$T/release.key" GK_SIGN_PUBLIC_KEY=$pub \
  run "$T/repo/ci/merge.sh" "$T/rel3" "$T/out/parts/local-1.gkfat" "$T/out/parts/local-2.gkfat"
expect_status 0 "a signed merge"
cmp -s "$T/rel3/kernels.pub" "$T/release.pub" || fail "kernels.pub is not the release key's public half"
"$GK" verify "$T/rel3/kernels.gkfat" --key "$T/release.pub" >/dev/null 2>&1 || fail "the merged archive's signature does not verify"
grep -q "$pub" "$T/rel3/signing-key.txt" || fail "signing-key.txt lacks the public key"
grep -q ' kernels.pub$' "$T/rel3/SHA256SUMS" || fail "SHA256SUMS lacks kernels.pub"
(cd "$T/rel3" && sha256sum -c --quiet SHA256SUMS) || fail "SHA256SUMS of the signed release does not check"
grep -rqF "$(cut -d' ' -f2 "$T/release.key")" "$T/rel3" "$T/stderr" "$T/stdout" && fail "the secret key was written out"
# ... and refused with a key other than the published one.
"$GK" keygen --out "$T/other" >/dev/null 2>&1
GK=$GK GK_SIGN_KEY="$T/other.key" GK_SIGN_PUBLIC_KEY=$pub \
  run "$T/repo/ci/merge.sh" "$T/rel4" "$T/out/parts/local-1.gkfat" "$T/out/parts/local-2.gkfat"
expect_status 1 "a merge signed with another key"
expect_err "not signing a release with another key" "the other key explained"

# A release part fails on a skipped target unless the workflow allows it.
GK=$GK GK_OUT="$T/out5" GK_REQUIRE_TARGETS=1 run "$T/repo/ci/part.sh" cpu --backend cpu --cache "$CACHE"
expect_status 0 "a part that skipped nothing"
printf '{"skipped": [{"backend": "rocm", "target": "gfx942", "reason": "hipcc 5.2 cannot target it"}]}' >"$T/m.json"
run "$T/repo/ci/check-skipped.sh" "$T/m.json"
expect_status 1 "a skipped target"
expect_err "rocm:gfx942 was skipped: hipcc 5.2 cannot target it; a release needs it" "the skip named"
GK_ALLOW_SKIPPED="cuda:sm_120 not yet
rocm:gfx942 the pinned ROCm image predates it" run "$T/repo/ci/check-skipped.sh" "$T/m.json"
expect_status 0 "an allowed skipped target"
expect_err "allowed: the pinned ROCm image predates it" "the reason repeated"
GK_ALLOW_SKIPPED="rocm:gfx942" run "$T/repo/ci/check-skipped.sh" "$T/m.json"
expect_status 1 "an allowance without its reason"
finish
