/*
 * gkrecipes.h - the recipe engine behind `gk build`. Build side only.
 *
 * A build reads every *.lua recipe directly in a folder, expands each kernel
 * into jobs (kernel x backend x target x params), compiles the jobs the cache
 * does not already hold with the toolchain modules (Lua, embedded in the
 * binary; a recipes folder may add or override one in DIR/toolchains/), and
 * writes the output folder of docs/manifest.md: images first, manifest.json
 * last, each through a temporary file and a rename. A failed build leaves the
 * output folder as it was.
 *
 * The driver itself is Lua (recipes/engine/build.lua); this header is the
 * whole C API the CLI needs.
 */
#ifndef GKRECIPES_H
#define GKRECIPES_H

#include <stddef.h>
#include <stdio.h>

/* Checks one image against what its recipe says of it (its header fits
 * backend, target and toolchain; every name of entry_json, a JSON array,
 * is in it; launch_json, an object, fits it): 0, or -1 with a sentence in
 * why. The CLI passes libgk's gk_image_check, which the engine does not
 * link. */
typedef struct gkr_image_row {
  const char *backend, *target, *format, *entry_json, *launch_json, *toolchain;
} gkr_image_row;
typedef int (*gkr_check_fn)(const void *bytes, size_t size, const gkr_image_row *row,
                            char *why, size_t why_size);

typedef struct gkr_options {
  const char *recipes_dir;     /* required: folder of *.lua recipes */
  const char *out_dir;         /* required: output folder, created if missing */
  const char *cache_dir;       /* NULL: gkc_default_dir() (GK_CACHE_DIR or
                                  $HOME/.gsc/gllm/kernels) */
  const char *const *backends; /* only these backends; NULL or none: all */
  size_t nbackends;
  const char *const *kernels;  /* only these kernels; NULL or none: all */
  size_t nkernels;
  const char *const *targets;  /* "cuda=sm_80,sm_90": these targets instead of
                                  the recipes' lists for that backend */
  size_t ntargets;
  int jobs;                    /* parallel compiles; <= 0: number of CPUs */
  int strict;                  /* nonzero: a target a toolchain cannot produce
                                  fails the build instead of being skipped */
  FILE *log;                   /* progress and diagnostics; NULL: stderr */
  /* The maintainers' pipeline (docs/archive.md, recipes/README.md). */
  const char *shard;           /* "I/N": build only slice I of N; NULL: all */
  const char *remote_cache;    /* http(s) URL of a bazel-remote style cache;
                                  NULL: $GK_REMOTE_CACHE, if set */
  int remote_readonly;         /* nonzero: download from it, never upload */
  /* Credentials and trust for the remote cache (gkcache.h,
   * gkc_remote_options: never shown, never in a key). The CLI fills these
   * from its options and environment; all are borrowed. */
  const char *const *remote_headers;   /* "Name: value" */
  size_t nremote_headers;
  const char *remote_netrc;            /* netrc file; NULL: $HOME/.netrc */
  const char *remote_ca;               /* PEM CA file; NULL: the system's */
  const char *remote_client_cert;      /* PEM, mutual TLS */
  const char *remote_client_key;
  const unsigned char *remote_sign_seed;      /* 32 bytes: sign entries */
  const unsigned char (*remote_trusted)[32];  /* accept only these signers */
  size_t nremote_trusted;
  int container;               /* nonzero: compile in the modules' images */
  const char *const *container_images; /* "MODULE=IMAGE" overrides */
  size_t ncontainer_images;
  const char *const *container_mounts; /* host paths mounted read-only */
  size_t ncontainer_mounts;
  /* NULL: images are not checked. Otherwise each image is checked before a
   * manifest that lists it is written (a new or changed manifest: a no-op
   * build reads no image), and a failure names the recipe and line. */
  gkr_check_fn check_image;
} gkr_options;

/* Exit statuses, the CLI's convention: 0 success, 1 failure, 2 usage. */
enum { GKR_OK = 0, GKR_FAILED = 1, GKR_USAGE = 2 };

/*
 * Runs one build. Progress lines ("[3/16] cc x86-64-v3 qmatmul bits=4"),
 * compiler output, errors ("gk build: recipes/x.lua:5: unknown target ...")
 * and the closing summary go to opts->log. Returns GKR_OK, GKR_FAILED or
 * GKR_USAGE (an unknown --backend name).
 *
 * When summary is not NULL, *summary receives a JSON object (malloc'd text,
 * the caller frees it) describing the outcome, for `gk build --json`:
 *   {"ok": true, "images": 16, "compiled": 0, "cached": 16, "out": "...",
 *    "backends": [{"backend": "cpu", "toolchain": "cc 12.2.0 ...", "images": 16}],
 *    "skipped": [{"backend": "cuda", "reason": "..."}], "seconds": 0.01}
 * and on failure {"ok": false, "error": "...", ...}. It may be NULL when
 * memory ran out. Not thread-safe with respect to opts->log only.
 */
int gkr_build(const gkr_options *opts, char **summary);

#endif
