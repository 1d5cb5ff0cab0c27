kernel "k" {
  param = { bits = { 1 } },
  cpu { source = "@P@/src/k.c", targets = { "x86-64" } },
}
