kernel "broken" {
  cpu { source = "@P@/src/broken.c", targets = { "x86-64" } },
}
