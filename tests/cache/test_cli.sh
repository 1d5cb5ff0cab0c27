#!/bin/bash
# gk cache stats / verify / gc as a user meets them: --help, usage errors,
# the messages on a damaged cache, and what --fix says it did.
. "$(dirname "$0")/lib.sh"

run() {
  "$@" >"$T/stdout" 2>"$T/stderr"
  status=$?
}
expect() { # STATUS DESCRIPTION [TEXT-IN-STDOUT-OR-STDERR]
  [ "$status" -eq "$1" ] || fail "$2: exit $status, expected $1: $(cat "$T/stdout" "$T/stderr")"
  if [ $# -ge 3 ]; then
    cat "$T/stdout" "$T/stderr" | grep -qF -- "$3" || fail "$2: output lacks '$3': $(cat "$T/stdout" "$T/stderr")"
  fi
}

for sub in "" stats verify gc; do
  run "$GK" cache $sub --help
  expect 0 "gk cache $sub --help" "usage: gk cache"
done
run "$GK" help cache
expect 0 "gk help cache" "usage: gk cache"
run "$GK" --help
expect 0 "gk --help" "cache"
run "$GK" cache
expect 2 "gk cache alone" "needs a subcommand"
run "$GK" cache frob
expect 2 "unknown subcommand" "unknown subcommand 'frob'"
run "$GK" cache verify --frob
expect 2 "unknown option" "unknown option '--frob'"
run "$GK" cache gc --cache "$T"
expect 2 "gc without --max-size" "missing --max-size"
for bad in 12X -5 M 1.5.2G ""; do
  run "$GK" cache gc --cache "$T" --max-size "$bad"
  expect 2 "--max-size '$bad'" "bad size '$bad'"
done
run "$GK" cache verify --cache "$T/nowhere"
expect 1 "a cache that does not exist" "no cache at '$T/nowhere'"
run "$GK" cache stats --cache "$T"
expect 1 "a folder that is no cache" "'$T' is not a gk build cache"

# A small real cache: one trivial kernel, one compile.
mkdir -p "$T/p/recipes" "$T/p/src"
echo '__attribute__((visibility("default"))) int o(int x) { return x + 1; }' >"$T/p/src/o.c"
cat >"$T/p/recipes/o.lua" <<'LUA'
kernel "o" {
  cpu { source = "../src/o.c", entry = { "o" }, targets = { "x86-64" } },
}
LUA
C=$T/cache
"$GK" build --recipes "$T/p/recipes" --out "$T/out" --cache "$C" 2>"$T/build.err" || fail "build: $(cat "$T/build.err")"

run "$GK" cache stats --cache "$C"
expect 0 "stats" "objects"
grep -qE '^objects +1 ' "$T/stdout" || fail "stats counts one object: $(cat "$T/stdout")"
run "$GK" cache stats --cache "$C" --json
expect 0 "stats --json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["objects"] == 1 and d["records"] == 1 and d["total_bytes"] == d["object_bytes"] + d["record_bytes"] + d["run_bytes"] + d["index_bytes"], d' "$T/stdout" ||
  fail "stats --json: $(cat "$T/stdout")"
GK_CACHE_DIR=$C run "$GK" cache verify
expect 0 "verify through GK_CACHE_DIR" "0 problems, 0 garbage"

# Damage: one byte of the object.
obj=$(find "$C/v1/objects" -type f)
printf 'X' | dd of="$obj" bs=1 seek=64 conv=notrunc 2>/dev/null
run "$GK" cache verify --cache "$C"
expect 1 "verify on a damaged object" "damaged-object"
grep -qF "v1/objects/" "$T/stdout" || fail "the finding names the object: $(cat "$T/stdout")"
grep -qF "verify --fix" "$T/stdout" || fail "the finding says how to repair: $(cat "$T/stdout")"
grep -qF "is inconsistent" "$T/stderr" || fail "verify says the cache is inconsistent: $(cat "$T/stderr")"
run "$GK" cache verify --cache "$C" --json
expect 1 "verify --json on a damaged object"
python3 - "$T/stdout" <<'PY' || fail "verify --json: $(cat "$T/stdout")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["consistent"] is False and d["problems"] == 2, d
kinds = sorted(f["kind"] for f in d["findings"])
assert kinds == ["damaged-object", "dangling"], kinds
assert all(f["problem"] and not f["fixed"] for f in d["findings"]), d
PY
run "$GK" cache verify --cache "$C" --fix
expect 0 "verify --fix" "removed"
grep -q "fixed 2" "$T/stdout" || fail "--fix counts what it fixed: $(cat "$T/stdout")"
[ -e "$obj" ] && fail "--fix kept the damaged object"
run "$GK" cache verify --cache "$C"
expect 0 "verify after --fix" "0 problems"
# The next build compiles the removed image again.
"$GK" build --recipes "$T/p/recipes" --out "$T/out" --cache "$C" --json >"$T/b.json" 2>"$T/build.err" || fail "build after --fix"
[ "$(json "$T/b.json" 'd["compiled"]')" = 1 ] || fail "build after --fix compiles the removed image"

finish
