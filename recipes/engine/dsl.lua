-- dsl.lua - the recipe language: what a recipe file may call, and the checks
-- that turn a mistake into "recipes/x.lua:5: what is wrong; what is valid".
--
--   kernel "qmatmul" {
--     params = { bits = { 1, 2, 4, 8 } },       -- optional template params
--     cpu {                                     -- one call per backend section
--       source  = "../kernelsrc/cpu/qmatmul.c", -- relative to the recipe file
--       entry   = { "qmatmul" },                -- default: { kernel name }
--       targets = { "x86-64", "x86-64-v3" },    -- checked against the toolchain;
--                                               -- default: the toolchain
--                                               -- module's default_targets
--       flags   = { },                          -- extra compiler flags
--       -- toolchain = "cc",                    -- pick one toolchain module
--       -- launch = { block = 256 },            -- launch metadata for the manifest
--     },
--   }
--
-- Each section is checked when it is called, so its errors point at its own
-- line; the kernel is checked when its table is complete.
--
-- A rocm section without `launch` launches as the kernel's cuda section
-- does: the HIP entry files include the CUDA kernel bodies, so grid, block,
-- shared memory and parameters are the same by construction (LAUNCH_FROM).

local errors = require("engine/errors")

local dsl = {}

local IDENT = "^[%a_][%w_]*$"
-- Param string values end up in -D flags and in file names.
local VALUE = "^[%w_.+-]+$"

local SECTION_FIELDS = { "entry", "flags", "launch", "source", "targets", "toolchain" }
-- backend -> the backend whose section's launch it takes when it has none.
local LAUNCH_FROM = { rocm = "cuda" }
-- Backends whose rows libgk launches from their `launch` (gk.h).
local LAUNCHES = { cuda = true, rocm = true, vulkan = true, wgsl = true, metal = true }
local SECTION_FIELD = {}
for _, f in ipairs(SECTION_FIELDS) do SECTION_FIELD[f] = true end

local Section = {} -- metatable of what cpu { ... } returns

local function fail(where, fmt, ...)
  errors.raise(where .. string.format(fmt, ...))
end

-- How a value is named in a message.
local function describe(v)
  if getmetatable(v) == Section then return "a " .. v.backend .. " section" end
  local t = type(v)
  if t == "string" then return "'" .. v .. "'" end
  if t == "number" then return tostring(v) end
  if t == "table" then return "a table" end
  return "a " .. t
end
dsl.describe = describe

-- Edit distance, for "did you mean" on misspelt field names.
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

-- "; did you mean 'targets'?" when one known name is close to name, else "".
local function suggest(name, known)
  if type(name) ~= "string" then return "" end
  local best, bestd
  for _, k in ipairs(known) do
    local d = distance(name, k)
    if d <= 2 and d < #k / 2 and (not bestd or d < bestd) then best, bestd = k, d end
  end
  return best and ("; did you mean '%s'?"):format(best) or ""
end

-- A sequence 1..n with no other keys?
local function is_list(t)
  if type(t) ~= "table" or getmetatable(t) ~= nil then return false end
  local n = #t
  for k in pairs(t) do
    if math.type(k) ~= "integer" or k < 1 or k > n then return false end
  end
  return true
end

local function contains(list, x)
  for _, v in ipairs(list) do
    if v == x then return true end
  end
  return false
end

local function string_list(where, v, what, pattern, example)
  if not is_list(v) then
    fail(where, "%s must be a list of strings, e.g. %s; got %s", what, example, describe(v))
  end
  local seen = {}
  for i, s in ipairs(v) do
    if type(s) ~= "string" or (pattern and not s:match(pattern)) then
      fail(where, "%s[%d] must be %s, e.g. %s; got %s", what, i,
           pattern and "a name (letters, digits, _)" or "a string", example, describe(s))
    end
    if seen[s] then fail(where, "%s lists '%s' twice", what, s) end
    seen[s] = true
  end
  return v
end

-- params = { name = { values } }: each list non-empty, of integers or of
-- short strings. Returns { { name = , values = }, ... } sorted by name.
local function check_params(where, kname, params)
  local example = "params = { bits = { 1, 2, 4, 8 } }"
  if type(params) ~= "table" or getmetatable(params) ~= nil then
    fail(where, "params of kernel '%s' must be a table, e.g. %s; got %s", kname, example,
         describe(params))
  end
  local out = {}
  for name, values in pairs(params) do
    if type(name) ~= "string" or not name:match(IDENT) then
      fail(where, "params of kernel '%s': %s is not a param name (letters, digits, _), e.g. %s",
           kname, describe(name), example)
    end
    if not is_list(values) or #values == 0 then
      fail(where, "params.%s must be a non-empty list of integers or strings, e.g. %s = { 1, 2, 4, 8 }; got %s",
           name, name, describe(values))
    end
    local seen = {}
    for i, v in ipairs(values) do
      local ok = math.type(v) == "integer" or (type(v) == "string" and v:match(VALUE))
      if not ok then
        fail(where, "params.%s[%d] must be an integer or a string of letters, digits, '_.+-'; got %s",
             name, i, describe(v))
      end
      if seen[v] then fail(where, "params.%s lists %s twice", name, describe(v)) end
      seen[v] = true
    end
    out[#out + 1] = { name = name, values = values }
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

local function dirname(path)
  return path:match("^(.*)/[^/]*$") or "."
end

local function join(dir, rel)
  if rel:sub(1, 1) == "/" then return rel end
  return dir == "." and rel or dir .. "/" .. rel
end

-- One backend's section function (what `cpu` is in a recipe). ctx gives the
-- recipe's path and, for each backend, the toolchain modules that build it.
local function section_fn(ctx, backend)
  return function(spec)
    local where = gk.where(2)
    if type(spec) ~= "table" or getmetatable(spec) ~= nil then
      fail(where, "%s needs a table: %s { source = \"...\", targets = { ... } }; got %s",
           backend, backend, describe(spec))
    end
    for k in pairs(spec) do
      if not SECTION_FIELD[k] then
        fail(where, "unknown field %s in %s; known: %s%s", describe(k), backend,
             table.concat(SECTION_FIELDS, ", "), suggest(k, SECTION_FIELDS))
      end
    end

    local s = setmetatable({ backend = backend, where = where }, Section)

    -- The toolchain modules able to build this section: the one named, or
    -- every module for the backend.
    local tcs = ctx.toolchains_for(backend)
    if spec.toolchain ~= nil then
      if type(spec.toolchain) ~= "string" then
        fail(where, "toolchain of %s must be a string, e.g. toolchain = \"cc\"; got %s", backend,
             describe(spec.toolchain))
      end
      local found
      for _, tc in ipairs(tcs) do
        if tc.name == spec.toolchain then found = tc end
      end
      if not found then
        local names = {}
        for _, tc in ipairs(tcs) do names[#names + 1] = tc.name end
        fail(where, "unknown toolchain '%s' for %s; known: %s", spec.toolchain, backend,
             #names > 0 and table.concat(names, ", ") or "none yet")
      end
      tcs = { found }
      s.toolchain = spec.toolchain
    end

    if type(spec.source) ~= "string" or spec.source == "" then
      fail(where, "%s needs source = \"path/to/kernel\" (relative to %s); got %s", backend,
           ctx.path, spec.source == nil and "none" or describe(spec.source))
    end
    local path = join(dirname(ctx.path), spec.source)
    local ok, why = gk.readable(path)
    if not ok then
      fail(where, "cannot read source '%s' of %s: %s (looked for '%s')", spec.source, backend,
           why:match(": ([^:]*)$") or why, path)
    end
    s.source = path

    local targets = spec.targets
    if targets == nil then
      -- The toolchain module's usual set (each recipe would repeat it): the
      -- first module's (by name) that has one, else the first's targets.
      local tc = tcs[1]
      if not tc then
        fail(where, "%s needs targets = { ... } (no toolchain module for %s gives a default list)",
             backend, backend)
      end
      for _, m in ipairs(ctx.toolchains_for(backend)) do
        if m.default_targets then tc = m; break end
      end
      targets = tc.default_targets or tc.targets
    end
    string_list(where, targets, "targets", nil, "targets = { \"x86-64-v3\" }")
    if #targets == 0 then fail(where, "targets of %s is empty; list at least one", backend) end
    -- A backend with no toolchain module yet cannot check its targets; it
    -- is skipped at build time with a reason.
    if #tcs > 0 then
      local known, order = {}, {}
      for _, tc in ipairs(tcs) do
        for _, t in ipairs(tc.targets) do
          if not known[t] then known[t] = true; order[#order + 1] = t end
        end
      end
      for _, t in ipairs(targets) do
        -- Beyond the list, a module may accept a family of names (hipcc's
        -- target IDs "gfx90a:xnack+"); its reason says what is wrong.
        local ok, why = known[t], nil
        for _, tc in ipairs(tcs) do
          if not ok then ok, why = ctx.check_target(tc, t) end
        end
        if not ok then
          fail(where, "unknown target '%s' for %s; %sknown: %s", t, backend,
               why and why .. "; " or "", table.concat(order, ", "))
        end
      end
    end
    s.targets = targets
    -- Without targets the section takes the defaults that the kernel's
    -- other sections of its backend leave (kernel(), below).
    s.defaulted = spec.targets == nil

    if spec.entry ~= nil then
      s.entry = string_list(where, spec.entry, "entry", IDENT, "entry = { \"qmatmul\" }")
      if #s.entry == 0 then fail(where, "entry of %s is empty; name at least one function", backend) end
    end
    s.flags = spec.flags == nil and {} or
      string_list(where, spec.flags, "flags", nil, "flags = { \"-ffast-math\" }")
    if spec.launch ~= nil then
      if type(spec.launch) ~= "table" or getmetatable(spec.launch) ~= nil then
        fail(where, "launch of %s must be a table, e.g. launch = { block = 256 }; got %s", backend,
             describe(spec.launch))
      end
      -- A field, or (a table under an entry's name) that entry's own launch.
      local function check_fields(t, prefix, nested)
        for k, v in pairs(t) do
          if type(k) ~= "string" then
            fail(where, "launch of %s: keys must be names; got %s", backend, describe(k))
          end
          local tv = type(v)
          local own = not nested and tv == "table" and not is_list(v) and getmetatable(v) == nil
          if own and s.entry and contains(s.entry, k) then
            check_fields(v, prefix .. k .. ".", true)
          elseif own then
            fail(where, "%s%s: a table inside launch is the launch of the entry of that name, and "
                 .. "entry is { %s }%s", prefix, k, table.concat(s.entry or { "(the kernel's name)" }, ", "),
                 suggest(k, s.entry or {}))
          elseif tv ~= "string" and tv ~= "number" and tv ~= "boolean" and not is_list(v) then
            fail(where, "%s%s must be a number, string, boolean or list (or, under the name of an "
                 .. "entry, that entry's own launch table); got %s", prefix, k, describe(v))
          end
        end
      end
      check_fields(spec.launch, "launch.", false)
      s.launch = spec.launch
    end
    return s
  end
end

-- Every combination of param values, in a stable order:
-- { variant = "bits=4", file = "bits4", defines = { "BITS=4" }, values = { bits = 4 } }
function dsl.variants(params)
  local out = { { variant = "", file = "", defines = {}, values = {} } }
  for _, p in ipairs(params) do
    local nxt = {}
    for _, base in ipairs(out) do
      for _, v in ipairs(p.values) do
        local sv = tostring(v)
        local d = {
          variant = (base.variant == "" and "" or base.variant .. ",") .. p.name .. "=" .. sv,
          file = (base.file == "" and "" or base.file .. ".") .. p.name .. sv,
          defines = table.move(base.defines, 1, #base.defines, 1, {}),
          values = {},
        }
        for k, x in pairs(base.values) do d.values[k] = x end
        d.defines[#d.defines + 1] = p.name:upper() .. "=" .. sv
        d.values[p.name] = v
        nxt[#nxt + 1] = d
      end
    end
    out = nxt
  end
  return out
end

-- A launch as one variant takes it: every "{name}" in its strings replaced
-- by the value of the kernel's param `name` in `values` (a count
-- expression may depend on the variant: paged_attention's columns count
-- max_pages * {page} tokens). A launch without braces is returned as is.
function dsl.launch_for(launch, values)
  if launch == nil then return nil end
  local out = {}
  for k, v in pairs(launch) do
    if type(v) == "string" then
      out[k] = v:gsub("{([%a_][%w_]*)}", function(name)
        return values[name] ~= nil and tostring(values[name]) or nil
      end)
    elseif type(v) == "table" then
      out[k] = dsl.launch_for(v, values)
    else
      out[k] = v
    end
  end
  return out
end

-- The "{name}" placeholders of a launch's strings, in the order met.
local function launch_names(launch, out)
  for _, v in pairs(launch) do
    if type(v) == "string" then
      for name in v:gmatch("{([^}]*)}") do out[#out + 1] = name end
    elseif type(v) == "table" then
      launch_names(v, out)
    end
  end
  return out
end

-- Runs one recipe file. ctx = { path = "recipes/x.lua", backends = { sorted
-- names }, toolchains_for = function(backend) -> { modules } }. Returns the
-- list of kernels it declares:
--   { name, where, params = { {name, values} }, sections = { Section... } }
function dsl.run(text, ctx)
  local kernels, pending = {}, {}
  local env = {
    assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs,
    pcall = pcall, select = select, tonumber = tonumber, tostring = tostring, type = type,
    rawequal = rawequal, rawget = rawget, rawlen = rawlen, rawset = rawset,
    setmetatable = setmetatable, getmetatable = getmetatable,
    _VERSION = _VERSION,
  }
  for _, lib in ipairs({ "math", "string", "table", "utf8" }) do
    local copy = {}
    for k, v in pairs(_G[lib]) do copy[k] = v end
    env[lib] = copy
  end
  -- print is for debugging a recipe: stdout belongs to --json.
  env.print = function(...)
    local parts = table.pack(...)
    for i = 1, parts.n do parts[i] = tostring(parts[i]) end
    gk.eprint(table.concat(parts, "\t", 1, parts.n) .. "\n")
  end

  for _, b in ipairs(ctx.backends) do env[b] = section_fn(ctx, b) end

  env.kernel = function(name)
    local where = gk.where(2)
    if type(name) ~= "string" or not name:match(IDENT) then
      fail(where, "kernel needs a name (letters, digits, _): kernel \"qmatmul\" { ... }; got %s",
           describe(name))
    end
    local k = { name = name, where = where }
    pending[k] = true
    return function(spec)
      pending[k] = nil
      local where2 = gk.where(2)
      if type(spec) ~= "table" or getmetatable(spec) ~= nil then
        fail(where2, "kernel '%s' needs a table: kernel \"%s\" { cpu { ... } }; got %s", name, name,
             describe(spec))
      end
      k.params, k.sections = {}, {}
      local n = #spec
      for key, v in pairs(spec) do
        if key == "params" then
          k.params = check_params(where2, name, v)
        elseif math.type(key) == "integer" and key >= 1 and key <= n then
          if getmetatable(v) ~= Section then
            fail(where2, "kernel '%s': item %d is %s, not a backend section (write %s { ... })",
                 name, key, describe(v), ctx.backends[1] or "cpu")
          end
        else
          fail(where2, "unknown field %s in kernel '%s'; known: params, and backend sections (%s { ... })%s",
               describe(key), name, table.concat(ctx.backends, " { ... }, "), suggest(key, { "params" }))
        end
      end
      if n == 0 then
        fail(where2, "kernel '%s' has no backend section; add one, e.g. cpu { source = ..., targets = { ... } }",
             name)
      end
      local claimed, by_backend = {}, {}
      for i = 1, n do by_backend[spec[i].backend] = by_backend[spec[i].backend] or spec[i] end
      -- A section without targets builds its toolchain's defaults less the
      -- targets the kernel's other sections of its backend list (one image
      -- for one architecture with a launch of its own, the rest as usual).
      local listed, defaulted = {}, {}
      for i = 1, n do
        local s = spec[i]
        if s.defaulted then
          local other = defaulted[s.backend]
          if other then
            fail(s.where, "a second %s section without targets (the first is at %s); give one of "
                 .. "them targets = { ... }", s.backend, other.where:gsub(": $", ""))
          end
          defaulted[s.backend] = s
          s.default_targets = s.default_targets or s.targets
        else
          for _, t in ipairs(s.targets) do listed[s.backend .. "\0" .. t] = true end
        end
      end
      for _, s in pairs(defaulted) do
        local left = {}
        for _, t in ipairs(s.default_targets) do
          if not listed[s.backend .. "\0" .. t] then left[#left + 1] = t end
        end
        if #left == 0 then
          fail(s.where, "every default target of %s is listed by another section; give this one "
               .. "targets = { ... } or remove it", s.backend)
        end
        s.targets = left
      end
      for i = 1, n do
        local s = spec[i]
        s.entry = s.entry or { name }
        local from = LAUNCH_FROM[s.backend] and by_backend[LAUNCH_FROM[s.backend]]
        if s.launch == nil and from then s.launch = from.launch end
        -- The launch as libgk will read it from the archive: what it would
        -- refuse at run time (a bad count expression, a field of the wrong
        -- shape) is refused here, at the section's line.
        -- With "{param}" placeholders, as each variant will have it.
        if s.launch ~= nil and LAUNCHES[s.backend] then
          local names = {}
          for _, p in ipairs(k.params) do names[#names + 1] = p.name end
          local placeholders = launch_names(s.launch, {})
          for _, pname in ipairs(placeholders) do
            if not contains(names, pname) then
              fail(s.where, "launch of %s: {%s} names no param of kernel '%s'; %s%s", s.backend,
                   pname, name, #names > 0 and "its params: " .. table.concat(names, ", ")
                   or "it has none (add params = { ... }, or write the value)",
                   suggest(pname, names))
            end
          end
          local vs = #placeholders > 0 and dsl.variants(k.params) or { { variant = "", values = {} } }
          for _, v in ipairs(vs) do
            local text = assert(gk.json_encode(dsl.launch_for(s.launch, v.values)))
            local why = gk.launch_check(s.backend, text, s.entry)
            if why then
              fail(s.where, "launch of %s%s: %s", s.backend,
                   v.variant ~= "" and " (variant " .. v.variant .. ")" or "", why)
            end
          end
        end
        for _, t in ipairs(s.targets) do
          local id = s.backend .. "\0" .. t
          if claimed[id] then
            fail(s.where, "target '%s' of %s is already built by the section at %s", t,
                 s.backend, claimed[id]:gsub(": $", ""))
          end
          claimed[id] = s.where
        end
        k.sections[i] = s
      end
      kernels[#kernels + 1] = k
      return k
    end
  end

  -- Globals are strict: reading an undefined one is an error at once (a
  -- nil would be silently truthy-tested or called). In a declarative recipe
  -- that is nearly always a misspelt or unknown backend section.
  setmetatable(env, {
    __index = function(_, name)
      fail(gk.where(2), "unknown backend or name %s; backends: %s; functions: kernel",
           describe(name), table.concat(ctx.backends, ", "))
    end,
  })

  local chunk, err = load(text, "@" .. ctx.path, "t", env)
  if not chunk then errors.raise(err) end
  local ok, e = pcall(chunk)
  if not ok then errors.rethrow(e) end
  for k in pairs(pending) do
    fail(k.where, "kernel '%s' has no body; write kernel \"%s\" { cpu { ... } }", k.name, k.name)
  end
  return kernels
end

return dsl
