-- plan.lua - what gk build makes: the recipes loaded (every error names
-- file:line) and expanded into jobs, one per kernel x section x target x
-- params, each with the toolchain that builds it and the path of its image,
-- sorted the way the manifest is (docs/manifest.md).

local errors = require("engine/errors")
local dsl = require("engine/dsl")
local toolchains = require("engine/toolchains")
local util = require("engine/util")

local join, dirname, reason, sorted_keys = util.join, util.dirname, util.reason, util.sorted_keys

local M = {}

-- Runs every *.lua recipe in dir. Returns their kernels, sorted by name.
function M.load_recipes(dir, reg)
  local names, err = gk.listdir(dir)
  if not names then
    errors.raise(("cannot read recipes folder '%s': %s; pass --recipes DIR, a folder of *.lua recipes")
      :format(dir, reason(err)))
  end
  local files = {}
  for _, n in ipairs(names) do
    local path = join(dir, n)
    if n:match("%.lua$") then
      local st = gk.stat(path)
      if st and st.type == "file" then files[#files + 1] = path end
    end
  end
  if #files == 0 then
    errors.raise(("no recipe in '%s': it has no *.lua file; pass --recipes DIR, a folder of recipes"):format(dir))
  end
  local ctx = {
    backends = reg.backends,
    toolchains_for = function(b) return reg:for_backend(b) end,
    check_target = toolchains.check_target,
  }
  local kernels, byname = {}, {}
  for _, path in ipairs(files) do
    local text, rerr = gk.read(path)
    if not text then errors.raise(("cannot read recipe '%s': %s"):format(path, reason(rerr))) end
    ctx.path = path
    for _, k in ipairs(dsl.run(text, ctx)) do
      local first = byname[k.name]
      if first then
        errors.raise(("%sduplicate kernel '%s'; it is first defined at %s; kernel names are unique across recipes")
          :format(k.where, k.name, (first.where:gsub(": $", ""))))
      end
      byname[k.name] = k
      kernels[#kernels + 1] = k
    end
  end
  table.sort(kernels, function(a, b) return a.name < b.name end)
  return kernels
end

local function job_less(a, b)
  if a.kernel ~= b.kernel then return a.kernel < b.kernel end
  if a.backend ~= b.backend then return a.backend < b.backend end
  if a.target ~= b.target then return a.target < b.target end
  return a.variant < b.variant
end

-- A target as it appears in file names: target IDs hold ':' ("gfx90a:xnack+"),
-- which some file systems and tools refuse, so it becomes '-'
-- (rocm/qmatmul/gfx90a-xnack+.bits4.hsaco). The manifest keeps the real ID.
local function file_target(t)
  return (t:gsub(":", "-"))
end

-- The targets of a section that one of its probed toolchains can produce,
-- each with the first that can ({ t, tc, info }); the others go into
-- tskipped ("backend\0target" -> { backend, target, reason }), once however
-- many kernels name them.
local function buildable(reg, cands, backend, targets, tskipped)
  local out = {}
  for _, t in ipairs(targets) do
    local tc, info = reg:choose(cands, t)
    if tc then
      out[#out + 1] = { t = t, tc = tc, info = info }
    else
      tskipped[backend .. "\0" .. t] = { backend = backend, target = t, reason = info }
    end
  end
  return out
end

-- The targets section s of kernel k builds. With --targets for its backend
-- (override), those of them that s lists, and, when s is the kernel's
-- section of the backend without targets (the defaults' section), or else
-- its first, those that none of its sections lists: a kernel may split a
-- backend's targets between sections (flags or a launch of their own), and
-- each target is built once, by the section that has it.
local function section_targets(k, s, override)
  local ts = override[s.backend]
  if not ts then return s.targets end
  local mine, listed, first, defaults = {}, {}, nil, nil
  for _, o in ipairs(k.sections) do
    if o.backend == s.backend then
      first = first or o
      if o.defaulted then defaults = o end
      for _, t in ipairs(o.targets) do listed[t] = listed[t] or o end
    end
  end
  local rest = defaults or first
  for _, t in ipairs(ts) do
    if listed[t] == s or (not listed[t] and rest == s) then mine[#mine + 1] = t end
  end
  return mine
end

-- Expands kernels into jobs for the wanted backends, with the targets of
-- --targets (override: { backend = { targets } }) in place of the recipes'
-- lists. Returns jobs, the skipped backends { backend = reason }, and the
-- backends built.
function M.expand(kernels, reg, wanted, override)
  local jobs, skipped, built, tskipped = {}, {}, {}, {}
  for _, k in ipairs(kernels) do
    local vs = dsl.variants(k.params)
    for _, s in ipairs(k.sections) do
      if not wanted or wanted[s.backend] then
        local cands, why = reg:candidates(s.backend, s.toolchain)
        if not cands then
          skipped[s.backend] = skipped[s.backend] or why
        else
          built[s.backend] = built[s.backend] or { images = 0, first = cands[1].info.identity }
          -- Compilers run in the source's folder: an absolute path, as the
          -- engine's own working folder stays where the user is.
          local srcdir = assert(gk.realpath(dirname(s.source)))
          for _, c in ipairs(buildable(reg, cands, s.backend, section_targets(k, s, override), tskipped)) do
            local t, tc, info = c.t, c.tc, c.info
            local format, ext = toolchains.format_of(tc, t)
            for _, v in ipairs(vs) do
              local j = {
                kernel = k.name, backend = s.backend, target = t, variant = v.variant,
                params = v.values, defines = v.defines, flags = s.flags, entry = s.entry,
                launch = dsl.launch_for(s.launch, v.values), source = s.source, srcdir = srcdir,
                where = s.where,
                srcname = s.source:match("([^/]*)$"), tc = tc, info = info,
                format = format, ext = ext,
                path = ("%s/%s/%s%s.%s"):format(s.backend, k.name, file_target(t),
                  v.file == "" and "" or "." .. v.file, ext),
              }
              j.label = ("%s %s %s%s"):format(tc.name, t, k.name,
                v.variant == "" and "" or " " .. v.variant)
              jobs[#jobs + 1] = j
              built[s.backend].images = built[s.backend].images + 1
            end
          end
        end
      end
    end
  end
  -- A backend with some sections built is not "skipped" as a whole.
  for b in pairs(built) do skipped[b] = nil end
  table.sort(jobs, job_less)
  local tlist = {}
  for _, id in ipairs(sorted_keys(tskipped)) do tlist[#tlist + 1] = tskipped[id] end
  return jobs, skipped, built, tlist
end

return M
