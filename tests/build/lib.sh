# lib.sh - sourced by the gk build tests: a scratch folder, a small project
# and assertions. Usage: . "$(dirname "$0")/lib.sh" with $1 = the gk binary.
set -u
GK=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
# Never touch the user's cache.
export GK_CACHE_DIR="$T/default-cache"

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# run CMD...: runs a command, keeping its exit status, stdout and stderr.
run() {
  "$@" >"$T/stdout" 2>"$T/stderr"
  status=$?
}

# expect_status N DESCRIPTION
expect_status() {
  [ "$status" -eq "$1" ] || { fail "$2: exit $status, expected $1"; cat "$T/stderr" >&2; }
}

# expect_err TEXT DESCRIPTION: stderr contains TEXT (fixed string).
expect_err() {
  grep -qF -- "$1" "$T/stderr" || { fail "$2: stderr lacks '$1'"; cat "$T/stderr" >&2; }
}

# expect_err_line TEXT DESCRIPTION: one whole line of stderr is TEXT.
expect_err_line() {
  grep -qxF -- "$1" "$T/stderr" || { fail "$2: stderr has no line '$1'"; cat "$T/stderr" >&2; }
}

# expect_out TEXT DESCRIPTION: stdout contains TEXT (fixed string).
expect_out() {
  grep -qF -- "$1" "$T/stdout" || { fail "$2: stdout lacks '$1'"; cat "$T/stdout" >&2; }
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

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "all checks passed"
}
