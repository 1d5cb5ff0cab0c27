-- cc.lua - the system C compiler, building cpu images: one shared object
-- per x86-64 micro-architecture level and param combination.
--
-- The command, for target LEVEL and params bits=4:
--   cc -std=c11 -O3 -fPIC -shared -fvisibility=hidden -march=LEVEL
--      -mtune=generic [-mprefer-vector-width=512 for x86-64-v4] -DBITS=4
--      <recipe flags> -MD -MF DEPFILE -ffile-prefix-map=SRCDIR=. -o OUT SRC
-- run in the source's folder with SRC a bare file name, so that no path of
-- this machine ends up in the image (and the image is reproducible).
-- Kernels export their entry points with GK_API-style default visibility.

local cc = {
  backend = "cpu",
  format = "so",
  ext = "so",
  targets = { "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" },
}

-- Finds cc on PATH and names it: "cc 12.2.0 x86_64-linux-gnu". The
-- identity goes into every cache key, so a compiler upgrade recompiles.
function cc.probe()
  local tool = gk.which("cc")
  if not tool then return nil, "cc not found on PATH" end
  local function ask(flag)
    -- Cached per compiler binary: a no-op build then runs no process.
    local code, out, err = gk.run_cached({ tool, flag })
    if code == nil then return nil, out end -- could not run: out is why
    out = out:match("^%s*(.-)%s*$")
    if code ~= 0 or out == "" then
      return nil, ("'%s %s' failed (exit %d): %s"):format(tool, flag, code, err:match("^%s*(.-)%s*$"))
    end
    return out
  end
  local version, why = ask("-dumpfullversion")
  if not version then return nil, why end
  local machine
  machine, why = ask("-dumpmachine")
  if not machine then return nil, why end
  -- The targets are x86-64 levels: a compiler for another machine cannot
  -- build them (a cross compiler would be a module of its own).
  if not machine:match("^x86_64") then
    return nil, ("cc targets %s, not x86-64"):format(machine)
  end
  return { tool = tool, identity = ("cc %s %s"):format(version, machine) }
end

function cc.command(job, p)
  local argv = { p.tool, "-std=c11", "-O3", "-fPIC", "-shared", "-fvisibility=hidden",
                 "-march=" .. job.target, "-mtune=generic" }
  if job.target == "x86-64-v4" then argv[#argv + 1] = "-mprefer-vector-width=512" end
  for _, d in ipairs(job.defines) do argv[#argv + 1] = "-D" .. d end
  for _, f in ipairs(job.flags) do argv[#argv + 1] = f end
  for _, a in ipairs({ "-MD", "-MF", p.depfile, "-ffile-prefix-map=" .. p.srcdir .. "=.",
                       "-o", p.out, p.src }) do
    argv[#argv + 1] = a
  end
  return argv
end

return cc
