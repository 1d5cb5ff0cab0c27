#!/bin/sh
# test_cli.sh GK ARCHIVE OUT CACHE SRCROOT BUILDROOT: gk on real nvcc images.
#   verify: every cubin's ELF and every PTX text fits its row (fixture
#     cuda_archive), and rows that lie about target, 'a'/'f', toolkit or
#     entry points are caught (a small recipe of this test's own adds
#     sm_90a, sm_100f and sm_100a images, which the recipes do not build);
#   no path of the build machine is in any image;
#   the images are reproducible (two caches, same bytes);
#   probe --device cuda:... answers by NVIDIA's rule, in text and JSON;
#   build --targets replaces a backend's target list; headers found by
#     nvcc's depfile make their jobs recompile.
set -u
GK=$1 ARCHIVE=$2 OUT=$3 CACHE=$4 SRCROOT=$5 BUILDROOT=$6
if [ ! -f "$ARCHIVE" ]; then
  echo "SKIP: no archive of real cuda images ($ARCHIVE); the fixture needs nvcc"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
run() { "$@" >"$T/stdout" 2>"$T/stderr"; status=$?; }
expect_status() {
  [ "$status" -eq "$1" ] || { fail "$2: exit $status, expected $1"; cat "$T/stderr" "$T/stdout" >&2; }
}
expect_err() { grep -qF -- "$1" "$T/stderr" || { fail "$2: stderr lacks '$1'"; cat "$T/stderr" >&2; }; }
expect_out() { grep -qF -- "$1" "$T/stdout" || { fail "$2: stdout lacks '$1'"; cat "$T/stdout" >&2; }; }
py() { python3 -c "$@" || fail "python check failed: $(echo "$1" | head -c 100)"; }

# --- the archive holds every target of the recipes for every variant.
run "$GK" verify "$ARCHIVE" --json
expect_status 0 "verify the real cuda images"
py 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"], [i for i in d["images"] if not i["ok"]]
want = {"sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120", "compute_75"}
kv = {}
for i in d["images"]:
    if i["backend"] == "cuda":
        kv.setdefault((i["kernel"], i["variant"]), set()).add(i["target"])
# qmatmul 4 + flash_attention 12 + paged_attention 12 + kv_append 12 + 4 kernels
assert len(kv) == 44, sorted(kv)
for k, ts in kv.items():
    assert ts == want, (k, sorted(ts))' "$T/stdout"
py 'import json, sys
m = json.load(open(sys.argv[1]))
for i in m["images"]:
    ptx = i["target"].startswith("compute_")
    assert i["format"] == ("ptx" if ptx else "cubin"), i
    assert i["path"].endswith(".ptx" if ptx else ".cubin"), i
    assert i["toolchain"].startswith("nvcc 13."), i
    # qmatmul images carry its int8-x twin, the rounding of x into records
    # and the two entries that multiply those (on the tiles of the twin, on
    # int8 tensor cores), which have their own launches, keyed by their
    # names (the twin and _rec: a block takes up to 16 rows of x by 64 of
    # W, qmatmul 8 by 32).
    extra = ["qmatmul_q8x", "qmatmul_q8x_x", "qmatmul_q8x_rec", "qmatmul_q8x_mm"] \
        if i["kernel"] == "qmatmul" else []
    assert i["entry"] == [i["kernel"]] + extra, i
    l = i["launch"]
    own = {e: l.pop(e) for e in extra}
    if extra:
        assert l["grid"][:2] == ["m / 8", "n / 32"], l
        assert own["qmatmul_q8x"]["grid"][:2] == ["m / 16", "n / 64"], own
        assert own["qmatmul_q8x_rec"]["grid"] == own["qmatmul_q8x"]["grid"], own
    for e, o in own.items():
        assert set(o) == {"block", "grid", "shared", "params"} and o["block"] == [256, 1, 1], (e, o)
    assert set(l) == {"block", "grid", "shared", "params"}, l
    # the sm_90a row of flash_attention gives its 64-key tiles 64 KB (recipes/flash_attention.lua)
    fa90a = i["kernel"] == "flash_attention" and i["target"] == "sm_90a"
    assert len(l["block"]) == 3 and len(l["grid"]) == 3 and l["shared"] == (65536 if fa90a else 0), l
    assert all(":" in p for p in l["params"]), l' "$OUT/manifest.json"

# --- every image decodes through libgk (gk extract: plain and delta-coded
#     blobs alike) to exactly the bytes gk build wrote; the archive holds both
#     kinds of blob, and every delta's base is a plain frame (depth 1).
run "$GK" extract "$ARCHIVE" -o "$T/x" --backend cuda
expect_status 0 "extract every cuda image"
python3 "$(dirname "$0")/../../common/check_extract.py" cuda 160 "$OUT" "$T/x" "$ARCHIVE" ||
  fail "extracted cuda images differ from what gk build wrote (see above)"

# --- no path of this machine: not the sources, the build folder, the cache.
for p in "$SRCROOT" "$BUILDROOT" "$CACHE" /tmp/; do
  hits=$(grep -rlF -- "$p" "$OUT/cuda" || true)
  [ -z "$hits" ] || fail "images hold the path '$p': $(echo $hits | head -c 300)"
done

# --- a small recipe of our own: the 'a' and 'f' targets, and PTX for 9.0.
P=$T/p
mkdir -p "$P/recipes" "$P/src/inc"
cat >"$P/src/inc/h.cuh" <<'CU'
#define SCALE 3.0f
CU
cat >"$P/src/t.cu" <<'CU'
#include "inc/h.cuh"
extern "C" __global__ void t(float *x, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= SCALE;
}
CU
cat >"$P/recipes/t.lua" <<'LUA'
kernel "t" {
  cuda {
    source = "../src/t.cu",
    targets = { "sm_80", "sm_90a", "sm_100", "sm_100a", "sm_100f", "compute_90" },
    launch = { block = { 128, 1, 1 }, grid = { "n / 128", 1, 1 }, shared = 0,
               params = { "x:ptr", "n:i64" } },
  },
}
LUA
run "$GK" build --recipes "$P/recipes" --out "$T/o1" --cache "$CACHE" --backend cuda
expect_status 0 "build the small recipe"
run "$GK" pack "$T/o1" -o "$T/t.gkfat"
expect_status 0 "pack the small recipe"
run "$GK" verify "$T/t.gkfat"
expect_status 0 "verify sm_90a, sm_100a, sm_100f and compute_90 images"

# Reproducible: a second cache (so nvcc runs again) gives the same bytes.
run "$GK" build --recipes "$P/recipes" --out "$T/o2" --cache "$T/cache2" --backend cuda
expect_status 0 "rebuild in another cache"
diff -r "$T/o1" "$T/o2" >/dev/null || fail "two nvcc runs gave different images or manifests"

# Rows that lie: each relabel must fail verify with its reason.
relabel() { # SQL EXPECTED-TEXT DESCRIPTION
  cp "$T/t.gkfat" "$T/bad.gkfat"
  python3 "$SRCROOT/tests/common/tamper.py" "$T/bad.gkfat" "$1" || fail "cannot tamper with the archive"
  run "$GK" verify "$T/bad.gkfat"
  expect_status 1 "$3"
  expect_out "$2" "$3"
}
relabel "UPDATE image SET target = 'sm_90' WHERE target = 'sm_90a'" \
  "the cubin is arch-specific (.nv.compat), but sm_90 has no 'a'" "an sm_90a cubin called sm_90"
relabel "DELETE FROM image WHERE target = 'sm_100a'; UPDATE image SET target = 'sm_100a' WHERE target = 'sm_100f'" \
  "the cubin is not arch-specific (no flag in .nv.compat), but sm_100a asks for it" \
  "an sm_100f cubin called sm_100a"
relabel "DELETE FROM image WHERE target = 'sm_100'; UPDATE image SET target = 'sm_100' WHERE target = 'sm_100f'" \
  "the cubin was compiled for sm_100f (ptxas -arch in .note.nv.tkinfo), not sm_100" \
  "an sm_100f cubin called sm_100"
relabel "UPDATE image SET target = 'sm_86' WHERE target = 'sm_80'" \
  "the cubin is built for sm_80 (e_flags 0x06005004, EI_ABIVERSION 8), not sm_86" \
  "an sm_80 cubin called sm_86"
relabel "UPDATE image SET target = 'compute_80' WHERE target = 'compute_90'" \
  "the PTX targets sm_90 (.target), not compute_80" "compute_90 PTX called compute_80"
relabel "UPDATE spec SET toolchain = 'nvcc 12.4.131' WHERE id IN (SELECT spec FROM image WHERE target = 'sm_80')" \
  "the cubin was made by CUDA 13.0.88 (.note.nv.tkinfo), but the row says 'nvcc 12.4.131'" \
  "a cubin whose row names another toolkit"
relabel "UPDATE spec SET entry = '[\"nope\"]' WHERE id IN (SELECT spec FROM image WHERE target = 'sm_100')" \
  "the cubin has no kernel 'nope' (no section .text.nope)" "a cubin without the row's entry"
relabel "UPDATE spec SET entry = '[\"nope\"]' WHERE id IN (SELECT spec FROM image WHERE target = 'compute_90')" \
  "the PTX has no kernel 'nope' (no .entry nope)" "PTX without the row's entry"
relabel "UPDATE spec SET format = 'cubin' WHERE id IN (SELECT spec FROM image WHERE target = 'compute_90')" \
  "the image is not an ELF file" "PTX in a cubin row"

# Editing a header nvcc's depfile lists recompiles the jobs that include it.
echo '#define SCALE 4.0f' >"$P/src/inc/h.cuh"
run "$GK" build --recipes "$P/recipes" --out "$T/o2" --cache "$T/cache2" --backend cuda --json
expect_status 0 "build after a header edit"
py 'import json, sys
s = json.load(open(sys.argv[1]))
assert s["compiled"] == 6 and s["cached"] == 0, s' "$T/stdout"

# --- --targets replaces the recipes' list for that backend.
run "$GK" build --recipes "$P/recipes" --out "$T/o3" --cache "$CACHE" --backend cuda \
  --targets cuda=sm_80,compute_75
expect_status 0 "--targets cuda=sm_80,compute_75"
py 'import json, sys
m = json.load(open(sys.argv[1]))
got = sorted((i["target"], i["format"], i["path"]) for i in m["images"])
assert got == [("compute_75", "ptx", "cuda/t/compute_75.ptx"), ("sm_80", "cubin", "cuda/t/sm_80.cubin")], got' \
  "$T/o3/manifest.json"
run "$GK" build --recipes "$P/recipes" --out "$T/o4" --cache "$CACHE" --targets cuda=sm_91
expect_status 2 "--targets with an unknown target"
expect_err "gk build: --targets: unknown target 'sm_91' for cuda; known: sm_75, sm_80," "unknown target named"
run "$GK" build --recipes "$P/recipes" --out "$T/o4" --cache "$CACHE" --targets cuda
expect_status 2 "--targets without '='"
expect_err "--targets needs BACKEND=TARGET[,TARGET...], e.g. cuda=sm_80,sm_90; got 'cuda'" "--targets syntax"

# --- probe: what would a device get from this release?
run "$GK" probe "$ARCHIVE" --device cuda:sm_86 --json
expect_status 0 "probe cuda:sm_86"
py 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"] == "cuda:sm_86", d["device"]
ims = d["images"]
assert len(ims) == 44, len(ims)
for i in ims:
    assert i.get("target") == "sm_86" and i.get("format") == "cubin", i' "$T/stdout"
run "$GK" probe "$ARCHIVE" --device cuda:sm_121 --json
py 'import json, sys
d = json.load(open(sys.argv[1]))
assert all(i.get("target") == "sm_120" for i in d["images"]), d["images"]' "$T/stdout"
run "$GK" probe "$ARCHIVE" --device cuda:sm_110,driver=13.0 --json
py 'import json, sys
d = json.load(open(sys.argv[1]))
assert all(i.get("target") == "compute_75" and i.get("format") == "ptx" for i in d["images"]), d["images"]' "$T/stdout"
run "$GK" probe "$ARCHIVE" --device cuda:sm_90,driver=12.4 -v
expect_status 1 "probe cuda:sm_90,driver=12.4"
expect_out "cubins from CUDA 13.0 need a driver >= 13.0, this driver is 12.4" "probe says why, for a 12.4 driver"
run "$GK" probe "$ARCHIVE" --device cuda:sm_70 --json
py 'import json, sys
d = json.load(open(sys.argv[1]))
for i in d["images"]:
    assert i["error"] == "no image in the archive fits the device", i
    assert "fits cuda:sm_70; archive" in i["message"] and "has cuda sm_75..sm_120 (9 cubins) + compute_75 PTX (CUDA 13.0)" in i["message"], i' "$T/stdout"
# --launch: the numbers a launch would use, from the row (libgk's evaluator): sq = 200
# is 4 query blocks of 64, counted sq / 64 - 1 and the split's column (recipes/flash_attention.lua).
run "$GK" probe "$ARCHIVE" --device cuda:sm_86 --launch flash_attention causal=1,dtype=f16,head_dim=128 \
  n_heads=32 n_kv_heads=8 sq=200 skv=4096 ws_bytes=0 --json
expect_status 0 "probe --launch flash_attention"
py 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["target"] == "sm_86" and d["limits"]["max_groups"] == [2147483647, 65535, 65535], d
(l,) = d["launches"]
assert l["entry"] == "flash_attention" and l["grid"] == [4, 32, 1] and l["block"] == [128, 1, 1], l' "$T/stdout"
# sm_90's device takes the sm_90a image, whose section gives the prefill's 64-key tiles
# 64 KB of dynamic shared memory (recipes/flash_attention.lua).
run "$GK" probe "$ARCHIVE" --device cuda:sm_90 --launch flash_attention causal=1,dtype=f16,head_dim=128 \
  n_heads=32 n_kv_heads=8 sq=200 skv=4096 ws_bytes=0
expect_status 0 "probe --launch flash_attention on sm_90"
expect_out "-> cuda sm_90a (cubin)" "sm_90's device picks the sm_90a image"
expect_out "  flash_attention grid 4 x 32 x 1, block 128 x 1 x 1, 65536 bytes shared" "the sm_90a section's own launch"
run "$GK" probe "$ARCHIVE" --device cuda:sm_86 --launch qmatmul bits=4 m=1 n=11008 k=4096
expect_status 0 "probe --launch qmatmul"
expect_out "  qmatmul_q8x     grid 1 x 172 x 1, block 256 x 1 x 1, 0 bytes shared" "the int8-x twin's own row"
expect_out "  qmatmul_q8x_rec grid 1 x 172 x 1, block 256 x 1 x 1, 0 bytes shared" "the twin's row for records"
expect_out "  qmatmul_q8x_mm  grid 1 x 86 x 1, block 256 x 1 x 1, 96256 bytes shared" "an entry's own launch (4 stages, recipes/qmatmul.lua)"
# sm_75's section: its 2 stages lie in static shared memory.
run "$GK" probe "$ARCHIVE" --device cuda:sm_75 --launch qmatmul bits=4 m=1 n=11008 k=4096
expect_status 0 "probe --launch qmatmul on sm_75"
expect_out "  qmatmul_q8x_mm  grid 1 x 86 x 1, block 256 x 1 x 1, 0 bytes shared" "sm_75's own section"
run "$GK" probe "$ARCHIVE" --device cuda:sm_86 --launch qmatmul bits=4 m=1 n=0 k=4096 rows=3
expect_status 2 "probe --launch with a value that is no parameter"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
