#!/usr/bin/env python3
"""tamper.py ARCHIVE SQL - changes an archive the way a hostile or careless
writer would (SQL run as given), then puts the image rows back in the order
gk pack writes them (rowid 1, 2, ... in (kernel, backend, variant, target)
order), so that what the test checks is the lie in the rows, not the order:
libgk refuses an index out of order as corrupt (docs/archive.md, "Reading")."""
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
# Each image gets its own spec row first, numbered by its rowid, so that SQL
# changing one image's spec (UPDATE spec ... WHERE id IN (SELECT spec FROM
# image WHERE ...)) changes that image only.
db.executescript("""
CREATE TEMP TABLE own AS SELECT i.rowid AS id, s.format, s.entry, s.launch, s.toolchain
  FROM image AS i JOIN spec AS s ON s.id = i.spec;
DELETE FROM spec;
INSERT INTO spec (id, format, entry, launch, toolchain) SELECT * FROM own;
UPDATE image SET spec = rowid;
DROP TABLE own;
""")
db.executescript(sys.argv[2])
cols = [r[1] for r in db.execute("PRAGMA table_info(image)")]
rows = db.execute("SELECT * FROM image ORDER BY kernel, backend, variant, target").fetchall()
db.execute("DELETE FROM image")
db.executemany("INSERT INTO image (rowid, %s) VALUES (%s)" % (", ".join(cols), ", ".join("?" * (len(cols) + 1))),
               [(i + 1,) + tuple(r) for i, r in enumerate(rows)])
db.commit()
