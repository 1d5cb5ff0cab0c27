#!/usr/bin/env python3
"""tamper.py ARCHIVE SQL - changes an archive the way a hostile or careless
writer would (SQL run as given), then puts the image rows back in the order
gk pack writes them (rowid 1, 2, ... in (kernel, backend, target, variant)
order), so that what the test checks is the lie in the rows, not the order:
libgk refuses an index out of order as corrupt (docs/archive.md, "Reading")."""
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
db.executescript(sys.argv[2])
cols = [r[1] for r in db.execute("PRAGMA table_info(image)")]
rows = db.execute("SELECT * FROM image ORDER BY kernel, backend, target, variant").fetchall()
db.execute("DELETE FROM image")
db.executemany("INSERT INTO image (rowid, %s) VALUES (%s)" % (", ".join(cols), ", ".join("?" * (len(cols) + 1))),
               [(i + 1,) + tuple(r) for i, r in enumerate(rows)])
db.commit()
