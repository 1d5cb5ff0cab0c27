-- toolchains.lua - finds, checks and probes the toolchain modules.
--
-- A toolchain module (recipes/toolchains/NAME.lua, embedded in gk; a file
-- DIR/toolchains/NAME.lua beside the recipes adds one or replaces the
-- embedded one of that name) returns a table:
--
--   backend  = "cpu"                  -- the recipe section it builds
--   format   = "so"                   -- image format (docs/archive.md)
--   ext      = "so"                   -- file extension in the output folder
--   targets  = { "x86-64", ... }      -- what a recipe may ask for
--   default_targets = { ... }         -- (optional) what a section that
--              omits `targets` builds: the usual release set, which the
--              recipes would otherwise each repeat; default: `targets`
--   probe    = function() -> { tool = PATH, identity = "cc 12.2.0 x86_64-linux-gnu" }
--                          | nil, "cc not found on PATH"
--              (gk.run_cached runs a version query once per compiler binary)
--   command  = function(job, p) -> argv
--   format_of = function(target) -> format, ext   (optional: for a module
--              whose targets make different formats, e.g. nvcc's cubins for
--              sm_XY and PTX for compute_XY; default: format, ext above)
--   check_target = function(t) -> true | nil, "why"   (optional: accepts
--              target names beyond the `targets` list, e.g. hipcc's target
--              IDs "gfx90a:xnack+"; default: a target must be in `targets`)
--   can_build = function(target, info) -> true | false, "why"   (optional:
--              whether the toolchain probe found - `info` is what probe
--              returned - can produce target. One it cannot is skipped with
--              `why`, per target, and the rest of the section builds;
--              `gk build --strict` makes that an error. Asked once per
--              (module, target) and build)
--   inputs   = function(target, info) -> { { name = "oclc_isa_version_1100.bc",
--                source_name = "oclc_isa_version_1100.cl", source = "text",
--                command = function(p) -> argv }, ... }   (optional: files
--              the target's compiles need that the toolchain lacks, made from
--              `source` by the toolchain itself. Each is made once in the
--              cache: command runs in a scratch folder with p.tool, p.src =
--              source_name and p.out = name (bare names, so the file is the
--              same wherever it is made), and its key is the toolchain's
--              identity, that command and the source. The job's command then
--              gets p.inputs[name], the file's path in the cache, and the
--              job's key the file's SHA-256. Asked once per (module, target)
--              and build, when the first job of that target is keyed)
--   image    = "docker.io/nvidia/cuda@sha256:..."   (optional: the container
--              image `gk build --container` runs probe and compiles in,
--              pinned by digest; --container-image NAME=REF overrides it.
--              There, gk.which/run/run_cached/stat look inside the image:
--              engine/container.lua)
--
-- command gets the job (kernel, backend, target, variant, params, defines =
-- { "BITS=4" }, flags, entry, source = file name) and the paths p (tool,
-- src, srcdir, out, depfile, paths = probe's `paths` table, inputs = the
-- made inputs by name). It is called twice per job: once with the real
-- paths to run, once with placeholders ("<tool>", "<srcdir>", "<out>",
-- "<depfile>", p.paths.NAME = "<NAME>", p.inputs[NAME] = "<input:NAME>") to
-- form the cache key, so no machine-specific path enters the key. A probe
-- that returns `paths` (folders the command names, e.g. hipclang's device
-- libraries) makes its identity stand for what they hold. The command runs in the source's folder with p.src a bare file name.
-- If it writes a Make-style depfile at p.depfile, the files listed there are
-- what the cache checks on later builds.
--
-- Adding a toolchain (nvcc, hipcc, glslang, xcrun, docker) is adding such a
-- file: no C changes. Modules run in a sandbox (module_env): the safe parts
-- of the standard library, their own `gk`, and a `require` of the shared
-- libraries embedded from toolchains/lib/ only (require("lib/amdgpu"): the
-- AMDGPU target IDs both rocm modules take).

local errors = require("engine/errors")

local M = {}

-- Backends a recipe may name even before a toolchain module exists for them
-- (docs/archive.md); sections for those are skipped with a reason.
M.BUILTIN_BACKENDS = { "cpu", "cuda", "metal", "rocm", "vulkan", "wgsl" }

-- gk.run_cached(argv): gk.run for commands whose output depends only on the
-- program run, such as version queries. The result is kept in the cache,
-- keyed by the command and the program file's stamp (real path, size,
-- inode, mtime, ctime), so that a no-op build spawns no process; replacing
-- or upgrading the program changes the stamp. A program changed in the last
-- 2 seconds is always run.
local probe_cache -- the build's cache, set by M.use_cache
local function run_cached(argv)
  local real = argv[1]:find("/") and gk.realpath(argv[1]) or nil
  local st = real and gk.stat(real)
  if not (probe_cache and st and st.settled) then return gk.run(argv) end
  local key = gk.sha256(table.concat({ "gk-run-cached 1", real, st.stamp,
                                       table.concat(argv, "\0") }, "\n"))
  local dir = probe_cache:dir() .. "/v1/runs/" .. key:sub(1, 2)
  local path = dir .. "/" .. key .. ".json"
  local text = gk.read(path)
  local r = text and gk.json_decode(text)
  if type(r) == "table" and math.type(r.code) == "integer" and type(r.stdout) == "string"
      and type(r.stderr) == "string" then
    return r.code, r.stdout, r.stderr
  end
  local code, out, err = gk.run(argv)
  if code == 0 then -- failures are not kept: they may be passing troubles
    local enc = gk.json_encode({ code = code, stdout = out, stderr = err })
    if enc and gk.mkdir_p(dir) then gk.write_atomic(path, enc) end
  end
  return code, out, err
end

-- What a module sees as `gk`: the primitives plus run_cached.
local module_gk = setmetatable({ run_cached = run_cached }, { __index = gk })

local module_env

-- A module's `require`: the libraries of toolchains/lib/ embedded in gk
-- ("lib/amdgpu": what the rocm modules share), each run once per module in
-- a sandbox like a module's. There is no other require: a module reads no
-- file but through gk.*.
local function lib_require(loaded)
  return function(name)
    if type(name) ~= "string" or not name:match("^lib/[%w_]+$") then
      error(("require: '%s' is not a toolchain library (lib/NAME)"):format(tostring(name)), 2)
    end
    if loaded[name] == nil then
      local text, chunkname = gk.embedded("toolchains/" .. name)
      if not text then error(("require: no toolchain library '%s' in this gk"):format(name), 2) end
      local chunk = assert(load(text, chunkname, "t", module_env()))
      loaded[name] = chunk()
    end
    return loaded[name]
  end
end

function module_env()
  local env = {
    assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs,
    pcall = pcall, select = select, tonumber = tonumber, tostring = tostring, type = type,
    setmetatable = setmetatable, getmetatable = getmetatable,
    -- Each module its own `gk`, so that gk build --container can point
    -- one module's which/run/run_cached/stat into that module's image.
    gk = setmetatable({}, { __index = module_gk }),
    require = lib_require({}),
  }
  for _, lib in ipairs({ "math", "string", "table", "utf8" }) do
    local copy = {}
    for k, v in pairs(_G[lib]) do copy[k] = v end
    env[lib] = copy
  end
  env.print = function(...)
    local parts = table.pack(...)
    for i = 1, parts.n do parts[i] = tostring(parts[i]) end
    gk.eprint(table.concat(parts, "\t", 1, parts.n) .. "\n")
  end
  return env
end

local function check(tc, origin)
  local function bad(fmt, ...)
    errors.raise(("toolchain module '%s' (%s): " .. fmt):format(tc.name, origin, ...))
  end
  for _, f in ipairs({ "backend", "format", "ext" }) do
    if type(tc[f]) ~= "string" or not tc[f]:match("^[%w_]+$") then
      bad("%s must be a name, e.g. %s = \"cpu\"", f, f)
    end
  end
  if type(tc.targets) ~= "table" or #tc.targets == 0 then
    bad("targets must be a non-empty list of strings")
  end
  for i, t in ipairs(tc.targets) do
    if type(t) ~= "string" or not t:match("^[%w_.:+-]+$") then
      bad("targets[%d] must be a target name; got %s", i, tostring(t))
    end
  end
  if tc.default_targets ~= nil then
    if type(tc.default_targets) ~= "table" or #tc.default_targets == 0 then
      bad("default_targets must be a non-empty list of targets, or nil")
    end
    local known = {}
    for _, t in ipairs(tc.targets) do known[t] = true end
    for i, t in ipairs(tc.default_targets) do
      if not known[t] then bad("default_targets[%d] '%s' is not in targets", i, tostring(t)) end
    end
  end
  for _, f in ipairs({ "probe", "command" }) do
    if type(tc[f]) ~= "function" then bad("%s must be a function", f) end
  end
  if tc.image ~= nil and (type(tc.image) ~= "string" or not tc.image:match("^[%w][%w_.:/@+-]*$")) then
    bad("image must be a container image reference, e.g. image = \"docker.io/nvidia/cuda@sha256:...\"")
  end
  for _, f in ipairs({ "check_target", "can_build", "inputs" }) do
    if tc[f] ~= nil and type(tc[f]) ~= "function" then bad("%s must be a function or nil", f) end
  end
  if tc.format_of ~= nil and type(tc.format_of) ~= "function" then
    bad("format_of must be a function(target) -> format, ext")
  end
end

-- The `gk` table each loaded module sees (M.gk_of[tc]).
M.gk_of = setmetatable({}, { __mode = "k" })

local function load_module(name, text, chunkname)
  local env = module_env()
  local chunk, err = load(text, chunkname, "t", env)
  if not chunk then errors.raise(err) end
  local ok, tc = pcall(chunk)
  if not ok then errors.rethrow(tc) end
  local origin = chunkname:gsub("^@", "")
  if type(tc) ~= "table" then
    errors.raise(("toolchain module '%s' (%s) must return a table; got %s"):format(name, origin, type(tc)))
  end
  if tc.name ~= nil and tc.name ~= name then
    errors.raise(("toolchain module '%s' (%s) says its name is '%s'; a module's name is its file name")
      :format(name, origin, tostring(tc.name)))
  end
  tc.name = name
  tc.origin = origin
  check(tc, origin)
  M.gk_of[tc] = env.gk
  return tc
end

-- Where gk.run_cached keeps its results (until then it always runs).
function M.use_cache(_, cache)
  probe_cache = cache
end

-- Loads the embedded modules, then DIR/toolchains/*.lua over them.
-- Returns a registry: { byname = {}, list = { sorted by name }, backends = { sorted } }.
function M.load(recipes_dir)
  local byname = {}
  for _, n in ipairs(gk.embedded()) do
    local name = n:match("^toolchains/([%w_]+)$")
    if name then
      local text, chunkname = gk.embedded(n)
      byname[name] = load_module(name, text, chunkname)
    end
  end
  local dir = recipes_dir .. "/toolchains"
  local st = gk.stat(dir)
  if st and st.type == "dir" then
    for _, f in ipairs(assert(gk.listdir(dir))) do
      local name = f:match("^([%w_]+)%.lua$")
      if name then
        local path = dir .. "/" .. f
        local text, err = gk.read(path)
        if not text then errors.raise("cannot read toolchain module " .. err:gsub("^cannot read ", "")) end
        byname[name] = load_module(name, text, "@" .. path)
      end
    end
  end

  local reg = { byname = byname, list = {}, backends = {}, probes = {}, capable = {}, made = {} }
  local seen = {}
  for _, b in ipairs(M.BUILTIN_BACKENDS) do seen[b] = true end
  for _, tc in pairs(byname) do
    reg.list[#reg.list + 1] = tc
    seen[tc.backend] = true
  end
  table.sort(reg.list, function(a, b) return a.name < b.name end)
  for b in pairs(seen) do reg.backends[#reg.backends + 1] = b end
  table.sort(reg.backends)
  return setmetatable(reg, { __index = M })
end

-- The modules that build `backend`, sorted by name.
function M.for_backend(reg, backend)
  local out = {}
  for _, tc in ipairs(reg.list) do
    if tc.backend == backend then out[#out + 1] = tc end
  end
  return out
end

-- Probes a module once per build. Returns info or nil, reason.
function M.probe(reg, tc)
  local p = reg.probes[tc.name]
  if not p then
    local ok, info, why = pcall(tc.probe)
    if not ok then
      errors.raise(("toolchain module '%s' (%s): probe failed: %s"):format(tc.name, tc.origin,
        tostring(errors.is(info) and info.message or info)))
    end
    if info ~= nil and (type(info) ~= "table" or type(info.identity) ~= "string" or
        info.identity == "" or type(info.tool) ~= "string") then
      errors.raise(("toolchain module '%s' (%s): probe must return { tool = PATH, identity = \"...\" } or nil, reason")
        :format(tc.name, tc.origin))
    end
    p = { info = info, why = why or (info == nil and tc.name .. " is not available") or nil }
    reg.probes[tc.name] = p
  end
  return p.info, p.why
end

-- The toolchains a section may use: the one it names, else every module of
-- its backend whose probe succeeds, in name order (each target then goes to
-- the first that can build it: M.choose). Returns { { tc, info }... } or
-- nil, reason.
function M.candidates(reg, backend, name)
  local mods = name and { reg.byname[name] } or reg:for_backend(backend)
  if #mods == 0 then return nil, "no toolchain module for " .. backend .. " yet" end
  local out, why = {}, {}
  for _, tc in ipairs(mods) do
    local info, reason = reg:probe(tc)
    if info then out[#out + 1] = { tc = tc, info = info } else why[#why + 1] = reason end
  end
  if #out == 0 then return nil, table.concat(why, "; ") end
  return out
end

-- The first candidate that accepts target t and can build it. Returns tc,
-- info, or nil and every candidate's reason.
function M.choose(reg, cands, t)
  local why = {}
  for _, c in ipairs(cands) do
    local ok, reason = M.check_target(c.tc, t)
    if ok then ok, reason = reg:can_build(c.tc, c.info, t) end
    if ok then return c.tc, c.info end
    why[#why + 1] = reason or ("%s does not know %s"):format(c.tc.name, t)
  end
  return nil, table.concat(why, "; ")
end

-- The format and file extension of tc's images for target: format_of's
-- answer when the module has one, else its fixed format and ext.
function M.format_of(tc, target)
  if not tc.format_of then return tc.format, tc.ext end
  local ok, format, ext = pcall(tc.format_of, target)
  if not ok then
    errors.raise(("toolchain module '%s' (%s): format_of failed: %s"):format(tc.name, tc.origin,
      tostring(errors.is(format) and format.message or format)))
  end
  for _, v in ipairs({ format, ext }) do
    if type(v) ~= "string" or not v:match("^[%w_]+$") then
      errors.raise(("toolchain module '%s' (%s): format_of('%s') must return two names (format, ext)")
        :format(tc.name, tc.origin, target))
    end
  end
  return format, ext
end

-- Whether a recipe may name target t for module tc: listed in tc.targets,
-- or accepted by tc.check_target. Returns true, or nil and the module's
-- reason (nil when it has none).
function M.check_target(tc, t)
  for _, k in ipairs(tc.targets) do
    if k == t then return true end
  end
  if not tc.check_target then return nil end
  local ok, res, why = pcall(tc.check_target, t)
  if not ok then
    errors.raise(("toolchain module '%s' (%s): check_target failed: %s"):format(tc.name, tc.origin,
      tostring(errors.is(res) and res.message or res)))
  end
  if res == true then return true end
  return nil, type(why) == "string" and why or nil
end

-- Whether the probed toolchain can produce target t (tc.can_build; true
-- when the module has no such hook), asked once per build. Returns true, or
-- false and a reason.
function M.can_build(reg, tc, info, t)
  local id = tc.name .. "\0" .. t
  local c = reg.capable[id]
  if not c then
    c = { ok = true }
    if tc.can_build then
      local ok, res, why = pcall(tc.can_build, t, info)
      if not ok then
        errors.raise(("toolchain module '%s' (%s): can_build failed: %s"):format(tc.name, tc.origin,
          tostring(errors.is(res) and res.message or res)))
      end
      if res ~= true then
        c = { ok = false, why = type(why) == "string" and why ~= "" and why or
              ("%s cannot build %s"):format(tc.name, t) }
      end
    end
    reg.capable[id] = c
  end
  return c.ok, c.why
end

-- The inputs target t needs from tc (tc.inputs), made in the cache on first
-- use. Returns { NAME = { path = object path, sha = SHA-256 }, ... }, in a
-- table also listing the names sorted (.names); raises when one cannot be
-- made. Asked once per (module, target) and build.
function M.inputs(reg, tc, info, t, cache)
  local id = tc.name .. "\0" .. t
  local made = reg.made[id]
  if made then return made end
  made = { names = {} }
  local specs = {}
  if tc.inputs then
    local ok, res = pcall(tc.inputs, t, info)
    if not ok or type(res) ~= "table" then
      errors.raise(("toolchain module '%s' (%s): inputs failed: %s"):format(tc.name, tc.origin,
        ok and "it must return a list of inputs" or tostring(errors.is(res) and res.message or res)))
    end
    specs = res
  end
  for i, spec in ipairs(specs) do
    local function bad(what)
      errors.raise(("toolchain module '%s' (%s): inputs('%s')[%d]: %s"):format(tc.name, tc.origin,
        t, i, what))
    end
    for _, f in ipairs({ "name", "source_name", "source" }) do
      if type(spec[f]) ~= "string" or spec[f] == "" then bad(f .. " must be a string") end
    end
    for _, f in ipairs({ "name", "source_name" }) do
      if not spec[f]:match("^[%w_.+-]+$") or spec[f]:match("^%.") then bad(f .. " must be a file name") end
    end
    if type(spec.command) ~= "function" then bad("command must be a function(p) -> argv") end
    local function argv_of(p)
      local ok, argv = pcall(spec.command, p)
      if not ok or type(argv) ~= "table" or #argv == 0 then bad("command must return an argv list") end
      for _, a in ipairs(argv) do if type(a) ~= "string" then bad("command's argv must be strings") end end
      return argv
    end
    local key = gk.sha256(table.concat({
      "gk-input 1", "toolchain " .. info.identity, "target " .. t, "name " .. spec.name,
      "source " .. gk.sha256(spec.source),
      "argv " .. table.concat(argv_of({ tool = "<tool>", src = spec.source_name, out = spec.name }), "\0"),
    }, "\n"))
    local sha = cache:lookup(key)
    if not sha then
      -- A scratch folder of its own, so that the compiler sees the same
      -- bare names wherever and however often the file is made.
      local dir = cache:temp("")
      local ok, err = gk.mkdir_p(dir)
      if ok then ok, err = gk.write_atomic(dir .. "/" .. spec.source_name, spec.source) end
      local argv = argv_of({ tool = info.tool, src = spec.source_name, out = spec.name })
      local code, out, errout
      if ok then code, out, errout = gk.run(argv, { cwd = dir }) end
      local size
      if code == 0 then
        sha, size = cache:store(key, nil, dir .. "/" .. spec.name, {})
        if not sha then err = size end
      end
      gk.remove(dir .. "/" .. spec.source_name)
      gk.remove(dir .. "/" .. spec.name)
      gk.remove(dir)
      if not sha then
        local what = not ok and err or code == nil and out or code ~= 0 and
          ("exit %d: %s"):format(code, ((errout or "") .. (out or "")):match("^%s*(.-)%s*$")) or err
        errors.raise(("cannot make %s for %s %s: %s\ncd %s && %s"):format(spec.name, tc.name, t,
          what, dir, table.concat(argv, " ")))
      end
      gk.eprint(("gk build: %s %s: made %s\n"):format(tc.name, t, spec.name))
    end
    made[spec.name] = { path = cache:object_path(sha), sha = sha }
    made.names[#made.names + 1] = spec.name
  end
  table.sort(made.names)
  reg.made[id] = made
  return made
end

-- Calls tc.command and checks that it gave a list of strings.
function M.command(tc, job, paths)
  local ok, argv = pcall(tc.command, job, paths)
  if not ok then
    errors.raise(("toolchain module '%s' (%s): command failed: %s"):format(tc.name, tc.origin,
      tostring(errors.is(argv) and argv.message or argv)))
  end
  if type(argv) ~= "table" or #argv == 0 then
    errors.raise(("toolchain module '%s' (%s): command must return a non-empty argv list")
      :format(tc.name, tc.origin))
  end
  for i, a in ipairs(argv) do
    if type(a) ~= "string" then
      errors.raise(("toolchain module '%s' (%s): command's argv[%d] is a %s, not a string")
        :format(tc.name, tc.origin, i, type(a)))
    end
  end
  return argv
end

return M
