kernel "k" {
  cpu {
    source = "@P@/src/k.c"
    targets = { "x86-64" },
  },
}
