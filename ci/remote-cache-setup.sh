#!/bin/sh
# remote-cache-setup.sh - turns a CI job's remote cache secrets into the
# environment gk build reads (docs/cache.md), printed as NAME=VALUE lines for
# $GITHUB_ENV. Key files are written into $RUNNER_TEMP (else $TMPDIR, /tmp)
# with mode 0600; no secret is printed but the token's header line, which
# goes to $GITHUB_ENV (the runner masks secrets in logs).
#   CACHE_PUBLIC_KEY  64 hex digits: the writers' public key; every build
#                     trusts only entries signed with it (empty: no trust)
#   CACHE_SIGN_KEY    the writers' secret key file's text (gk keygen's
#                     NAME.key), given to main-branch builds only: they
#                     upload and sign; without it the build only reads
#   CACHE_TOKEN       a bearer token for uploads (main-branch builds)
# A PR build gets neither of the last two, so it reads the cache and never
# writes it, even when it comes from this repository.
set -eu
dir=${RUNNER_TEMP:-${TMPDIR:-/tmp}}/gk-cache-keys
umask 077
mkdir -p "$dir"
if [ -n "${CACHE_PUBLIC_KEY:-}" ]; then
  case $CACHE_PUBLIC_KEY in
    *[!0-9a-f]*) echo "remote-cache-setup: CACHE_PUBLIC_KEY is not 64 lowercase hex digits" >&2; exit 1 ;;
  esac
  [ ${#CACHE_PUBLIC_KEY} -eq 64 ] ||
    { echo "remote-cache-setup: CACHE_PUBLIC_KEY is not 64 lowercase hex digits" >&2; exit 1; }
  echo "gk-ed25519-public $CACHE_PUBLIC_KEY" >"$dir/writers.pub"
  echo "GK_REMOTE_CACHE_TRUST=$dir/writers.pub"
fi
if [ -n "${CACHE_SIGN_KEY:-}" ]; then
  printf '%s\n' "$CACHE_SIGN_KEY" >"$dir/writer.key"
  echo "GK_REMOTE_CACHE_SIGN_KEY=$dir/writer.key"
  [ -z "${CACHE_TOKEN:-}" ] || echo "GK_REMOTE_CACHE_HEADERS=Authorization: Bearer $CACHE_TOKEN"
else
  echo "GK_REMOTE_CACHE_READONLY=1"
fi
