#!/bin/sh
# test_targets.sh GK: the toolchain-module hooks for targets, with a module
# of this test's own ("fake", which copies the source with cp) so that it
# runs on any machine:
#   check_target  target names beyond the module's list ("t1:x+"), checked
#                 where the recipe names them and in --targets;
#   can_build     a target the toolchain cannot produce is skipped with the
#                 module's reason, per target, printed last and recorded in
#                 the manifest; the rest builds; --strict refuses instead;
#   file names    ':' of a target becomes '-' in the image's path only;
#   sections      a backend's targets split between two sections, under
#                 --targets each built once, by the section that lists it;
#                 a section without targets takes the defaults the others
#                 leave, and the --targets names none lists;
#   require       a module loads toolchains/lib/ and nothing else.
. "$(dirname "$0")/lib.sh"

P=$T/p
mkdir -p "$P/recipes/toolchains" "$P/src"
echo "payload" >"$P/src/k.txt"
cat >"$P/recipes/toolchains/fake.lua" <<'LUA'
return {
  backend = "fake", format = "bin", ext = "bin",
  targets = { "t1", "t2", "t3" },
  check_target = function(t)
    local base = t:match("^(t[12]):%a+[+-]$")
    if base then return true end
    return nil, ("'%s' is not tN or tN:feature+/-"):format(t)
  end,
  probe = function()
    local tool = gk.which("cp")
    if not tool then return nil, "cp not found" end
    return { tool = tool, identity = "fake 1", missing = "t3" }
  end,
  -- info is what probe returned.
  can_build = function(t, info)
    if t:match("^" .. info.missing) then return false, "fake 1 cannot make " .. t .. "; use fake 2" end
    return true
  end,
  command = function(job, p) return { p.tool, p.src, p.out } end,
}
LUA
cat >"$P/recipes/k.lua" <<'LUA'
kernel "k" {
  fake { source = "../src/k.txt", targets = { "t1", "t1:x+", "t3" } },
}
LUA

run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$T/cache" --json
expect_status 0 "build with a target the toolchain cannot make"
expect_err_line "gk build: fake t3: skipped, fake 1 cannot make t3; use fake 2" "t3 skipped with the module's reason"
tail -n 2 "$T/stderr" | head -n 1 | grep -qx "gk build: fake t3: skipped, fake 1 cannot make t3; use fake 2" ||
  fail "the skip is not printed at the end: $(tail -n 3 "$T/stderr")"
[ -f "$T/out/fake/k/t1.bin" ] || fail "no image t1.bin"
[ -f "$T/out/fake/k/t1-x+.bin" ] || fail "no image t1-x+.bin (':' becomes '-' in file names)"
python3 - "$T/out/manifest.json" "$T/stdout" <<'PY' || fail "manifest and summary record the skipped target"
import json, sys
m = json.load(open(sys.argv[1]))
assert [(i["target"], i["path"]) for i in m["images"]] == [
    ("t1", "fake/k/t1.bin"), ("t1:x+", "fake/k/t1-x+.bin")], m["images"]
assert m["skipped"] == [{"backend": "fake", "target": "t3",
                         "reason": "fake 1 cannot make t3; use fake 2"}], m["skipped"]
s = json.load(open(sys.argv[2]))
assert s["images"] == 2 and s["skipped"] == m["skipped"], s
PY

# --strict: the same build fails, naming the target, and writes nothing.
cp "$T/out/manifest.json" "$T/manifest.before"
run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$T/cache" --strict
expect_status 1 "--strict with a target the toolchain cannot make"
expect_err_line "gk build: --strict: 1 target cannot be built here:" "--strict says how many"
expect_err_line "  fake t3: fake 1 cannot make t3; use fake 2" "--strict lists the target and why"
cmp -s "$T/out/manifest.json" "$T/manifest.before" || fail "--strict touched the output folder"
run "$GK" build --recipes "$P/recipes" --out "$T/out2" --cache "$T/cache" --strict --targets fake=t1,t2:y-
expect_status 0 "--strict when every target can be built"
[ -f "$T/out2/fake/k/t2-y-.bin" ] || fail "--targets with a target ID: no t2-y-.bin"

# A backend's targets split between two sections (each its own launch):
# --targets builds each target once, by the section that lists it, and one
# no section lists by the first.
cat >"$P/recipes/k.lua" <<'LUA'
kernel "k" {
  fake { source = "../src/k.txt", targets = { "t1" }, launch = { n = 1 } },
  fake { source = "../src/k.txt", targets = { "t2" }, launch = { n = 2 } },
}
LUA
run "$GK" build --recipes "$P/recipes" --out "$T/out5" --cache "$T/cache" --targets fake=t2,t1:x+
expect_status 0 "--targets over a backend split between two sections"
python3 - "$T/out5/manifest.json" <<'PY' || fail "each --targets target built once, by its section"
import json, sys
m = json.load(open(sys.argv[1]))
got = sorted((i["target"], i["launch"]["n"]) for i in m["images"])
assert got == [("t1:x+", 1), ("t2", 2)], got
PY

# A section without targets takes the defaults (here the module's targets)
# less those its backend's other sections list, and under --targets the
# names no section lists, though it is not the first.
cat >"$P/recipes/k.lua" <<'LUA'
kernel "k" {
  fake { source = "../src/k.txt", targets = { "t2" }, launch = { n = 2 } },
  fake { source = "../src/k.txt", launch = { n = 1 } },
}
LUA
run "$GK" build --recipes "$P/recipes" --out "$T/out6" --cache "$T/cache"
expect_status 0 "a section without targets beside one with"
run "$GK" build --recipes "$P/recipes" --out "$T/out7" --cache "$T/cache" --targets fake=t2,t1:x+
expect_status 0 "--targets over a section without targets"
python3 - "$T/out6/manifest.json" "$T/out7/manifest.json" <<'PY' || fail "the defaults' section builds the rest"
import json, sys
m = json.load(open(sys.argv[1]))
got = sorted((i["target"], i["launch"]["n"]) for i in m["images"])
assert got == [("t1", 1), ("t2", 2)], got
assert [s["target"] for s in m["skipped"]] == ["t3"], m["skipped"]
m = json.load(open(sys.argv[2]))
got = sorted((i["target"], i["launch"]["n"]) for i in m["images"])
assert got == [("t1:x+", 1), ("t2", 2)], got
PY
# A launch's "{param}" placeholders take each variant's value, in every
# string of the launch (a list's too), and nowhere else.
cat >"$P/recipes/k.lua" <<'LUA'
kernel "k" {
  params = { p = { 16, 64 }, q = { "a" } },
  fake { source = "../src/k.txt", targets = { "t1" },
         launch = { g = { "n * {p}", "{q}{p}" }, s = "{p}", n = 1 } },
}
LUA
run "$GK" build --recipes "$P/recipes" --out "$T/out9" --cache "$T/cache"
expect_status 0 "a launch with {param} placeholders"
python3 - "$T/out9/manifest.json" <<'PY' || fail "each variant's launch has its own values"
import json, sys
m = json.load(open(sys.argv[1]))
got = sorted((i["variant"], i["launch"]["g"], i["launch"]["s"], i["launch"]["n"]) for i in m["images"])
assert got == [("p=16,q=a", ["n * 16", "a16"], "16", 1),
               ("p=64,q=a", ["n * 64", "a64"], "64", 1)], got
PY
# refused FIRST_SECTION WHAT MESSAGE: a kernel of FIRST_SECTION and a fake
# section without targets is refused with MESSAGE.
refused() {
  printf 'kernel "k" {\n  %s,\n  fake { source = "../src/k.txt", launch = { n = 1 } },\n}\n' "$1" \
    >"$P/recipes/k.lua"
  run "$GK" build --recipes "$P/recipes" --out "$T/out8" --cache "$T/cache"
  expect_status 1 "$2"
  expect_err "$3" "$2: the message"
}
refused 'fake { source = "../src/k.txt" }' "two sections without targets" \
  "k.lua:3: a second fake section without targets (the first is at $P/recipes/k.lua:2); give one of them targets = { ... }"
refused 'fake { source = "../src/k.txt", targets = { "t1", "t2", "t3" } }' \
  "a section without targets left none" \
  "k.lua:3: every default target of fake is listed by another section; give this one targets = { ... } or remove it"
[ -e "$T/out8" ] && fail "a failed recipe left $T/out8"

# check_target: its reason where the recipe names a bad target, and in --targets.
cat >"$P/recipes/k.lua" <<'LUA'
kernel "k" {
  fake { source = "../src/k.txt", targets = { "t1", "t9:x+" } },
}
LUA
run "$GK" build --recipes "$P/recipes" --out "$T/out3" --cache "$T/cache"
expect_status 1 "a target neither listed nor accepted"
expect_err "k.lua:2: unknown target 't9:x+' for fake; 't9:x+' is not tN or tN:feature+/-; known: t1, t2, t3" \
  "the module's reason in the recipe error"
run "$GK" build --recipes "$P/recipes" --out "$T/out3" --cache "$T/cache" --targets fake=t1:z
expect_status 2 "--targets with a bad target ID"
expect_err "'t1:z' is not tN or tN:feature+/-" "the module's reason for --targets"

# A hook that is not a function is a module error.
sed -i 's/^  can_build = function(t, info)$/  can_build = 42, old_can_build = function(t, info)/' \
  "$P/recipes/toolchains/fake.lua"
run "$GK" build --recipes "$P/recipes" --out "$T/out3" --cache "$T/cache"
expect_status 1 "can_build not a function"
expect_err "toolchain module 'fake'" "names the module"
expect_err "can_build must be a function or nil" "says what is wrong"

# A module's require: the shared libraries of toolchains/lib/ and nothing
# else (hipcc.lua and hipclang.lua take the AMDGPU target IDs from one).
sed -i 's/^  can_build = 42, old_can_build = function(t, info)$/  can_build = function(t, info)/' \
  "$P/recipes/toolchains/fake.lua"
sed -i '1i local amdgpu = require("lib/amdgpu")\nassert(amdgpu.check_target("gfx90a:xnack+") and not amdgpu.check_target("gfx90a:bad+"))' \
  "$P/recipes/toolchains/fake.lua"
printf 'kernel "k" { fake { source = "../src/k.txt", targets = { "t1" } } }\n' >"$P/recipes/k.lua"
run "$GK" build --recipes "$P/recipes" --out "$T/out4" --cache "$T/cache"
expect_status 0 "a module requiring lib/amdgpu"
sed -i '1i local os = require("os")' "$P/recipes/toolchains/fake.lua"
run "$GK" build --recipes "$P/recipes" --out "$T/out4" --cache "$T/cache"
expect_status 1 "a module requiring what is not a toolchain library"
expect_err "require: 'os' is not a toolchain library (lib/NAME)" "says what require takes"

finish
