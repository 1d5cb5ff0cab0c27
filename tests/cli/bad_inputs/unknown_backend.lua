kernel "k" {
  tpu { source = "@P@/src/k.c", targets = { "v5e" } },
}
