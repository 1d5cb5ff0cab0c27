"""check_extract.py BACKEND MIN OUT EXTRACTED ARCHIVE - every BACKEND image
gk build wrote into OUT (at least MIN of them) came back from the archive
through libgk (`gk extract` into EXTRACTED) with exactly the same bytes; the
archive holds both kinds of blob, and every delta's chain of bases ends in a
plain frame within GK_ARCHIVE_DELTA_DEPTH (2, docs/archive.md). Shared by the
cuda and rocm CLI tests."""
import json, os, sqlite3, sys

backend, least, out, x, ar = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
m = json.load(open(os.path.join(out, "manifest.json")))
key = lambda i: (i["kernel"], i["backend"], i["target"], i["variant"])
got = {key(i): i["path"] for i in json.load(open(os.path.join(x, "manifest.json")))["images"]}
n = 0
for i in m["images"]:
    if i["backend"] != backend:
        continue
    a = open(os.path.join(out, i["path"]), "rb").read()
    assert a == open(os.path.join(x, got[key(i)]), "rb").read(), i["path"]
    n += 1
assert n >= least, n
db = sqlite3.connect(ar)
codecs = dict(db.execute("SELECT codec, count(*) FROM blob GROUP BY codec").fetchall())
assert codecs.get("zstd-delta", 0) > 0 and codecs.get("zstd", 0) > 0, codecs
blobs = {i: (c, b) for i, c, b in db.execute("SELECT id, codec, base FROM blob")}
depths = []
for i, (c, b) in blobs.items():
    d = 0
    while c == "zstd-delta":
        d += 1
        assert d <= 2 and b in blobs, (i, d, b)
        c, b = blobs[b]
    assert c == "zstd" and b is None, (i, c, b)
    depths.append(d)
assert max(depths) <= 2, depths
