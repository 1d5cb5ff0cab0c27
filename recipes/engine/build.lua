-- build.lua - the driver of `gk build`: recipes -> jobs -> cache or compile
-- -> output folder (docs/manifest.md).
--
-- Order of work, and why:
--  1. load toolchain modules (engine/toolchains.lua) and recipes
--     (engine/plan.lua); every error names file:line;
--  2. expand kernel x section x target x params into jobs, sorted the way the
--     manifest is, and pick (probe) one toolchain per section (engine/plan.lua);
--  3. key each job (engine/compile.lua) and look it up in the cache: no
--     process for a hit;
--  4. compile the misses, -j at a time, into the cache; on the first failure
--     stop starting jobs and let the running ones finish (engine/compile.lua);
--  5. only when every job has an image, copy changed images into the output
--     folder (staged, then renamed), write manifest.json last, and remove the
--     images the previous manifest had that this one has not
--     (engine/output.lua).
-- So a failed build never touches the output folder. This file keeps the
-- command line's checks, the cache's opening and the closing report.

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
local toolchains = require("engine/toolchains")
local release = require("engine/release")
local container = require("engine/container")
local plan = require("engine/plan")
local compile = require("engine/compile")
local output = require("engine/output")
local util = require("engine/util")

local join, dirname, sorted_keys = util.join, util.dirname, util.sorted_keys

local M = {}

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
-- to compile, how many hits came from the remote cache, and the meta.
local function look_up(opts, cache, reg, ctr, jobs, all_jobs, git)
  local todo, remote_hits = {}, 0
  -- Under pcall so that git is waited for, and its output removed, on an
  -- error too.
  local lok, lerr = pcall(function()
    for _, j in ipairs(jobs) do
      j.key = compile.key_of(j, cache, reg, ctr)
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
  local meta = release.source_meta(opts.recipes, all_jobs, git)
  if not lok then errors.rethrow(lerr) end
  trace("source metadata")
  return todo, remote_hits, meta
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
  local kernels = only_kernels(plan.load_recipes(opts.recipes, reg), opts)
  trace("recipes")

  -- Opened only now, so that a bad command line or recipe creates nothing.
  local cache, indexed = open_cache(opts, reg)
  -- The container context of --container; nil: compiles run natively.
  local ctr
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
  local jobs, skipped, built, tskipped = plan.expand(kernels, reg, wanted, override)
  trace("jobs and probes")
  check_built(opts, skipped, built, tskipped)

  local shard_i, shard_n
  if opts.shard then shard_i, shard_n = release.parse_shard(opts.shard) end
  local git, all_jobs = release.git_start(opts.recipes, cache), jobs
  if shard_n then jobs = release.shard(jobs, built, shard_i, shard_n) end
  local todo, remote_hits, meta = look_up(opts, cache, reg, ctr, jobs, all_jobs, git)

  local width = opts.jobs > 0 and opts.jobs or gk.cpus()
  local failures, never = compile.run(todo, cache, width, ctr)
  if #failures > 0 then
    -- The first failure stops new jobs: say how many never ran, so that
    -- -j1 does not read as "the others passed".
    errors.raise(("%d of %d compile job%s failed%s; '%s' is left as it was"):format(#failures, #todo,
      #todo == 1 and "" or "s",
      never > 0 and (", %d not started after the first failure"):format(never) or "", opts.out))
  end
  trace("compiles")
  local written, manifest_written =
    output.write_out(opts.out, jobs, skipped, tskipped, meta, cache, ctr, todo)
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
