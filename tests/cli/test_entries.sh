#!/bin/bash
# Every entry a recipe lists is checked against the image, for every format,
# at build (bad_inputs.tsv: build.misspelt_entry), pack, verify and load
# (tests/loader: loader.module), so a misspelt name cannot pass into a
# release; and the smaller points of issue 21 that are behaviour:
# gk build --kernel, -o/--out/--output everywhere, verify --json on failure.
. "$(dirname "$0")/lib.sh"
SRC=$4 CACHE=$5
py() {
  what=$1; shift
  python3 - "$@" || fail "$what"
}

# gk pack: a manifest whose qmatmul images list a function they do not export.
cp -r "$OUT" "$T/out"
python3 - "$T/out/manifest.json" <<'PY' || fail "cannot edit the manifest"
import json, sys
m = json.load(open(sys.argv[1]))
for i in m["images"]:
    if i["kernel"] == "qmatmul":
        i["entry"] = ["qmatmul", "qmatmul_pakced"]
json.dump(m, open(sys.argv[1], "w"))
PY
run "$GK" pack "$T/out" -o "$T/bad.gkfat"; expect_status 1 "pack a misspelt entry"
expect_err_line "gk pack: image '$T/out/cpu/qmatmul/x86-64.bits1.so' (kernel 'qmatmul') does not fit its manifest entry: entry 'qmatmul_pakced' is not a function the image exports (its dynamic symbol table); fix the kernel's recipe and run 'gk build' again" "pack names the image and the entry"
[ -e "$T/bad.gkfat" ] && fail "pack left an archive behind"

# gk verify: an archive whose index lists an entry the image lacks (written
# by another tool: gk pack refuses it).
cp "$ARCHIVE" "$T/edited.gkfat"
python3 - "$T/edited.gkfat" <<'PY' || fail "cannot edit the archive"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("""UPDATE spec SET entry = '["argmax","argmx"]' WHERE entry = '["argmax"]'""")
assert c.total_changes == 1
c.commit()
PY
run "$GK" verify "$T/edited.gkfat"; expect_status 1 "verify a misspelt entry"
expect_out "FAIL cpu argmax x86-64 : archive '$T/edited.gkfat': image 'argmax' cpu x86-64 does not fit its row: entry 'argmx' is not a function the image exports (its dynamic symbol table)" "verify names the entry"

# verify --json answers on stdout on every failure.
run "$GK" verify "$T/missing.gkfat" --json; expect_status 1 "verify --json of a missing archive"
py "verify --json on failure" "$T/stdout" "$T/missing.gkfat" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False and d["archive"] == sys.argv[2] and "No such file" in d["error"], d
PY
run "$GK" verify "$T/edited.gkfat" --json; expect_status 1 "verify --json of a bad image"
py "verify --json of a bad image" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False and any("argmx" in i.get("error", "") for i in d["images"]), d["ok"]
PY

# gk build --kernel: one kernel's images, from the cache the fixture filled.
run "$GK" build --recipes "$SRC/recipes" --backend cpu --kernel rmsnorm --out "$T/one" --cache "$CACHE"
expect_status 0 "build --kernel rmsnorm"
py "build --kernel lists one kernel" "$T/one/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["images"] and {i["kernel"] for i in m["images"]} == {"rmsnorm"}, {i["kernel"] for i in m["images"]}
PY

# Where a command writes: -o, --out and --output alike, in every command.
for o in -o --out --output; do
  rm -rf "$T/w"; mkdir "$T/w"
  run "$GK" pack "$T/one" "$o" "$T/w/a.gkfat"; expect_status 0 "pack $o"
  run "$GK" extract "$T/w/a.gkfat" "$o" "$T/w/x"; expect_status 0 "extract $o"
  run "$GK" embed "$T/w/a.gkfat" "$o" "$T/w/a.c"; expect_status 0 "embed $o"
  run "$GK" keygen "$o" "$T/w/k"; expect_status 0 "keygen $o"
  run "$GK" sign "$T/w/a.gkfat" --key "$T/w/k.key" "$o" "$T/w/s.gkfat"; expect_status 0 "sign $o"
  run "$GK" build --recipes "$SRC/recipes" --backend cpu --kernel rmsnorm "$o" "$T/w/b" --cache "$CACHE"
  expect_status 0 "build $o"
  [ -f "$T/w/b/manifest.json" ] || fail "build $o wrote no manifest"
done
# The build tree holds no gk.pc naming install paths (for-install/ has the
# one cmake --install copies).
[ -e "$(dirname "$GK")/gk.pc" ] && fail "the build tree has a gk.pc that points at install paths"

# WGSL: an entry is a function with the @compute attribute (build:
# bad_inputs.tsv build.wgsl_*). gk pack refuses a manifest that lists
# another name, gk verify an archive whose row does.
mkdir -p "$T/wr"
cat >"$T/wr/k.lua" <<LUA
kernel "k" {
  wgsl { source = "$SRC/tests/cli/bad_inputs/project/src/k.wgsl", entry = { "k" }, targets = { "webgpu" } },
}
LUA
run "$GK" build --recipes "$T/wr" --out "$T/wo" --cache "$T/wc"; expect_status 0 "build a wgsl kernel"
run "$GK" pack "$T/wo" -o "$T/w.gkfat"; expect_status 0 "pack a wgsl kernel"
python3 - "$T/wo/manifest.json" <<'PY' || fail "cannot edit the wgsl manifest"
import json, sys
m = json.load(open(sys.argv[1]))
for i in m["images"]:
    i["entry"] = ["k", "kk"]
json.dump(m, open(sys.argv[1], "w"))
PY
run "$GK" pack "$T/wo" -o "$T/wbad.gkfat"; expect_status 1 "pack a misspelt wgsl entry"
expect_err_line "gk pack: image '$T/wo/wgsl/k/webgpu.wgsl' (kernel 'k') does not fit its manifest entry: the WGSL text has no kernel 'kk' (no @compute fn kk); fix the kernel's recipe and run 'gk build' again" "pack names the wgsl entry"
[ -e "$T/wbad.gkfat" ] && fail "pack left a wgsl archive behind"
python3 - "$T/w.gkfat" <<'PY' || fail "cannot edit the wgsl archive"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("""UPDATE spec SET entry = '["twice"]' WHERE entry = '["k"]'""")
assert c.total_changes == 1
c.commit()
PY
run "$GK" verify "$T/w.gkfat"; expect_status 1 "verify a wgsl helper listed as an entry"
expect_out "FAIL wgsl k webgpu : archive '$T/w.gkfat': image 'k' wgsl webgpu does not fit its row: the WGSL text has no kernel 'twice' (fn twice has no @compute attribute)" "verify names the wgsl entry"
finish
