#!/bin/sh
# sanitize.sh [PLAIN_BUILD] [CTEST_ARGS...] - the second stage of
# ci/test.sh, after the plain suite has passed in PLAIN_BUILD (default
# build/):
#  1. valgrind memcheck of the loader tests (ctest's loader.*), run from
#     the plain tree: any memory error or definite/indirect leak fails;
#  2. a second tree, build-sanitize/ (GK_SANITIZE=ON: ASan + UBSan,
#     -fno-sanitize-recover=all), and the whole ctest suite in it but the
#     tests labelled `compiler` (cuda.ptxas, cuda.hip_compile: nvcc and
#     hipcc on the kernel sources, no code of ours to sanitize; 550 s of
#     this stage in CI on 2026-12-01).
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
python3 - "$plain" "$supp/valgrind.supp" "$jobs" <<'PY' || status=1
import concurrent.futures, json, os, subprocess, sys, time
build, supp, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
tests = json.load(open(os.path.join(build, "valgrind-tests.json")))["tests"]
runs = []
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
    runs.append((t["name"], cmd, props, env))
vg = ["valgrind", "--tool=memcheck", "--error-exitcode=99", "--leak-check=full",
      "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
      "--suppressions=" + supp, "-q"]

def run(job):
    name, cmd, props, env = job
    start = time.time()
    r = subprocess.run(vg + cmd, cwd=props.get("WORKING_DIRECTORY", build), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace")
    return r, time.time() - start

# The tests run side by side (one a CPU), the longest first by ctest's
# record of the plain run (loader.corrupt and loader.mutate: 225 and 143 s
# of 413 one after another, CI 2026-12-01); reported in ctest's order.
cost = {}
try:
    for line in open(os.path.join(build, "Testing", "Temporary", "CTestCostData.txt")):
        f = line.split()
        if len(f) == 3:
            cost[f[0]] = float(f[2])
except (OSError, ValueError):
    pass
order = sorted(range(len(runs)), key=lambda i: -cost.get(runs[i][0], 0.0))
with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
    done = dict(zip(order, pool.map(run, [runs[i] for i in order])))
results = [done[i] for i in range(len(runs))]
passed = failed = skipped = 0
for (name, cmd, props, env), (r, took) in zip(runs, results):
    if r.returncode == int(props.get("SKIP_RETURN_CODE", -1)):
        skipped += 1
        print("  %-20s SKIP (%.0f s)" % (name, took))
    elif r.returncode == 0:
        passed += 1
        print("  %-20s ok (%.0f s)" % (name, took))
    else:
        failed += 1
        print("  %-20s FAILED (exit %d, %.0f s)\n%s" % (name, r.returncode, took,
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
(cd "$san" && ctest --output-on-failure -j "$jobs" -LE '^compiler$' "$@") || status=1
exit $status
