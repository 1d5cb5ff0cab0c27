/*
 * gpu_run.h - how test_gpu.c runs cuda images on a real GPU: the images of a
 * kernel x variant (the one libgk selects, and every other row the card
 * runs, loaded here from the row's bytes), device buffers with guard bytes,
 * and launches by each row's launch JSON. Failures are counted and printed
 * as "FAIL: ..." lines; a driver error that may leave the context unusable
 * ends the program.
 */
#ifndef GK_TEST_GPU_RUN_H
#define GK_TEST_GPU_RUN_H

#include <stddef.h>

#include "cudrv.h"
#include "gk.h"

#define MAX_IMAGES 8
#define MAX_ENTRIES 8
/* Bytes after every device buffer, set to GUARD_BYTE. */
#define GUARD 256
#define GUARD_BYTE 0xa5

/* One loaded cuda image of a kernel x variant. */
typedef struct image {
  char label[80];
  gk_module *gm;  /* loaded by libgk (the selected row), or */
  cu_module own;  /* loaded here from the row's bytes */
  int nentries;
  char entry[MAX_ENTRIES][64];
  cu_function fn[MAX_ENTRIES];
  gk_launch *launch[MAX_ENTRIES]; /* the row's launch of each entry */
} image;

/* The values of one launch, in signature order (add_arg). */
typedef struct args {
  int n;
  gk_arg v[GK_LAUNCH_MAX_PARAMS];
} args;
static inline void add_arg(args *a, gk_arg v) {
  if (a->n < GK_LAUNCH_MAX_PARAMS) a->v[a->n++] = v;
}

/* A kernel x variant: its GPU images and the CPU image of reference. */
typedef struct kv {
  const char *kernel, *variant;
  int nimages;
  image img[MAX_IMAGES];
  gk_module *cpu;
} kv;

/* The GPU, the archives, the devices, and the run's counts. */
extern cudrv gpu;
extern gk_archive *gpu_archive, *cpu_archive;
extern gk_device gpu_dev, cpu_dev;
extern int small_shapes; /* --small: small shapes, the selected image only */
extern int failures, cases, launches;

/* Prints "FAIL: " and the message, and counts a failure. */
void failf(const char *fmt, ...);
/* A driver call that cannot fail unless the GPU or the program is broken:
 * a failure ends the run (after a fault the context is unusable). */
void cu_ok(cu_result r, const char *fmt, ...);

/* A device copy of src (size bytes; NULL: 0xff bytes, NaN floats and -1
 * integers), followed by GUARD bytes of GUARD_BYTE. */
cu_deviceptr dnew(const void *src, size_t size);
/* Resets an output to 0xff bytes before the next launch. */
void dclear(cu_deviceptr p, size_t size);
/* Copies an output back; 1 (FAIL printed) when its guard bytes changed. */
int dget(void *dst, cu_deviceptr p, size_t size, const char *what);
void dfree(cu_deviceptr p);

/* The CPU reference, libgk's choice, and (unless small_shapes) every other
 * row the card can run. Prints what runs and what does not fit. Returns the
 * number of GPU images (0 after a FAIL). kv_unload undoes it. */
int kv_load(kv *t);
void kv_unload(kv *t);
/* The index of `entry` in image im, or -1. */
int entry_of(const image *im, const char *entry);
/* Launches entry e of im with `a` (grid cut to `cap` blocks when cap is not
 * NULL) and waits. 0, or 1 after a FAIL. */
int run(const image *im, int e, const args *a, const unsigned *cap, const char *what);
/* The grid cut to 2 x 1 x 1 blocks: the kernels must loop over the rest. */
extern const unsigned CAP[3];
/* 0 when the n bytes are the same, else 1 and a FAIL: "WHAT: HOW gives other bits". */
int same_bits(const void *a, const void *b, size_t n, const char *what, const char *how);

#endif /* GK_TEST_GPU_RUN_H */
