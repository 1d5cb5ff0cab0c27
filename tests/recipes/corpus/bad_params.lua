kernel "k" { params = { bits = { 1, 2.5, {}, "a b" } }, cpu {} }
