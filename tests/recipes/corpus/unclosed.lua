kernel "k" {
  cpu { source = "../src/k.c", targets = { "x86-64" }
