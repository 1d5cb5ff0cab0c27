# lib.sh - sourced by the gk build tests: a scratch folder, a small project
# and assertions. Usage: . "$(dirname "$0")/lib.sh" with $1 = the gk binary.
set -u
GK=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
# Never touch the user's cache.
export GK_CACHE_DIR="$T/default-cache"

. "$(dirname "$0")/../common/check.sh"
# wrap_cc DIR: DIR/cc runs the system cc but says it is version 90.1.0, so
# a test can change the compiler's identity by editing the file.
wrap_cc() {
  mkdir -p "$1"
  cat >"$1/cc" <<SH
#!/bin/sh
case \$1 in -dumpfullversion) echo 90.1.0; exit 0;; esac
exec $(command -v cc) "\$@"
SH
  chmod +x "$1/cc"
}
# make_project DIR: two kernels. "k" (bits 1, 2; x86-64 and x86-64-v3)
# includes src/inc/h.h; "o" (x86-64, no params) includes nothing of ours.
make_project() {
  mkdir -p "$1/recipes" "$1/src/inc"
  cat >"$1/src/inc/h.h" <<'C'
#define SCALE 3
C
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
  cpu {
    source = "../src/k.c",
    targets = { "x86-64", "x86-64-v3" },
  },
}
LUA
  cat >"$1/recipes/o.lua" <<'LUA'
kernel "o" {
  cpu { source = "../src/o.c", entry = { "o" }, targets = { "x86-64" } },
}
LUA
}
