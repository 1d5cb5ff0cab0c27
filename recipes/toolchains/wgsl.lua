-- wgsl.lua - WGSL compute shaders for hosts that use WebGPU (browsers,
-- Dawn, wgpu): the image is the shader's text, specialized at build time.
--
-- WGSL has no preprocessor, and its `override` constants are set only when
-- the host builds a pipeline; the archive instead holds one text per
-- variant, like every other backend. The C preprocessor does the
-- specialization: params become -DBITS=4, `#include "gk_common.wgsl"` pulls
-- in the shared arithmetic (listed in the depfile, so editing it rebuilds),
-- `#if` picks variant code. The command, for params bits=4:
--   cpp -P -undef -nostdinc -x c -std=c11 -DBITS=4 <recipe flags>
--       -MD -MF DEPFILE -o OUT SRC
-- -P leaves no line markers (no path of this machine in the text: the
-- image is reproducible), -undef no predefined macros (`linux` or `unix`
-- would otherwise be replaced in the text), and comments are dropped. The
-- text is checked by a real WGSL front end in the tests (tests/backends/wgsl: Dawn).
-- The target "webgpu" means core WebGPU: no optional feature (shader-f16
-- and the like) is used.

local wgsl = {
  backend = "wgsl",
  format = "wgsl",
  ext = "wgsl",
  targets = { "webgpu" },
}

function wgsl.probe()
  local tool = gk.which("cpp")
  if not tool then return nil, "cpp (the C preprocessor) not found on PATH (Debian: apt-get install cpp)" end
  local code, out, err = gk.run_cached({ tool, "-dumpfullversion" })
  if code == nil then return nil, out end
  local version = code == 0 and out:match("^%s*([%w.]+)")
  if not version then
    return nil, ("'%s -dumpfullversion' failed (exit %s): %s"):format(tool, tostring(code), err or "")
  end
  return { tool = tool, identity = ("cpp %s (WGSL text)"):format(version) }
end

function wgsl.command(job, p)
  local argv = { p.tool, "-P", "-undef", "-nostdinc", "-x", "c", "-std=c11" }
  for _, d in ipairs(job.defines) do argv[#argv + 1] = "-D" .. d end
  for _, f in ipairs(job.flags) do argv[#argv + 1] = f end
  for _, a in ipairs({ "-MD", "-MF", p.depfile, "-o", p.out, p.src }) do argv[#argv + 1] = a end
  return argv
end

return wgsl
