#!/bin/sh
# test_leaks.sh HELPER MODULE - sanitize.leaks: the sanitizer stage's
# settings (ci/sanitizers/env.sh, sourced here as ci/sanitize.sh does) hide
# the third-party drivers' leftovers and nothing else.
#  1. clean: a device detection, Vulkan drivers included, reports nothing;
#  2. main: a block leaked by our own program fails, named by its function;
#  3. module: a block left in a dlclose()d library of ours ("<unknown
#     module>", the shape of Mesa's leftovers) fails too.
set -u
helper=$1 module=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
GK_SANITIZERS=$root/ci/sanitizers
. "$GK_SANITIZERS/env.sh"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

run() { # MODE...: runs the helper, output in $tmp/out, status in $st
  "$helper" "$@" >"$tmp/out" 2>&1
  st=$?
}
bad() { echo "FAIL: $*"; sed 's/^/  | /' "$tmp/out"; fail=1; }

run clean
if [ $st -ne 0 ] || grep -q "LeakSanitizer" "$tmp/out"; then
  bad "clean: exit $st, expected 0 with no report (GK_SANITIZE_KEEP=$GK_SANITIZE_KEEP)"
else
  echo "ok: clean: $(head -n 1 "$tmp/out"), no report"
fi

run main
if [ $st -eq 0 ] || ! grep -q "Direct leak of 48 byte" "$tmp/out" ||
   ! grep -q "in main .*leak_helper.c" "$tmp/out"; then
  bad "main: exit $st, expected LeakSanitizer to report 48 bytes from main (leak_helper.c)"
else
  echo "ok: main: our leak reported (exit $st)"
fi

run module "$module"
if [ $st -eq 0 ] || ! grep -q "Direct leak of 128 byte" "$tmp/out"; then
  bad "module: exit $st, expected LeakSanitizer to report 128 bytes from the closed module"
else
  echo "ok: module: a leak from an unloaded library is reported (exit $st)"
fi
exit $fail
