#!/bin/sh
# test_toolchain.sh GK - the glslang toolchain module through gk build, on
# recipes written here: a good shader gives a SPIR-V image that gk verify
# accepts and a rebuild takes from the cache; SPIR-V that spirv-val rejects
# fails the job (no image, the validator's words shown); a GLSL error names
# the file and line. SKIP where glslang or spirv-val is missing.
set -u
GK=$1
for tool in glslangValidator spirv-val; do
  command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found (Debian: apt-get install glslang-tools spirv-tools)"; exit 77; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir -p "$T/r" "$T/src"
cat >"$T/src/inc.glsl" <<'GLSL'
float twice(float v) { return 2.0 * v; }
GLSL
cat >"$T/src/double.comp" <<'GLSL'
#version 450
#extension GL_GOOGLE_include_directive : require
#include "inc.glsl"
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, std430) buffer B { float v[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) v[i] = twice(v[i]) + float(SCALE);
}
GLSL
write_recipe() { # $1: extra flags (Lua list items)
  cat >"$T/r/double.lua" <<LUA
kernel "double" {
  params = { scale = { 1, 3 } },
  vulkan {
    source  = "../src/double.comp",
    targets = { "vulkan1.0", "vulkan1.1" },
    flags   = { $1 },
  },
}
LUA
}

write_recipe ""
"$GK" build --recipes "$T/r" --backend vulkan --cache "$T/cache" --out "$T/out" >"$T/log" 2>&1 ||
  { fail "a good shader did not build"; cat "$T/log"; }
n=$(ls "$T/out/vulkan/double" 2>/dev/null | wc -l)
[ "$n" -eq 4 ] || fail "expected 4 images (2 targets x 2 scales), got $n"
magic=$(od -An -tx4 -N4 "$T/out/vulkan/double/vulkan1.1.scale3.spv" 2>/dev/null | tr -d ' ')
[ "$magic" = "07230203" ] || fail "image is not SPIR-V (first word '$magic')"
"$GK" pack "$T/out" -o "$T/a.gkfat" >/dev/null 2>&1 && "$GK" verify "$T/a.gkfat" >"$T/v" 2>&1 ||
  { fail "gk verify refused the images"; cat "$T/v"; }
grep -q "4 of 4 images ok" "$T/v" || { fail "verify did not check 4 images"; cat "$T/v"; }
"$GK" build --recipes "$T/r" --backend vulkan --cache "$T/cache" --out "$T/out" >"$T/log" 2>&1
grep -q "0 compiled, 4 from cache" "$T/log" || { fail "rebuild was not a cache hit"; cat "$T/log"; }
# Editing the included file recompiles (glslang's depfile lists it).
echo "float unused_() { return 0.0; }" >>"$T/src/inc.glsl"
"$GK" build --recipes "$T/r" --backend vulkan --cache "$T/cache" --out "$T/out" >"$T/log" 2>&1
grep -q "4 compiled, 0 from cache" "$T/log" || { fail "an edited include did not recompile"; cat "$T/log"; }

# The later --target-env wins in glslang (SPIR-V 1.6), spirv-val is told
# vulkan1.0: the validator must fail the job.
write_recipe '"--target-env", "vulkan1.3"'
rm -rf "$T/out2"
if "$GK" build --recipes "$T/r" --backend vulkan --cache "$T/cache" --out "$T/out2" >"$T/log" 2>&1; then
  fail "SPIR-V that spirv-val rejects was accepted"
fi
grep -qi "spirv-val\|Invalid SPIR-V" "$T/log" || { fail "the validator's message is not shown"; cat "$T/log"; }
grep -q "FAILED: vulkan/double/vulkan1.0" "$T/log" || { fail "the failed job is not named"; cat "$T/log"; }
[ ! -e "$T/out2/manifest.json" ] || fail "a failed build wrote a manifest"

# A GLSL error names the file and line.
write_recipe ""
sed -i 's/twice(v\[i\])/twice(v[i] +)/' "$T/src/double.comp"
if "$GK" build --recipes "$T/r" --backend vulkan --cache "$T/cache" --out "$T/out3" >"$T/log" 2>&1; then
  fail "a GLSL syntax error built"
fi
grep -q "double.comp:9" "$T/log" || { fail "the GLSL error does not name double.comp:9"; cat "$T/log"; }

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
