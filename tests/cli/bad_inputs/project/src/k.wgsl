// k.wgsl - a WGSL kernel for the bad-input rows: one entry point, k, and a
// helper that is not one.
@group(0) @binding(0) var<storage, read_write> x: array<f32>;

fn twice(v: f32) -> f32 { return 2.0 * v; }

@compute @workgroup_size(64, 1, 1)
fn k(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < arrayLength(&x)) { x[id.x] = twice(x[id.x]); }
}
