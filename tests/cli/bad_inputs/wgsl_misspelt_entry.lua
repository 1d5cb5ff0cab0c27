kernel "k" {
  wgsl { source = "@P@/src/k.wgsl", entry = { "k", "kk" }, targets = { "webgpu" } },
}
