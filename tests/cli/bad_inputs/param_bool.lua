kernel "k" {
  params = { bits = { true } },
  cpu { source = "@P@/src/k.c", targets = { "x86-64" } },
}
