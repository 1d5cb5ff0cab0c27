/* pack_internal.h - shared by the packager's files; not installed. Its
 * names, types included, carry the folder's internal prefix gkp__. */
#ifndef GK_PACK_INTERNAL_H
#define GK_PACK_INTERNAL_H

#include <zstd.h>

#include "gkpack.h"

/* One distinct image (blob), in the order the sorted rows first use it. */
typedef struct gkp__blob {
  const gkp_image *im; /* the first row using these bytes */
  unsigned char sha[32];
  long base; /* index of its parent blob (its chain: docs/archive.md); -1 for a plain frame */
} gkp__blob;

/* A compression context and its output buffer. */
typedef struct gkp__zbuf {
  ZSTD_CCtx *cctx;
  void *buf;
  size_t cap;
} gkp__zbuf;

/* Compresses src into z->buf, against `prefix` (raw bytes) when pn > 0.
 * Returns the frame's size, or a zstd error code. */
size_t gkp__zcompress(gkp__zbuf *z, const void *src, size_t n, const void *prefix,
                      size_t pn, int level);
void gkp__zbuf_free(gkp__zbuf *z);

/* One column of a row, as SQLite stores it (pages.c). */
typedef struct gkp__column {
  enum { GKP__NULL, GKP__INT, GKP__BLOB, GKP__TEXT } kind;
  long long i; /* GKP__INT */
  size_t n;    /* GKP__BLOB, GKP__TEXT: bytes */
} gkp__column;

/* Bytes a table row takes in a leaf page of page_size bytes: its cell (the
 * part of its record kept there, the rest going to overflow pages) and
 * the cell's pointer. A column declared INTEGER PRIMARY KEY is the rowid,
 * stored in the record as NULL. */
size_t gkp__cell_size(long long rowid, const gkp__column *cols, size_t ncols,
                      size_t page_size);

/* An order of n rows whose leaf cells take cell[i] bytes that fills pages
 * of page_size bytes when the rows are appended in that order: order[k]
 * is the row to append k-th. Deterministic: ties go to the lower row.
 * Returns -1 when out of memory. */
int gkp__page_order(const size_t *cell, size_t n, size_t page_size, size_t *order);

/* Sets every blob's base (plan.c). */
int gkp__plan_deltas(gkp__blob *blobs, size_t nb, gk_err *err);

#endif
