kernel "k" {
  cpu {
    source = "../src/missing.c",
    targets = { "x86-64" },
  },
}
