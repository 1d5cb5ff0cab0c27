kernel "broken2" {
  cpu { source = "@P@/src/broken.c", targets = { "x86-64", "x86-64-v2" } },
}
