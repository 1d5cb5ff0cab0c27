#!/bin/sh
# test.sh [CTEST_ARGS...] - runs the whole test suite (unit, CLI and
# numeric kernel tests) after setting up the machine and building, then the
# same suite under sanitizers (ci/sanitize.sh).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/ci/setup.sh"
"$root/ci/configure.sh" "$root/build"
# Stage 1: the suite in the plain tree. Stage 2 (ci/sanitize.sh): valgrind
# of the loader tests, then the whole suite again under ASan + UBSan in
# build-sanitize/, reusing stage 1's compiled test images. Both always run;
# the script fails if either does. GK_NO_SANITIZE=1 runs stage 1 only.
status=0
(cd "$root/build" &&
  ctest --output-on-failure -j "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)" "$@") ||
  status=1
if [ "${GK_NO_SANITIZE:-}" != 1 ]; then
  "$root/ci/sanitize.sh" "$root/build" "$@" || status=1
fi
[ "$status" = 0 ] || echo "ci/test.sh: FAILED (see the stage reports above)" >&2
exit $status
