-- hipclang.lua - Debian's clang-19 building rocm images against Debian's
-- ROCm 5.2 HIP headers and device libraries, for the processors Debian's
-- hipcc 5.2 (clang 15) cannot target: gfx942, RDNA3 (gfx1100-1102), RDNA4
-- (gfx1200, gfx1201) and the generic targets. Same images as hipcc.lua
-- makes (plain AMDGPU ELF code objects, one per target ID and params); the
-- engine asks hipcc first (modules in name order) and this module for the
-- targets hipcc cannot build.
--
-- The command, for gfx1100 and bits=4 (run in the source's folder):
--   clang-19 -x hip -O3 -c --cuda-device-only --no-gpu-bundle-output
--     --offload-arch=gfx1100 -mcode-object-version=5 --rocm-path=/usr
--     -nogpulib -fuse-cuid=none -Xclang -mlink-builtin-bitcode -Xclang LIB...
--     -DBITS=4 <recipe flags> -MD -MF DEPFILE -ffile-prefix-map=SRCDIR=.
--     -o OUT SRC
-- --rocm-path=/usr finds the HIP headers of libamdhip64-dev. -nogpulib and
-- the explicit LIB list replace the driver's search for device libraries:
-- the list is what clang's driver links for HIP with the default math flags
-- (hip, ocml, ockl, and the oclc_* control constants: no denormal flush, no
-- unsafe or finite-only math, correctly rounded sqrt, the wavefront size of
-- the processor, its ISA version, the code object's ABI version), so a
-- recipe flag such as -ffast-math does not change which libraries link.
-- -fuse-cuid=none: clang's default HIP compilation-unit ID hashes the
-- output path, a temporary file: without this no two builds would agree.
--
-- Debian's rocm-device-libs 5.2 lacks two kinds of bitcode the newer
-- targets need. Both hold one constant and are made here, from one line of
-- OpenCL C, by the same clang (the `inputs` hook: engine/toolchains.lua):
--   oclc_isa_version_NNNN.bc  __oclc_ISA_version, which the device libraries
--     test to choose instructions: major * 1000 + minor * 100 + stepping
--     (gfx1100 -> 11000, gfx90a -> 9010); a generic target takes the value
--     of the family member AMD's device libraries use for it (ROCm's
--     oclc/src/isa_version_*-generic.cl: gfx11-generic is gfx1103's 11003);
--   oclc_abi_version_600.bc   __oclc_ABI_version = 600 for code object v6,
--     the first version that can say "generic" (Debian's libraries stop at
--     500; ockl only tests "< 500", so 600 takes the v5 paths, which is the
--     v6 layout too).
-- Processors get code object v5 (what ROCm 6's hipcc writes), generic targets
-- v6. clang 19's driver warns on each compile that v6 "is still in
-- development and not ready for production use yet"; the command passes v6
-- straight to the compiler and code generator (-Xclang
-- -mcode-object-version=6 -mllvm --amdhsa-code-object-version=6, what the
-- driver's flag turns into), which gives the same bytes without 200 copies of
-- that warning in a build log; README's "What runs here" says it once.

local amdgpu = require("lib/amdgpu")
local split_target, is_generic = amdgpu.split_target, amdgpu.is_generic

local hipclang = {
  backend = "rocm",
  format = "hsaco",
  ext = "hsaco",
  -- hipcc.lua's processors (a recipe may name any, either module builds
  -- it); its default_targets are the backend's release set.
  targets = { table.unpack(amdgpu.targets) },
  check_target = amdgpu.check_target,
}

-- __oclc_ISA_version of the generic targets (ROCm device libraries,
-- oclc/src/isa_version_*-generic.cl).
local GENERIC_ISA = {
  ["gfx9-generic"] = 9000, ["gfx9-4-generic"] = 9402, ["gfx10-1-generic"] = 10100,
  ["gfx10-3-generic"] = 10300, ["gfx11-generic"] = 11003, ["gfx12-generic"] = 12000,
}

-- The device libraries every image links, in the driver's order; the
-- wavefront-size, ISA and ABI files follow per target.
local LIBS = { "hip", "ocml", "ockl", "oclc_daz_opt_off", "oclc_unsafe_math_off",
               "oclc_finite_only_off", "oclc_correctly_rounded_sqrt_on" }

local CLANG = "clang-19"

-- "gfx1100" -> 11000, "gfx90a" -> 9010, "gfx11-generic" -> 11003.
local function isa_version(proc)
  if GENERIC_ISA[proc] then return GENERIC_ISA[proc] end
  local major, minor, step = proc:match("^gfx(%d%d?)(%x)(%x)$")
  if not major then return nil end
  return tonumber(major) * 1000 + tonumber(minor, 16) * 100 + tonumber(step, 16)
end

-- The oclc_isa_version file's name part: "1100", "90a", "11-generic".
local function isa_name(proc) return proc:sub(4) end

-- Wave64 is the only wavefront size of GCN and CDNA (gfx9); RDNA (gfx10+)
-- runs HIP in wave32 unless told otherwise.
local function wave64(proc) return proc:match("^gfx9") ~= nil end

local function run(argv)
  local code, out, err = gk.run_cached(argv)
  if code == nil then return nil, out end
  if code ~= 0 then
    return nil, ("'%s' failed (exit %d): %s"):format(table.concat(argv, " "), code,
      (err:match("([^\n]*error[^\n]*)") or err):match("^%s*(.-)%s*$"))
  end
  return out, err
end

-- Finds clang-19, the lld it links with, Debian's HIP headers and device
-- libraries. The identity names clang's version, the HIP headers' version
-- and a digest of the device libraries every image links, so that an
-- upgrade of any of the three recompiles.
function hipclang.probe()
  local tool = gk.which(CLANG)
  if not tool then
    return nil, ("%s not found on PATH (apt-get install clang-19 lld-19)"):format(CLANG)
  end
  local out, why = run({ tool, "--version" })
  if not out then return nil, why end
  local cver = out:match("clang version ([%d.]+)")
  if not cver then return nil, ("'%s --version' printed no version"):format(tool) end
  -- clang links AMDGPU code with the lld beside its real binary.
  local real = gk.realpath(tool) or tool
  local bindir = real:match("^(.*)/[^/]*$") or "."
  if not gk.stat(bindir .. "/ld.lld") then
    return nil, ("%s has no ld.lld beside it in %s (apt-get install lld-19)"):format(CLANG, bindir)
  end

  -- Debian's HIP headers (libamdhip64-dev) under /usr, their version in
  -- /usr/share/hip/version; the device libraries (rocm-device-libs) in the
  -- multiarch library folder. ROCM_PATH points at another ROCm.
  local rocm = gk.getenv("ROCM_PATH")
  if not rocm or rocm == "" then rocm = "/usr" end
  if not gk.stat(rocm .. "/include/hip/hip_runtime.h") then
    return nil, ("no HIP headers in %s/include/hip (apt-get install libamdhip64-dev, or set ROCM_PATH)")
      :format(rocm)
  end
  local vtext = gk.read(rocm .. "/share/hip/version") or ""
  local hip = vtext:match("HIP_VERSION_MAJOR=(%d+)") and ("%s.%s.%s"):format(
    vtext:match("HIP_VERSION_MAJOR=(%d+)"), vtext:match("HIP_VERSION_MINOR=(%d+)") or "0",
    vtext:match("HIP_VERSION_PATCH=(%d+)") or "0")
  if not hip then return nil, ("no HIP version in %s/share/hip/version"):format(rocm) end
  local devlibs
  for _, d in ipairs({ rocm .. "/amdgcn/bitcode", rocm .. "/lib/x86_64-linux-gnu/amdgcn/bitcode",
                       rocm .. "/lib/aarch64-linux-gnu/amdgcn/bitcode" }) do
    if gk.stat(d .. "/ocml.bc") then devlibs = d; break end
  end
  if not devlibs then
    return nil, ("no ROCm device library (ocml.bc) under %s (apt-get install rocm-device-libs)")
      :format(rocm)
  end
  local digests = {}
  for _, lib in ipairs(LIBS) do
    local sha = gk.sha256_file(devlibs .. "/" .. lib .. ".bc")
    if not sha then return nil, ("no ROCm device library %s/%s.bc"):format(devlibs, lib) end
    digests[#digests + 1] = sha
  end

  -- clang lists the processors it knows on stderr.
  local cout, cerr = run({ tool, "--target=amdgcn-amd-amdhsa", "-nogpulib", "--print-supported-cpus" })
  if not cout then return nil, cerr end
  local cpus = {}
  for name in (cout .. "\n" .. cerr):gmatch("%f[%w](gfx[%w-]+)") do cpus[name] = true end

  return {
    tool = tool, cpus = cpus, clang_version = cver,
    identity = ("clang %s hip %s device-libs %s"):format(cver, hip,
      gk.sha256(table.concat(digests, "\n")):sub(1, 12)),
    -- Machine paths the command uses; the engine replaces them with
    -- placeholders in cache keys (the identity stands for their content).
    paths = { rocm = rocm, devlibs = devlibs },
  }
end

-- Whether this clang can produce target: it must know the processor (and,
-- for a generic target, code object v6).
function hipclang.can_build(target, info)
  local proc = split_target(target)
  if not info.cpus[proc] then
    return false, ("clang %s does not know %s"):format(info.clang_version, proc)
  end
  if not isa_version(proc) then
    return false, ("no ISA version known for %s"):format(proc)
  end
  return true
end

-- The bitcode files a target needs that Debian's device libraries lack,
-- each from one line of OpenCL C compiled by this clang (made once in the
-- cache; engine/toolchains.lua).
function hipclang.inputs(target, info)
  local proc = split_target(target)
  local function one(name, text)
    return {
      name = name .. ".bc", source_name = name .. ".cl", source = text,
      command = function(p)
        -- -mcode-object-version=none: no __oclc_ABI_version of clang's own
        -- in the file (clang 19 adds one to every module otherwise).
        return { p.tool, "-x", "cl", "-target", "amdgcn-amd-amdhsa", "-mcpu=" .. proc,
                 "-nogpulib", "-Xclang", "-mcode-object-version=none", "-c", "-emit-llvm",
                 "-o", p.out, p.src }
      end,
    }
  end
  local out = {}
  local isa = "oclc_isa_version_" .. isa_name(proc)
  if not gk.stat(info.paths.devlibs .. "/" .. isa .. ".bc") then
    out[#out + 1] = one(isa, ("const __constant int __oclc_ISA_version = %d;\n"):format(isa_version(proc)))
  end
  if is_generic(proc) and not gk.stat(info.paths.devlibs .. "/oclc_abi_version_600.bc") then
    out[#out + 1] = one("oclc_abi_version_600", "const __constant int __oclc_ABI_version = 600;\n")
  end
  return out
end

function hipclang.command(job, p)
  local proc = split_target(job.target)
  local cov = is_generic(proc) and 6 or 5
  local argv = { p.tool, "-x", "hip", "-O3", "-c", "--cuda-device-only", "--no-gpu-bundle-output",
                 "--offload-arch=" .. job.target }
  if cov == 6 then
    -- What the driver's -mcode-object-version=6 passes on (clang -###),
    -- without its warning on every compile: it is said once, in the
    -- README and above.
    for _, a in ipairs({ "-Xclang", "-mcode-object-version=6", "-mllvm",
                         "--amdhsa-code-object-version=6" }) do
      argv[#argv + 1] = a
    end
  else
    argv[#argv + 1] = "-mcode-object-version=" .. cov
  end
  for _, a in ipairs({ "--rocm-path=" .. p.paths.rocm, "-nogpulib", "-fuse-cuid=none" }) do
    argv[#argv + 1] = a
  end
  local function link(path)
    for _, a in ipairs({ "-Xclang", "-mlink-builtin-bitcode", "-Xclang", path }) do
      argv[#argv + 1] = a
    end
  end
  for _, lib in ipairs(LIBS) do link(p.paths.devlibs .. "/" .. lib .. ".bc") end
  link(p.paths.devlibs .. "/oclc_wavefrontsize64_" .. (wave64(proc) and "on" or "off") .. ".bc")
  for _, f in ipairs({ "oclc_isa_version_" .. isa_name(proc) .. ".bc",
                       ("oclc_abi_version_%d00.bc"):format(cov) }) do
    link(p.inputs[f] or p.paths.devlibs .. "/" .. f)
  end
  for _, d in ipairs(job.defines) do argv[#argv + 1] = "-D" .. d end
  for _, f in ipairs(job.flags) do argv[#argv + 1] = f end
  for _, a in ipairs({ "-MD", "-MF", p.depfile, "-ffile-prefix-map=" .. p.srcdir .. "=.",
                       "-o", p.out, p.src }) do
    argv[#argv + 1] = a
  end
  return argv
end

return hipclang
