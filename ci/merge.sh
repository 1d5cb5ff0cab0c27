#!/bin/sh
# merge.sh OUTDIR PART.gkfat... - the release step: joins the runners'
# partial archives (conflicting rows fail the merge, naming them), verifies
# the result and writes what is published:
#   OUTDIR/kernels.gkfat          the fat archive
#   OUTDIR/support-matrix.txt     gk matrix (and .json, .html)
#   OUTDIR/meta.json              source revision, dirty flag, toolchains, recipe hashes
#   OUTDIR/SHA256SUMS             of every file above
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: ci/merge.sh OUTDIR PART.gkfat..." >&2; exit 2; }
out=$1
shift
# $GK: a gk already built (tests); else set up the machine and build one.
if [ -n "${GK:-}" ]; then
  gk=$GK
else
  if [ "$(uname -s)" = Darwin ]; then "$root/ci/setup-macos.sh"; else "$root/ci/setup.sh"; fi
  "$root/ci/configure.sh" "$root/build"
  gk="$root/build/gk"
fi
mkdir -p "$out"
"$gk" pack --merge "$@" -o "$out/kernels.gkfat"
"$gk" verify "$out/kernels.gkfat" >/dev/null
"$gk" matrix "$out/kernels.gkfat" >"$out/support-matrix.txt"
"$gk" matrix "$out/kernels.gkfat" --json >"$out/support-matrix.json"
"$gk" matrix "$out/kernels.gkfat" --html "$out/support-matrix.html"
"$gk" ls --meta --json "$out/kernels.gkfat" >"$out/meta.json"
# A dirty tree is fine for a local try, not for a published release.
if [ "${GK_RELEASE:-}" = 1 ] && grep -q '"source_dirty": "true"' "$out/meta.json"; then
  echo "ci/merge.sh: the parts were built from a modified checkout; not a release" >&2
  exit 1
fi
(cd "$out" && sha256sum kernels.gkfat support-matrix.txt support-matrix.json \
  support-matrix.html meta.json >SHA256SUMS)
cat "$out/support-matrix.txt"
echo "ci/merge.sh: wrote $out (kernels.gkfat, SHA256SUMS, support matrix, meta.json)" >&2
