#!/bin/sh
# part.sh NAME [gk build options...] - one runner's share of a release: sets
# up the machine, builds gk, compiles with the given options (--backend,
# --shard I/N, --container, --container-image, --remote-cache, ...) into
# out/parts/NAME/ and packs the partial archive out/parts/NAME.gkfat that
# ci/merge.sh joins with the other runners' parts. $GK: use that gk binary
# instead of setting up and building one; $GK_OUT: another out/ folder;
# $GK_SETUP: what ci/setup.sh installs (default: all); $GK_REQUIRE_TARGETS=1:
# fail when a target was skipped that $GK_ALLOW_SKIPPED does not list.
#   ci/part.sh cuda-1 --backend cuda --container --container-image "nvcc=$CUDA_IMAGE" --shard 1/2
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: ci/part.sh NAME [gk build options...]" >&2; exit 2; }
name=$1
shift
case $name in
  *[!A-Za-z0-9._-]* | "") echo "ci/part.sh: NAME '$name' must be letters, digits, '.', '_' or '-'" >&2; exit 2 ;;
esac
# $GK: a gk already built (tests; a runner that built it in an earlier step).
if [ -n "${GK:-}" ]; then
  gk=$GK
else
  if [ "$(uname -s)" = Darwin ]; then "$root/ci/setup-macos.sh"; else "$root/ci/setup.sh"; fi
  "$root/ci/configure.sh" "$root/build"
  gk="$root/build/gk"
fi
# $GK_OUT: where out/ is (default: the checkout's out/).
parts="${GK_OUT:-$root/out}/parts"
mkdir -p "$parts"
"$gk" build --recipes "$root/recipes" --out "$parts/$name" "$@"
# A release part may skip nothing the recipes ask for but what the workflow
# allows, with its reason (GK_ALLOW_SKIPPED; ci/check-skipped.sh).
if [ "${GK_REQUIRE_TARGETS:-}" = 1 ]; then
  "$root/ci/check-skipped.sh" "$parts/$name/manifest.json"
fi
"$gk" pack "$parts/$name" -o "$parts/$name.gkfat"
"$gk" ls "$parts/$name.gkfat" >&2
