-- container.lua - gk build --container: every compile, and every toolchain
-- probe, runs inside the container image its toolchain module names
-- (`image = "docker.io/nvidia/cuda@sha256:..."`), so that the compiler is
-- the image's, pinned by digest, whatever the machine has installed.
--
-- What a compile sees (docs in recipes/README.md):
--   * the source root (the folder holding the recipes folder and every
--     source folder) read-only, at the same path as on the host, so that
--     relative includes, depfiles and -ffile-prefix-map work unchanged and
--     the images are byte-identical to a native build with the same compiler;
--   * one fresh folder per job, writable, where the image and depfile go;
--   * --container-mount PATHs read-only at the same path (a toolchain
--     installed on the host, for images that carry none);
--   * a read-only root file system, a tmpfs on /tmp for the tool's scratch,
--     no network.
-- The image's ID (its content digest) goes into every cache key, so a new
-- image recompiles; dependencies the compiler read from the image itself
-- are covered by that ID and are not recorded.
--
-- The engine: $GK_CONTAINER_ENGINE if set, else docker when its daemon
-- answers, else podman. Engine-wide settings (podman's runtime, storage,
-- cgroup manager) belong in the engine's own configuration
-- (containers.conf, CONTAINERS_CONF), not here.

local errors = require("engine/errors")

local M = {}
M.__index = M

local function trim(s)
  return (s or ""):match("^%s*(.-)%s*$")
end

local function first_line(s)
  return trim(s):match("^[^\n]*")
end

-- The line of an engine's stderr that says what went wrong: its last
-- "Error" line, else its last line ("Trying to pull ..." comes first).
local function error_line(s)
  local last, err
  for line in trim(s):gmatch("[^\n]+") do
    last = line
    if line:match("[Ee]rror") then err = line end
  end
  return err or last or ""
end

-- docker if its daemon answers, else podman (no daemon needed).
local function find_engine()
  local forced = gk.getenv("GK_CONTAINER_ENGINE")
  if forced and forced ~= "" then
    local path = gk.which(forced)
    if not path then
      errors.raise(("GK_CONTAINER_ENGINE is '%s', which is not found on PATH"):format(forced))
    end
    return path
  end
  local tried = {}
  local docker = gk.which("docker")
  if docker then
    local code, _, err = gk.run({ docker, "version", "--format", "{{.Server.Version}}" })
    if code == 0 then return docker end
    tried[#tried + 1] = "docker (" .. first_line(err) .. ")"
  else
    tried[#tried + 1] = "docker (not on PATH)"
  end
  local podman = gk.which("podman")
  if podman then
    local code, _, err = gk.run({ podman, "--version" })
    if code == 0 then return podman end
    tried[#tried + 1] = "podman (" .. first_line(err) .. ")"
  else
    tried[#tried + 1] = "podman (not on PATH)"
  end
  errors.raise(("--container needs a container engine; none can run: %s. Install docker or podman, "
    .. "or set GK_CONTAINER_ENGINE"):format(table.concat(tried, "; ")))
end

local function dirname(path)
  return path:match("^(.*)/[^/]*$") or "."
end

-- The deepest folder holding every path (absolute, normalized).
local function common_root(paths)
  local root
  for _, p in ipairs(paths) do
    if not root then
      root = p
    else
      while root ~= "/" and p ~= root and p:sub(1, #root + 1) ~= root .. "/" do
        root = dirname(root)
        if root == "" then root = "/" end
      end
    end
  end
  return root
end

local function under(path, dir)
  return path == dir or path:sub(1, #dir + 1) == dir .. "/" or dir == "/"
end

-- Parses "NAME=REF" image overrides. Returns { name = ref }.
local function parse_images(specs, reg)
  local out = {}
  for _, spec in ipairs(specs or {}) do
    local name, ref = spec:match("^([%w_]+)=(%S+)$")
    if not name then
      errors.raise(("--container-image needs MODULE=IMAGE, e.g. nvcc=docker.io/nvidia/cuda@sha256:...; got '%s'")
        :format(spec), 2)
    end
    if not reg.byname[name] then
      local names = {}
      for _, tc in ipairs(reg.list) do names[#names + 1] = tc.name end
      errors.raise(("--container-image %s: no toolchain module '%s'; known: %s")
        :format(spec, name, table.concat(names, ", ")), 2)
    end
    out[name] = ref
  end
  return out
end

-- Sets up container mode for a build: the engine, the image of each
-- module, and each module's gk.which/run/run_cached/stat pointed into its
-- image. `roots` are the folders the compiles need (recipes and sources).
function M.setup(opts, reg, toolchains, cache, roots)
  local self = setmetatable({
    engine = find_engine(), cache = cache, ids = {}, images = {}, mounts = {},
  }, M)
  local overrides = parse_images(opts.container_images, reg)
  for _, m in ipairs(opts.container_mounts or {}) do
    local real = gk.realpath(m)
    if not real then
      errors.raise(("--container-mount '%s': no such file or folder"):format(m), 2)
    end
    self.mounts[#self.mounts + 1] = real
  end
  self.root = common_root(roots)
  if self.root == "/" then
    errors.raise("--container: the recipes and their sources have no common folder but '/'; keep "
      .. "them in one project folder (it is mounted read-only into the container)")
  end
  for _, tc in ipairs(reg.list) do
    local ref = overrides[tc.name] or tc.image
    self.images[tc.name] = ref
    self:bind(tc, toolchains.gk_of[tc], ref)
  end
  return self
end

-- The image's ID (content digest, "sha256:" dropped), pulling it once if
-- the engine lacks it. Returns id or nil, why.
function M:image_id(ref)
  local known = self.ids[ref]
  if known then return known.id, known.why end
  local function inspect()
    local code, out, err = gk.run({ self.engine, "image", "inspect", "--format", "{{.Id}}", ref })
    if code == 0 then
      local id = trim(out):gsub("^sha256:", "")
      if id:match("^%x+$") then return id end
    end
    return nil, error_line(err ~= "" and err or out)
  end
  local id, why = inspect()
  if not id then
    local code, _, err = gk.run({ self.engine, "pull", ref })
    if code == 0 then id, why = inspect() else why = error_line(err) end
  end
  if not id then why = ("cannot find or pull container image '%s': %s"):format(ref, why) end
  self.ids[ref] = { id = id, why = why }
  return id, why
end

-- `engine run` with the mounts every container gets; extra = more flags.
function M:run_argv(ref, argv, extra)
  local a = { self.engine, "run", "--rm", "--network=none", "--read-only",
              "--tmpfs", "/tmp:rw,exec,mode=1777" }
  for _, m in ipairs(self.mounts) do
    a[#a + 1] = "-v"
    a[#a + 1] = m .. ":" .. m .. ":ro"
  end
  for _, x in ipairs(extra or {}) do a[#a + 1] = x end
  a[#a + 1] = ref
  for _, x in ipairs(argv) do a[#a + 1] = x end
  return a
end

-- Points a module's primitives into its image. A module without an image
-- cannot probe: its backend is skipped with the reason (or fails under
-- --backend), never built with the host's compiler by surprise.
function M:bind(tc, mgk, ref)
  local probe = tc.probe
  local self_ = self
  tc.probe = function()
    if not ref then
      return nil, ("toolchain module '%s' names no container image; give one with "
        .. "--container-image %s=IMAGE or build without --container"):format(tc.name, tc.name)
    end
    local id, why = self_:image_id(ref)
    if not id then return nil, why end
    return probe()
  end
  if not ref then return end
  local function run(argv)
    local code, out, err = gk.run(self_:run_argv(ref, argv))
    if code == nil then return nil, out end
    return code, out, err
  end
  mgk.run = run
  mgk.run_cached = function(argv)
    -- Keyed by the image's content and the mounts: an image never changes
    -- under its ID, so no stamp is needed.
    local id = self_:image_id(ref)
    if not id then return run(argv) end
    local key = gk.sha256(table.concat({ "gk-run-cached-container 1", id,
      table.concat(self_.mounts, "\0"), table.concat(argv, "\0") }, "\n"))
    local dir = self_.cache:dir() .. "/v1/runs/" .. key:sub(1, 2)
    local path = dir .. "/" .. key .. ".json"
    local r = gk.json_decode(gk.read(path) or "")
    if type(r) == "table" and math.type(r.code) == "integer" and type(r.stdout) == "string"
        and type(r.stderr) == "string" then
      return r.code, r.stdout, r.stderr
    end
    local code, out, err = run(argv)
    if code == 0 then
      local enc = gk.json_encode({ code = code, stdout = out, stderr = err })
      if enc and gk.mkdir_p(dir) then gk.write_atomic(path, enc) end
    end
    return code, out, err
  end
  mgk.which = function(name)
    local code, out = mgk.run_cached({ "sh", "-c", 'command -v "$1"', "sh", name })
    local path = code == 0 and trim(out) or ""
    return path:sub(1, 1) == "/" and path or nil
  end
  mgk.stat = function(path)
    local code, out = mgk.run_cached({ "sh", "-c",
      'if [ -d "$1" ]; then echo dir; elif [ -e "$1" ]; then echo file; fi', "sh", path })
    local t = code == 0 and trim(out) or ""
    if t == "" then return nil, ("cannot stat '%s' in image %s"):format(path, ref) end
    return { type = t }
  end
end

-- The image ID for a job's cache key (the probe made sure it exists).
function M:key_line(tc)
  return "image " .. assert(self:image_id(self.images[tc.name]))
end

-- A fresh writable folder for one job, under the cache's tmp. Returns the
-- folder and the paths of the image and depfile in it.
function M:job_dir(cache, ext)
  local dir = cache:temp(".job")
  local ok, err = gk.mkdir_p(dir)
  if not ok then errors.raise(("cannot create '%s': %s"):format(dir, err)) end
  return dir, dir .. "/out." .. ext, dir .. "/out.d"
end

-- Removes a job folder and whatever the compiler left in it.
function M:remove_job_dir(dir)
  for _, n in ipairs(gk.listdir(dir) or {}) do gk.remove(dir .. "/" .. n) end
  gk.remove(dir)
end

-- The compile command of a job run in its toolchain's image.
function M:wrap(j, argv)
  return self:run_argv(self.images[j.tc.name], argv, {
    "-v", self.root .. ":" .. self.root .. ":ro",
    "-v", j.tmp_dir .. ":" .. j.tmp_dir,
    "-w", j.srcdir,
  })
end

-- The dependencies worth recording: those the host can see where the
-- container saw them (the source root, the mounts). The rest came from the
-- image, whose ID is in the key.
function M:filter_deps(j, deps)
  local out = {}
  for _, d in ipairs(deps) do
    local abs = d:sub(1, 1) == "/" and d or j.srcdir .. "/" .. d
    local keep = under(abs, self.root)
    for _, m in ipairs(self.mounts) do keep = keep or under(abs, m) end
    if keep then out[#out + 1] = d end
  end
  return out
end

return M
