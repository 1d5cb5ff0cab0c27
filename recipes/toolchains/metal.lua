-- metal.lua - Metal Shading Language kernels to metallib, with Apple's
-- toolchain (macOS only: xcrun finds `metal` and `metallib` in Xcode or the
-- Command Line Tools; since Xcode 26 the Metal toolchain is a separate
-- download: xcodebuild -downloadComponent MetalToolchain).
--
-- AIR is not per GPU: an image is per OS and Metal language version. A
-- target "macos-metal3.0" compiles with -std=metal3.0 for macOS 13 and
-- later, and runs on a Mac whose OS supports that language version (the
-- loader's rule, loader/metal_target.c). The command, for macos-metal3.0
-- and params bits=4:
--   xcrun -sdk macosx metal -std=metal3.0 -mmacosx-version-min=13.0
--       -fno-fast-math -DBITS=4 <recipe flags> -MD -MF DEPFILE -c SRC -o OUT.air
--   xcrun -sdk macosx metallib OUT.air -o OUT
-- run as one job under `sh -c` (paths as arguments, never in the script),
-- the .air removed after. -fno-fast-math: Metal's default fast math lets the
-- compiler assume no NaN or infinity, which the kernels test for.
-- On a host without xcrun the probe fails and the build skips metal with
-- the reason, building everything else.

-- target -> language standard flag, minimum macOS.
local TARGETS = {
  ["macos-metal2.4"] = { std = "macos-metal2.4", os = "12.0" },
  ["macos-metal3.0"] = { std = "metal3.0", os = "13.0" },
  ["macos-metal3.1"] = { std = "metal3.1", os = "14.0" },
  ["macos-metal3.2"] = { std = "metal3.2", os = "15.0" },
}

local metal = {
  backend = "metal",
  format = "metallib",
  ext = "metallib",
  targets = { "macos-metal2.4", "macos-metal3.0", "macos-metal3.1", "macos-metal3.2" },
  -- Metal 3.0: every Apple-silicon Mac on macOS 13 and later.
  default_targets = { "macos-metal3.0" },
}

function metal.probe()
  local xcrun = gk.which("xcrun")
  if not xcrun then return nil, "xcrun not found (Metal builds need macOS)" end
  local code, out = gk.run_cached({ xcrun, "-sdk", "macosx", "--find", "metal" })
  if code ~= 0 then
    return nil, "xcrun cannot find the Metal compiler (install it: xcodebuild -downloadComponent MetalToolchain)"
  end
  local vcode, vout = gk.run_cached({ xcrun, "-sdk", "macosx", "metal", "--version" })
  local version = vcode == 0 and vout:match("metal version ([%w.]+)")
  if not version then return nil, "cannot read the version of 'xcrun -sdk macosx metal --version'" end
  return { tool = xcrun, identity = ("Apple metal %s"):format(version) }
end

local SCRIPT = 'out=$1; shift; "$@" -o "$out.air" && ' ..
               '"$0" -sdk macosx metallib "$out.air" -o "$out"; rc=$?; rm -f "$out.air"; exit $rc'

function metal.command(job, p)
  local t = TARGETS[job.target]
  if not t then error(("unknown metal target '%s'"):format(job.target)) end
  -- $0 of the script is xcrun (for the metallib step), $1 the image.
  local argv = { "sh", "-c", SCRIPT, p.tool, p.out, p.tool, "-sdk", "macosx", "metal",
                 "-std=" .. t.std, "-mmacosx-version-min=" .. t.os, "-fno-fast-math" }
  for _, d in ipairs(job.defines) do argv[#argv + 1] = "-D" .. d end
  for _, f in ipairs(job.flags) do argv[#argv + 1] = f end
  for _, a in ipairs({ "-MD", "-MF", p.depfile, "-c", p.src }) do argv[#argv + 1] = a end
  return argv
end

return metal
