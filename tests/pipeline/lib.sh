# lib.sh - sourced by the pipeline tests: a scratch folder, assertions, a
# small project. $1 is the gk binary; a test's further arguments follow.
set -u
GK=$1
T=$(mktemp -d)
CLEANUP=""
trap 'eval "$CLEANUP"; rm -rf "$T"' EXIT
failures=0
# Never touch the user's caches or a remote the environment names.
export GK_CACHE_DIR="$T/default-cache"
unset GK_REMOTE_CACHE GK_REMOTE_CACHE_HEADERS GK_REMOTE_CACHE_NETRC GK_REMOTE_CACHE_CA \
  GK_REMOTE_CACHE_CLIENT_CERT GK_REMOTE_CACHE_CLIENT_KEY GK_REMOTE_CACHE_SIGN_KEY \
  GK_REMOTE_CACHE_TRUST GK_REMOTE_CACHE_READONLY
# ... nor the release workflow's settings (kernels.yml), when run there.
unset GK_REQUIRE_TARGETS GK_ALLOW_SKIPPED GK_SIGN_KEY GK_SIGN_PUBLIC_KEY GK_SETUP
# Loopback servers must not go through a proxy the environment sets.
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

. "$(dirname "$0")/../common/check.sh"
# A free TCP port on 127.0.0.1 (bound then released; good enough for tests).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# make_project DIR: kernels "k" (bits 1, 2; x86-64 and x86-64-v3; includes
# src/inc/h.h) and "o" (x86-64): 5 jobs that compile in well under a second.
make_project() {
  mkdir -p "$1/recipes" "$1/src/inc"
  echo '#define SCALE 3' >"$1/src/inc/h.h"
  cat >"$1/src/k.c" <<'C'
#include "inc/h.h"
__attribute__((visibility("default"))) int k(int x) { return x * SCALE * BITS; }
C
  cat >"$1/src/o.c" <<'C'
__attribute__((visibility("default"))) int o(int x) { return x + 1; }
C
  cat >"$1/recipes/k.lua" <<'LUA'
kernel "k" {
  params = { bits = { 1, 2 } },
  cpu { source = "../src/k.c", targets = { "x86-64", "x86-64-v3" } },
}
LUA
  cat >"$1/recipes/o.lua" <<'LUA'
kernel "o" {
  cpu { source = "../src/o.c", entry = { "o" }, targets = { "x86-64" } },
}
LUA
}

# meta FILE KEY: one value of an archive's metadata (gk ls --meta --json).
meta() {
  "$GK" ls --meta --json "$1" | python3 -c 'import json,sys; v=json.load(sys.stdin).get(sys.argv[1]); print(v if isinstance(v,str) else json.dumps(v,sort_keys=True))' "$2"
}
