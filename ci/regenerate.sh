#!/bin/sh
# regenerate.sh [N] - the whole release pipeline on this machine, the way
# CI runs it on several: N shards (default 1) of every backend whose
# toolchain is here (the rest are skipped, with the reason), each packed as
# a part, then merged, verified and written to out/release/ (ci/merge.sh).
# Extra gk build options go in GK_BUILD_OPTS, e.g. "--remote-cache URL".
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-1}
case $n in *[!0-9]* | "" | 0) echo "usage: ci/regenerate.sh [N], N >= 1 shards" >&2; exit 2 ;; esac
out=${GK_OUT:-$root/out}
rm -rf "$out/parts"
i=1
while [ "$i" -le "$n" ]; do
  # shellcheck disable=SC2086 # GK_BUILD_OPTS is a list of options
  "$root/ci/part.sh" "local-$i" --shard "$i/$n" ${GK_BUILD_OPTS:-}
  i=$((i + 1))
done
"$root/ci/merge.sh" "$out/release" "$out"/parts/local-*.gkfat
