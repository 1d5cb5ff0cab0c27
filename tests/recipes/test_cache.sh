#!/bin/bash
# gk build and its cache: a second build compiles nothing and changes no
# image; editing a header recompiles exactly the jobs that include it; the
# output folder and manifest follow docs/manifest.md.
. "$(dirname "$0")/lib.sh"

P=$T/p
make_project "$P"
build() { run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$T/cache" "$@"; }

build
expect_status 0 "first build"
expect_err_line "gk build: 5 images, 5 compiled, 0 from cache" "first build compiles all"
expect_err_line "gk build: cpu: 5 images (cc $(cc -dumpfullversion) $(cc -dumpmachine))" "first build names the backend"
# Not on a terminal: one ninja-style line per job, as each finishes.
[ "$(grep -c '^\[[1-5]/5\] cc ' "$T/stderr")" -eq 5 ] || fail "expected 5 progress lines"
grep -q '^\[[1-5]/5\] cc x86-64-v3 k bits=2$' "$T/stderr" || fail "no progress line for k bits=2"
grep -q '^\[[1-5]/5\] cc x86-64 o$' "$T/stderr" || fail "no progress line for o"
for f in cpu/k/x86-64.bits1.so cpu/k/x86-64.bits2.so cpu/k/x86-64-v3.bits1.so \
         cpu/k/x86-64-v3.bits2.so cpu/o/x86-64.so manifest.json; do
  [ -f "$T/out/$f" ] || fail "missing $f in the output folder"
done
n=$(find "$T/out" -type f | wc -l)
[ "$n" -eq 6 ] || fail "output folder has $n files, expected 6: $(find "$T/out" -type f)"

# The manifest, field by field, against the files.
python3 - "$T/out" <<'PY' || fail "manifest content"
import hashlib, json, os, sys
out = sys.argv[1]
m = json.load(open(os.path.join(out, "manifest.json")))
assert list(m) == ["format", "version", "meta", "images", "skipped"], list(m)
assert m["meta"]["source_revision"] == "unknown" and m["meta"]["source_dirty"] == "unknown", m["meta"]
assert sorted(m["meta"]["recipes"]) == ["k.lua", "o.lua", "toolchains/cc.lua"], m["meta"]
assert m["format"] == "gllm-kernels-manifest" and m["version"] == 1, m
assert m["skipped"] == [], m["skipped"]
keys = [(i["kernel"], i["backend"], i["target"], i["variant"]) for i in m["images"]]
assert keys == sorted(keys), keys
assert keys == [("k", "cpu", "x86-64", "bits=1"), ("k", "cpu", "x86-64", "bits=2"),
                ("k", "cpu", "x86-64-v3", "bits=1"), ("k", "cpu", "x86-64-v3", "bits=2"),
                ("o", "cpu", "x86-64", "")], keys
fields = ["kernel", "backend", "target", "variant", "format", "path", "entry", "launch",
          "toolchain", "size", "sha256"]
for im in m["images"]:
    assert list(im) == fields, list(im)
    assert im["format"] == "so" and im["launch"] == {}, im
    assert im["entry"] == [im["kernel"]], im
    assert im["toolchain"].startswith("cc "), im
    v = im["variant"].replace("=", "").replace(",", ".")
    assert im["path"] == "cpu/%s/%s%s.so" % (im["kernel"], im["target"], "." + v if v else ""), im
    data = open(os.path.join(out, im["path"]), "rb").read()
    assert len(data) == im["size"], im
    assert hashlib.sha256(data).hexdigest() == im["sha256"], im
PY

# The image: the entry point is exported, and no path of this machine is in it.
nm -D --defined-only "$T/out/cpu/k/x86-64-v3.bits2.so" | grep -qw k || fail "entry 'k' not exported"
grep -qaF "$T" "$T"/out/cpu/*/*.so && fail "an image contains the path '$T'"

# Second build: nothing compiled, nothing rewritten.
cp -r "$T/out" "$T/out.1"
touch -d '-1 minute' "$T/out.1/marker"; touch "$T/marker"
sleep 1
build --json
expect_status 0 "second build"
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache" "second build compiles nothing"
grep -qF '[' "$T/stderr" && fail "second build printed progress: $(cat "$T/stderr")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] and d["compiled"] == 0 and d["cached"] == 5 and d["images"] == 5 and d["written"] == 0, d' "$T/stdout" \
  || fail "--json summary of the second build: $(cat "$T/stdout")"
diff -r "$T/out" "$T/out.1" -x marker >/dev/null || fail "second build changed the output folder"
[ -z "$(find "$T/out" -newer "$T/marker")" ] || fail "second build rewrote: $(find "$T/out" -newer "$T/marker")"

# The compiler's version queries were kept in the cache (gk.run_cached), so
# a no-op build starts no process at all.
[ -n "$(ls "$T/cache/v1/runs" 2>/dev/null)" ] || fail "cc's probe results were not cached"

# Touching a header without changing it: content decides, still nothing to do.
touch "$P/src/inc/h.h"
build
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache" "touched header"

# The same project at another path shares the cache (no path in the key).
cp -r "$P" "$T/p2"
run "$GK" build --recipes "$T/p2/recipes" --out "$T/out2" --cache "$T/cache"
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache" "a copy of the project elsewhere"

# Editing the header recompiles the four jobs of k, not o.
echo '#define SCALE 5' >"$P/src/inc/h.h"
build
expect_status 0 "build after editing the header"
expect_err_line "gk build: 5 images, 4 compiled, 1 from cache" "edited header"
cmp -s "$T/out/cpu/o/x86-64.so" "$T/out.1/cpu/o/x86-64.so" || fail "o changed"
cmp -s "$T/out/cpu/k/x86-64.bits1.so" "$T/out.1/cpu/k/x86-64.bits1.so" && fail "k did not change"
# ... and the copy still has the old header: its images come from the cache.
run "$GK" build --recipes "$T/p2/recipes" --out "$T/out2" --cache "$T/cache"
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache" "the copy keeps its own header"
# Back to the old content: the old images are still in the cache.
echo '#define SCALE 3' >"$P/src/inc/h.h"
build
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache" "header restored"
diff -r "$T/out" "$T/out.1" -x marker >/dev/null || fail "restored header gave other images"

# A flag in the recipe is part of the key.
sed -i 's|targets = { "x86-64" } }|targets = { "x86-64" }, flags = { "-DEXTRA=1" } }|' "$P/recipes/o.lua"
build
expect_err_line "gk build: 5 images, 1 compiled, 4 from cache" "new recipe flag"

# Images the recipes no longer make are removed, with their empty folders.
sed -i 's/bits = { 1, 2 }/bits = { 1 }/' "$P/recipes/k.lua"
rm "$P/recipes/o.lua"
build
expect_status 0 "build after dropping images"
[ -e "$T/out/cpu/k/x86-64.bits2.so" ] && fail "stale image bits2 kept"
[ -e "$T/out/cpu/o" ] && fail "stale folder cpu/o kept"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert [i["path"] for i in m["images"]] == ["cpu/k/x86-64.bits1.so", "cpu/k/x86-64-v3.bits1.so"], m' \
  "$T/out/manifest.json" || fail "manifest after dropping images"

# A deleted output folder comes back from the cache.
rm -rf "$T/out"
build
expect_err_line "gk build: 2 images, 0 compiled, 2 from cache" "rebuild into an empty folder"
[ -f "$T/out/manifest.json" ] || fail "no manifest after rebuilding from the cache"

# Without --cache, GK_CACHE_DIR is the cache.
run "$GK" build --recipes "$P/recipes" --out "$T/out3"
expect_status 0 "build with GK_CACHE_DIR"
[ -d "$GK_CACHE_DIR/v1/objects" ] || fail "GK_CACHE_DIR not used"
[ -f "$GK_CACHE_DIR/CACHEDIR.TAG" ] || fail "no CACHEDIR.TAG in the cache"

# Nothing temporary is left anywhere.
left=$(find "$T/out" "$T/cache" -name '*.tmp*' -o -name '*.gk-staged*' -o -path '*/v1/tmp/*')
[ -z "$left" ] || fail "temporary files left: $left"

finish
