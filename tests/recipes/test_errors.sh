#!/bin/bash
# gk build: what the table of bad inputs (tests/cli/bad_inputs.tsv, one test
# per row: recipe errors, toolchains, flags, unwritable and full outputs)
# does not cover: the message alone on stderr, the failure summary of
# --json, and --help.
. "$(dirname "$0")/lib.sh"

P=$T/p
make_project "$P"
R=$T/r  # a recipes folder holding one bad recipe
mkdir -p "$R"

# A recipe error is one line on stderr, nothing else, and no folder made.
cat >"$R/r.lua" <<LUA
kernel "k" {
  cpu { source = "$P/src/k.c", targets = { "x86-64", "x86-64-v9" } },
}
LUA
run "$GK" build --recipes "$R" --out "$T/out" --cache "$T/cache"
expect_status 1 "recipe error"
expect_err_line "gk build: $R/r.lua:2: unknown target 'x86-64-v9' for cpu; known: x86-64, x86-64-v2, x86-64-v3, x86-64-v4" \
  "recipe error"
[ "$(wc -l <"$T/stderr")" -eq 1 ] || fail "recipe error: more than one line on stderr: $(cat "$T/stderr")"
[ -e "$T/out" ] && fail "recipe error: an output folder was created"
[ -e "$T/cache" ] && fail "recipe error: the cache folder was created"

# --help: usage on stdout, exit 0; also through gk help build.
run "$GK" build --help
expect_status 0 "--help"
expect_out "usage: gk build --recipes DIR --out DIR" "--help prints usage"
[ -s "$T/stderr" ] && fail "--help wrote to stderr"
run "$GK" help build
expect_status 0 "gk help build"
expect_out "usage: gk build" "gk help build"

# --json on a failure: a JSON object saying why, on stdout.
cat >"$R/r.lua" <<'LUA'
kernel "k" { cpu { source = "nope.c", targets = { "x86-64" } } }
LUA
run "$GK" build --recipes "$R" --out "$T/out" --cache "$T/cache" --json
expect_status 1 "--json failure"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is False and "nope.c" in d["error"], d' "$T/stdout" \
  || fail "--json failure summary: $(cat "$T/stdout")"

finish
