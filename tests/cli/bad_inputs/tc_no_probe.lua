return { backend = "cpu", format = "so", ext = "so", targets = { "x86-64" }, command = function() end }
