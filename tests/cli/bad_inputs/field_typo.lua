kernel "k" {
  cpu { source = "@P@/src/k.c", target = { "x86-64" } },
}
