#!/bin/sh
# merge.sh OUTDIR PART.gkfat... - the release step: joins the runners'
# partial archives (conflicting rows fail the merge, naming them), verifies
# the result and writes what is published:
#   OUTDIR/kernels.gkfat          the fat archive
#   OUTDIR/support-matrix.txt     gk matrix (and .json, .html)
#   OUTDIR/meta.json              source revision, dirty flag, toolchains, recipe hashes
#   OUTDIR/SHA256SUMS             of every file above
# With $GK_SIGN_KEY (a secret key file from gk keygen) the archive is signed
# after it is verified, and the public half is published beside it:
#   OUTDIR/kernels.pub            the public key ('gk verify --key kernels.pub')
#   OUTDIR/signing-key.txt        its fingerprint (key id and full key)
# $GK_SIGN_PUBLIC_KEY (64 hex digits), when set, must be that public key: a
# release is never signed with a key other than the one users were given.
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
signed=""
if [ -n "${GK_SIGN_KEY:-}" ]; then
  "$gk" sign "$out/kernels.gkfat" --key "$GK_SIGN_KEY" --json >"$out/sign.json"
  pub=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["public_key"])' "$out/sign.json")
  rm -f "$out/sign.json"
  if [ -n "${GK_SIGN_PUBLIC_KEY:-}" ] && [ "$pub" != "$GK_SIGN_PUBLIC_KEY" ]; then
    echo "ci/merge.sh: GK_SIGN_KEY's public key $pub is not GK_SIGN_PUBLIC_KEY ($GK_SIGN_PUBLIC_KEY); not signing a release with another key" >&2
    exit 1
  fi
  echo "gk-ed25519-public $pub" >"$out/kernels.pub"
  "$gk" verify "$out/kernels.gkfat" --key "$out/kernels.pub" >/dev/null
  printf 'kernels.gkfat is signed with Ed25519 key %s\npublic key: %s\ncheck: gk verify kernels.gkfat --key kernels.pub\n' \
    "$(echo "$pub" | cut -c1-16)" "$pub" >"$out/signing-key.txt"
  signed="kernels.pub signing-key.txt"
fi
"$gk" matrix "$out/kernels.gkfat" >"$out/support-matrix.txt"
"$gk" matrix "$out/kernels.gkfat" --json >"$out/support-matrix.json"
"$gk" matrix "$out/kernels.gkfat" --html "$out/support-matrix.html"
"$gk" ls --meta --json "$out/kernels.gkfat" >"$out/meta.json"
# A dirty tree is fine for a local try, not for a published release.
if [ "${GK_RELEASE:-}" = 1 ] && grep -q '"source_dirty": "true"' "$out/meta.json"; then
  echo "ci/merge.sh: the parts were built from a modified checkout; not a release" >&2
  exit 1
fi
# shellcheck disable=SC2086 # $signed is a list of file names
(cd "$out" && sha256sum kernels.gkfat support-matrix.txt support-matrix.json \
  support-matrix.html meta.json $signed >SHA256SUMS)
cat "$out/support-matrix.txt"
echo "ci/merge.sh: wrote $out (kernels.gkfat, SHA256SUMS, support matrix, meta.json)" >&2
