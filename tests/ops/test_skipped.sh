#!/bin/bash
# What a release could not build travels with it (issue 21, point 1): the
# manifest's skipped targets and each backend's oldest driver go into the
# archive's metadata at pack time, survive gk pack --merge, and gk matrix
# (text, --json, --html), gk probe and gk diff show them.
. "$(dirname "$0")/lib.sh"

# A build folder whose manifest says what a runner with an old hipcc and no
# Xcode skipped (the fixture's cpu images, its manifest edited).
cp -r "$OUT" "$T/out"
python3 - "$T/out/manifest.json" <<'PY' || fail "cannot edit the manifest"
import json, sys
m = json.load(open(sys.argv[1]))
m["skipped"] = [
    {"backend": "metal", "reason": "xcrun not found (Metal builds need macOS)"},
    {"backend": "rocm", "target": "gfx942", "reason": "hipcc 5.2 cannot target it"},
]
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
run "$GK" pack "$T/out" -o "$T/a.gkfat"; expect_status 0 "pack with skipped targets"
run "$GK" ls --meta --json "$T/a.gkfat"; expect_status 0 "ls --meta"
py "meta 'skipped' is the manifest's" "$T/stdout" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["skipped"] == [
    {"backend": "metal", "reason": "xcrun not found (Metal builds need macOS)"},
    {"backend": "rocm", "reason": "hipcc 5.2 cannot target it", "target": "gfx942"}], m["skipped"]
assert "min_driver" not in m, m  # cpu images need no driver
PY

# gk matrix: text, JSON and HTML say what was skipped and why.
run "$GK" matrix "$T/a.gkfat"; expect_status 0 "matrix"
grep -qxF "rocm gfx942: skipped, hipcc 5.2 cannot target it" "$T/stdout" ||
  fail "matrix text does not say gfx942 was skipped: $(cat "$T/stdout")"
grep -qxF "metal: skipped, xcrun not found (Metal builds need macOS)" "$T/stdout" ||
  fail "matrix text does not say metal was skipped"
run "$GK" matrix "$T/a.gkfat" --json; expect_status 0 "matrix --json"
py "matrix --json skipped" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [(s["backend"], s.get("target")) for s in d["skipped"]] == [("metal", None), ("rocm", "gfx942")], d["skipped"]
assert d["min_driver"] == {}, d["min_driver"]
PY
run "$GK" matrix "$T/a.gkfat" --html "$T/m.html"; expect_status 0 "matrix --html"
grep -qF "<li><b>rocm gfx942</b>: skipped, hipcc 5.2 cannot target it</li>" "$T/m.html" ||
  fail "the HTML page does not list gfx942 as skipped"

# Each backend's oldest driver: CUDA 13.0 cubins and PTX need 13.0.
"$MKARCHIVE" "$T/cuda.gkfat" \
  "k|cuda|sm_80||cubin|=cubin|nvcc 13.0.88" \
  "k|cuda|compute_80||ptx|=$(ptx k sm_80)|nvcc 13.0.88" \
  'meta:skipped=[{"backend":"cuda","target":"sm_120","reason":"too new"},{"backend":"cuda","target":"sm_80","reason":"built after all"}]' ||
  fail "cannot write the cuda archive"
run "$GK" matrix "$T/cuda.gkfat"; expect_status 0 "matrix (cuda)"
grep -qxF "cuda: needs a driver >= 13.0" "$T/stdout" || fail "matrix does not name the driver: $(cat "$T/stdout")"
grep -qF "sm_80: skipped" "$T/stdout" && fail "a built target is listed as skipped"
run "$GK" matrix "$T/cuda.gkfat" --json
py "matrix --json min_driver" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["min_driver"] == {"cuda": "13.0"}, d["min_driver"]
assert d["skipped"] == [{"backend": "cuda", "reason": "too new", "target": "sm_120"}], d["skipped"]
PY
run "$GK" matrix "$T/cuda.gkfat" --html "$T/c.html"
grep -qF "cuda: needs a driver &ge; 13.0" "$T/c.html" || fail "the HTML page does not name the driver"
run "$GK" probe "$T/cuda.gkfat" --device cuda:sm_80,driver=12.4
expect_status 1 "probe: nothing loads on a 12.4 driver"
expect_out "cuda: images need a driver >= 13.0, this device's is 12.4" "probe names the driver"
run "$GK" probe "$T/cuda.gkfat" --device cuda:sm_120 --json
py "probe --json skipped and min_driver" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["min_driver"] == "13.0" and d["missing"] == 0, d
assert [s["target"] for s in d["skipped"]] == ["sm_120"], d["skipped"]
PY

# gk probe on the skipped target: says so, and exits 1 (no image fits).
run "$GK" probe "$T/a.gkfat" --device gfx942; expect_status 1 "probe gfx942"
expect_out "rocm gfx942: skipped, hipcc 5.2 cannot target it (this device's target)" "probe names the skip"
expect_err "have no image for rocm:gfx942" "probe says some kernels have no image"

# Merging: the skipped lists are joined, and what another part built is no
# longer skipped (the metal part built metal). Merging reads each image
# through libgk, which checks it against its row: the metal image is a
# metallib whose function list holds the kernel 'k' (loader/metal_target.c).
python3 - "$T/k.metallib" <<'PY'
import struct, sys
fn = b"NAME" + struct.pack("<H", 2) + b"k\0" + b"TYPE" + struct.pack("<H", 1) + b"\2" + b"ENDT"
fl = struct.pack("<I", 1) + struct.pack("<I", 4 + len(fn)) + fn
head = b"MTLB\1\x80\2\0" + bytes(16) + struct.pack("<QQ", 88, len(fl))
open(sys.argv[1], "wb").write(head + bytes(88 - len(head)) + fl)
PY
"$MKARCHIVE" "$T/metal.gkfat" "k|metal|macos-metal3.0||metallib|@$T/k.metallib" \
  'meta:skipped=[{"backend":"cuda","reason":"nvcc not found"},{"backend":"rocm","target":"gfx942","reason":"no ROCm here"}]' ||
  fail "cannot write the metal part"
run "$GK" pack --merge "$T/a.gkfat" "$T/metal.gkfat" -o "$T/m.gkfat"; expect_status 0 "merge"
run "$GK" ls --meta --json "$T/m.gkfat"
py "merged 'skipped'" "$T/stdout" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["skipped"] == [
    {"backend": "cuda", "reason": "nvcc not found"},
    {"backend": "rocm", "reason": "hipcc 5.2 cannot target it", "target": "gfx942"}], m["skipped"]
PY
# Merging in the other order gives the same archive.
run "$GK" pack --merge "$T/metal.gkfat" "$T/a.gkfat" -o "$T/m2.gkfat"
cmp -s "$T/m.gkfat" "$T/m2.gkfat" || fail "merging in another order gave other bytes"

# gk diff: a target that moved between built and skipped.
run "$GK" diff "$T/a.gkfat" "$T/m.gkfat"; expect_status 0 "diff"
expect_out "target moved from skipped to built: metal (now built)" "diff: metal built now"
expect_out "target skipped: cuda: nvcc not found" "diff: cuda newly skipped"
run "$GK" diff "$T/m.gkfat" "$T/a.gkfat" --json
py "diff --json skipped" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["skipped"]["added"] == [{"backend": "metal", "reason": "xcrun not found (Metal builds need macOS)", "was": "built"}], d["skipped"]
assert d["skipped"]["removed"] == [{"backend": "cuda", "reason": "nvcc not found", "now": "absent"}], d["skipped"]
assert not d["identical"]
PY
run "$GK" diff "$T/a.gkfat" "$T/a.gkfat"; expect_out "no differences" "diff of one archive with itself"
finish
