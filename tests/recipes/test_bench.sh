#!/bin/bash
# bench/build.sh runs (tiny sizes: a two-kernel project, 3 runs, a cold
# build of its cpu images) and writes the JSON it promises. How fast is
# not checked: benchmarks are never timed tests.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
P=$T/p
make_project "$P"
run env GK_BENCH_BUILD_RECIPES="$P/recipes" GK_BENCH_BUILD_CACHE="$T/cache" \
  GK_BENCH_BUILD_RUNS=3 GK_BENCH_BUILD_COLD=cpu "$ROOT/bench/build.sh" "$(dirname "$GK")" "$T/work"
expect_status 0 "bench/build.sh"
expect_out "## Build speed" "the markdown section"
expect_out "| no-op, fast path |" "the no-op row"
expect_out "| no-op, build index (" "the index row"
expect_out "| 1 (baseline) |" "the cold baseline row"
python3 - "$T/work/build.json" <<'PY' || fail "build.json: $(cat "$T/work/build.json")"
import json, sys
d = json.load(open(sys.argv[1]))
n, c = d["noop"], d["cold"]
assert n["images"] == 5 and n["runs"] == 3, n
assert n["median_ms"] > 0 and n["baseline_median_ms"] > 0 and n["goal_ms"] == 50, n
assert isinstance(n["met"], bool) and n["ratio"] > 0, n
assert n["index_median_ms"] > 0 and isinstance(n["fast_path_hit"], bool), n
assert c["parallel"]["compiled"] == 5 and c["serial"]["compiled"] == 5, c
assert c["parallel"]["wall_s"] > 0 and c["cores"] >= 1, c
PY
[ ! -e "$T/work/build-cold-cache" ] || fail "the cold build's cache was left behind"
finish
