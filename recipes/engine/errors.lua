-- errors.lua - user errors: what a person fixes (a bad recipe, a failed
-- compile, an unwritable folder), as opposed to bugs in gk.
--
-- A user error is raised as a table { message = "...", status = N }; the C
-- message handler passes it through untouched, so the user reads
-- "recipes/x.lua:5: unknown target ..." and not a Lua stack. Any other error
-- is a bug and gets a traceback.

local errors = {}

local UserError = { __tostring = function(e) return e.message end }

-- Raises a user error; status is the exit status (1 failure, 2 usage).
function errors.raise(message, status)
  error(setmetatable({ message = message, status = status or 1 }, UserError), 0)
end

function errors.is(e)
  return getmetatable(e) == UserError
end

-- Re-raises an error caught by pcall around user code (a recipe, a toolchain
-- module): its own string errors already say "file:line: ...".
function errors.rethrow(e)
  if errors.is(e) then error(e, 0) end
  errors.raise(tostring(e))
end

return errors
