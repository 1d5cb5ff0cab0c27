-- compile.lua - a job's command, made twice by its toolchain module: with
-- placeholders for paths it is the job's cache key, with the real paths it
-- is run. The jobs the cache has no image for run -j at a time, with ninja's
-- progress line, and their images go into the cache.
--
-- ctr, taken by key_of and run: the container context of --container
-- (engine/container.lua), or nil when compiles run natively.

local errors = require("engine/errors")
local toolchains = require("engine/toolchains")
local util = require("engine/util")

local dirname, reason = util.dirname, util.reason

local M = {}

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

-- The job's cache key; sets j.inputs, the generated inputs its toolchain
-- module asks for.
function M.key_of(j, cache, reg, ctr)
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

-- Shell-quotes argv for a person to copy and run.
local function shell_line(argv)
  local out = {}
  for i, a in ipairs(argv) do
    out[i] = a:match("^[%w_%-+=/.,:@%%]+$") and a or "'" .. a:gsub("'", "'\\''") .. "'"
  end
  return table.concat(out, " ")
end

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

local function cleanup(j, ctr)
  for _, k in ipairs({ "tmp_out", "tmp_dep", "tmp_log" }) do
    if j[k] then gk.remove(j[k]) end
    j[k] = nil
  end
  if j.tmp_dir then ctr:remove_job_dir(j.tmp_dir) end
  j.tmp_dir = nil
end

local function start(j, cache, ctr)
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
    cleanup(j, ctr)
    return nil, err
  end
  return pid
end

-- After the compiler exited 0: record the image and its inputs in the cache.
local function finish(j, cache, ctr)
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

-- Runs the jobs without an image, `width` at a time; the first failure
-- stops new jobs and lets the running ones finish. Returns the jobs that
-- failed and how many were never started.
function M.run(todo, cache, width, ctr)
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
      local pid, err = start(j, cache, ctr)
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
      local ok, err = finish(j, cache, ctr)
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
    cleanup(j, ctr)
  end
  prog:newline()
  return failures, #todo - nxt + 1
end

return M
