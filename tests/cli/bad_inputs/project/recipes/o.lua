kernel "o" {
  cpu { source = "../src/o.c", entry = { "o" }, targets = { "x86-64" } },
}
