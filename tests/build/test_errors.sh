#!/bin/bash
# gk build: what a user sees for bad recipes and bad command lines. Each
# message is checked whole: file:line, what is wrong, what is valid.
. "$(dirname "$0")/lib.sh"

P=$T/p
make_project "$P"
R=$T/r  # a recipes folder holding one bad recipe at a time
mkdir -p "$R"

# bad_recipe: the recipe text on stdin replaces $R/r.lua; builds it.
bad_recipe() {
  rm -f "$R"/*.lua
  cat >"$R/r.lua"
  run "$GK" build --recipes "$R" --out "$T/out" --cache "$T/cache"
}

# expect_recipe_error LINE DESCRIPTION: exit 1, exactly that message, and
# no output folder.
expect_recipe_error() {
  expect_status 1 "$2"
  expect_err_line "gk build: $1" "$2"
  [ -e "$T/out" ] && fail "$2: an output folder was created"
  [ "$(wc -l <"$T/stderr")" -eq 1 ] || fail "$2: more than one line on stderr: $(cat "$T/stderr")"
}

bad_recipe <<LUA
kernel "k" {
  cpu {
    source = "$P/src/k.c"
    targets = { "x86-64" },
  },
}
LUA
expect_recipe_error "$R/r.lua:4: '}' expected (to close '{' at line 2) near 'targets'" "syntax error"

bad_recipe <<LUA
kernel "k" {
  params = { bits = { 1, 2 } },
  cpu {
    source = "$P/src/k.c",
    targets = { "x86-64", "x86-64-v9" },
  },
}
LUA
expect_recipe_error "$R/r.lua:3: unknown target 'x86-64-v9' for cpu; known: x86-64, x86-64-v2, x86-64-v3, x86-64-v4" \
  "unknown target"

bad_recipe <<LUA
kernel "k" {
  tpu { source = "$P/src/k.c", targets = { "v5e" } },
}
LUA
expect_recipe_error "$R/r.lua:2: unknown backend or name 'tpu'; backends: cpu, cuda, metal, rocm, vulkan, wgsl; functions: kernel" \
  "unknown backend"

bad_recipe <<'LUA'
kernel "k" {
  cpu {
    source = "../src/missing.c",
    targets = { "x86-64" },
  },
}
LUA
expect_recipe_error "$R/r.lua:2: cannot read source '../src/missing.c' of cpu: No such file or directory (looked for '$R/../src/missing.c')" \
  "missing source"

bad_recipe <<LUA
kernel "k" {
  params = { bits = 4 },
  cpu { source = "$P/src/k.c", targets = { "x86-64" } },
}
LUA
expect_recipe_error "$R/r.lua:1: params.bits must be a non-empty list of integers or strings, e.g. bits = { 1, 2, 4, 8 }; got 4" \
  "param not a list"

bad_recipe <<LUA
kernel "k" {
  params = { bits = { 1, 2.5 } },
  cpu { source = "$P/src/k.c", targets = { "x86-64" } },
}
LUA
expect_recipe_error "$R/r.lua:1: params.bits[2] must be an integer or a string of letters, digits, '_.+-'; got 2.5" \
  "param value a float"

bad_recipe <<LUA
kernel "k" {
  params = { bits = { true } },
  cpu { source = "$P/src/k.c", targets = { "x86-64" } },
}
LUA
expect_recipe_error "$R/r.lua:1: params.bits[1] must be an integer or a string of letters, digits, '_.+-'; got a boolean" \
  "param value a boolean"

bad_recipe <<LUA
kernel "k" {
  cpu { source = "$P/src/k.c", target = { "x86-64" } },
}
LUA
expect_recipe_error "$R/r.lua:2: unknown field 'target' in cpu; known: entry, flags, launch, source, targets, toolchain; did you mean 'targets'?" \
  "unknown section field"

bad_recipe <<LUA
kernel "k" {
  param = { bits = { 1 } },
  cpu { source = "$P/src/k.c", targets = { "x86-64" }, color = "red" },
}
LUA
expect_recipe_error "$R/r.lua:3: unknown field 'color' in cpu; known: entry, flags, launch, source, targets, toolchain" \
  "unknown section field, nothing close"

bad_recipe <<LUA
kernel "k" {
  cpu { source = "$P/src/k.c", targets = { "x86-64" }, toolchain = "icc" },
}
LUA
expect_recipe_error "$R/r.lua:2: unknown toolchain 'icc' for cpu; known: cc" "unknown toolchain"

bad_recipe <<LUA
kernel "k" {
  cpu { source = "$P/src/k.c", targets = { "x86-64" } },
  cpu { source = "$P/src/k.c", targets = { "x86-64" } },
}
LUA
expect_recipe_error "$R/r.lua:3: target 'x86-64' of cpu is already built by the section at $R/r.lua:2" \
  "target twice"

bad_recipe <<'LUA'
kernel "k"
LUA
expect_recipe_error "$R/r.lua:1: kernel 'k' has no body; write kernel \"k\" { cpu { ... } }" "kernel without body"

bad_recipe <<'LUA'
local x = nil
kernel "k" { x.y }
LUA
expect_recipe_error "$R/r.lua:2: attempt to index a nil value (local 'x')" "runtime error in a recipe"

bad_recipe <<LUA
kernel "k" {
  param = { bits = { 1 } },
  cpu { source = "$P/src/k.c", targets = { "x86-64" } },
}
LUA
expect_recipe_error "$R/r.lua:1: unknown field 'param' in kernel 'k'; known: params, and backend sections (cpu { ... }, cuda { ... }, metal { ... }, rocm { ... }, vulkan { ... }, wgsl { ... }); did you mean 'params'?" \
  "unknown kernel field"

# Duplicate kernel names across files name both places.
rm -f "$R"/*.lua
printf 'kernel "k" {\n  cpu { source = "%s", targets = { "x86-64" } },\n}\n' "$P/src/k.c" >"$R/a.lua"
printf -- '-- the same name again\nkernel "k" {\n  cpu { source = "%s", targets = { "x86-64" } },\n}\n' "$P/src/k.c" >"$R/b.lua"
run "$GK" build --recipes "$R" --out "$T/out" --cache "$T/cache"
expect_recipe_error "$R/b.lua:2: duplicate kernel 'k'; it is first defined at $R/a.lua:1; kernel names are unique across recipes" \
  "duplicate kernel"

# Recipes folder problems.
run "$GK" build --recipes "$T/nowhere" --out "$T/out" --cache "$T/cache"
expect_recipe_error "cannot read recipes folder '$T/nowhere': No such file or directory; pass --recipes DIR, a folder of *.lua recipes" \
  "missing recipes folder"
mkdir "$T/empty"
run "$GK" build --recipes "$T/empty" --out "$T/out" --cache "$T/cache"
expect_recipe_error "no recipe in '$T/empty': it has no *.lua file; pass --recipes DIR, a folder of recipes" \
  "empty recipes folder"

# A broken toolchain module override names its file.
rm -f "$R"/*.lua
cp "$P/recipes/o.lua" "$R/o.lua"
sed -i "s|\.\./src/o.c|$P/src/o.c|" "$R/o.lua"
mkdir "$R/toolchains"
printf 'return { backend = "cpu", format = "so", ext = "so", targets = { "x86-64" }, command = function() end }\n' \
  >"$R/toolchains/cc.lua"
run "$GK" build --recipes "$R" --out "$T/out" --cache "$T/cache"
expect_recipe_error "toolchain module 'cc' ($R/toolchains/cc.lua): probe must be a function" "bad toolchain module"
rm -r "$R/toolchains"

# Usage errors: exit 2, the flag named.
run "$GK" build --recipes "$P/recipes" --out "$T/out" --frobnicate
expect_status 2 "unknown flag"
expect_err "'--frobnicate'" "unknown flag is named"
run "$GK" build --out "$T/out"
expect_status 2 "no --recipes"
expect_err "--recipes" "no --recipes is named"
run "$GK" build --recipes "$P/recipes"
expect_status 2 "no --out"
expect_err "--out" "no --out is named"
run "$GK" build --recipes "$P/recipes" --out "$T/out" -j 0
expect_status 2 "-j 0"
expect_err "'-j'" "-j 0 names the option"
run "$GK" build --recipes "$P/recipes" --out "$T/out" -jx
expect_status 2 "-jx"
run "$GK" build --recipes "$P/recipes" --out
expect_status 2 "--out without a value"
expect_err "'--out' needs a value" "--out without a value"
run "$GK" build "$P/recipes" --out "$T/out"
expect_status 2 "positional argument"
expect_err "unexpected argument '$P/recipes'" "positional argument named"
run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$T/cache" --backend tpu
expect_status 2 "unknown --backend"
expect_err_line "gk build: unknown backend 'tpu' for --backend; known: cpu, cuda, metal, rocm, vulkan, wgsl" \
  "unknown --backend"
[ -e "$T/out" ] && fail "usage errors created the output folder"
[ -e "$T/cache" ] && fail "usage or recipe errors created the cache folder"

# --out naming a file.
touch "$T/afile"
run "$GK" build --recipes "$P/recipes" --out "$T/afile" --cache "$T/cache"
expect_status 1 "--out is a file"
expect_err_line "gk build: cannot use '$T/afile' as --out: it is not a folder" "--out is a file"

# --help: usage on stdout, exit 0; also through gk help build.
run "$GK" build --help
expect_status 0 "--help"
expect_out "usage: gk build --recipes DIR --out DIR" "--help prints usage"
[ -s "$T/stderr" ] && fail "--help wrote to stderr"
run "$GK" help build
expect_status 0 "gk help build"
expect_out "usage: gk build" "gk help build"

# --json on a failure: a JSON object saying why, on stdout.
bad_recipe <<'LUA'
kernel "k" { cpu { source = "nope.c", targets = { "x86-64" } } }
LUA
run "$GK" build --recipes "$R" --out "$T/out" --cache "$T/cache" --json
expect_status 1 "--json failure"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is False and "nope.c" in d["error"], d' "$T/stdout" \
  || fail "--json failure summary: $(cat "$T/stdout")"

finish
