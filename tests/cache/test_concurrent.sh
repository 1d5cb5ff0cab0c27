#!/bin/bash
# Several gk build processes on one cache, and builds killed with SIGKILL at
# random points: the archives are byte-identical to an uninterrupted build's
# and gk cache verify finds the cache consistent every time.
. "$(dirname "$0")/lib.sh"

t0=$(now_ms)
reference
ref_ms=$(($(now_ms) - t0))
note "reference build: $NIMAGES images in ${ref_ms} ms"

# ---- (a) four builds started at once on one fresh cache ----------------------
C=$T/shared-cache
pids=""
for i in 1 2 3 4; do
  build "$C" "$T/a$i" -j1 &
  pids="$pids $!"
done
i=0
for p in $pids; do
  i=$((i + 1))
  wait "$p" || fail "concurrent build $i failed: $(cat "$T/a$i.err")"
done
compiled=0
for i in 1 2 3 4; do
  same_archive "$T/a$i" "concurrent build $i"
  c=$(json "$T/a$i.json" 'd["compiled"]')
  compiled=$((compiled + c))
done
note "concurrent builds: $compiled compiles in all for $NIMAGES images ($(($(now_ms) - t0)) ms so far)"
# All four looked up before any had stored, so they compiled the same jobs
# and stored them at the same time: that is the race under test.
[ "$compiled" -gt "$NIMAGES" ] || fail "the builds did not overlap ($compiled compiles): nothing was raced"
verify_clean "$C" "after concurrent builds"
# One candidate per key: stores of one key under the lock replace, never
# lose or duplicate, and every record points at a present object.
python3 - "$C" "$NIMAGES" <<'PY' || fail "records after concurrent builds"
import glob, json, os, sys
c = sys.argv[1]
recs = glob.glob(os.path.join(c, "v1/keys/*/*.json"))
assert len(recs) == int(sys.argv[2]), recs
for r in recs:
    d = json.load(open(r))
    assert len(d["candidates"]) == 1, (r, d)
    o = d["candidates"][0]["object"]
    assert os.path.getsize(os.path.join(c, "v1/objects", o[:2], o)) == d["candidates"][0]["size"]
assert not os.listdir(os.path.join(c, "v1/tmp")), os.listdir(os.path.join(c, "v1/tmp"))
PY

# ---- (b) builds killed at random points ---------------------------------------
# One fresh cache through every kill, as on a machine
# where builds keep crashing. Each build is its own process group (setsid):
# odd rounds kill the whole group (compilers too), even rounds only gk, whose
# compilers then run on as orphans; verify runs once the group is empty.
K=$T/kill-cache
O=$T/kill-out
seed=${GK_TEST_SEED:-$$}
RANDOM=$seed
note "kill rounds: seed $seed (GK_TEST_SEED=$seed reproduces the delays)"
killed=0
# Each round builds another ISA level, so it has compiles to do (a level an
# earlier round finished would be all cache hits, over before any kill).
levels="x86-64 x86-64-v2 x86-64-v3 x86-64-v4 x86-64"
for round in 1 2 3 4 5; do
  level=$(echo $levels | cut -d' ' -f"$round")
  # Early rounds die in the probes and first compiles, later ones anywhere
  # up to a little past the length of a whole build.
  span=$((ref_ms * round / 5 + 200))
  delay=$((RANDOM * 32768 + RANDOM))
  delay=$((delay % span))
  setsid "$GK" build --recipes "$P/recipes" --backend cpu --targets cpu="$level" \
    --cache "$K" --out "$O-$round" -j2 >"$T/k.json" 2>"$T/k.err" &
  pid=$!
  sleep "$(awk -v ms="$delay" 'BEGIN { printf "%.3f", ms / 1000 }')"
  if [ $((round % 2)) -eq 1 ]; then kill -KILL -- "-$pid" 2>/dev/null; else kill -KILL "$pid" 2>/dev/null; fi
  { wait "$pid"; } 2>/dev/null # not bash's "Killed" line
  st=$?
  for _ in $(seq 600); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
  if [ "$st" -eq 137 ]; then
    killed=$((killed + 1))
    what=killed
  elif [ "$st" -eq 0 ]; then
    what="finished first"
  else
    fail "round $round: build exited $st, not by the kill: $(cat "$T/k.err")"
    what="failed"
  fi
  if [ ! -e "$K" ]; then
    # Killed before it created the cache (the first round, killed early,
    # on a slow build such as the sanitizer tree's): nothing was written,
    # which is consistent; gk cache verify would rightly say "no cache".
    note "round $round ($level): SIGKILL after ${delay} ms: $what before the cache existed"
    continue
  fi
  "$GK" cache verify --cache "$K" --json >"$T/kv.json" 2>"$T/kv.err"
  vst=$?
  garbage=$(json "$T/kv.json" 'd["garbage"]')
  note "round $round ($level): SIGKILL after ${delay} ms: $what; verify exit $vst, $garbage garbage"
  [ "$vst" -eq 0 ] || fail "round $round: cache inconsistent after the kill: $(cat "$T/kv.json" "$T/kv.err")"
  [ "$(json "$T/kv.json" 'd["problems"]')" = 0 ] || fail "round $round: problems: $(cat "$T/kv.json")"
done
[ "$killed" -ge 2 ] || fail "only $killed of 5 builds were killed before they finished"

# The documented repair (docs/cache.md): --fix removes what dead writers
# left; then nothing is left to find.
"$GK" cache verify --cache "$K" --fix >"$T/fix.out" 2>"$T/fix.err" ||
  fail "verify --fix after the kills: $(cat "$T/fix.out" "$T/fix.err")"
verify_clean "$K" "after verify --fix"
[ -z "$(ls -A "$K/v1/tmp")" ] || fail "temporaries left after --fix: $(ls -A "$K/v1/tmp")"

# A build after the crashes gives what an uninterrupted one gives.
build "$K" "$O" || fail "build after the kills: $(cat "$O.err")"
same_archive "$O" "build after the kills"
verify_clean "$K" "after the build that followed the kills"
note "after the kills: $(json "$O.json" 'd["compiled"]') compiled, $(json "$O.json" 'd["cached"]') from cache ($(($(now_ms) - t0)) ms in all)"

finish
