error(setmetatable({}, { __tostring = function() error("boom") end }))
