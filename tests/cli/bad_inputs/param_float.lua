kernel "k" {
  params = { bits = { 1, 2.5 } },
  cpu { source = "@P@/src/k.c", targets = { "x86-64" } },
}
