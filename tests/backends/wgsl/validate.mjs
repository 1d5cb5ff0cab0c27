// validate.mjs OUT - every wgsl image of a gk build folder (OUT/manifest.json)
// through Dawn's real WGSL front end (the npm package `webgpu`, on Dawn's
// null backend: it compiles shaders and reports errors without a GPU).
// For each image: the module compiles without error, a compute pipeline
// for its entry point builds (layout "auto", so every binding the entry
// uses is checked), and each binding of the launch metadata is declared in
// the text. Prints one line per failure; exit 1 when any, 0 otherwise.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
let webgpu;
try {
  webgpu = await import('webgpu');
} catch (e) {
  // The package installs a prebuilt dawn.node per platform: one this
  // machine cannot load is a missing tool, not a WGSL error.
  console.log(`SKIP: cannot load Dawn (npm package webgpu) here: ${e.message.split('\n')[0]}`);
  process.exit(77);
}
const { create, globals } = webgpu;
Object.assign(globalThis, globals);
const out = process.argv[2];
const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
const gpu = create(['backend=null']);
const adapter = await gpu.requestAdapter();
if (!adapter) {
  console.log('SKIP: Dawn found no adapter, not even its null backend');
  process.exit(77);
}
const device = await adapter.requestDevice();
let failures = 0, checked = 0;
for (const im of manifest.images) {
  if (im.backend !== 'wgsl') continue;
  checked++;
  const what = `${im.path} (${im.kernel} ${im.variant || '-'})`;
  const code = readFileSync(join(out, im.path), 'utf8');
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  await device.popErrorScope();
  const errors = info.messages.filter((m) => m.type === 'error');
  for (const m of errors) {
    console.log(`FAIL: ${what}:${m.lineNum}:${m.linePos}: ${m.message.split('\n')[0]}`);
  }
  if (errors.length) { failures++; continue; }
  device.pushErrorScope('validation');
  device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: im.entry[0] } });
  const err = await device.popErrorScope();
  if (err) {
    console.log(`FAIL: ${what}: no compute pipeline for '${im.entry[0]}': ${err.message.split('\n')[0]}`);
    failures++;
    continue;
  }
  for (const b of (im.launch.bindings || [])) {
    if (!code.includes(`@binding(${b.binding})`)) {
      console.log(`FAIL: ${what}: launch binding ${b.binding} (${b.name}) is not declared`);
      failures++;
    }
  }
}
if (checked === 0) {
  console.log(`SKIP: '${out}' has no wgsl image`);
  process.exit(77);
}
console.log(`${checked} wgsl images checked, ${failures} failed`);
process.exit(failures ? 1 : 0);
