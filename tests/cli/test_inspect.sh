#!/bin/bash
# gk ls, matrix, verify and probe on the real archive.
. "$(dirname "$0")/lib.sh"

# ls --json agrees with the manifest, row for row, hash for hash.
run "$GK" ls "$ARCHIVE" --json; expect_status 0 "ls --json"
python3 - "$T/stdout" "$OUT/manifest.json" <<'PY' || fail "ls --json does not match the manifest"
import json, sys
ls = json.load(open(sys.argv[1])); man = json.load(open(sys.argv[2]))["images"]
rows = ls["images"]
assert ls["count"] == len(rows), ls["count"]
key = lambda r: (r["kernel"], r["backend"], r["target"], r["variant"])
assert len(rows) == len(man) > 0, (len(rows), len(man))
got = {key(r): r for r in rows}
for m in man:
    r = got[key(m)]
    for f in ("format", "sha256", "entry", "toolchain"):
        assert r[f] == m[f], (f, r[f], m[f])
    assert r["size"] == m["size"] and 0 < r["packed_size"], r
order = lambda r: (r["kernel"], r["backend"], r["variant"], r["target"])  # the index's
assert [order(r) for r in rows] == sorted(order(r) for r in rows), "rows not in index order"
PY
run "$GK" ls "$ARCHIVE"; expect_status 0 "ls"
expect_out "x86-64-v3" "ls lists the v3 image"
expect_out "bits=4" "ls lists the bits=4 variant"

# The matrix marks all 16 cpu qmatmul images.
run "$GK" matrix "$ARCHIVE"; expect_status 0 "matrix"
expect_out "qmatmul bits=1" "matrix has the bits=1 line"
[ "$(grep -c '^qmatmul bits=' "$T/stdout")" -eq 4 ] || fail "matrix: expected 4 qmatmul lines"
grep '^qmatmul bits=' "$T/stdout" | grep -q '\.' && fail "matrix: a qmatmul image is missing"

# verify passes on a good archive and fails, saying why, on a tampered one.
run "$GK" verify "$ARCHIVE"; expect_status 0 "verify"
nimages=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['images']))" "$OUT/manifest.json")
[ "$(grep -c '^ok ' "$T/stdout")" -eq "$nimages" ] || fail "verify: expected $nimages ok lines (one per image)"
cp "$ARCHIVE" "$T/tampered.gkfat"
python3 - "$T/tampered.gkfat" <<'PY'
# Replace one image with a valid zstd frame of other bytes of the same size:
# only the SHA-256 check can catch this.
# (zstd reads a file, not a pipe, so that the frame declares its size.)
import sqlite3, subprocess, sys, tempfile
db = sqlite3.connect(sys.argv[1])
rid, size = db.execute("select id, raw_size from blob order by id limit 1").fetchone()
with tempfile.NamedTemporaryFile() as f:
    f.write(b"\x7fELF" + b"\0" * (size - 4)); f.flush()
    other = subprocess.run(["zstd", "-q", "-c", f.name], capture_output=True, check=True).stdout
db.execute("update blob set data = ? where id = ?", (other, rid)); db.commit()
PY
run "$GK" verify "$T/tampered.gkfat"; expect_status 1 "verify tampered"
expect_out "FAIL" "verify tampered prints FAIL"
grep -q 'SHA-256' "$T/stdout" || fail "verify tampered: the failure does not mention the SHA-256"
run "$GK" verify "$T/tampered.gkfat" --json; expect_status 1 "verify --json tampered"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['ok'] is False and sum(not i['ok'] for i in d['images']) >= 1" "$T/stdout" ||
  fail "verify --json: ok should be false with failing rows"

# probe: a described device gets the image of its level; an impossible one
# gets a reason listing what the archive holds.
for level in x86-64 x86-64-v2 x86-64-v3 x86-64-v4; do
  run "$GK" probe "$ARCHIVE" --device "cpu:$level" --json; expect_status 0 "probe cpu:$level"
  python3 - "$T/stdout" "$level" <<'PY' || fail "probe cpu:$level chose wrongly"
import json, sys
d = json.load(open(sys.argv[1])); lv = sys.argv[2]
assert d["device"].startswith("cpu:" + lv), d["device"]
# Every kernel of the archive gets its image of exactly this level.
assert all(i["target"] == lv and i["format"] == "so" for i in d["images"]), d["images"]
ims = [i for i in d["images"] if i["kernel"] == "qmatmul"]
assert sorted(i["variant"] for i in ims) == ["bits=1", "bits=2", "bits=4", "bits=8"], ims
PY
done
run "$GK" probe "$ARCHIVE" --device cuda:sm_86 -v; expect_status 1 "probe cuda:sm_86"
expect_out "none" "probe cuda:sm_86 finds no image"
expect_out "x86-64-v3" "probe cuda:sm_86 lists what the archive holds"
run "$GK" probe "$ARCHIVE" --device cpu:x86-64-v9; expect_status 2 "probe bad spec"
expect_err "x86-64-v4" "probe bad spec lists the valid levels"
run "$GK" probe --json; expect_status 0 "probe without archive"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['backend']=='cpu' and any(b['backend']=='cuda' and not b['present'] for b in d['backends'])" "$T/stdout" ||
  fail "probe --json: expected the cpu device and an absent cuda backend"
finish
