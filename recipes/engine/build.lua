-- build.lua - the driver of `gk build`: recipes -> jobs -> cache or compile
-- -> output folder (docs/manifest.md).
--
-- Order of work, and why:
--  1. load toolchain modules and recipes; every error names file:line;
--  2. expand kernel x section x target x params into jobs, sorted the way the
--     manifest is, and pick (probe) one toolchain per section;
--  3. key each job and look it up in the cache: no process for a hit;
--  4. compile the misses, -j at a time, into the cache; on the first failure
--     stop starting jobs and let the running ones finish;
--  5. only when every job has an image, copy changed images into the output
--     folder (staged, then renamed), write manifest.json last, and remove the
--     images the previous manifest had that this one has not.
-- So a failed build never touches the output folder.

-- A minimal require over the modules embedded in gk (no package library
-- is opened: recipes cannot load C code).
do
  local loaded = {}
  function require(name)
    local m = loaded[name]
    if m ~= nil then return m end
    local text, chunkname = gk.embedded(name)
    if not text then error("module '" .. name .. "' is not embedded in gk", 2) end
    m = assert(load(text, chunkname, "t"))(name)
    if m == nil then m = true end
    loaded[name] = m
    return m
  end
end

local errors = require("engine/errors")
local dsl = require("engine/dsl")
local toolchains = require("engine/toolchains")
local release = require("engine/release")
local container = require("engine/container")

-- Set by M.main for the build under way: the container context of
-- --container (nil: compiles run natively) and the manifest's "meta".
local ctr, build_meta

local M = {}

local function join(dir, rel)
  if rel:sub(1, 1) == "/" then return rel end
  if dir:sub(-1) == "/" then return dir .. rel end
  return dir .. "/" .. rel
end

local function dirname(path)
  return path:match("^(.*)/[^/]*$") or "."
end

-- "cannot read 'x': No such file or directory" -> "No such file or directory"
local function reason(err)
  return (tostring(err):match(": ([^:]*)$")) or tostring(err)
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

-- Shell-quotes argv for a person to copy and run.
local function shell_line(argv)
  local out = {}
  for i, a in ipairs(argv) do
    out[i] = a:match("^[%w_%-+=/.,:@%%]+$") and a or "'" .. a:gsub("'", "'\\''") .. "'"
  end
  return table.concat(out, " ")
end

---------------------------------------------------------------------------
-- Recipes

local function load_recipes(dir, reg)
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

-- Every combination of param values, in a stable order:
-- { variant = "bits=4", file = "bits4", defines = { "BITS=4" }, values = { bits = 4 } }
local function variants(params)
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
-- (override), those of them that s lists, and, when s is the kernel's first
-- section of the backend, those that none of its sections lists: a kernel
-- may split a backend's targets between sections (flags or a launch of
-- their own), and each target is built once, by the section that has it.
local function section_targets(k, s, override)
  local ts = override[s.backend]
  if not ts then return s.targets end
  local mine, listed, first = {}, {}, nil
  for _, o in ipairs(k.sections) do
    if o.backend == s.backend then
      first = first or o
      for _, t in ipairs(o.targets) do listed[t] = listed[t] or o end
    end
  end
  for _, t in ipairs(ts) do
    if listed[t] == s or (not listed[t] and first == s) then mine[#mine + 1] = t end
  end
  return mine
end

-- Expands kernels into jobs for the wanted backends, with the targets of
-- --targets (override: { backend = { targets } }) in place of the recipes'
-- lists. Returns jobs, the skipped backends { backend = reason }, and the
-- backends built.
local function expand(kernels, reg, wanted, override)
  local jobs, skipped, built, tskipped = {}, {}, {}, {}
  for _, k in ipairs(kernels) do
    local vs = variants(k.params)
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
                launch = s.launch, source = s.source, srcdir = srcdir, where = s.where,
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

---------------------------------------------------------------------------
-- Cache keys

-- What the toolchain module sees of a job (a copy: it cannot change ours).
local function job_view(j)
  return {
    kernel = j.kernel, backend = j.backend, target = j.target, variant = j.variant,
    params = j.params, defines = table.move(j.defines, 1, #j.defines, 1, {}),
    flags = table.move(j.flags, 1, #j.flags, 1, {}), entry = j.entry, source = j.srcname,
  }
end

local KEY_PATHS = { tool = "<tool>", srcdir = "<srcdir>", out = "<out>", depfile = "<depfile>" }

-- The probe's `paths` and the job's made inputs, as the command sees them:
-- real paths, or placeholders for the cache key.
local function extra_paths(j, placeholders)
  local paths, inputs = {}, {}
  for k, v in pairs(j.info.paths or {}) do paths[k] = placeholders and "<" .. k .. ">" or v end
  for _, n in ipairs(j.inputs and j.inputs.names or {}) do
    inputs[n] = placeholders and "<input:" .. n .. ">" or j.inputs[n].path
  end
  return paths, inputs
end

local function key_of(j, cache, reg)
  local src_sha, err = cache:hash_file(j.source)
  if not src_sha then errors.raise(("cannot read source '%s': %s"):format(j.source, reason(err))) end
  j.inputs = reg:inputs(j.tc, j.info, j.target, cache)
  local p = { src = j.srcname }
  for k, v in pairs(KEY_PATHS) do p[k] = v end
  p.paths, p.inputs = extra_paths(j, true)
  local argv = toolchains.command(j.tc, job_view(j), p)
  local lines = {
    "gk-build-key 1",
    "toolchain " .. j.info.identity,
    "backend " .. j.backend,
    "format " .. j.format,
    "target " .. j.target,
    "variant " .. j.variant,
    "source " .. src_sha,
    "argv " .. table.concat(argv, "\0"),
  }
  -- Generated inputs by content; a job without any keeps the key it had.
  for _, n in ipairs(j.inputs.names) do lines[#lines + 1] = ("input %s %s"):format(n, j.inputs[n].sha) end
  -- The image's digest, with --container only: native keys stay as they were.
  if ctr then lines[#lines + 1] = ctr:key_line(j.tc) end
  return gk.sha256(table.concat(lines, "\n"))
end

---------------------------------------------------------------------------
-- Compiling

-- The files a Make-style depfile lists for its first rule, as written
-- (relative to the folder the compiler ran in, or absolute).
local function parse_depfile(text)
  text = text:gsub("\\\r?\n", " ")
  -- Escaped spaces and '#' are part of names; "$$" is a '$'.
  text = text:gsub("\\ ", "\1"):gsub("\\#", "#"):gsub("%$%$", "$")
  local deps, in_rule = {}, false
  for tok in text:gmatch("%S+") do
    if tok:sub(-1) == ":" then
      if in_rule then break end -- a second rule (-MP phony targets)
      in_rule = true
    elseif in_rule then
      deps[#deps + 1] = (tok:gsub("\1", " "))
    end
  end
  return deps
end

local Progress = {}
Progress.__index = Progress

local function progress(total)
  return setmetatable({ total = total, done = 0, tty = gk.log_isatty(), dirty = false }, Progress)
end

-- ninja's status line: on a terminal one line overwritten in place, else a
-- line per finished job.
function Progress:show(label, finished)
  local line = ("[%d/%d] %s"):format(self.done, self.total, label)
  if self.tty then
    -- Never wrap: a wrapped line cannot be overwritten with "\r".
    local width = gk.log_width()
    if width and #line >= width then line = line:sub(1, width - 4) .. "..." end
    gk.eprint("\r" .. line .. "\27[K")
    self.dirty = true
  elseif finished then
    gk.eprint(line .. "\n")
  end
end

-- Ends the status line before other output.
function Progress:newline()
  if self.dirty then
    gk.eprint("\n")
    self.dirty = false
  end
end

local function cleanup(j)
  for _, k in ipairs({ "tmp_out", "tmp_dep", "tmp_log" }) do
    if j[k] then gk.remove(j[k]) end
    j[k] = nil
  end
  if j.tmp_dir then ctr:remove_job_dir(j.tmp_dir) end
  j.tmp_dir = nil
end

local function start(j, cache)
  j.tmp_out, j.tmp_dep, j.tmp_log = cache:temp("." .. j.ext), cache:temp(".d"), cache:temp(".log")
  -- In a container the compiler writes into a folder of its own, the only
  -- one it may write to.
  if ctr then j.tmp_dir, j.tmp_out, j.tmp_dep = ctr:job_dir(cache, j.ext) end
  local paths, inputs = extra_paths(j, false)
  j.argv = toolchains.command(j.tc, job_view(j), {
    tool = j.info.tool, src = j.srcname, srcdir = j.srcdir,
    out = j.tmp_out, depfile = j.tmp_dep, paths = paths, inputs = inputs,
  })
  if ctr then j.argv = ctr:wrap(j, j.argv) end
  local pid, err = gk.spawn(j.argv, { cwd = j.srcdir, output = j.tmp_log })
  if not pid then
    cleanup(j)
    return nil, err
  end
  return pid
end

-- After the compiler exited 0: record the image and its inputs in the cache.
local function finish(j, cache)
  if not gk.stat(j.tmp_out) then
    return nil, ("%s exited 0 but wrote no image"):format(j.tc.name)
  end
  local deps = {}
  local dtext = gk.read(j.tmp_dep)
  if dtext then
    for _, d in ipairs(parse_depfile(dtext)) do
      if d ~= j.srcname then deps[#deps + 1] = d end
    end
  end
  if ctr then deps = ctr:filter_deps(j, deps) end
  local sha, size = cache:store(j.key, j.srcdir, j.tmp_out, deps)
  j.tmp_out = nil -- consumed by store, whatever its outcome
  if not sha then return nil, size end
  j.sha, j.size = sha, size
  return true
end

-- Runs the jobs without an image, `width` at a time. Returns the number
-- compiled, or raises after the running ones have finished.
local function compile(todo, cache, width)
  local prog = progress(#todo)
  local running, nrunning, nxt = {}, 0, 1
  local failures, seen = {}, {}
  local function fail_job(j, what, output)
    prog:newline()
    local text = ("FAILED: %s (%s)\ncd %s && %s\n"):format(j.path, j.label, shell_line({ j.srcdir }),
      shell_line(j.argv or {}))
    if what then text = text .. what .. "\n" end
    -- One source fails alike for every ISA level or variant: its errors
    -- are shown once, the other jobs point at them.
    if output and output ~= "" and seen[output] then
      text = text .. ("(the same errors as %s, above)\n"):format(seen[output])
    elseif output and output ~= "" then
      seen[output] = j.path
      text = text .. output .. (output:sub(-1) == "\n" and "" or "\n")
    end
    gk.eprint(text)
    failures[#failures + 1] = j
  end
  while true do
    while #failures == 0 and nxt <= #todo and nrunning < width do
      local j = todo[nxt]
      nxt = nxt + 1
      local pid, err = start(j, cache)
      if pid then
        running[pid] = j
        nrunning = nrunning + 1
        prog:show(j.label, false)
      else
        fail_job(j, err)
      end
    end
    if nrunning == 0 then break end
    local pid, code, desc = gk.wait()
    if not pid then errors.raise(tostring(code)) end
    local j = running[pid]
    running[pid] = nil
    nrunning = nrunning - 1
    prog.done = prog.done + 1
    local output = gk.read(j.tmp_log) or ""
    if code ~= 0 then
      local what = ("%s failed: %s"):format(j.tc.name, desc)
      -- Silence usually means its own log could not be written either.
      if output == "" then
        what = what .. (" and printed nothing; its output and log go to '%s': is that disk full?")
          :format(dirname(j.tmp_log))
      end
      fail_job(j, what, output)
    else
      local ok, err = finish(j, cache)
      if ok then
        prog:show(j.label, true)
        if output ~= "" then -- warnings: shown, as ninja does
          prog:newline()
          gk.eprint(output)
        end
      else
        fail_job(j, err, output)
      end
    end
    cleanup(j)
  end
  prog:newline()
  return failures, #todo - nxt + 1
end

---------------------------------------------------------------------------
-- The output folder

local IMAGE_ORDER = { "kernel", "backend", "target", "variant", "format", "path", "entry",
                      "launch", "toolchain", "size", "sha256" }

local function manifest_text(jobs, skipped, tskipped)
  local images = {}
  for i, j in ipairs(jobs) do
    local launch = {}
    for k, v in pairs(j.launch or {}) do launch[k] = v end
    images[i] = gk.json_object({
      kernel = j.kernel, backend = j.backend, target = j.target, variant = j.variant,
      format = j.format, path = j.path, entry = j.entry, launch = gk.json_object(launch),
      toolchain = j.info.identity, size = j.size, sha256 = j.sha,
    }, IMAGE_ORDER)
  end
  local sk = {}
  for _, b in ipairs(sorted_keys(skipped)) do
    sk[#sk + 1] = gk.json_object({ backend = b, reason = skipped[b] }, { "backend", "reason" })
  end
  for _, t in ipairs(tskipped) do
    sk[#sk + 1] = gk.json_object(t, { "backend", "target", "reason" })
  end
  local m = gk.json_object({
    format = "gllm-kernels-manifest", version = 1, meta = build_meta, images = images,
    skipped = sk,
  }, { "format", "version", "meta", "images", "skipped" })
  return assert(gk.json_encode(m, 2)) .. "\n"
end

-- A path from a manifest we may delete: relative, inside the folder.
local function safe_relpath(p)
  return type(p) == "string" and p ~= "" and p:sub(1, 1) ~= "/" and
    not ("/" .. p .. "/"):find("/%.%.?/")
end

-- When fetching a job's image failed: gk cache gc (or the discovery of a
-- damaged object) may have removed it since the lookup. Then the job is
-- compiled again, rather than the build failing, and goes to `again` (the
-- build's list of compiled jobs). Returns what cache:fetch returns.
local function refetch(j, tmp, cache, again)
  local sha, size = cache:lookup(j.key, j.srcdir)
  if sha then
    j.sha, j.size = sha, size
  elseif #compile({ j }, cache, 1) == 0 then
    again[#again + 1] = j
  else
    return nil, ("its image left the cache during the build, and compiling it again failed")
  end
  return cache:fetch(j.sha, j.size, tmp, true)
end

-- A value as text for a digest: tables with their keys sorted.
local function flat(v)
  if type(v) ~= "table" then return type(v):sub(1, 1) .. tostring(v) end
  local ks = {}
  for k in pairs(v) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b) return tostring(a) < tostring(b) end)
  for i, k in ipairs(ks) do ks[i] = flat(k) .. ":" .. flat(v[k]) end
  return "{" .. table.concat(ks, ",") .. "}"
end

-- The SHA-256 of everything the manifest's text is made from, this engine
-- and this gk binary included. Making the text (a JSON object per image)
-- costs more than the rest of a no-op build of the whole matrix, so the
-- build index keeps this digest with the text's SHA-256 (write_out).
local function manifest_digest(jobs, skipped, tskipped)
  local exe = gk.stat("/proc/self/exe")
  local parts = { "gk-manifest-digest 1", gk.sha256((gk.embedded("engine/build"))),
                  exe and exe.stamp or tostring(gk.clock()), flat(build_meta) }
  for _, j in ipairs(jobs) do
    parts[#parts + 1] = table.concat({ j.kernel, j.backend, j.target, j.variant, j.format,
      j.path, flat(j.entry), flat(j.launch or {}), j.info.identity, tostring(j.size), j.sha }, "\0")
  end
  parts[#parts + 1] = flat(skipped)
  parts[#parts + 1] = flat(tskipped)
  return gk.sha256(table.concat(parts, "\n"))
end

-- Writes the images that changed (staged beside their final name, then all
-- renamed), the manifest, and removes what the old manifest had and the new
-- one has not. Returns the number of image files written and whether the
-- manifest was.
local function write_out(out, jobs, skipped, tskipped, cache, again)
  local mpath = join(out, "manifest.json")
  local staged, made = {}, {}
  -- A failed build leaves the folder as it was: the staged files go, and so
  -- do the folders this build created (deepest first; remove fails on any
  -- folder that holds something else).
  local function unstage()
    for _, s in ipairs(staged) do gk.remove(s.tmp) end
    for i = #made, 1, -1 do gk.remove(made[i]) end
  end
  for _, j in ipairs(jobs) do
    local dest = join(out, j.path)
    -- file_matches: the index's stamp of dest (size included), when it
    -- still holds, spares reading every image of the matrix; a folder or
    -- anything unreadable in the way does not match.
    if not cache:file_matches(dest, j.sha) then
      local missing, d = {}, dirname(dest)
      while d ~= "." and d ~= "" and d ~= "/" and not gk.stat(d) do
        table.insert(missing, 1, d)
        d = dirname(d)
      end
      local ok, err = gk.mkdir_p(dirname(dest))
      for _, m in ipairs(missing) do if gk.stat(m) then made[#made + 1] = m end end
      -- Unique per process: two builds into one folder must not share it.
      local tmp = ("%s.gk-staged.%d"):format(dest, gk.pid())
      if ok then
        ok, err = cache:fetch(j.sha, j.size, tmp, true)
        if not ok then ok, err = refetch(j, tmp, cache, again) end
        -- The cache names its object and the staging file; the user needs
        -- only the reason (a full disk, a read-only folder).
        if not ok then err = reason(err) end
      end
      if not ok then
        unstage()
        errors.raise(("cannot write image '%s': %s; '%s' is left as it was"):format(dest, err, out))
      end
      staged[#staged + 1] = { tmp = tmp, dest = dest, sha = j.sha }
    end
  end
  -- Every image is checked against its recipe (header, entry points) when
  -- the manifest listing it is new or changes (entry lists are in it, not
  -- in the cache key): a misspelt entry fails here, naming the recipe line,
  -- not at run time in a program. A no-op build reads no image.
  local digest = manifest_digest(jobs, skipped, tskipped)
  local known = cache:index_get("manifest")
  local known_sha = known and known:match("^" .. digest .. " (%x+)$")
  local fresh = known_sha and cache:file_matches(mpath, known_sha)
  if gk.check_image and not fresh then
    local tmp_of = {}
    for _, s in ipairs(staged) do tmp_of[s.dest] = s.tmp end
    for _, j in ipairs(jobs) do
      local dest = join(out, j.path)
      local ok, why = gk.check_image(tmp_of[dest] or dest, j.backend, j.target, j.format,
        assert(gk.json_encode(j.entry, 0)), assert(gk.json_encode(gk.json_object(j.launch or {}), 0)),
        j.info.identity)
      if not ok then
        unstage()
        errors.raise(("%s%s (%s): %s; fix the %s section of kernel '%s' or its source; '%s' is left as it was")
          :format(j.where or "", j.path, j.label, why, j.backend, j.kernel, out))
      end
    end
  end

  for _, s in ipairs(staged) do
    local ok, err = gk.rename(s.tmp, s.dest)
    if not ok then
      unstage()
      errors.raise(("cannot write image '%s': %s"):format(s.dest, reason(err)))
    end
    cache:file_note(s.dest, s.sha)
  end

  -- The last build into this folder left its manifest's digest and SHA-256
  -- in the index: when both still hold, the manifest is up to date (and,
  -- listing the same images, has nothing to remove).
  if fresh then
    cache:index_set("manifest", known)
    return #staged, false
  end

  local old_text = gk.read(mpath)
  local text = manifest_text(jobs, skipped, tskipped)
  if text ~= old_text then
    local ok, err = gk.mkdir_p(out)
    if ok then ok, err = gk.write_atomic(mpath, text, true) end
    if not ok then errors.raise(("cannot write manifest '%s': %s"):format(mpath, reason(err))) end
  end
  local text_sha = gk.sha256(text)
  cache:file_note(mpath, text_sha)
  cache:index_set("manifest", digest .. " " .. text_sha)

  -- Images of the previous build that this one no longer makes.
  -- An unchanged manifest lists the same images: nothing to remove.
  local old = old_text and text ~= old_text and gk.json_decode(old_text)
  if type(old) == "table" and type(old.images) == "table" then
    local keep = {}
    for _, j in ipairs(jobs) do keep[j.path] = true end
    for _, im in ipairs(old.images) do
      local p = type(im) == "table" and im.path
      if safe_relpath(p) and not keep[p] then
        gk.remove(join(out, p))
        -- Remove the folders it leaves empty (remove fails on a non-empty one).
        local d = dirname(p)
        while d ~= "." and d ~= "" and gk.remove(join(out, d)) do d = dirname(d) end
      end
    end
  end
  return #staged, text ~= old_text
end

---------------------------------------------------------------------------

-- GK_BUILD_TRACE=1 (opts.trace) prints how long each phase took, for tuning.
local trace_t0, trace_c0
local function trace(what)
  if not trace_t0 then return end
  gk.eprint(("gk build: trace: %-24s %7.2f ms (cpu %7.2f ms)\n"):format(what,
    (gk.clock() - trace_t0) * 1e3, (gk.clock("cpu") - trace_c0) * 1e3), "trace")
end

-- --backend NAME...: the backends asked for (nil: all), each known.
local function wanted_backends(opts, reg)
  if #opts.backends == 0 then return nil end
  local wanted, known = {}, {}
  for _, b in ipairs(reg.backends) do known[b] = true end
  for _, b in ipairs(opts.backends) do
    if not known[b] then
      errors.raise(("unknown backend '%s' for --backend; known: %s"):format(b,
        table.concat(reg.backends, ", ")), 2)
    end
    wanted[b] = true
  end
  return wanted
end

-- --targets BACKEND=T1,T2: those targets instead of every recipe's list
-- for that backend (a maintainer's "only sm_80 and sm_90 today").
-- Returns { backend = { targets } }.
local function target_overrides(opts, reg)
  local override = {}
  for _, spec in ipairs(opts.targets or {}) do
    local b, list = spec:match("^([%w_]+)=(.*)$")
    if not b or list == "" then
      errors.raise(("--targets needs BACKEND=TARGET[,TARGET...], e.g. cuda=sm_80,sm_90; got '%s'")
        :format(spec), 2)
    end
    local tcs = reg:for_backend(b)
    if #tcs == 0 then
      errors.raise(("--targets %s: no toolchain module builds backend '%s'; known: %s")
        :format(spec, b, table.concat(reg.backends, ", ")), 2)
    end
    if override[b] then errors.raise(("--targets names backend '%s' twice"):format(b), 2) end
    local seen, ts = {}, {}
    for t in list:gmatch("[^,]+") do
      local ok, why
      for _, tc in ipairs(tcs) do
        ok, why = toolchains.check_target(tc, t)
        if ok then break end
      end
      if not ok then
        local order = {}
        for _, tc in ipairs(tcs) do
          for _, k in ipairs(tc.targets) do order[#order + 1] = k end
        end
        errors.raise(("--targets: unknown target '%s' for %s%s; known: %s")
          :format(t, b, why and " (" .. why .. ")" or "", table.concat(order, ", ")), 2)
      end
      if not seen[t] then seen[t] = true; ts[#ts + 1] = t end
    end
    if #ts == 0 then
      errors.raise(("--targets needs BACKEND=TARGET[,TARGET...]; got '%s'"):format(spec), 2)
    end
    override[b] = ts
  end
  return override
end

-- --kernel NAME: only those kernels (a kernel author's edit-build loop).
local function only_kernels(kernels, opts)
  if not opts.kernels or #opts.kernels == 0 then return kernels end
  local byname, names, only = {}, {}, {}
  for _, k in ipairs(kernels) do byname[k.name] = k; names[#names + 1] = k.name end
  for _, n in ipairs(opts.kernels) do
    if not byname[n] then
      errors.raise(("unknown kernel '%s' for --kernel; the recipes in '%s' define: %s")
        :format(n, opts.recipes, table.concat(names, ", ")), 2)
    end
    only[n] = true
  end
  local kept = {}
  for _, k in ipairs(kernels) do if only[k.name] then kept[#kept + 1] = k end end
  return kept
end

-- The cache, its direct-mode index and the remote cache behind it.
-- Returns the cache and whether the index is used.
local function open_cache(opts, reg)
  -- Absolute: compilers run elsewhere and write into the cache's tmp.
  local cache, cerr = gk.cache_open(join(assert(gk.cwd()), opts.cache))
  if not cache then errors.raise(cerr .. "; pass --cache DIR or set GK_CACHE_DIR") end
  reg:use_cache(cache)
  -- Direct mode's index, one per output folder (cache/gkcache.h): a no-op
  -- build then reads one file instead of every key's record, and stats the
  -- images instead of hashing them. GK_BUILD_INDEX=0 goes without it (the
  -- baseline of bench/build.sh); it decides nothing the records would not.
  local indexed = gk.getenv("GK_BUILD_INDEX") ~= "0"
  if indexed then
    cache:index_open("gk build " .. (gk.realpath(opts.out) or join(assert(gk.cwd()), opts.out)))
  end
  trace("cache and index opened")
  local remote = opts.remote_cache or gk.getenv("GK_REMOTE_CACHE")
  if remote and remote ~= "" then
    local ok, rerr = cache:set_remote(remote, opts.remote_readonly)
    if not ok then errors.raise(rerr, 2) end
  end
  return cache, indexed
end

-- --strict: every target the recipes ask for must be built; and a backend
-- asked for by name must be built: an empty result would otherwise pass
-- silently into an archive.
local function check_built(opts, skipped, built, tskipped)
  if opts.strict and #tskipped > 0 then
    local lines = {}
    for _, t in ipairs(tskipped) do
      lines[#lines + 1] = ("  %s %s: %s"):format(t.backend, t.target, t.reason)
    end
    errors.raise(("--strict: %d target%s cannot be built here:\n%s"):format(#tskipped,
      #tskipped == 1 and "" or "s", table.concat(lines, "\n")))
  end
  for _, b in ipairs(opts.backends) do
    if skipped[b] then
      errors.raise(("cannot build backend '%s' asked for with --backend: %s"):format(b, skipped[b]))
    end
    if not built[b] then
      gk.eprint(("gk build: note: no recipe in '%s' has a %s section\n"):format(opts.recipes, b))
    end
  end
end

-- Keys every job and looks it up, while git status (for the manifest's
-- meta) runs; the metadata covers every job, before --shard: each partial
-- archive then carries what a build of everything would. Returns the jobs
-- to compile and how many hits came from the remote cache.
local function look_up(opts, cache, reg, jobs, all_jobs, git)
  local todo, remote_hits = {}, 0
  -- Under pcall so that git is waited for, and its output removed, on an
  -- error too.
  local lok, lerr = pcall(function()
    for _, j in ipairs(jobs) do
      j.key = key_of(j, cache, reg)
      local sha, size, from_remote = cache:lookup(j.key, j.srcdir)
      if sha then
        j.sha, j.size = sha, size
        if from_remote then remote_hits = remote_hits + 1 end
      else
        todo[#todo + 1] = j
      end
    end
  end)
  trace("cache lookups")
  build_meta = release.source_meta(opts.recipes, all_jobs, git)
  if not lok then errors.rethrow(lerr) end
  trace("source metadata")
  return todo, remote_hits
end

-- Each backend's toolchains, in module order, with their image counts
-- when there are several: "hipcc ...: 96; clang ...: 160" (built[b].label;
-- .toolchain: the identities alone).
local function label_backends(built, jobs)
  for _, b in pairs(built) do b.ids, b.count = {}, {} end
  for _, j in ipairs(jobs) do
    local b, id = built[j.backend], j.info.identity
    if not b.count[id] then
      b.count[id] = 0
      b.ids[#b.ids + 1] = { id = id, order = j.tc.name }
    end
    b.count[id] = b.count[id] + 1
  end
  for _, b in pairs(built) do
    table.sort(b.ids, function(x, y)
      if x.order ~= y.order then return x.order < y.order end
      return x.id < y.id
    end)
    local ids, parts = {}, {}
    for i, x in ipairs(b.ids) do
      ids[i] = x.id
      parts[i] = ("%s: %d"):format(x.id, b.count[x.id])
    end
    b.toolchain = #ids > 0 and table.concat(ids, ", ") or b.first
    b.label = #ids > 1 and table.concat(parts, "; ") or b.toolchain
  end
end

-- The closing lines on the log, and the --json summary's backends and
-- skipped lists.
local function report(built, skipped, tskipped, n, compiled, remote_hits, shard_i, shard_n)
  local summary_backends = {}
  for _, b in ipairs(sorted_keys(built)) do
    gk.eprint(("gk build: %s: %d image%s (%s)\n"):format(b, built[b].images,
      built[b].images == 1 and "" or "s", built[b].label))
    summary_backends[#summary_backends + 1] = gk.json_object(
      { backend = b, toolchain = built[b].toolchain, images = built[b].images },
      { "backend", "toolchain", "images" })
  end
  local summary_skipped = {}
  for _, b in ipairs(sorted_keys(skipped)) do
    gk.eprint(("gk build: %s: skipped, %s\n"):format(b, skipped[b]))
    summary_skipped[#summary_skipped + 1] = gk.json_object({ backend = b, reason = skipped[b] },
      { "backend", "reason" })
  end
  -- Last, where they are seen: the targets this toolchain could not make.
  for _, t in ipairs(tskipped) do
    gk.eprint(("gk build: %s %s: skipped, %s\n"):format(t.backend, t.target, t.reason))
    summary_skipped[#summary_skipped + 1] = gk.json_object(t, { "backend", "target", "reason" })
  end
  gk.eprint(("gk build: %d image%s, %d compiled, %d from cache%s\n"):format(n,
    n == 1 and "" or "s", compiled, n - compiled,
    remote_hits > 0 and (" (%d from the remote cache)"):format(remote_hits) or ""))
  if shard_n then
    gk.eprint(("gk build: shard %d/%d\n"):format(shard_i, shard_n))
  end
  return summary_backends, summary_skipped
end

-- One build (engine.c's gkr_build): options -> checked command line ->
-- recipes -> jobs -> lookups -> compiles -> output folder -> report.
function M.main(opts)
  local t0 = gk.clock()
  trace_t0 = nil
  if opts.trace then trace_t0, trace_c0 = t0, gk.clock("cpu") end
  local reg = toolchains.load(opts.recipes)
  -- A usage error: said before anything (the cache, probes) is written.
  if opts.shard then release.parse_shard(opts.shard) end
  local wanted = wanted_backends(opts, reg)
  local st = gk.stat(opts.out)
  if st and st.type ~= "dir" then
    errors.raise(("cannot use '%s' as --out: it is not a folder"):format(opts.out))
  end
  local override = target_overrides(opts, reg)
  trace("toolchain modules")
  local kernels = only_kernels(load_recipes(opts.recipes, reg), opts)
  trace("recipes")

  -- Opened only now, so that a bad command line or recipe creates nothing.
  local cache, indexed = open_cache(opts, reg)
  ctr, build_meta = nil, nil
  if opts.container then
    -- What the compiles read: the recipes and every source folder.
    local roots = { assert(gk.realpath(opts.recipes)) }
    for _, k in ipairs(kernels) do
      for _, s in ipairs(k.sections) do
        roots[#roots + 1] = gk.realpath(dirname(s.source)) or nil
      end
    end
    ctr = container.setup(opts, reg, toolchains, cache, roots)
  end
  local jobs, skipped, built, tskipped = expand(kernels, reg, wanted, override)
  trace("jobs and probes")
  check_built(opts, skipped, built, tskipped)

  local shard_i, shard_n
  if opts.shard then shard_i, shard_n = release.parse_shard(opts.shard) end
  local git, all_jobs = release.git_start(opts.recipes, cache), jobs
  if shard_n then jobs = release.shard(jobs, built, shard_i, shard_n) end
  local todo, remote_hits = look_up(opts, cache, reg, jobs, all_jobs, git)

  local width = opts.jobs > 0 and opts.jobs or gk.cpus()
  local failures, never = compile(todo, cache, width)
  if #failures > 0 then
    -- The first failure stops new jobs: say how many never ran, so that
    -- -j1 does not read as "the others passed".
    errors.raise(("%d of %d compile job%s failed%s; '%s' is left as it was"):format(#failures, #todo,
      #todo == 1 and "" or "s",
      never > 0 and (", %d not started after the first failure"):format(never) or "", opts.out))
  end
  trace("compiles")
  local written, manifest_written = write_out(opts.out, jobs, skipped, tskipped, cache, todo)
  trace("output folder")
  local iok, ierr = cache:index_save()
  if not iok then gk.eprint(("gk build: warning: %s (the next build will be slower, not wrong)\n"):format(ierr)) end
  trace("index saved")

  label_backends(built, jobs)
  local summary_backends, summary_skipped =
    report(built, skipped, tskipped, #jobs, #todo, remote_hits, shard_i, shard_n)
  local summary = gk.json_object({
    ok = true, images = #jobs, compiled = #todo, cached = #jobs - #todo, written = written,
    out = opts.out, manifest = join(opts.out, "manifest.json"), backends = summary_backends,
    skipped = summary_skipped, seconds = gk.clock() - t0, remote_hits = remote_hits,
    shard = shard_n and ("%d/%d"):format(shard_i, shard_n) or nil,
  }, { "ok", "images", "compiled", "cached", "written", "out", "manifest", "backends",
       "skipped", "seconds", "remote_hits", "shard" })
  local text = assert(gk.json_encode(summary, 0, true))
  -- A build that changed nothing keeps what it looked at, so that the next
  -- one, if nothing it looked at has changed, is answered by stat alone
  -- (engine/fast.c) and prints what this one printed.
  if indexed and #todo == 0 and written == 0 and not manifest_written and remote_hits == 0
      and not ctr then
    local objects = {}
    for i, j in ipairs(jobs) do objects[i] = { j.sha, j.size } end
    local ok, why = gk.fast_save(cache, objects, text)
    trace(ok and "fast path record kept" or "fast path record not kept: " .. why)
  end
  return 0, text
end

return M
