#!/bin/sh
# build.sh BUILD_DIR WORK_DIR - gk build's speed (issue 9, item 3): a no-op
# rebuild of the whole matrix, and a cold build on every core.
#
# No-op: builds every recipe for every backend whose toolchain is here
# (what ci/main.sh builds) into WORK_DIR/build-matrix with the tests' cache
# (GK_TEST_CACHE of BUILD_DIR, so a tree whose tests ran compiles nothing;
# GK_BENCH_BUILD_CACHE overrides), then times no-op rebuilds (the fast path:
# the last build's record checked by stat), alternating with the same build
# without the fast path (GK_BUILD_FAST=0: Lua keys every job through the
# build index) and with the baseline: without the index either
# (GK_BUILD_INDEX=0: every key's record read, every image hashed).
# Goal: median under 50 ms.
# Cold: a fresh cache, backends cpu and vulkan (GK_BENCH_BUILD_COLD=full:
# the whole matrix, ~10 min of CPU; none: skip; or a list like cpu,rocm),
# at the default -j (every core) and at -j 1; reports CPU time over wall
# time (goal: close to the number of cores). GK_BENCH_BUILD_RUNS sets the
# no-op runs (default 15); GK_BENCH_BUILD_RECIPES another recipes folder
# (tests use a tiny one). Prints markdown; writes WORK_DIR/build.json.
set -eu
case ${1:-} in -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -eq 2 ] || { echo "usage: bench/build.sh BUILD_DIR WORK_DIR (see --help)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1 work=$2
[ -x "$build/gk" ] || { echo "bench/build.sh: $build/gk missing: build the project first (ci/configure.sh $build)" >&2; exit 1; }
mkdir -p "$work"
cache=${GK_BENCH_BUILD_CACHE:-}
if [ -z "$cache" ]; then
  cache=$(sed -n 's/^GK_TEST_CACHE:PATH=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
  [ -n "$cache" ] || cache=$build/test-cache
fi

exec python3 - "$build/gk" "${GK_BENCH_BUILD_RECIPES:-$root/recipes}" "$work" "$cache" \
  "${GK_BENCH_BUILD_COLD:-subset}" "${GK_BENCH_BUILD_RUNS:-15}" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time

gk, recipes, work, cache, cold_mode, runs = sys.argv[1:7]
runs = int(runs)
GOAL_MS = 50.0
ncpu = os.cpu_count() or 1


def timed(argv, env=None):
    """Runs argv; returns wall seconds, CPU seconds (gk and the compilers it
    waited for: os.times counts reaped descendants), stdout, stderr."""
    e = dict(os.environ)
    e.update(env or {})
    r0 = os.times()
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=e, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = os.times()
    code, out, err = p.returncode, p.stdout, p.stderr
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    if code != 0:
        sys.stderr.write(err)
        sys.exit(f"bench/build.sh: {' '.join(argv)} failed (exit {code})")
    return wall, cpu, out, err


matrix_out = os.path.join(work, "build-matrix")
base = [gk, "build", "--recipes", recipes, "--out", matrix_out, "--cache", cache, "--json"]

# Warm-up: whatever the cache lacks is compiled now (reported, not timed).
wall, cpu, out, _ = timed(base)
warm = json.loads(out)
# Stamps are trusted once files have been unchanged for 2 s (whole seconds
# for gk.stat's "settled": 3 s are surely past 2): let the images
# just written settle, then one build records them in the index.
time.sleep(3.1)
for _ in range(2):
    timed(base)

fast, mid, slow = [], [], []
for _ in range(runs):
    w, c, out, _ = timed(base)
    assert json.loads(out)["compiled"] == 0
    fast.append((w, c))
    w, c, out, _ = timed(base, {"GK_BUILD_FAST": "0"})
    assert json.loads(out)["compiled"] == 0
    mid.append((w, c))
    w, c, out, _ = timed(base, {"GK_BUILD_INDEX": "0"})
    assert json.loads(out)["compiled"] == 0
    slow.append((w, c))
# Whether the timed builds were answered by the fast path (it says so on
# GK_BUILD_TRACE): a bench of the wrong path would mislead.
_, _, _, err = timed(base, {"GK_BUILD_TRACE": "1"})
fast_hit = "trace: fast path hit" in err
floor = [timed([gk, "build", "--help"])[:2] for _ in range(runs)]


def med(xs, i):
    return statistics.median(x[i] for x in xs) * 1e3


noop = dict(images=warm["images"], compiled_in_warmup=warm["compiled"],
            backends={b["backend"]: b["images"] for b in warm["backends"]},
            runs=runs, median_ms=med(fast, 0), median_cpu_ms=med(fast, 1),
            min_ms=min(x[0] for x in fast) * 1e3, fast_path_hit=fast_hit,
            index_median_ms=med(mid, 0), index_median_cpu_ms=med(mid, 1),
            baseline_median_ms=med(slow, 0), baseline_median_cpu_ms=med(slow, 1),
            gk_start_median_ms=med(floor, 0))
noop["ratio"] = noop["median_ms"] / noop["baseline_median_ms"]
noop["goal_ms"] = GOAL_MS
noop["met"] = noop["median_ms"] < GOAL_MS
with open("/proc/loadavg") as f:
    noop["loadavg"] = float(f.read().split()[0])

cold = None
if cold_mode != "none":
    names = [] if cold_mode == "full" else (
        ["cpu", "vulkan"] if cold_mode == "subset" else cold_mode.split(","))
    sel = [a for b in names for a in ("--backend", b)]
    res = {}
    for jobs in (None, 1):
        c = os.path.join(work, "build-cold-cache")
        o = os.path.join(work, "build-cold-out")
        shutil.rmtree(c, ignore_errors=True)
        shutil.rmtree(o, ignore_errors=True)
        argv = [gk, "build", "--recipes", recipes, "--out", o, "--cache", c, "--json"] + sel
        if jobs:
            argv += ["-j", str(jobs)]
        w, cp, out, _ = timed(argv)
        s = json.loads(out)
        res[jobs or ncpu] = dict(wall_s=w, cpu_s=cp, compiled=s["compiled"],
                                 cpu_over_wall=cp / w)
        shutil.rmtree(c, ignore_errors=True)
        shutil.rmtree(o, ignore_errors=True)
    par, one = res[ncpu], res[1]
    cold = dict(backends=", ".join(names) or "all", cores=ncpu,
                parallel=par, serial=one, speedup=one["wall_s"] / par["wall_s"],
                goal_cpu_over_wall=0.9 * ncpu, met=par["cpu_over_wall"] >= 0.9 * ncpu)

result = dict(noop=noop, cold=cold, met=noop["met"] and (cold is None or cold["met"]))
path = os.path.join(work, "build.json")
with open(path + ".tmp", "w") as f:
    json.dump(result, f, indent=2, sort_keys=True)
os.replace(path + ".tmp", path)

n = noop
print("## Build speed (issue 9, item 3)")
print()
print(f"No-op rebuild of the whole matrix: {n['images']} images "
      f"({', '.join(f'{k} {v}' for k, v in sorted(n['backends'].items()))}), "
      f"`gk build` with nothing to compile ({n['compiled_in_warmup']} compiled in the warm-up), "
      f"answered by the fast path (the last build's record checked by stat; "
      f"{'it answered' if n['fast_path_hit'] else 'it did NOT answer'} a traced run). "
      f"Medians of {n['runs']} runs, alternating with the same build without the fast path "
      f"(`GK_BUILD_FAST=0`: every job keyed through the build index) and with the baseline "
      f"without the index either (`GK_BUILD_INDEX=0`: every key's record read, every image "
      f"hashed). CPU includes git status. Load average {n['loadavg']:.1f} on {ncpu} cores.")
print()
print("| build | median wall | median CPU |")
print("|---|---|---|")
print(f"| no-op, fast path | {n['median_ms']:.1f} ms (best {n['min_ms']:.1f}) | {n['median_cpu_ms']:.1f} ms |")
print(f"| no-op, build index (`GK_BUILD_FAST=0`) | {n['index_median_ms']:.1f} ms | {n['index_median_cpu_ms']:.1f} ms |")
print(f"| no-op, baseline (records) | {n['baseline_median_ms']:.1f} ms | {n['baseline_median_cpu_ms']:.1f} ms |")
print(f"| `gk build --help` (process start) | {n['gk_start_median_ms']:.1f} ms | |")
print()
print(f"Ratio {n['ratio']:.2f}x the baseline. Goal: median under {GOAL_MS:.0f} ms: "
      f"{'met' if n['met'] else 'NOT met'}.")
if cold:
    p, o = cold["parallel"], cold["serial"]
    print()
    print(f"Cold build ({cold['backends']}; fresh cache; {p['compiled']} compiles), one run each:")
    print()
    print("| -j | wall | CPU | CPU / wall |")
    print("|---|---|---|---|")
    print(f"| default ({ncpu}) | {p['wall_s']:.1f} s | {p['cpu_s']:.1f} s | {p['cpu_over_wall']:.2f} |")
    print(f"| 1 (baseline) | {o['wall_s']:.1f} s | {o['cpu_s']:.1f} s | {o['cpu_over_wall']:.2f} |")
    print()
    print(f"Speedup {cold['speedup']:.2f}x over -j 1. Goal: CPU/wall at least "
          f"{cold['goal_cpu_over_wall']:.1f} on {ncpu} cores: {'met' if cold['met'] else 'NOT met'}.")
PY
