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
finish
