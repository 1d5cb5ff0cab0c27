kernel "o" {
  cpu { source = "@P@/src/o.c", entry = { "o" }, targets = { "x86-64" } },
}
