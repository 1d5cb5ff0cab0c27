return {
  backend = "cpu", format = "so", ext = "so", targets = { "x86-64" },
  default_targets = { "x86-64-v3" },
  probe = function() return nil, "not used" end, command = function() end,
}
