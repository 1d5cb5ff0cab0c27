-- hipcc.lua - HIP-Clang (hipcc) building rocm images: one AMD code object
-- (a plain AMDGPU ELF, "hsaco") per gfx target ID and param combination.
--
-- The command, for target gfx90a:xnack+ and params bits=4:
--   hipcc -O3 -c --cuda-device-only --no-gpu-bundle-output
--         --offload-arch=gfx90a:xnack+ -DBITS=4 <recipe flags>
--         -MD -MF DEPFILE -ffile-prefix-map=SRCDIR=. -o OUT SRC
-- run in the source's folder. --cuda-device-only compiles the device side
-- alone and --no-gpu-bundle-output keeps clang from wrapping the code object
-- in an offload bundle: the loader hands these bytes straight to
-- hsa_code_object_reader_create_from_memory. Generic targets (gfx11-generic)
-- add -mcode-object-version=6, the first code object version that can say
-- "generic" (clangs before ROCm 6.4 default to 5).
--
-- Target IDs: a processor, then optional ":xnack+" / ":sramecc-" settings
-- (LLVM AMDGPUUsage "Target ID"); a feature left out means the image runs
-- with either setting. Only processors that have the feature accept it.
--
-- What a given hipcc can produce is asked per target (can_build): clang must
-- know the processor, and the ROCm device library must have that processor's
-- oclc_isa_version_*.bc. Debian's ROCm 5.2 (clang 15) knows gfx1100 but has
-- no device library for it, and does not know gfx942, gfx1201 or the
-- generic targets: hipclang.lua (Debian's clang-19) builds those, as the
-- engine asks the rocm modules in name order; a target neither can build
-- is skipped with both reasons.

local amdgpu = require("lib/amdgpu")
local split_target = amdgpu.split_target

local hipcc = {
  backend = "rocm",
  format = "hsaco",
  ext = "hsaco",
  targets = { table.unpack(amdgpu.targets) },
  -- What a recipe's rocm section builds unless it lists targets (for
  -- every rocm module: engine/dsl.lua takes the first module's list): the
  -- Instinct and Radeon processors in use, and the generic targets as the
  -- fallback for the rest of their families. hipcc 5.2 builds the first
  -- six; hipclang.lua (clang-19) the others.
  default_targets = {
    "gfx906", "gfx908", "gfx90a", "gfx940", "gfx1010", "gfx1030",
    "gfx942", "gfx1100", "gfx1101", "gfx1102", "gfx1200", "gfx1201",
    "gfx9-generic", "gfx10-3-generic", "gfx11-generic", "gfx12-generic",
  },
  check_target = amdgpu.check_target,
}

-- The ROCm release to suggest in a skip reason: RDNA3 device libraries from
-- 5.3, gfx94x from 5.7, RDNA4 and generic targets supported from 6.4.1.
-- Others get "a newer ROCm". Advice only: can_build decides from what the
-- installed toolchain really has.
local SINCE = {
  gfx1100 = "5.3", gfx1101 = "5.3", gfx1102 = "5.3",
  gfx940 = "5.7", gfx941 = "5.7", gfx942 = "5.7",
  gfx1200 = "6.4.1", gfx1201 = "6.4.1",
  ["gfx9-generic"] = "6.4.1", ["gfx9-4-generic"] = "6.4.1", ["gfx10-1-generic"] = "6.4.1",
  ["gfx10-3-generic"] = "6.4.1", ["gfx11-generic"] = "6.4.1", ["gfx12-generic"] = "6.4.1",
}

-- hipcc reads these; when one is set its answers are not cached per binary
-- (the cache key of gk.run_cached is the program and its arguments only).
local ENV = { "ROCM_PATH", "HIP_PATH", "HIP_CLANG_PATH", "DEVICE_LIB_PATH", "HIP_DEVICE_LIB_PATH" }

-- Runs a query whose answer depends only on the program (cached per binary).
local function ask(argv)
  local run = gk.run_cached
  for _, v in ipairs(ENV) do
    if (gk.getenv(v) or "") ~= "" then run = gk.run end
  end
  local code, out, err = run(argv)
  if code == nil then return nil, out end -- could not run: out is why
  if code ~= 0 then
    return nil, ("'%s' failed (exit %d): %s"):format(table.concat(argv, " "), code,
      (err:match("([^\n]*error[^\n]*)") or err):match("^%s*(.-)%s*$"))
  end
  return out, err
end

-- Finds hipcc and what it drives: "hipcc 5.2.21153 clang 15.0.6" plus the
-- clang it runs, the processors that clang knows and its device-library
-- folder. The identity goes into every cache key; it names clang's own
-- version (asked of clang, not of the hipcc script) so that a clang upgrade
-- recompiles.
function hipcc.probe()
  local tool = gk.which("hipcc")
  if not tool then return nil, "hipcc not found on PATH" end
  local out, why = ask({ tool, "--version" })
  if not out then return nil, why end
  local hip = out:match("HIP version:%s*([%d.]+)")
  if not hip then return nil, ("'%s --version' printed no HIP version"):format(tool) end

  -- hipcc is a script: a dry run (-###) shows the clang it calls and the
  -- device library it links (hip.bc lives beside oclc_isa_version_*.bc).
  local dry, derr = ask({ tool, "-###", "-c", "-x", "hip", "--cuda-device-only",
                          "--offload-arch=gfx900", "/dev/null", "-o", "/dev/null" })
  if not dry then return nil, derr end
  local text = dry .. "\n" .. derr
  local clang = text:match('"([^"]*/clang[^"/]*)" "%-cc1"')
  if not clang then return nil, ("'%s -###' shows no clang -cc1 command"):format(tool) end
  local devlibs = text:match('"([^"]*)/hip%.bc"')
  if not devlibs then
    return nil, ("hipcc's clang (%s) finds no ROCm device library (hip.bc); install " ..
      "rocm-device-libs or set ROCM_PATH"):format(clang)
  end

  local vout, verr = ask({ clang, "--version" })
  if not vout then return nil, verr end
  local cver = vout:match("clang version ([%d.]+)")
  if not cver then return nil, ("'%s --version' printed no version"):format(clang) end

  -- clang lists its processors on stderr.
  local cout, cerr = ask({ clang, "--target=amdgcn-amd-amdhsa", "-nogpulib", "--print-supported-cpus" })
  if not cout then return nil, cerr end
  local cpus = {}
  for name in (cout .. "\n" .. cerr):gmatch("%f[%w](gfx[%w-]+)") do cpus[name] = true end

  local short = hip:match("^(%d+%.%d+)") or hip
  return {
    tool = tool, identity = ("hipcc %s clang %s"):format(hip, cver),
    clang = clang, clang_version = cver, devlibs = devlibs, cpus = cpus, short = short,
  }
end

-- Whether this hipcc can produce `target`; if not, why and what to use.
function hipcc.can_build(target, info)
  local proc = split_target(target)
  local advice = "use the ROCm container or " ..
    (SINCE[proc] and "ROCm >= " .. SINCE[proc] or "a newer ROCm")
  local cannot = ("hipcc %s cannot target it"):format(info.short)
  if not info.cpus[proc] then
    return false, ("%s (clang %s does not know %s); %s"):format(cannot, info.clang_version, proc, advice)
  end
  local lib = ("%s/oclc_isa_version_%s.bc"):format(info.devlibs, proc:sub(4))
  if not gk.stat(lib) then
    return false, ("%s (no ROCm device library %s); %s"):format(cannot, lib, advice)
  end
  return true
end

function hipcc.command(job, p)
  local proc = split_target(job.target)
  local argv = { p.tool, "-O3", "-c", "--cuda-device-only", "--no-gpu-bundle-output",
                 "--offload-arch=" .. job.target }
  if amdgpu.is_generic(proc) then argv[#argv + 1] = "-mcode-object-version=6" end
  for _, d in ipairs(job.defines) do argv[#argv + 1] = "-D" .. d end
  for _, f in ipairs(job.flags) do argv[#argv + 1] = f end
  for _, a in ipairs({ "-MD", "-MF", p.depfile, "-ffile-prefix-map=" .. p.srcdir .. "=.",
                       "-o", p.out, p.src }) do
    argv[#argv + 1] = a
  end
  return argv
end

return hipcc
