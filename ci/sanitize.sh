#!/bin/sh
# sanitize.sh [PLAIN_BUILD] [CTEST_ARGS...] - the second stage of
# ci/test.sh, after the plain suite has passed in PLAIN_BUILD (default
# build/):
#  1. valgrind memcheck of the loader tests (ctest's loader.*), run from
#     the plain tree: any memory error or definite/indirect leak fails;
#  2. a second tree, build-sanitize/ (GK_SANITIZE=ON: ASan + UBSan,
#     -fno-sanitize-recover=all), and the WHOLE ctest suite in it.
# The sanitizer tree shares the plain tree's test cache (GK_TEST_CACHE), so
# the fixtures' images are compiled once, by the plain stage: this stage
# costs a build of our own code and a run of the suite, not another cold
# build of every kernel. Known third-party noise is suppressed by name in
# ci/sanitizers/ (each entry says which library and why), and third-party
# libraries that are dlopen()ed and closed are kept loaded so that it can be
# named (ci/sanitizers/keep.txt).
#   GK_SANITIZE_BUILD  the sanitizer tree (default build-sanitize/)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
plain=${1:-$root/build}
[ $# -gt 0 ] && shift
san=${GK_SANITIZE_BUILD:-$root/build-sanitize}
supp=$root/ci/sanitizers
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
[ -f "$plain/CMakeCache.txt" ] || {
  echo "ci/sanitize.sh: '$plain' is not a configured build (run ci/test.sh, or ci/configure.sh first)" >&2
  exit 2
}
status=0

# 1. valgrind: every loader.* test that is one of our programs, with its
# arguments, environment and folder as ctest has them.
command -v valgrind >/dev/null 2>&1 || { echo "ci/sanitize.sh: valgrind not found (ci/setup.sh installs it)" >&2; exit 1; }
echo "== valgrind memcheck of the loader tests ($plain)" >&2
(cd "$plain" && ctest --show-only=json-v1 -R '^loader\.') >"$plain/valgrind-tests.json"
python3 - "$plain" "$supp/valgrind.supp" <<'PY' || status=1
import json, os, subprocess, sys, time
build, supp = sys.argv[1], sys.argv[2]
tests = json.load(open(os.path.join(build, "valgrind-tests.json")))["tests"]
passed = failed = skipped = 0
for t in tests:
    cmd = t.get("command") or []
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    if not cmd or not os.path.isfile(cmd[0]) or open(cmd[0], "rb").read(4) != b"\x7fELF":
        continue  # a script (loader.exports): nothing of ours to check
    # The corruption test takes every 8th case: valgrind is ~30x slower.
    if t["name"] == "loader.corrupt":
        cmd = cmd + ["--quick"]
    env = dict(os.environ)
    for kv in props.get("ENVIRONMENT", []):
        k, _, v = kv.partition("=")
        env[k] = v
    vg = ["valgrind", "--tool=memcheck", "--error-exitcode=99", "--leak-check=full",
          "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
          "--suppressions=" + supp, "-q"]
    start = time.time()
    r = subprocess.run(vg + cmd, cwd=props.get("WORKING_DIRECTORY", build), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace")
    took = time.time() - start
    if r.returncode == int(props.get("SKIP_RETURN_CODE", -1)):
        skipped += 1
        print("  %-20s SKIP (%.0f s)" % (t["name"], took))
    elif r.returncode == 0:
        passed += 1
        print("  %-20s ok (%.0f s)" % (t["name"], took))
    else:
        failed += 1
        print("  %-20s FAILED (exit %d, %.0f s)\n%s" % (t["name"], r.returncode, took,
                                                       r.stdout[-6000:]))
print("valgrind: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
sys.exit(1 if failed or not passed else 0)
PY

# 2. The whole suite under ASan + UBSan, sharing the plain tree's test cache.
cache=$(sed -n 's/^GK_TEST_CACHE:[A-Z]*=//p' "$plain/CMakeCache.txt")
[ -n "$cache" ] || cache=$plain/test-cache
echo "== ASan + UBSan: the whole suite in $san (test cache $cache)" >&2
gen=""
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
# shellcheck disable=SC2086 # $gen is empty or two words
cmake -S "$root" -B "$san" $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGK_SANITIZE=ON \
  -DGK_TEST_CACHE="$cache" >/dev/null
cmake --build "$san" -j "$jobs"
# The sanitizers' options, suppressions and the libraries kept loaded:
# ci/sanitizers/env.sh says what each is for.
GK_SANITIZERS=$supp
. "$supp/env.sh"
echo "== kept loaded (ci/sanitizers/keep.txt): $GK_SANITIZE_KEEP" >&2
(cd "$san" && ctest --output-on-failure -j "$jobs" "$@") || status=1
exit $status
