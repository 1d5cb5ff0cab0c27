/* pack_internal.h - shared by the packager's files; not installed. */
#ifndef GK_PACK_INTERNAL_H
#define GK_PACK_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>

/* Formats a message into the caller's err buffer (NULL or 0: ignored). */
static inline void gkp__seterr(char *err, size_t size, const char *fmt, ...) {
  va_list ap;
  if (!err || !size) return;
  va_start(ap, fmt);
  vsnprintf(err, size, fmt, ap);
  va_end(ap);
}

#include <zstd.h>

#include "gkpack.h"

/* One distinct image (blob), in the order the sorted rows first use it. */
typedef struct pblob {
  const gkp_image *im; /* the first row using these bytes */
  unsigned char sha[32];
  long base; /* index of its parent blob (its chain: docs/archive.md); -1 for a plain frame */
} pblob;

/* A compression context and its output buffer. */
typedef struct gkp_zbuf {
  ZSTD_CCtx *cctx;
  void *buf;
  size_t cap;
} gkp_zbuf;

/* Compresses src into z->buf, against `prefix` (raw bytes) when pn > 0.
 * Returns the frame's size, or a zstd error code. */
size_t gkp__zcompress(gkp_zbuf *z, const void *src, size_t n, const void *prefix,
                      size_t pn, int level);
void gkp__zbuf_free(gkp_zbuf *z);

/* Sets every blob's base (plan.c). */
int gkp__plan_deltas(pblob *blobs, size_t nb, char *err, size_t errsize);

#endif
