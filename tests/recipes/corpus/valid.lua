kernel "k" {
  params = { bits = { 1, 2, 4, 8 }, dtype = { "f16", "bf16" } },
  cpu { source = "../src/k.c", targets = { "x86-64", "x86-64-v4" }, flags = { "-DX=1" },
        launch = { block = 256, dims = { 1, 2 } } },
  cuda { source = "../src/k.c", targets = { "sm_90a" } },
}
