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
# Each column names the cards of its target (issue 23): a PTX or 'a' target
# those of its compute capability, a rocm target ID those of its processor.
prod = {(c["backend"], c["target"]): c["products"] for c in d["columns"]}
assert prod[("cpu", "x86-64")] == prod[("cpu", "x86-64-v3")] == [], prod
assert prod[("cuda", "sm_80")] == prod[("cuda", "compute_80")] == ["NVIDIA A100", "NVIDIA A30"], prod
assert "NVIDIA H100" in prod[("cuda", "sm_90a")] and prod[("cuda", "sm_90a")] == prod[("cuda", "compute_90")]
assert "NVIDIA T4" in prod[("cuda", "compute_75")] and "NVIDIA B200" in prod[("cuda", "sm_100")]
assert prod[("rocm", "gfx90a:xnack+")] == ["AMD Instinct MI210", "AMD Instinct MI250", "AMD Instinct MI250X"]
assert not any("covers" in c for c in d["columns"]), d["columns"]
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
expect_out "products (NVIDIA's CUDA GPUs list, LLVM's AMDGPU processors, AMD's ROCm GPU specifications; read 2026-11-26):" "matrix names the sources of the products"
# One line for the targets that are the same cards, none for cpu.
for line in "  cuda compute_80 sm_80: NVIDIA A100, NVIDIA A30" \
            "  cuda compute_90 sm_90a: NVIDIA GH200, NVIDIA H200, NVIDIA H100" \
            "  rocm gfx90a:xnack+: AMD Instinct MI210, AMD Instinct MI250, AMD Instinct MI250X"; do
  grep -qxF "$line" "$T/syn.txt" || fail "matrix text lacks the line '$line'"
done
grep -q '^  cpu ' "$T/syn.txt" && fail "matrix names products for a cpu target"
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
# A generic target: the processors it runs on, and all their cards; a
# target no vendor's list names (sm_88) has none, and no line.
"$MKARCHIVE" "$T/gen.gkfat" "k|rocm|gfx11-generic||hsaco|=hsaco" "k|rocm|gfx1100||hsaco|=hsaco" \
  "k|cuda|sm_88||cubin|=cubin sm_88" || fail "cannot write $T/gen.gkfat"
run "$GK" matrix "$T/gen.gkfat" --json; expect_status 0 "matrix --json (generic)"
py "matrix --json of a generic target" "$T/stdout" <<'PY'
import json, sys
c = {x["target"]: x for x in json.load(open(sys.argv[1]))["columns"]}
g = c["gfx11-generic"]
assert g["covers"] == ["gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"], g
assert g["products"][:len(c["gfx1100"]["products"])] == c["gfx1100"]["products"], g
assert "Radeon RX 7800 XT" in g["products"] and "Radeon 890M" in g["products"], g
assert "Radeon RX 7900 XTX" in c["gfx1100"]["products"] and "covers" not in c["gfx1100"]
assert c["sm_88"]["products"] == [], c["sm_88"]
PY
run "$GK" matrix "$T/gen.gkfat"; expect_status 0 "matrix (generic)"
grep -qxF "  rocm gfx11-generic: generic, runs on gfx1100, gfx1101, gfx1102, gfx1103, gfx1150, gfx1151, gfx1152, gfx1153" "$T/stdout" ||
  fail "matrix text names the processors of gfx11-generic: $(cat "$T/stdout")"
grep -q "sm_88:" "$T/stdout" && fail "matrix names products for sm_88"
finish
