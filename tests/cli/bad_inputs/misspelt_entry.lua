kernel "k" {
  cpu { source = "@P@/src/k.c", entry = { "k", "kk" }, targets = { "x86-64" }, flags = { "-DBITS=1" } },
}
