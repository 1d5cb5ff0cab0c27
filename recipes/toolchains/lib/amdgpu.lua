-- lib/amdgpu.lua - what the rocm toolchain modules (hipcc.lua, hipclang.lua)
-- know of AMDGPU target IDs, written once: the processors a recipe may
-- name, which of them have which target features, and the grammar of a
-- target ID (LLVM AMDGPUUsage, "Target ID": a processor, then optional
-- ":xnack+" / ":sramecc-" settings; a feature left out means the image runs
-- with either setting, and only processors that have the feature accept
-- it). A module gets it with `require("lib/amdgpu")` (engine/toolchains.lua).

local M = {}

-- Processors a recipe may name (with or without feature settings).
M.targets = {
  "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
  "gfx940", "gfx941", "gfx942", "gfx950",
  "gfx1010", "gfx1011", "gfx1012", "gfx1013",
  "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
  "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
  "gfx1200", "gfx1201",
  "gfx9-generic", "gfx9-4-generic", "gfx10-1-generic", "gfx10-3-generic",
  "gfx11-generic", "gfx12-generic",
}

local KNOWN = {}
for _, t in ipairs(M.targets) do KNOWN[t] = true end

-- Which processors have which target features (AMDGPUUsage, "AMDGPU
-- Processors" and "Generic Processors" tables).
local FEATURES = {
  xnack = { gfx900 = 1, gfx902 = 1, gfx904 = 1, gfx906 = 1, gfx908 = 1, gfx909 = 1,
            gfx90a = 1, gfx90c = 1, gfx940 = 1, gfx941 = 1, gfx942 = 1, gfx950 = 1,
            gfx1010 = 1, gfx1011 = 1, gfx1012 = 1, gfx1013 = 1,
            ["gfx9-generic"] = 1, ["gfx9-4-generic"] = 1, ["gfx10-1-generic"] = 1 },
  sramecc = { gfx906 = 1, gfx908 = 1, gfx90a = 1, gfx940 = 1, gfx941 = 1, gfx942 = 1,
              gfx950 = 1, ["gfx9-4-generic"] = 1 },
}

-- "gfx90a:sramecc+:xnack-" -> "gfx90a", { sramecc = "+", xnack = "-" };
-- nil (and why, where there is more to say) for anything else.
function M.split_target(t)
  local proc, rest = t:match("^(gfx[%w-]+)(.*)$")
  if not proc then return nil end
  local feats = {}
  for name, sign in rest:gmatch(":([%a%d]+)([+-])") do
    if feats[name] then return nil, ("'%s' sets %s twice"):format(t, name) end
    feats[name] = sign
  end
  -- Everything after the processor must have been ":name+" / ":name-".
  if rest:gsub(":[%a%d]+[+-]", "") ~= "" then return nil end
  return proc, feats
end

-- A target ID: a known processor plus feature settings it supports (a
-- module's check_target).
function M.check_target(t)
  local proc, feats = M.split_target(t)
  if not proc then
    return nil, feats or ("'%s' is not a target ID like gfx90a or gfx90a:xnack+"):format(t)
  end
  if not KNOWN[proc] then return nil, ("unknown processor '%s'"):format(proc) end
  for name in pairs(feats) do
    if not FEATURES[name] then
      return nil, ("'%s' in '%s' is not a target feature (sramecc, xnack)"):format(name, t)
    end
    if not FEATURES[name][proc] then
      return nil, ("%s has no %s setting; write '%s' alone"):format(proc, name, proc)
    end
  end
  return true
end

function M.is_generic(proc) return proc:match("%-generic$") ~= nil end

return M
