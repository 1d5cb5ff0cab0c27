#!/bin/bash
# gk's usage and help, command by command. The bad inputs themselves (bad
# flags, missing or damaged archives, unwritable or full outputs) are rows
# of bad_inputs.tsv, one test each (cli.bad_input.*).
. "$(dirname "$0")/lib.sh"

run "$GK"; expect_status 2 "gk without a command"; expect_err "usage: gk" "gk without a command"
run "$GK" --help; expect_status 0 "gk --help"; expect_out "usage: gk" "gk --help"
run "$GK" --version; expect_status 0 "--version"; expect_out "gk " "--version"
for c in build pack ls matrix verify probe diff extract embed; do
  run "$GK" "$c" --help; expect_status 0 "gk $c --help"; expect_out "usage: gk $c" "gk $c --help"
  [ -s "$T/stderr" ] && fail "gk $c --help wrote to stderr: $(cat "$T/stderr")"
  run "$GK" help "$c"; expect_status 0 "gk help $c"; expect_out "usage: gk $c" "gk help $c"
done
# Every command gk lists has a row for an unknown flag in the table.
table=$(dirname "$0")/bad_inputs.tsv
"$GK" --help | sed -n 's/^  \([a-z]*\) .*/\1/p' >"$T/commands"
for c in $(cat "$T/commands"); do
  case $c in keygen | sign | cache) continue ;; esac # their own tests cover them
  grep -q "^$c\.[a-z_]*	" "$table" || fail "bad_inputs.tsv has no row for 'gk $c'"
done
finish
