#!/bin/bash
# gk extract: images as files named as gk build names them, verified, written
# atomically, never outside DIR whatever the archive's names or DIR's links.
. "$(dirname "$0")/lib.sh"

run "$GK" extract --help; expect_status 0 "extract --help"
run "$GK" extract "$ARCHIVE"; expect_status 2 "extract without -o"
expect_err "-o DIR" "extract without -o says what is missing"

# Everything: the same files, byte for byte, as the build folder the archive
# was packed from, and a manifest that packs to the same images again.
run "$GK" extract "$ARCHIVE" -o "$T/all" --json; expect_status 0 "extract all"
py "extract all matches the build folder" "$T/stdout" "$OUT" "$T/all" <<'PY'
import hashlib, json, os, sys
d = json.load(open(sys.argv[1])); out, got = sys.argv[2], sys.argv[3]
man = {m["path"]: m for m in json.load(open(os.path.join(out, "manifest.json")))["images"]}
assert {i["path"] for i in d["images"]} == set(man), "paths differ from gk build's"
for i in d["images"]:
    b = open(os.path.join(got, i["path"]), "rb").read()
    assert b == open(os.path.join(out, i["path"]), "rb").read(), i["path"]
    assert hashlib.sha256(b).hexdigest() == i["sha256"] == man[i["path"]]["sha256"]
    assert len(b) == i["size"]
files = sorted(os.path.relpath(os.path.join(r, f), got) for r, _, fs in os.walk(got) for f in fs)
assert files == sorted(list(man) + ["manifest.json"]), files   # nothing else, no temporaries
PY
run "$GK" pack "$T/all" -o "$T/repacked.gkfat"; expect_status 0 "pack the extracted folder"
run "$GK" diff "$ARCHIVE" "$T/repacked.gkfat" --json; expect_status 0 "diff against the repacked archive"
py "extract + pack gives the same images" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["identical"] is True, d
PY

# Filters, exact match, all of them at once.
run "$GK" extract "$ARCHIVE" -o "$T/one" --kernel qmatmul --variant bits=4 --target x86-64-v3 --backend cpu
expect_status 0 "extract one image"
expect_out "cpu/qmatmul/x86-64-v3.bits4.so (" "extract one prints its path"
[ "$(find "$T/one" -type f | wc -l)" -eq 2 ] || fail "extract one: expected one image and manifest.json"
cmp -s "$T/one/cpu/qmatmul/x86-64-v3.bits4.so" "$OUT/cpu/qmatmul/x86-64-v3.bits4.so" || fail "extract one: bytes differ"
run "$GK" extract "$ARCHIVE" -o "$T/none" --backend cuda; expect_status 1 "extract with no match"
expect_err "matches --backend cuda" "extract with no match repeats the filter"
[ -e "$T/none" ] && fail "extract with no match created the folder"

# PTX rows (hash-checked only) and names with ':' and '+': written as named.
make_synthetic "$T/syn.gkfat"
run "$GK" extract "$T/syn.gkfat" -o "$T/syn" --backend cuda --kernel rmsnorm; expect_status 0 "extract ptx"
[ "$(cat "$T/syn/cuda/rmsnorm/compute_75.ptx")" = "$(ptx rmsnorm sm_75)" ] || fail "extract ptx: wrong bytes"
[ -f "$T/syn/cuda/rmsnorm/compute_90.ptx" ] || fail "extract ptx: compute_90 missing"
run "$GK" extract "$T/syn.gkfat" -o "$T/syn" --backend rocm; expect_status 1 "extract an hsaco that is no ELF"
expect_err "does not verify" "extract refuses an image that does not verify"
[ -e "$T/syn/rocm" ] && fail "a failed image left a folder or file behind"

# Hostile names from the archive: refused, nothing written anywhere.
so="$OUT/cpu/qmatmul/x86-64-v3.bits4.so"
i=0
for row in "../evil|cpu|x86-64||so" "a/b|cpu|x86-64||so" ".hidden|cpu|x86-64||so" \
    "-rf|cpu|x86-64||so" "k|..|x86-64||so" "k|cpu|/etc/x||so" "k|cpu|x86-64|b=../x|so" \
    "k|cpu|x86-64||so/../../x" "k|cpu|x86-64|b=1,..=2|so" "k|cpu|x86 64||so" "k|cpu|..||so" \
    "k|cpu|x86-64|=|so" $'k\n|cpu|x86-64||so' "k|cpu|x86-64||" ; do
  i=$((i + 1))
  "$MKARCHIVE" "$T/bad$i.gkfat" "$row|@$so" 2>/dev/null || continue  # the packager refused it first
  mkdir -p "$T/jail$i"
  run "$GK" extract "$T/bad$i.gkfat" -o "$T/jail$i/out"; expect_status 1 "hostile row '$row'"
  expect_err "not a safe file name" "hostile row '$row' is named as such"
  [ -z "$(ls -A "$T/jail$i")" ] || fail "hostile row '$row' wrote something: $(find "$T/jail$i")"
done
[ -e "$T/evil" ] || [ -e "$T/x" ] && fail "something was written outside DIR"

# Two rows that would share a file: refused before writing.
"$MKARCHIVE" "$T/clash.gkfat" "k|cpu|x86-64|bits=4|so|@$so" "k|cpu|x86-64|bits4|so|@$so"
run "$GK" extract "$T/clash.gkfat" -o "$T/clash"; expect_status 1 "two rows, one file name"
expect_err "would both be written as cpu/k/x86-64.bits4.so" "the clash is named"
[ -e "$T/clash" ] && fail "the clash wrote something"

# Links inside DIR are not followed: a folder link is refused, a file link is
# replaced by the file, its target untouched.
mkdir -p "$T/linked" "$T/elsewhere"
ln -s "$T/elsewhere" "$T/linked/cpu"
run "$GK" extract "$ARCHIVE" -o "$T/linked" --kernel qmatmul; expect_status 1 "a link as folder"
expect_err "links are not followed" "the link is named as the reason"
[ -z "$(ls -A "$T/elsewhere")" ] || fail "extract wrote through a folder link"
mkdir -p "$T/filelink/cpu/qmatmul"
echo precious >"$T/precious"
ln -s "$T/precious" "$T/filelink/cpu/qmatmul/x86-64-v3.bits4.so"
run "$GK" extract "$ARCHIVE" -o "$T/filelink" --kernel qmatmul --variant bits=4 --target x86-64-v3
expect_status 0 "a link at the file's place"
[ "$(cat "$T/precious")" = precious ] || fail "extract wrote through a file link"
[ -L "$T/filelink/cpu/qmatmul/x86-64-v3.bits4.so" ] && fail "the link is still there"
cmp -s "$T/filelink/cpu/qmatmul/x86-64-v3.bits4.so" "$so" || fail "the file replacing the link is wrong"

# A tampered image: not written, the reason given, no temporary left.
cp "$ARCHIVE" "$T/tampered.gkfat"
python3 - "$T/tampered.gkfat" <<'PY'
import sqlite3, subprocess, sys, tempfile
db = sqlite3.connect(sys.argv[1])
rid, size = db.execute("select id, raw_size from blob order by id limit 1").fetchone()
with tempfile.NamedTemporaryFile() as f:
    f.write(b"\x7fELF" + b"\0" * (size - 4)); f.flush()
    other = subprocess.run(["zstd", "-q", "-c", f.name], capture_output=True, check=True).stdout
db.execute("update blob set data = ? where id = ?", (other, rid)); db.commit()
PY
run "$GK" extract "$T/tampered.gkfat" -o "$T/tampered"; expect_status 1 "extract a tampered archive"
expect_err "SHA-256" "the tampered image's hash is the reason"
[ -z "$(find "$T/tampered" -name '.*tmp*' 2>/dev/null)" ] || fail "a temporary file was left"
[ -e "$T/tampered/manifest.json" ] && fail "a manifest was written for a failed extraction"
finish
