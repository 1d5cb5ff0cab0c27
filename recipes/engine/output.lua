-- output.lua - the output folder of gk build (docs/manifest.md), written
-- only once every job has an image: the images that changed are staged
-- beside their final names and renamed, each checked against its recipe
-- when the manifest is new or changes; manifest.json is written last,
-- atomically; the images the previous manifest had that this one has not
-- are removed. The build index keeps the manifest's digest, so that a
-- no-op build neither makes the manifest's text nor reads an image.
--
-- meta: the manifest's "meta" (engine/release.lua's source_meta); ctr: the
-- container context of --container, or nil (engine/compile.lua).

local errors = require("engine/errors")
local compile = require("engine/compile")
local util = require("engine/util")

local join, dirname, reason, sorted_keys = util.join, util.dirname, util.reason, util.sorted_keys

local M = {}

local IMAGE_ORDER = { "kernel", "backend", "target", "variant", "format", "path", "entry",
                      "launch", "toolchain", "size", "sha256" }

-- manifest.json's text: the images in the jobs' order, then what was skipped.
local function manifest_text(jobs, skipped, tskipped, meta)
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
    format = "gllm-kernels-manifest", version = 1, meta = meta, images = images,
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
local function refetch(j, tmp, cache, ctr, again)
  local sha, size = cache:lookup(j.key, j.srcdir)
  if sha then
    j.sha, j.size = sha, size
  elseif #compile.run({ j }, cache, 1, ctr) == 0 then
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

-- The SHA-256 of the engine's Lua, every engine/ module embedded in gk:
-- the manifest's text comes from the code of several of them.
local function engine_sha()
  local texts = {}
  for _, n in ipairs(gk.embedded()) do
    if n:match("^engine/") then texts[#texts + 1] = n .. "\n" .. gk.embedded(n) end
  end
  return gk.sha256(table.concat(texts, "\0"))
end

-- The SHA-256 of everything the manifest's text is made from, this engine
-- and this gk binary included. Making the text (a JSON object per image)
-- costs more than the rest of a no-op build of the whole matrix, so the
-- build index keeps this digest with the text's SHA-256 (write_out).
local function manifest_digest(jobs, skipped, tskipped, meta)
  local exe = gk.stat("/proc/self/exe")
  local parts = { "gk-manifest-digest 1", engine_sha(),
                  exe and exe.stamp or tostring(gk.clock()), flat(meta) }
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
function M.write_out(out, jobs, skipped, tskipped, meta, cache, ctr, again)
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
        if not ok then ok, err = refetch(j, tmp, cache, ctr, again) end
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
  local digest = manifest_digest(jobs, skipped, tskipped, meta)
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
  local text = manifest_text(jobs, skipped, tskipped, meta)
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

return M
