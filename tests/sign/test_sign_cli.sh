#!/bin/bash
# gk keygen / sign / verify --key on the fixture archive, with the real gk:
# key files, determinism, the failures a user must see spelled out, and
# what happens to signatures on re-signing, merging and re-compression.
. "$(dirname "$0")/../cli/lib.sh"
cd "$T"

# keygen: two files, the secret one private, never overwritten.
run "$GK" keygen --out k; expect_status 0 "keygen"
[ "$(stat -c %a k.key)" = 600 ] || fail "k.key mode is $(stat -c %a k.key), expected 600"
[ "$(stat -c %a k.pub)" = 644 ] || fail "k.pub mode is $(stat -c %a k.pub), expected 644"
grep -Eqx 'gk-ed25519-public [0-9a-f]{64}' k.pub || fail "k.pub format: $(cat k.pub)"
grep -Eqx 'gk-ed25519-secret [0-9a-f]{64}' k.key || fail "k.key format"
cp k.key k.key.orig
run "$GK" keygen --out k; expect_status 1 "keygen over an existing pair"
expect_err "'k.key' exists" "keygen refusal names the file"
cmp -s k.key k.key.orig || fail "keygen replaced an existing secret key"
rm k.pub
run "$GK" keygen --out k; expect_status 1 "keygen with only the secret half present"
[ ! -e k.pub ] || fail "keygen wrote k.pub beside an existing k.key"
rm k.key
run "$GK" keygen --out k; expect_status 0 "keygen after removing the old pair"
"$GK" keygen --out k2 --json >k2.json 2>/dev/null || fail "keygen --json"
python3 -c "import json,sys; d=json.load(open('k2.json')); assert d['public']=='k2.pub' and len(d['public_key'])==64" ||
  fail "keygen --json output"
run "$GK" keygen; expect_status 2 "keygen without --out"
run "$GK" keygen --help; expect_status 0 "keygen --help"; expect_out "usage: gk keygen" "keygen --help"
run "$GK" sign --help; expect_status 0 "sign --help"; expect_out "usage: gk sign" "sign --help"
run "$GK" help sign; expect_status 0 "gk help sign"

# sign: deterministic (ed25519 is), verifiable, idempotent in place.
run "$GK" sign "$ARCHIVE" --key k.key -o a.gkfat; expect_status 0 "sign"
expect_err "signed 'a.gkfat' with key" "sign says what it did"
run "$GK" sign "$ARCHIVE" --key k.key -o b.gkfat; expect_status 0 "sign again"
cmp -s a.gkfat b.gkfat || fail "signing twice gave different bytes"
cmp -s a.gkfat "$ARCHIVE" && fail "the signed archive equals the unsigned one"
[ "$(stat -c %a a.gkfat)" = 644 ] || fail "signed archive mode $(stat -c %a a.gkfat)"
cp "$ARCHIVE" inplace.gkfat
run "$GK" sign inplace.gkfat --key k.key; expect_status 0 "sign in place"
cmp -s a.gkfat inplace.gkfat || fail "signing in place differs from signing to -o"
run "$GK" sign inplace.gkfat --key k.key; expect_status 0 "sign a signed archive again"
expect_err "already signed" "re-signing says there is nothing to do"
cmp -s a.gkfat inplace.gkfat || fail "re-signing changed the bytes"
ls | grep -q 'tmp' && fail "sign left a temporary file: $(ls)"

run "$GK" verify a.gkfat --key k.pub; expect_status 0 "verify signed"
expect_out "ok   signature by key" "verify reports the signature"
run "$GK" verify a.gkfat --key k.pub --json; expect_status 0 "verify --json"
python3 - "$T/stdout" <<'PY' || fail "verify --json: signature fields"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True and d["signature"]["ok"] is True, d
assert len(d["digest"]) == 64 and len(d["signers"]) == 1, d
assert all(im["ok"] for im in d["images"]) and d["images"], d
PY
run "$GK" verify a.gkfat; expect_status 0 "verify a signed archive without a key"
expect_err "signed by 1 key(s), not checked" "verify without --key mentions the signature"

# Failures, each saying what is wrong.
run "$GK" verify "$ARCHIVE" --key k.pub; expect_status 1 "verify unsigned"
expect_out "is not signed" "verify unsigned message"
run "$GK" verify a.gkfat --key k2.pub; expect_status 1 "verify with the wrong key"
expect_out "is not signed by key $(sed 's/.* //' k2.pub | cut -c1-16)" "wrong key names the key"
expect_out "it is signed by key $(sed 's/.* //' k.pub | cut -c1-16)" "wrong key names the signer"
run "$GK" verify a.gkfat --key k2.pub --json; expect_status 1 "verify --json wrong key"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['ok'] is False and d['signature']['ok'] is False and 'not signed by key' in d['signature']['error']" "$T/stdout" ||
  fail "verify --json wrong key fields"

cp a.gkfat meta.gkfat
sqlite3 meta.gkfat "UPDATE meta SET value = 'x' || value WHERE key = 'generator'"
run "$GK" verify meta.gkfat --key k.pub; expect_status 1 "verify tampered meta"
expect_out "does not match the archive's contents" "tampered meta message"
cp a.gkfat row.gkfat
sqlite3 row.gkfat "UPDATE spec SET entry = '[\"evil\"]' WHERE id = (SELECT spec FROM image WHERE rowid = (SELECT max(rowid) FROM image))"
run "$GK" verify row.gkfat --key k.pub; expect_status 1 "verify tampered row"
expect_out "does not match the archive's contents" "tampered row message"
cp a.gkfat sig.gkfat
sqlite3 sig.gkfat "UPDATE signature SET sig = zeroblob(64)"
run "$GK" verify sig.gkfat --key k.pub; expect_status 1 "verify damaged signature"
expect_out "does not match" "damaged signature message"
# Flipped image bytes leave the index, and so the signature, intact; the
# image fails when read (its SHA-256, or its zstd frame, is checked).
cp a.gkfat blob2.gkfat
python3 - blob2.gkfat <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
sha, data = c.execute("SELECT sha256, data FROM blob WHERE codec = 'zstd' ORDER BY id LIMIT 1").fetchone()
data = bytearray(data); data[len(data) // 2] ^= 0x55
c.execute("UPDATE blob SET data = ? WHERE sha256 = ?", (bytes(data), sha))
PY
run "$GK" verify blob2.gkfat --key k.pub; expect_status 1 "verify flipped image bytes"
expect_out "ok   signature by key" "flipped image bytes leave the signature valid"
grep -q '^FAIL cpu' "$T/stdout" || fail "flipped image bytes: no image FAIL line"

# Key files: wrong kind, bad format, missing, too open.
run "$GK" sign "$ARCHIVE" --key k.pub -o x.gkfat; expect_status 1 "sign with a public key"
expect_err "'k.pub' is a public key" "sign with a public key message"
run "$GK" verify a.gkfat --key k.key; expect_status 1 "verify with a secret key"
expect_err "'k.key' is a secret key" "verify with a secret key message"
printf 'not a key\n' >bad.key; chmod 600 bad.key
run "$GK" sign "$ARCHIVE" --key bad.key -o x.gkfat; expect_status 1 "sign with a bad key file"
expect_err "'bad.key' is not a gk secret key file" "bad key file message"
expect_err "gk keygen" "bad key file says how to make one"
run "$GK" verify a.gkfat --key nope.pub; expect_status 1 "verify with a missing key"
expect_err "cannot open key file 'nope.pub'" "missing key file message"
cp k.key open.key; chmod 644 open.key
run "$GK" sign "$ARCHIVE" --key open.key -o x.gkfat; expect_status 1 "sign with a world-readable key"
expect_err "readable by other users (mode 0644)" "key permission message"
expect_err "chmod 600" "key permission message says the fix"
[ ! -e x.gkfat ] || fail "a refused sign wrote an archive"
run "$GK" sign; expect_status 2 "sign without arguments"
run "$GK" verify a.gkfat --key; expect_status 2 "verify --key without a value"

# An archive whose images fail is not signed.
run "$GK" sign blob2.gkfat --key k2.key -o y.gkfat; expect_status 1 "sign a broken archive"
expect_err "will not sign 'blob2.gkfat'" "sign a broken archive message"
[ ! -e y.gkfat ] || fail "sign of a broken archive wrote a file"

# Several signers; a stale signature is dropped when re-signing.
run "$GK" sign a.gkfat --key k2.key -o two.gkfat; expect_status 0 "second signer"
run "$GK" verify two.gkfat --key k.pub; expect_status 0 "first signature kept"
run "$GK" verify two.gkfat --key k2.pub; expect_status 0 "second signature valid"
run "$GK" sign meta.gkfat --key k2.key -o resigned.gkfat; expect_status 0 "re-sign a changed archive"
expect_err "dropped the signature by key $(sed 's/.* //' k.pub | cut -c1-16)" "stale signature dropped, said so"
run "$GK" verify resigned.gkfat --key k2.pub; expect_status 0 "re-signed archive verifies"
run "$GK" verify resigned.gkfat --key k.pub; expect_status 1 "stale signer gone"
expect_out "is not signed by key" "stale signer gone message"

# Merging drops signatures, and says so.
run "$GK" pack --merge a.gkfat -o merged.gkfat; expect_status 0 "merge a signed archive"
expect_err "'a.gkfat' was signed (1 signature); the merged archive is not" "merge says signatures are dropped"
run "$GK" verify merged.gkfat --key k.pub; expect_status 1 "merged archive is unsigned"
expect_out "is not signed" "merged archive unsigned message"

# Re-compression keeps the digest: the signature made over one packing
# verifies on another (the signature row carried over by hand).
run "$GK" pack "$OUT" -o l1.gkfat --level 1; expect_status 0 "pack at level 1"
cmp -s l1.gkfat "$ARCHIVE" && fail "level 1 gave the same bytes as the default (test proves nothing)"
digest() { "$GK" verify "$1" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['digest'])"; }
[ "$(digest l1.gkfat)" = "$(digest a.gkfat)" ] || fail "re-compression changed the digest"
python3 - l1.gkfat a.gkfat <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("ATTACH ? AS s", (sys.argv[2],))
c.execute("CREATE TABLE signature AS SELECT * FROM s.signature")
PY
run "$GK" verify l1.gkfat --key k.pub; expect_status 0 "signature survives re-compression"

finish
