kernel "k" { cpu { source = "../src/k.c", targets = { "x86-64" }, launch = { [1.5] = 1, f = function() end } } }
