kernel "k" {
  params = { bits = 4 },
  cpu { source = "@P@/src/k.c", targets = { "x86-64" } },
}
