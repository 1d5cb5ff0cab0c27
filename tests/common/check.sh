# check.sh - the assertions every shell test shares, sourced by each test
# folder's lib.sh after it has made its scratch folder $T and set
# failures=0. A test ends with `finish`.

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
skip() { echo "SKIP: $*"; exit 77; }

# run CMD...: runs a command, keeping its exit status, stdout and stderr.
run() {
  "$@" >"$T/stdout" 2>"$T/stderr"
  status=$?
}

# expect_status N DESCRIPTION
expect_status() {
  [ "$status" -eq "$1" ] || { fail "$2: exit $status, expected $1"; cat "$T/stderr" >&2; }
}

# expect_err TEXT DESCRIPTION: stderr contains TEXT (fixed string).
expect_err() {
  grep -qF -- "$1" "$T/stderr" || { fail "$2: stderr lacks '$1'"; cat "$T/stderr" >&2; }
}

# expect_err_line TEXT DESCRIPTION: one whole line of stderr is TEXT.
expect_err_line() {
  grep -qxF -- "$1" "$T/stderr" || { fail "$2: stderr has no line '$1'"; cat "$T/stderr" >&2; }
}

# expect_out TEXT DESCRIPTION: stdout contains TEXT (fixed string).
expect_out() {
  grep -qF -- "$1" "$T/stdout" || { fail "$2: stdout lacks '$1'"; cat "$T/stdout" >&2; }
}

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "all checks passed"
  exit 0
}
