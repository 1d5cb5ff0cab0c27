#!/bin/sh
# check-images.sh [VAR...] - checks the pinned container images of
# ci/images.env against their registry (all *_IMAGE variables, or the ones
# named): the pinned digest must exist, and where the reference has a tag
# (IMAGE:TAG@sha256:...) the tag must still resolve to that digest. The
# digests were written without registry access, so the first CI run is where
# they are verified; a tag that moved since (a rebuilt image) fails here
# with both digests rather than compiling with a compiler nobody reviewed.
# Needs docker with buildx (GitHub's Ubuntu runners) or skopeo.
#   ci/check-images.sh CUDA_IMAGE
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
env_file=$root/ci/images.env
case ${1:-} in
  -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
. "$env_file"
vars=$*
[ -n "$vars" ] || vars=$(sed -n 's/^\([A-Z0-9_]*_IMAGE\)=.*/\1/p' "$env_file")

if command -v docker >/dev/null 2>&1 && docker buildx version >/dev/null 2>&1; then
  tool=docker
elif command -v skopeo >/dev/null 2>&1; then
  tool=skopeo
else
  echo "check-images: needs 'docker buildx' or 'skopeo' to ask the registry; install one" >&2
  exit 1
fi

# resolve REF: prints the digest REF names in its registry (a tag's current
# digest; for IMAGE@DIGEST, DIGEST itself if it exists), or fails with the
# tool's message on stderr.
resolve() {
  if [ "$tool" = docker ]; then
    docker buildx imagetools inspect "$1" | awk '$1 == "Digest:" { print $2; exit }'
  else
    # The digest of a manifest is the SHA-256 of its bytes as served.
    skopeo inspect --raw "docker://$1" | python3 -c \
      'import hashlib,sys; print("sha256:" + hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'
  fi
}

errf=$(mktemp)
trap 'rm -f "$errf"' EXIT
status=0
for var in $vars; do
  eval "ref=\${$var:-}"
  if [ -z "$ref" ]; then
    echo "check-images: $var is not set in $env_file" >&2
    status=1
    continue
  fi
  case $ref in
    *@sha256:*) ;;
    *) echo "check-images: $var='$ref' is not pinned by digest; write IMAGE:TAG@sha256:... in $env_file" >&2
       status=1; continue ;;
  esac
  pinned=${ref##*@}
  name=${ref%@*}
  # A tag is a ':' after the last '/' (a ':' before it is a registry port).
  repo=$name tag=""
  case ${name##*/} in
    *:*) tag=${name##*:}; repo=${name%:*} ;;
  esac
  if ! got=$(resolve "$repo@$pinned" 2>"$errf") || [ "$got" != "$pinned" ]; then
    echo "check-images: $var: the pinned image $repo@$pinned was not found in its registry ($(tr '\n' ' ' <"$errf"))." >&2
    echo "  The digest in $env_file is wrong or was deleted: pin the current one, from 'docker buildx imagetools inspect $repo:TAG' (the Digest: line)." >&2
    status=1
  elif [ -n "$tag" ]; then
    if ! now=$(resolve "$name" 2>"$errf"); then
      echo "check-images: $var: cannot resolve the tag $name: $(tr '\n' ' ' <"$errf")" >&2
      status=1
    elif [ "$now" != "$pinned" ]; then
      echo "check-images: $var: the tag $name now resolves to $now, but $env_file pins $pinned." >&2
      echo "  The tag moved (a rebuilt image) or the pin was never that tag's: review the new image, then put its digest in $env_file." >&2
      status=1
    else
      echo "check-images: $var: $name is $pinned, as pinned" >&2
    fi
  else
    echo "check-images: $var: $repo@$pinned exists (no tag to compare with)" >&2
  fi
done
exit "$status"
