#!/bin/bash
# gk matrix: the terminal table and --json, on the real archive and on a
# synthetic one with cuda/rocm rows, PTX beside cubins and PTX only.
. "$(dirname "$0")/lib.sh"

run "$GK" matrix --help; expect_status 0 "matrix --help"
expect_out "--html" "matrix --help documents --html"
run "$GK" matrix; expect_status 2 "matrix without an archive"
run "$GK" matrix "$T/missing.gkfat"; expect_status 1 "matrix of a missing file"
expect_err "missing.gkfat" "matrix names the missing file"

# The real archive: every image of 'gk ls' is a present cell, every other
# cell absent (cpu images only: nothing is PTX).
run "$GK" ls "$ARCHIVE" --json; cp "$T/stdout" "$T/ls.json"
run "$GK" matrix "$ARCHIVE" --json; expect_status 0 "matrix --json (real)"
py "matrix --json of the real archive" "$T/stdout" "$T/ls.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); ls = json.load(open(sys.argv[2]))["images"]
cols = [(c["backend"], c["target"]) for c in d["columns"]]
assert {(r["backend"], r["target"]) for r in ls} == set(cols), cols
assert ("cpu", "x86-64-v3") in cols and len(set(cols)) == len(cols)
have = {(r["kernel"], r["variant"], r["backend"], r["target"]): r for r in ls}
qm = [(r["kernel"], r["variant"]) for r in d["rows"] if r["kernel"] == "qmatmul"]
assert qm == [("qmatmul", "bits=%d" % b) for b in (1, 2, 4, 8)], qm
for r in d["rows"]:
    for (b, t), c in zip(cols, r["cells"]):
        im = have.get((r["kernel"], r["variant"], b, t))
        assert c["state"] == ("present" if im else "absent"), (r["kernel"], b, t, c)
        if im: assert c["sha256"] == im["sha256"] and c["format"] == im["format"] == "so"
n = d["counts"]
assert n["images"] == len(ls) == n["present"] and n["ptx"] == n["ptx_only"] == 0, n
assert n["present"] + n["absent"] == n["rows"] * n["columns"], n
PY

make_synthetic "$T/syn.gkfat"
run "$GK" matrix "$T/syn.gkfat" --json; expect_status 0 "matrix --json (synthetic)"
cp "$T/stdout" "$T/syn.json"
py "matrix --json of the synthetic archive" "$T/syn.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cols = [(c["backend"], c["target"]) for c in d["columns"]]
# Backends apart, targets in natural order: sm_100 after sm_90a.
assert cols == [("cpu", "x86-64"), ("cpu", "x86-64-v3"),
                ("cuda", "compute_75"), ("cuda", "compute_80"), ("cuda", "compute_90"),
                ("cuda", "sm_80"), ("cuda", "sm_90a"), ("cuda", "sm_100"),
                ("rocm", "gfx90a:xnack+")], cols
rows = {(r["kernel"], r["variant"]): r for r in d["rows"]}
assert list(rows) == [("<b>&x", ""), ("qmatmul", "bits=4"), ("qmatmul", "bits=8"),
                      ("rmsnorm", ""), ("softmax", "")], list(rows)
def cells(k, v):
    return {cols[i]: c["state"] for i, c in enumerate(rows[(k, v)]["cells"]) if c["state"] != "absent"}
assert cells("qmatmul", "bits=4") == {("cpu", "x86-64-v3"): "present", ("cuda", "sm_80"): "present",
    ("cuda", "sm_90a"): "present", ("cuda", "compute_90"): "ptx",
    ("rocm", "gfx90a:xnack+"): "present"}, cells("qmatmul", "bits=4")
assert cells("qmatmul", "bits=8") == {("cuda", "sm_100"): "present"}
assert cells("softmax", "") == {("cpu", "x86-64"): "present", ("cuda", "compute_80"): "ptx-only"}
assert cells("rmsnorm", "") == {("cuda", "compute_75"): "ptx-only", ("cuda", "compute_90"): "ptx-only"}
assert rows[("softmax", "")]["ptx_only"] == ["cuda"] and rows[("rmsnorm", "")]["ptx_only"] == ["cuda"]
assert rows[("qmatmul", "bits=4")]["ptx_only"] == []
fmt = {cols[i]: c.get("format") for i, c in enumerate(rows[("qmatmul", "bits=4")]["cells"])}
assert fmt[("cuda", "compute_90")] == "ptx" and fmt[("rocm", "gfx90a:xnack+")] == "hsaco"
n = d["counts"]
assert n == {"images": 11, "rows": 5, "columns": 9, "present": 7, "ptx": 1, "ptx_only": 3,
             "absent": 45 - 11, "ptx_only_rows": 2}, n
PY

# The table says the same with one character a cell, columns aligned under
# their targets.
run "$GK" matrix "$T/syn.gkfat"; expect_status 0 "matrix (synthetic)"
cp "$T/stdout" "$T/syn.txt"
expect_out "legend: x image, p PTX beside native images, P PTX only" "matrix prints the legend"
expect_out "11 images, 5 kernels/variants, 9 targets" "matrix prints the counts"
expect_out "2 kernels/variants are PTX only on some backend" "matrix counts PTX-only lines"
py "matrix text table" "$T/syn.txt" "$T/syn.json" <<'PY'
import json, re, sys
lines = open(sys.argv[1]).read().splitlines()
d = json.load(open(sys.argv[2]))
hdr = lines[1]
assert hdr.split()[0] == "KERNEL" and hdr.split()[1:] == [c["target"] for c in d["columns"]], hdr
assert lines[0].split() == ["cpu", "cuda", "rocm"], lines[0]
assert lines[0].index("cuda") == hdr.index("compute_75") and lines[0].index("rocm") == hdr.index("gfx90a"), lines[:2]
assert not any(l != l.rstrip() for l in lines), "trailing blanks"
ch = {"present": "x", "ptx": "p", "ptx-only": "P", "absent": "."}
for i, r in enumerate(d["rows"]):
    line = lines[2 + i]
    name = (r["kernel"] + " " + r["variant"]).strip()
    assert line.startswith(name), (line, name)
    pos = [m.start() for m in re.finditer(r"\S+", hdr)][1:]
    for p, c, cell in zip(pos, d["columns"], r["cells"]):
        assert line[p] == ch[cell["state"]], (line, c, cell)
PY
finish
