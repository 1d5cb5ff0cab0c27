kernel "k" {
  params = { bits = { 1, 2 } },
  cpu {
    source = "../src/k.c",
    targets = { "x86-64", "x86-64-v3" },
  },
}
