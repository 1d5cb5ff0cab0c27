#!/bin/sh
# fuzz.sh [-t SECONDS] [--merge] [TARGET...] - builds the libFuzzer targets
# (clang, -DGK_FUZZ=ON, in build-fuzz/) and runs each for SECONDS (default
# 600), one process at a time: archive (open from file and memory, select,
# read, load), elf (every backend's image readers), launch (the rows'
# launch JSON and count expressions), recipe (the recipe engine). Default:
# all four.
#
# Each run starts from the committed corpus tests/fuzz/corpus/TARGET and
# grows a working corpus in build-fuzz/fuzz/TARGET/corpus; a crash is
# written to build-fuzz/fuzz/TARGET/crash-* and fails the script (add the
# input to tests/fuzz/corpus/TARGET once fixed: ctest replays it). --merge
# then adds the working inputs that reach new coverage to the committed
# corpus (libFuzzer -merge=1); keep it small (< 2 MB).
# The last lines of each log (executions, coverage) are printed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
secs=600
merge=0
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -t) secs=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    -*) echo "ci/fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
case $secs in *[!0-9]* | "") echo "ci/fuzz.sh: -t takes seconds, not '$secs'" >&2; exit 2 ;; esac
targets=${*:-archive elf launch recipe}
for t in $targets; do
  case $t in archive|elf|launch|recipe) ;; *) echo "ci/fuzz.sh: unknown target '$t' (archive, elf, launch, recipe)" >&2; exit 2 ;; esac
done

"$root/ci/setup.sh"
cc=$(command -v clang-14 || command -v clang || true)
[ -n "$cc" ] || { echo "ci/fuzz.sh: clang not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }
build=${GK_FUZZ_BUILD:-$root/build-fuzz}
[ -f "$build/CMakeCache.txt" ] ||
  CC=$cc cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGK_FUZZ=ON >/dev/null
# shellcheck disable=SC2046 # one word per target
cmake --build "$build" --target $(for t in $targets; do printf 'fuzz_%s ' "$t"; done)

status=0
for t in $targets; do
  dir=$build/fuzz/$t
  mkdir -p "$dir/corpus"
  seeds=$root/tests/fuzz/corpus/$t
  [ "$t" = recipe ] && seeds="$seeds $root/tests/recipes/corpus"
  echo "== fuzz_$t: $secs s" >&2
  # Leaks are findings too (detect_leaks is on by default); the malloc
  # limit turns an allocation a hostile size could trigger into a finding.
  # shellcheck disable=SC2086 # $seeds is a list of folders
  if ! (cd "$dir" && "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" \
        -rss_limit_mb=2048 -malloc_limit_mb=1536 -timeout=30 \
        -print_final_stats=1 -artifact_prefix="$dir/" \
        "$dir/corpus" $seeds >"$dir/log" 2>&1); then
    status=1
    echo "ci/fuzz.sh: fuzz_$t found a crash: see $dir/log and $dir/crash-*" >&2
  fi
  grep -E '^#[0-9]+.*(DONE|cov:)' "$dir/log" | tail -1 >&2 || true
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$dir/log" >&2 || true
  if [ "$merge" = 1 ]; then
    "$build/tests/fuzz/fuzz_$t" -merge=1 "$root/tests/fuzz/corpus/$t" "$dir/corpus" >>"$dir/log" 2>&1
    du -sh "$root/tests/fuzz/corpus/$t" >&2
  fi
done
exit $status
