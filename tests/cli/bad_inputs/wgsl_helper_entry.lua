kernel "k" {
  wgsl { source = "@P@/src/k.wgsl", entry = { "k", "twice" }, targets = { "webgpu" } },
}
