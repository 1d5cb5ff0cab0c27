/*
 * metal.m - the Metal backend's driver side, built only on Apple systems
 * (CMake: if(APPLE)), with ARC. It has NOT been compiled or run on the
 * machines this project is developed on (Linux, no Apple toolchain): the
 * maintainers' macOS runner builds and tests it. Keep it small.
 *
 * Detection: the system default device; its arch is "macos-metalX.Y" with
 * the newest Metal language version the running macOS supports, the form
 * of the archive's metal targets (metal_target.c has the rule).
 * Loading: the verified metallib bytes -> newLibraryWithData -> one
 * compute pipeline state per function in the library. gk_module_symbol(m,
 * NAME) returns the id<MTLComputePipelineState> of function NAME as a
 * borrowed pointer ((__bridge id<MTLComputePipelineState>)p), valid while
 * the module is loaded; gk_module_kernel_info's object is the same pointer.
 * Encoding and dispatch stay with the caller (its own command queue), with
 * the launch metadata of the row: buffers in order, the scalars as one
 * struct at the next index (setBytes), threadgroups as `groups` says.
 */
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

static void say(char *why, size_t size, const char *msg) {
  if (why && size) snprintf(why, size, "%s", msg);
}

/* The newest Metal language version of this macOS, or NULL before 12. */
static const char *metal_version(void) {
  NSOperatingSystemVersion v = [[NSProcessInfo processInfo] operatingSystemVersion];
  if (v.majorVersion >= 15) return "3.2";
  if (v.majorVersion == 14) return "3.1";
  if (v.majorVersion == 13) return "3.0";
  if (v.majorVersion == 12) return "2.4";
  return NULL;
}

int gk__metal_detect(gk_device *out, int asked, char *why, size_t why_size) {
  @autoreleasepool {
    id<MTLDevice> dev = MTLCreateSystemDefaultDevice();
    if (!dev) {
      say(why, why_size, "MTLCreateSystemDefaultDevice found no Metal device");
      return GK_ENODEVICE;
    }
    const char *lang = metal_version();
    if (!lang) {
      say(why, why_size, "this macOS is older than 12, the oldest libgk's metal targets run on");
      return GK_ENODEVICE;
    }
    memset(out, 0, sizeof *out);
    out->backend = GK_BACKEND_METAL;
    snprintf(out->arch, sizeof out->arch, "macos-metal%s", lang);
    snprintf(out->name, sizeof out->name, "%s", dev.name.UTF8String);
    return GK_OK;
  }
}

/* A loaded module: the library and one pipeline state per function. */
typedef struct mtlmod {
  void *lib;              /* id<MTLLibrary>, retained (CFBridgingRetain) */
  NSUInteger n;
  char **names;
  void **pipes;           /* id<MTLComputePipelineState>, retained */
} mtlmod;

static void mod_free(mtlmod *md) {
  if (!md) return;
  for (NSUInteger i = 0; i < md->n; i++) {
    if (md->pipes && md->pipes[i]) CFBridgingRelease(md->pipes[i]);
    if (md->names) free(md->names[i]);
  }
  if (md->lib) CFBridgingRelease(md->lib);
  free(md->names);
  free(md->pipes);
  free(md);
}

static int metal_load(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
                      const gk__entries *e, void *bytes, size_t size, void **state) {
  (void)dev; /* the system default device is the only one detected */
  @autoreleasepool {
    id<MTLDevice> device = MTLCreateSystemDefaultDevice();
    if (!device) {
      free(bytes);
      return gk__fail(ar, GK_ENODEVICE, "cannot load image %s: no Metal device", GK__WHAT(row));
    }
    /* dispatch_data_create copies with the default destructor: bytes can go. */
    dispatch_data_t data = dispatch_data_create(bytes, size, NULL, DISPATCH_DATA_DESTRUCTOR_DEFAULT);
    free(bytes);
    NSError *err = nil;
    id<MTLLibrary> lib = [device newLibraryWithData:data error:&err];
    if (!lib)
      return gk__fail(ar, GK_EDRIVER, "cannot load image %s: newLibraryWithData: %s",
                      GK__WHAT(row),
                      err ? err.localizedDescription.UTF8String : "unknown error");
    NSArray<NSString *> *names = lib.functionNames;
    mtlmod *md = calloc(1, sizeof *md);
    if (!md) return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
    md->lib = (void *)CFBridgingRetain(lib);
    md->names = calloc(names.count ? names.count : 1, sizeof *md->names);
    md->pipes = calloc(names.count ? names.count : 1, sizeof *md->pipes);
    if (!md->names || !md->pipes) {
      mod_free(md);
      return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
    }
    for (NSString *name in names) {
      id<MTLFunction> fn = [lib newFunctionWithName:name];
      id<MTLComputePipelineState> ps =
          fn ? [device newComputePipelineStateWithFunction:fn error:&err] : nil;
      if (!ps) {
        int rc = gk__fail(ar, GK_EDRIVER, "cannot load image %s: no compute pipeline for '%s': %s",
                          GK__WHAT(row), name.UTF8String,
                          err ? err.localizedDescription.UTF8String : "not a kernel function");
        mod_free(md);
        return rc;
      }
      md->names[md->n] = strdup(name.UTF8String);
      md->pipes[md->n] = (void *)CFBridgingRetain(ps);
      md->n++;
      if (!md->names[md->n - 1]) {
        mod_free(md);
        return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
      }
    }
    *state = md;
    return GK_OK;
  }
}

static void *metal_symbol(void *state, const char *name) {
  mtlmod *md = state;
  for (NSUInteger i = 0; i < md->n; i++)
    if (strcmp(md->names[i], name) == 0) return md->pipes[i];
  return NULL;
}

static int metal_kernel_info(void *state, const char *name, gk_kernel_info *out) {
  void *p = metal_symbol(state, name);
  if (!p) return GK_ENOSYMBOL;
  memset(out, 0, sizeof *out);
  out->object = (uint64_t)(uintptr_t)p;
  id<MTLComputePipelineState> ps = (__bridge id<MTLComputePipelineState>)p;
  out->group_segment_size = (uint32_t)ps.staticThreadgroupMemoryLength;
  return GK_OK;
}

static void metal_unload(void *state) { mod_free(state); }

const gk__ops gk__metal_ops = {.load = metal_load, .symbol = metal_symbol,
                               .kernel_info = metal_kernel_info, .unload = metal_unload,
                               .launches = 1};
