-- util.lua - the small helpers the modules of gk build share: paths as
-- text, the reason of an error message, a table's keys in order.

local M = {}

function M.join(dir, rel)
  if rel:sub(1, 1) == "/" then return rel end
  if dir:sub(-1) == "/" then return dir .. rel end
  return dir .. "/" .. rel
end

function M.dirname(path)
  return path:match("^(.*)/[^/]*$") or "."
end

-- "cannot read 'x': No such file or directory" -> "No such file or directory"
function M.reason(err)
  return (tostring(err):match(": ([^:]*)$")) or tostring(err)
end

function M.sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

return M
