-- glslang.lua - GLSL compute shaders to SPIR-V for the vulkan backend, with
-- glslangValidator, each image then checked by the SPIRV-Tools validator.
--
-- A target is the Vulkan version the image needs: "vulkan1.1" means
-- --target-env vulkan1.1 (SPIR-V 1.3) and runs on any device whose API
-- version is 1.1 or later (the loader's rule, loader/vulkan.c). The command,
-- for target vulkan1.1 and params bits=4, entry qmatmul:
--   glslangValidator -V --target-env vulkan1.1 -DBITS=4 <recipe flags>
--       -e qmatmul --source-entrypoint main --quiet --depfile DEPFILE -o OUT SRC
--   spirv-val --target-env vulkan1.1 OUT
-- A job is one process, so the two steps run under `sh -c` with the paths
-- as arguments (never spliced into the script): the job fails, and leaves
-- no image, when either fails. Shaders keep `void main()`; -e renames the
-- entry point to the kernel's name, so the index's entry names the SPIR-V
-- OpEntryPoint. glslang writes no path or time into the module: images are
-- reproducible.

local glslang = {
  backend = "vulkan",
  format = "spirv",
  ext = "spv",
  targets = { "vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3" },
  -- Vulkan 1.1: subgroup operations, and still every driver in use.
  default_targets = { "vulkan1.1" },
}

-- Both tools must be there; both versions go into the identity (and so into
-- every cache key): a new validator re-checks every image.
function glslang.probe()
  local tool = gk.which("glslangValidator")
  if not tool then
    return nil, "glslangValidator not found on PATH (Debian: apt-get install glslang-tools)"
  end
  local val = gk.which("spirv-val")
  if not val then
    return nil, "spirv-val not found on PATH (Debian: apt-get install spirv-tools)"
  end
  local code, out = gk.run_cached({ tool, "-dumpfullversion" })
  if code ~= 0 then return nil, ("'%s -dumpfullversion' failed (exit %s)"):format(tool, tostring(code)) end
  -- "11:12.0.0": the generator version, then the release.
  local version = out:match("(%d+%.%d+%.%d+)")
  if not version then return nil, ("cannot read a version from '%s -dumpfullversion': %s"):format(tool, out) end
  local vcode, vout = gk.run_cached({ val, "--version" })
  if vcode ~= 0 then return nil, ("'%s --version' failed (exit %s)"):format(val, tostring(vcode)) end
  local tools = vout:match("(SPIRV%-Tools v[%w.%-]+)")
  if not tools then return nil, ("cannot read a version from '%s --version'"):format(val) end
  return { tool = tool, identity = ("glslang %s, %s"):format(version, tools) }
end

-- Runs "$@" (the compile), then spirv-val on the image; $1 is the image and
-- $2 the target environment.
local SCRIPT = 'out=$1 env=$2; shift 2; "$@" && exec spirv-val --target-env "$env" "$out"'

function glslang.command(job, p)
  if #job.entry ~= 1 then
    error(("a GLSL compute shader has one entry point; %s lists %d"):format(job.kernel, #job.entry))
  end
  local argv = { "sh", "-c", SCRIPT, "gk-glslang", p.out, job.target,
                 p.tool, "-V", "--target-env", job.target }
  for _, d in ipairs(job.defines) do argv[#argv + 1] = "-D" .. d end
  for _, f in ipairs(job.flags) do argv[#argv + 1] = f end
  for _, a in ipairs({ "-e", job.entry[1], "--source-entrypoint", "main", "--quiet",
                       "--depfile", p.depfile, "-o", p.out, p.src }) do
    argv[#argv + 1] = a
  end
  return argv
end

return glslang
