#!/bin/bash
# gk pack: deterministic, atomic, and it checks what it packs.
. "$(dirname "$0")/lib.sh"

# The same folder packed twice, and a copy of it at another path, give the
# same bytes.
run "$GK" pack "$OUT" -o "$T/a.gkfat"; expect_status 0 "pack a"
run "$GK" pack "$OUT" -o "$T/b.gkfat"; expect_status 0 "pack b"
cp -r "$OUT" "$T/copy"
rm -f "$T/copy"/*.gkfat
run "$GK" pack "$T/copy" -o "$T/c.gkfat"; expect_status 0 "pack copy"
cmp -s "$T/a.gkfat" "$T/b.gkfat" || fail "packing twice gave different bytes"
cmp -s "$T/a.gkfat" "$T/c.gkfat" || fail "packing a copy elsewhere gave different bytes"
[ "$(stat -c %a "$T/a.gkfat")" = 644 ] || fail "archive mode is $(stat -c %a "$T/a.gkfat"), expected 644"

# Dedup: a second row pointing at the same image bytes adds no blob.
python3 - "$T/copy/manifest.json" <<'PY'
import json, sys
p = sys.argv[1]; m = json.load(open(p))
im = dict(m["images"][0]); im["kernel"] = im["kernel"] + "_dup"; m["images"].append(im)
json.dump(m, open(p, "w"))
PY
run "$GK" pack "$T/copy" -o "$T/d.gkfat"; expect_status 0 "pack with a duplicate image"
# (Images of different levels may already share bytes: compare with a.gkfat.)
counts() {
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('select count(*) from blob').fetchone()[0], c.execute('select count(*) from image').fetchone()[0])" "$1"
}
set -- $(counts "$T/a.gkfat") $(counts "$T/d.gkfat")
[ "$3" -eq "$1" ] && [ "$4" -eq $(($2 + 1)) ] ||
  fail "dedup: $3 blobs for $4 rows, expected $1 blobs (as before) for $(($2 + 1)) rows"

# A tampered image is refused, naming the file, and nothing is written.
cp -r "$OUT" "$T/bad"
img=$(ls "$T"/bad/cpu/qmatmul/*.so | head -1)
printf 'x' >>"$img"
run "$GK" pack "$T/bad" -o "$T/bad.gkfat"; expect_status 1 "pack tampered"
expect_err "$(basename "$img")" "pack tampered names the image"
expect_err "rebuild with 'gk build'" "pack tampered says what to do"
[ ! -e "$T/bad.gkfat" ] || fail "a failed pack left an archive behind"
ls "$T" | grep -q 'tmp' && fail "a failed pack left a temporary file: $(ls "$T")"

# A manifest path leaving the folder is refused.
python3 - "$T/copy/manifest.json" <<'PY'
import json, sys
p = sys.argv[1]; m = json.load(open(p)); m["images"][0]["path"] = "../../etc/passwd"
json.dump(m, open(p, "w"))
PY
run "$GK" pack "$T/copy" -o "$T/e.gkfat"; expect_status 1 "pack escaping path"
expect_err "leaves the folder" "pack escaping path message"

# No manifest: says to run gk build.
mkdir "$T/empty"
run "$GK" pack "$T/empty" -o "$T/f.gkfat"; expect_status 1 "pack without manifest"
expect_err "manifest.json" "pack without manifest names the file"
expect_err "gk build" "pack without manifest says what to do"

# Unwritable destination.
run "$GK" pack "$OUT" -o "$T/no/such/dir/x.gkfat"; expect_status 1 "pack into a missing folder"
expect_err "$T/no/such/dir/x.gkfat" "pack into a missing folder names the path"

# Usage errors.
run "$GK" pack; expect_status 2 "pack without arguments"
run "$GK" pack "$OUT" -o "$T/x.gkfat" --level 99; expect_status 2 "pack --level 99"
expect_err "--level" "pack --level 99 names the option"
run "$GK" pack "$OUT" -o; expect_status 2 "pack -o without value"
finish
