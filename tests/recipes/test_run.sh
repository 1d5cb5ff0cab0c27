#!/bin/bash
# gk build running compilers: a failing compile, -j, --backend, and
# toolchains that are missing.
. "$(dirname "$0")/lib.sh"

P=$T/p
make_project "$P"
CC_REAL=$(command -v cc)

# --- A compile error: exit 1, the compiler's message and the command are
# shown, the previous output folder and manifest are untouched.
run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$T/cache"
expect_status 0 "first build"
cp -r "$T/out" "$T/out.1"
cp "$P/src/k.c" "$T/k.c.good"
echo 'int broken( {' >>"$P/src/k.c"
echo '#define SCALE 4' >"$P/src/inc/h.h"  # o.c does not include it: o stays cached
run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$T/cache" -j 1
expect_status 1 "compile error"
expect_err "FAILED: cpu/k/x86-64.bits1.so (cc x86-64 k bits=1)" "compile error names the job"
expect_err "k.c:3:" "compile error shows the compiler's message"
expect_err "error:" "compile error shows the compiler's message"
expect_err " -march=x86-64 -mtune=generic -DBITS=1 " "compile error shows the command"
expect_err "cd $P/src && " "compile error shows where the command ran"
expect_err_line "gk build: 1 of 4 compile jobs failed, 3 not started after the first failure; '$T/out' is left as it was" "compile error summary"
# -j 1 and a failure: no further job was started.
[ "$(grep -c '^FAILED' "$T/stderr")" -eq 1 ] || fail "jobs were started after the failure"
diff -r "$T/out" "$T/out.1" >/dev/null || fail "a failed build changed the output folder"
left=$(find "$T/out" "$T/cache/v1/tmp" -type f -newer "$T/k.c.good" ! -path "$T/out/*")
[ -z "$left" ] || fail "a failed build left temporary files: $left"
cp "$T/k.c.good" "$P/src/k.c"
echo '#define SCALE 3' >"$P/src/inc/h.h"
run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$T/cache"
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache" "fixed source is back in the cache"

# A compile failure with --json still prints JSON.
echo 'int broken( {' >>"$P/src/o.c"
run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$T/cache" --json
expect_status 1 "compile error --json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is False and "failed" in d["error"], d' "$T/stdout" \
  || fail "compile error --json: $(cat "$T/stdout")"
sed -i '$d' "$P/src/o.c"

# --- -j: a cc on PATH that records how many compiles run at once.
mkdir -p "$T/bin" "$T/conc"
cat >"$T/bin/cc" <<SH
#!/bin/sh
case "\$1" in -dump*) exec "$CC_REAL" "\$@";; esac
touch "$T/conc/run.\$\$"
ls "$T/conc" | grep -c '^run\.' >>"$T/conc/seen"
sleep 0.5
rm -f "$T/conc/run.\$\$"
exec "$CC_REAL" "\$@"
SH
chmod +x "$T/bin/cc"
max_seen() { sort -n "$T/conc/seen" | tail -1; }

PATH="$T/bin:$PATH" run "$GK" build --recipes "$P/recipes" --out "$T/outj2" --cache "$T/cache-j2" -j 2
expect_status 0 "-j 2"
[ "$(max_seen)" = 2 ] || fail "-j 2 ran $(max_seen) compiles at once, expected 2"
rm -f "$T/conc/seen"
PATH="$T/bin:$PATH" run "$GK" build --recipes "$P/recipes" --out "$T/outj1" --cache "$T/cache-j1" -j1
expect_status 0 "-j1"
[ "$(max_seen)" = 1 ] || fail "-j1 ran $(max_seen) compiles at once, expected 1"
diff -r "$T/outj1" "$T/outj2" >/dev/null || fail "-j 1 and -j 2 gave different output folders"

# --- Concurrent builds share a cache, even into one output folder.
for i in 1 2 3; do
  ( "$GK" build --recipes "$P/recipes" --out "$T/outc$((i % 2))" --cache "$T/cache-c" \
      >"$T/c$i.out" 2>"$T/c$i.err"; echo $? >"$T/c$i.status" ) &
done
wait
for i in 1 2 3; do
  [ "$(cat "$T/c$i.status")" = 0 ] || fail "concurrent build $i: $(cat "$T/c$i.err")"
done
diff -r "$T/outc0" "$T/outc1" >/dev/null || fail "concurrent builds gave different folders"
left=$(find "$T/outc0" "$T/outc1" "$T/cache-c/v1/tmp" -type f ! -name '*.so' ! -name manifest.json)
[ -z "$left" ] || fail "concurrent builds left temporary files: $left"

# --- --backend, and a backend whose toolchain is not here. (Every built-in
# backend has a toolchain module now; metal's needs xcrun, i.e. macOS.)
cat >>"$P/recipes/k.lua" <<'LUA'
kernel "g" {
  metal { source = "../src/k.c", targets = { "macos-metal3.0" } },
}
LUA
run "$GK" build --recipes "$P/recipes" --out "$T/outb" --cache "$T/cache"
expect_status 0 "build with a metal section"
expect_err_line "gk build: metal: skipped, xcrun not found (Metal builds need macOS)" "metal skipped with a reason"
expect_err_line "gk build: cpu: 5 images (cc $(cc -dumpfullversion) $(cc -dumpmachine))" "cpu built"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["skipped"] == [{"backend": "metal", "reason": "xcrun not found (Metal builds need macOS)"}], m["skipped"]' \
  "$T/outb/manifest.json" || fail "manifest lists the skipped backend"
run "$GK" build --recipes "$P/recipes" --out "$T/outb" --cache "$T/cache" --backend cpu
expect_status 0 "--backend cpu"
grep -qF 'metal' "$T/stderr" && fail "--backend cpu mentions metal: $(cat "$T/stderr")"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["skipped"] == [] and len(m["images"]) == 5, m' \
  "$T/outb/manifest.json" || fail "--backend cpu manifest"
cp -r "$T/outb" "$T/outb.1"
run "$GK" build --recipes "$P/recipes" --out "$T/outb" --cache "$T/cache" --backend metal
expect_status 1 "--backend metal without a toolchain"
expect_err_line "gk build: cannot build backend 'metal' asked for with --backend: xcrun not found (Metal builds need macOS)" \
  "--backend metal says why"
diff -r "$T/outb" "$T/outb.1" >/dev/null || fail "--backend metal failure changed the output folder"
run "$GK" build --recipes "$P/recipes" --out "$T/outb" --cache "$T/cache" --backend rocm --backend cpu
expect_status 0 "--backend rocm (no recipe has it)"
expect_err "no recipe in '$P/recipes' has a rocm section" "--backend rocm note"

# --- cc missing from PATH: the cpu backend is skipped with the reason.
PATH=/nonexistent run "$GK" build --recipes "$P/recipes" --out "$T/outn" --cache "$T/cache"
expect_status 0 "no cc on PATH"
expect_err_line "gk build: cpu: skipped, cc not found on PATH" "no cc on PATH"
expect_err_line "gk build: 0 images, 0 compiled, 0 from cache" "no cc: nothing built"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["images"] == [] and {"backend": "cpu", "reason": "cc not found on PATH"} in m["skipped"], m' \
  "$T/outn/manifest.json" || fail "no cc: manifest"
PATH=/nonexistent run "$GK" build --recipes "$P/recipes" --out "$T/outn" --cache "$T/cache" --backend cpu
expect_status 1 "no cc on PATH with --backend cpu"
expect_err_line "gk build: cannot build backend 'cpu' asked for with --backend: cc not found on PATH" \
  "no cc with --backend cpu"

# --- A toolchain module beside the recipes replaces the embedded one: here
# one whose compiler does not exist.
mkdir "$P/recipes/toolchains"
cat >"$P/recipes/toolchains/cc.lua" <<'LUA'
return {
  backend = "cpu", format = "so", ext = "so", targets = { "x86-64", "x86-64-v3" },
  probe = function()
    local tool = gk.which("gk-no-such-cc")
    if not tool then return nil, "gk-no-such-cc not found on PATH" end
    return { tool = tool, identity = "never" }
  end,
  command = function(job, p) return { p.tool } end,
}
LUA
run "$GK" build --recipes "$P/recipes" --out "$T/outo" --cache "$T/cache" --backend cpu
expect_status 1 "override with a missing compiler"
expect_err_line "gk build: cannot build backend 'cpu' asked for with --backend: gk-no-such-cc not found on PATH" \
  "override module is used"
# A module adding a toolchain: a second cpu toolchain, tried in name order.
mv "$P/recipes/toolchains/cc.lua" "$P/recipes/toolchains/aaa.lua"
run "$GK" build --recipes "$P/recipes" --out "$T/outo" --cache "$T/cache" --backend cpu
expect_status 0 "added module that is unavailable, then cc"
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache" "falls back to cc"
rm -r "$P/recipes/toolchains"

finish
