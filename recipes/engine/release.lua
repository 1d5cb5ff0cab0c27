-- release.lua - what gk build does for releases made by several machines:
-- --shard I/N (a deterministic slice of the jobs) and the source metadata
-- written to the manifest and from there into the archive (docs/archive.md).

local errors = require("engine/errors")

local M = {}

-- "2/3" -> 2, 3. Raises a usage error otherwise.
function M.parse_shard(spec)
  local i, n = spec:match("^(%d+)/(%d+)$")
  i, n = tonumber(i), tonumber(n)
  if not i or n < 1 or i < 1 or i > n or n > 100000 then
    errors.raise(("--shard needs I/N with 1 <= I <= N, e.g. 2/3; got '%s'"):format(spec), 2)
  end
  return i, n
end

-- The shard (1..n) a job belongs to. The partition hashes what names the
-- job's image - kernel, backend, target, variant - and nothing else: it does
-- not depend on the order of jobs or recipes, on which other jobs exist, or
-- on the machine, so every runner computes the same slices, adding a job
-- moves no other, and the slices together are the whole matrix exactly once.
function M.shard_of(j, n)
  local h = gk.sha256(table.concat({ j.kernel, j.backend, j.target, j.variant }, "\0"))
  return tonumber(h:sub(1, 8), 16) % n + 1
end

-- Keeps the jobs of shard i of n; updates the per-backend image counts.
function M.shard(jobs, built, i, n)
  local out = {}
  for _, b in pairs(built) do b.images = 0 end
  for _, j in ipairs(jobs) do
    if M.shard_of(j, n) == i then
      out[#out + 1] = j
      built[j.backend].images = built[j.backend].images + 1
    end
  end
  return out
end

-- Looks for the git checkout holding dir (a .git folder or file above it)
-- without running anything.
local function in_git_checkout(dir)
  local d = gk.realpath(dir)
  while d and d ~= "" do
    if gk.stat(d .. "/.git") then return true end
    if d == "/" then break end
    d = d:match("^(.*)/[^/]*$")
    if d == "" then d = "/" end
  end
  return false
end

-- The source revision and dirty flag of the checkout holding dir: one git
-- process, only inside a checkout. Anything that goes wrong (no git, a
-- checkout git refuses to read as another user's) gives "unknown".
-- Tracked files only: untracked ones (build folders) do not make a
-- checkout dirty.
local function git_state(dir)
  if not in_git_checkout(dir) then return "unknown", "unknown" end
  local git = gk.which("git")
  if not git then return "unknown", "unknown" end
  local code, out = gk.run({ git, "-C", dir, "--no-optional-locks", "status",
                             "--porcelain=v2", "--branch", "--untracked-files=no" })
  if code ~= 0 then return "unknown", "unknown" end
  local rev = out:match("# branch%.oid (%x+)\n")
  if not rev then return "unknown", "unknown" end
  local dirty = "false"
  for line in out:gmatch("[^\n]+") do
    if line:sub(1, 1) ~= "#" then dirty = "true" end
  end
  return rev, dirty
end

-- git status costs tens of milliseconds, as much as the rest of a no-op
-- build of the whole matrix, so it runs while the build keys and looks up
-- its jobs: git_start spawns it (its output into a temporary of the cache;
-- stderr dropped, as gk.run's callers here ignore it) and source_meta reads
-- it. Returns what source_meta takes.
function M.git_start(dir, cache)
  if not in_git_checkout(dir) then return {} end
  local git = gk.which("git")
  if not git then return {} end
  local out = cache:temp(".git-status")
  -- rerun: only its output matters, so a later no-op build may run it
  -- again and compare instead of building (engine/fast.c).
  local pid = gk.spawn({ git, "-C", dir, "--no-optional-locks", "status", "--porcelain=v2",
                         "--branch", "--untracked-files=no" },
                       { output = out, quiet = true, rerun = true })
  if not pid then
    gk.remove(out)
    return {}
  end
  return { pid = pid, out = out }
end

-- git_start's answer: revision, dirty flag ("unknown" for anything amiss).
local function git_finish(g)
  if not g.pid then return "unknown", "unknown" end
  local _, code = gk.wait(g.pid)
  local out = gk.read(g.out) or ""
  gk.remove(g.out)
  g.pid = nil
  if code ~= 0 then return "unknown", "unknown" end
  local rev = out:match("# branch%.oid (%x+)\n")
  if not rev then return "unknown", "unknown" end
  for line in out:gmatch("[^\n]+") do
    if line:sub(1, 1) ~= "#" then return rev, "true" end
  end
  return rev, "false"
end

-- The "meta" object of the manifest: source revision, dirty flag, and the
-- SHA-256 of every recipe file and of each toolchain module the jobs use.
-- Nothing in it depends on where the checkout or the cache is, so two
-- clean checkouts of one revision give the same archive. `git`: from
-- M.git_start (nil: git runs now).
function M.source_meta(recipes_dir, jobs, git)
  local recipes = {}
  for _, n in ipairs(gk.listdir(recipes_dir) or {}) do
    local path = recipes_dir .. "/" .. n
    local st = n:match("%.lua$") and gk.stat(path)
    if st and st.type == "file" then recipes[n] = assert(gk.sha256_file(path)) end
  end
  for _, j in ipairs(jobs) do
    local tc = j.tc
    local key = "toolchains/" .. tc.name .. ".lua"
    if not recipes[key] then
      local text = tc.origin:match("^%[gk%]/") and gk.embedded("toolchains/" .. tc.name)
                   or gk.read(tc.origin)
      if text then recipes[key] = gk.sha256(text) end
    end
  end
  local rev, dirty
  if git then rev, dirty = git_finish(git) else rev, dirty = git_state(recipes_dir) end
  return gk.json_object({
    source_revision = rev, source_dirty = dirty, recipes = gk.json_object(recipes),
  }, { "recipes", "source_dirty", "source_revision" })
end

return M
