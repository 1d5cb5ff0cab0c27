#!/bin/sh
# run.sh [--only NAME[,NAME...]] [BUILD_DIR] - runs the benchmarks and writes
# one report.
#
# Each benchmark is bench/<name>.sh BUILD_DIR WORK_DIR: it measures its
# baseline in the same run (these machines are noisy, so ratios against a
# baseline measured seconds apart mean more than absolute numbers), prints a
# markdown section on stdout and writes WORK_DIR/<name>.json. This script runs
# them in a fixed order and writes bench/out/report.md and report.json.
# Benchmarks are never timed tests in CI; tests/bench only checks they run.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
only=""
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --only) only=$2; shift 2 ;;
    --only=*) only=${1#--only=}; shift ;;
    -*) echo "bench/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
build=${1:-$root/build}
out=$root/bench/out
mkdir -p "$out"
"$root/ci/configure.sh" "$build" >/dev/null

names="size load build cpu gpu"
report=$(mktemp "$out/report.md.XXXXXX")
json=$(mktemp "$out/report.json.XXXXXX")
trap 'rm -f "$report" "$json"' EXIT
{
  echo "# gllm-kernels benchmarks"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)," \
       "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
} >"$report"
for n in $names; do
  if [ -n "$only" ]; then
    case ",$only," in *",$n,"*) ;; *) continue ;; esac
  fi
  [ -x "$root/bench/$n.sh" ] || { echo "bench: $n.sh missing; skipped" >&2; continue; }
  echo "bench: $n ..." >&2
  echo >>"$report"
  "$root/bench/$n.sh" "$build" "$out" >>"$report"
done
mv "$report" "$out/report.md"
# One JSON for programs: the parts' JSON files keyed by name.
python3 - "$out" $names <<'PY' >"$json"
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
r = {}
for n in names:
    p = os.path.join(out, n + ".json")
    if os.path.exists(p):
        r[n] = json.load(open(p))
print(json.dumps(r, indent=2, sort_keys=True))
PY
mv "$json" "$out/report.json"
cat "$out/report.md"
