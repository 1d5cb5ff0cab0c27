#!/bin/bash
# Bad inputs to every command: each a clear message and the right exit status.
. "$(dirname "$0")/lib.sh"

run "$GK"; expect_status 2 "gk without a command"
run "$GK" --help; expect_status 0 "gk --help"; expect_out "usage: gk" "gk --help"
run "$GK" frobnicate; expect_status 2 "unknown command"; expect_err "'frobnicate' is not a gk command" "unknown command"
run "$GK" --version; expect_status 0 "--version"
for c in build pack ls matrix verify probe; do
  run "$GK" "$c" --help; expect_status 0 "gk $c --help"; expect_out "usage: gk $c" "gk $c --help"
  run "$GK" help "$c"; expect_status 0 "gk help $c"; expect_out "usage: gk $c" "gk help $c"
done
for c in ls matrix verify; do
  run "$GK" "$c"; expect_status 2 "gk $c without archive"
  run "$GK" "$c" "$ARCHIVE" --bogus; expect_status 2 "gk $c --bogus"; expect_err "'--bogus'" "gk $c --bogus names it"

  run "$GK" "$c" "$T/missing.gkfat"; expect_status 1 "gk $c missing file"
  expect_err "$T/missing.gkfat" "gk $c missing file names it"

  echo "hello, not an archive" >"$T/text.gkfat"
  run "$GK" "$c" "$T/text.gkfat"; expect_status 1 "gk $c text file"
  expect_err "not a gllm-kernels archive" "gk $c text file"

  head -c 100000 /dev/urandom >"$T/random.gkfat"
  run "$GK" "$c" "$T/random.gkfat"; expect_status 1 "gk $c random bytes"
  expect_err "not a gllm-kernels archive" "gk $c random bytes"

  rm -f "$T/foreign.db"
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table t(x)'); c.commit()" "$T/foreign.db"
  run "$GK" "$c" "$T/foreign.db"; expect_status 1 "gk $c foreign SQLite"
  expect_err "not a gllm-kernels archive" "gk $c foreign SQLite"
done
# A future format version is named as such.
cp "$ARCHIVE" "$T/future.gkfat"
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma user_version=99'); c.commit()" "$T/future.gkfat"
run "$GK" ls "$T/future.gkfat"; expect_status 1 "future version"; expect_err "99" "future version names it"
finish
