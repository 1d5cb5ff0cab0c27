-- nvcc.lua - NVIDIA's CUDA compiler, building cuda images: one cubin (SASS)
-- per sm_XY target, or PTX for a compute_XY target, per param combination.
--
-- The commands, for params bits=4:
--   nvcc -cubin -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -DBITS=4
--        <recipe flags> -MD -MF DEPFILE -o OUT SRC      (target sm_XY[a|f])
--   nvcc -ptx -arch=compute_75 ...same...               (target compute_XY)
-- A cubin's target is spelled out as -gencode, not -arch=sm_XY: newer nvcc
-- (13.4, ../.library/device/HOPPER.md) has been seen to run a plain sm_90
-- pass beside -arch=sm_90a's, which rejects wgmma and setmaxnreg. nvcc 13.0
-- writes the same bytes either way.
-- run in the source's folder with SRC a bare file name. Neither writes a
-- path of this machine into the image (no -G, no -lineinfo: those record the
-- source path); tests/backends/cuda checks the images for the build folder's path.
--
-- The identity is "nvcc 13.0.88", the toolkit release. It is what the index
-- records in `toolchain`, and the loader reads the release from it: PTX from
-- CUDA 13.0 needs a driver >= 13.0 (docs/archive.md).
--
-- nvcc is looked up on PATH, then in $CUDA_HOME/bin, $CUDA_PATH/bin and
-- /usr/local/cuda/bin (the toolkit's default place, often not on PATH).

local nvcc = {
  backend = "cuda",
  format = "cubin",
  ext = "cubin",
  -- What CUDA 13.0 accepts. 'a' images run on exactly that capability, 'f'
  -- images on the family (same major, minor >= theirs); compute_XY is PTX.
  -- sm_70 and older are gone in CUDA 13.
  targets = {
    "sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_90a",
    "sm_100", "sm_100a", "sm_100f", "sm_103", "sm_103a", "sm_103f",
    "sm_110", "sm_110a", "sm_110f", "sm_120", "sm_120a", "sm_120f",
    "sm_121", "sm_121a", "sm_121f",
    "compute_75", "compute_80", "compute_86", "compute_87", "compute_88", "compute_89",
    "compute_90", "compute_100", "compute_103", "compute_110", "compute_120", "compute_121",
  },
  -- What a recipe's cuda section builds unless it lists targets: SASS for
  -- each major architecture in use (sm_90a for Hopper's wgmma/TMA paths)
  -- plus compute_75 PTX, which a newer GPU JIT-compiles.
  default_targets = {
    "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120",
    "compute_75",
  },
}

-- compute_XY targets are PTX, the rest cubins.
function nvcc.format_of(target)
  if target:match("^compute_") then return "ptx", "ptx" end
  return "cubin", "cubin"
end

local function find_nvcc()
  local tool = gk.which("nvcc")
  if tool then return tool end
  local tried = { "PATH" }
  for _, var in ipairs({ "CUDA_HOME", "CUDA_PATH" }) do
    local root = gk.getenv(var)
    if root and root ~= "" then
      tool = gk.which(root .. "/bin/nvcc")
      if tool then return tool end
      tried[#tried + 1] = "$" .. var .. "/bin"
    end
  end
  tool = gk.which("/usr/local/cuda/bin/nvcc")
  if tool then return tool end
  tried[#tried + 1] = "/usr/local/cuda/bin"
  return nil, "nvcc not found (looked on " .. table.concat(tried, ", ") ..
    "); install the CUDA toolkit or set CUDA_HOME"
end

function nvcc.probe()
  local tool, why = find_nvcc()
  if not tool then return nil, why end
  -- nvcc preprocesses device code with the host compiler: without one every
  -- job would fail with the same message, so say it once here.
  if not gk.which("g++") and not gk.which("c++") then
    return nil, "nvcc needs a host C++ compiler (g++) on PATH"
  end
  local code, out, err = gk.run_cached({ tool, "--version" })
  if code == nil then return nil, out end -- could not run: out is why
  if code ~= 0 then
    return nil, ("'%s --version' failed (exit %d): %s"):format(tool, code, (err:match("^%s*(.-)%s*$")))
  end
  -- "Cuda compilation tools, release 13.0, V13.0.88"
  local version = out:match("release [%d.]+, V(%d+%.%d+%.%d+)")
  if not version then
    return nil, ("cannot read the CUDA release from '%s --version'"):format(tool)
  end
  return { tool = tool, identity = "nvcc " .. version }
end

function nvcc.command(job, p)
  local kind = job.target:match("^compute_") and "-ptx" or "-cubin"
  local arch = kind == "-ptx" and "-arch=" .. job.target
      or ("-gencode=arch=%s,code=%s"):format(job.target:gsub("^sm_", "compute_"), job.target)
  local argv = { p.tool, kind, arch, "-O3", "-std=c++17" }
  for _, d in ipairs(job.defines) do argv[#argv + 1] = "-D" .. d end
  for _, f in ipairs(job.flags) do argv[#argv + 1] = f end
  for _, a in ipairs({ "-MD", "-MF", p.depfile, "-o", p.out, p.src }) do
    argv[#argv + 1] = a
  end
  return argv
end

return nvcc
