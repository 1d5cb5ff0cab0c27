#!/bin/bash
# make_signed.sh GK ARCHIVE DIR: the signed archives test_sign_loader reads,
# made with the real gk from the fixture archive (ctest fixture "signed"):
#   DIR/k.pub, k.key        the signer's key pair; DIR/other.pub another key
#   DIR/signed.gkfat        ARCHIVE signed with k
#   DIR/meta.gkfat          signed, then one `meta` value changed
#   DIR/row.gkfat           signed, then one index row's launch data changed
#   DIR/blob.gkfat          signed, then every image of 'rmsnorm' replaced by
#                           other bytes of the same size (index untouched)
# Tampering goes through the sqlite3 library (python3) and the zstd tool,
# as an attacker with the file would.
set -eu
gk=$1 archive=$2 dir=$3
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
"$gk" keygen --out k 2>/dev/null
"$gk" keygen --out other 2>/dev/null
"$gk" sign "$archive" --key k.key -o signed.gkfat 2>/dev/null
cp signed.gkfat meta.gkfat
cp signed.gkfat row.gkfat
cp signed.gkfat blob.gkfat
python3 - "$gk" <<'PY'
import os, sqlite3, subprocess, sys
gk = sys.argv[1]
def db(path):
    return sqlite3.connect(path, isolation_level=None)

c = db("meta.gkfat")
n = c.execute("UPDATE meta SET value = 'f' || value WHERE key = 'generator'").rowcount
assert n == 1, "meta.gkfat: no 'generator' row to change"
c.close()

c = db("row.gkfat")
n = c.execute("UPDATE spec SET launch = '{\"tampered\":1}' WHERE id = "
              "(SELECT spec FROM image WHERE rowid = (SELECT min(rowid) FROM image))").rowcount
assert n == 1, "row.gkfat: no row to change"
c.close()

# Each rmsnorm image: extracted, one byte past the ELF header flipped,
# compressed again as a plain zstd frame of the same size, put back.
subprocess.run([gk, "extract", "blob.gkfat", "-o", "x", "--kernel", "rmsnorm"],
               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
c = db("blob.gkfat")
cols = [r[1] for r in c.execute("PRAGMA table_info(blob)")]
rows = c.execute("SELECT target, variant, sha256 FROM image "
                 "WHERE kernel = 'rmsnorm' AND backend = 'cpu'").fetchall()
assert rows, "blob.gkfat: no cpu rmsnorm image"
for target, variant, sha in rows:
    name = "x/cpu/rmsnorm/%s%s.so" % (target, "." + variant if variant else "")
    raw = bytearray(open(name, "rb").read())
    raw[len(raw) // 2] ^= 0xff
    open("raw.bin", "wb").write(raw)
    subprocess.run(["zstd", "-q", "-f", "-19", "raw.bin", "-o", "raw.zst"], check=True)
    sets = "codec = 'zstd', data = ?" + (", base = NULL" if "base" in cols else "")
    n = c.execute("UPDATE blob SET " + sets + " WHERE sha256 = ?",
                  (open("raw.zst", "rb").read(), sha)).rowcount
    assert n == 1, "blob.gkfat: no blob for rmsnorm " + target
c.close()
PY
rm -rf x raw.bin raw.zst
echo "signed archives in $dir"
