/*
 * pages.c - orders the blob rows of a fat archive so that SQLite's pages
 * hold them with little room left over (docs/archive.md, "Blob order").
 *
 * A blob row larger than a page keeps a part of it in its leaf page and
 * the rest in whole overflow pages; the part that stays is between about
 * 100 bytes and nearly a page, depending on the blob's size. gk pack
 * appends rows in id order, and appending fills each leaf page until the
 * next row does not fit, then starts a new one: with the rows in plan
 * order a leaf page was on average a quarter empty (21 KB of the cuda
 * archive's 91 KB of blob leaves). So the ids are given in an order that
 * fills the pages: each page takes the largest rows that still fit.
 *
 * The sizes come from SQLite's documented file format
 * (https://www.sqlite.org/fileformat2.html: "Record Format", "B-tree
 * Pages", the local payload of a table leaf cell). A wrong size costs
 * only bytes: any order of the ids reads the same.
 */
#include <stdlib.h>
#include <string.h>

#include "pack_internal.h"

static size_t varint_len(unsigned long long v) {
  size_t n = 1;
  while (v > 0x7f && n < 9) v >>= 7, n++;
  return n;
}

/* Serial type and body size of one column. */
static void column(const gkp__column *c, unsigned long long *type, size_t *body) {
  *type = 0, *body = 0;
  switch (c->kind) {
  case GKP__NULL: *type = 0, *body = 0; return;
  case GKP__INT: {
    long long v = c->i;
    static const size_t widths[] = {1, 2, 3, 4, 6, 8};
    if (v == 0 || v == 1) {
      *type = 8 + (unsigned long long)v, *body = 0;
      return;
    }
    int k = 0; /* the narrowest of 1, 2, 3, 4, 6 or 8 bytes that holds v */
    while (k < 5 && !(v >= -(1LL << (8 * widths[k] - 1)) && v < (1LL << (8 * widths[k] - 1)))) k++;
    *type = (unsigned long long)k + 1, *body = widths[k];
    return;
  }
  case GKP__BLOB: *type = 12 + 2 * (unsigned long long)c->n, *body = c->n; return;
  case GKP__TEXT: *type = 13 + 2 * (unsigned long long)c->n, *body = c->n; return;
  }
}

size_t gkp__cell_size(long long rowid, const gkp__column *cols, size_t ncols,
                      size_t page_size) {
  size_t hdr = 0, body = 0;
  for (size_t i = 0; i < ncols; i++) {
    unsigned long long t;
    size_t b;
    column(&cols[i], &t, &b);
    hdr += varint_len(t);
    body += b;
  }
  /* The header's size is a varint that counts itself. */
  hdr += hdr + 1 <= 0x7f ? 1 : varint_len(hdr + 2);
  size_t p = hdr + body, u = page_size;
  size_t max_local = u - 35, min_local = (u - 12) * 32 / 255 - 23, local = p, ovfl = 0;
  if (p > max_local) {
    size_t k = min_local + (p - min_local) % (u - 4);
    local = k <= max_local ? k : min_local;
    ovfl = 4;
  }
  /* The cell (payload size, rowid, local payload, first overflow page)
   * and its 2-byte pointer in the page's cell array. */
  return varint_len(p) + varint_len((unsigned long long)rowid) + local + ovfl + 2;
}

/* qsort context is not in C11: the cell sizes for by_size. */
static const size_t *sort_cells;
static int by_size(const void *pa, const void *pb) {
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  if (sort_cells[a] != sort_cells[b]) return sort_cells[a] > sort_cells[b] ? -1 : 1;
  return (a > b) - (a < b);
}

int gkp__page_order(const size_t *cell, size_t n, size_t page_size, size_t *order) {
  size_t *left = malloc((n ? n : 1) * sizeof *left);
  if (!left) return -1;
  for (size_t i = 0; i < n; i++) left[i] = i;
  sort_cells = cell;
  qsort(left, n, sizeof *left, by_size);
  /* A leaf page's cells share page_size less its 8-byte header. Each page
   * takes the largest row left, then the largest that still fits, until
   * none does: so the next page's first row never fits in this one, and
   * appending in this order fills the pages exactly as planned. */
  size_t nleft = n, k = 0;
  while (nleft) {
    size_t room = page_size - 8, keep = 0;
    for (size_t j = 0; j < nleft; j++) {
      size_t c = cell[left[j]];
      if (c <= room || j == 0) { /* j == 0: a row no page holds goes alone */
        room -= c <= room ? c : room;
        order[k++] = left[j];
      } else {
        left[keep++] = left[j];
      }
    }
    nleft = keep;
  }
  free(left);
  return 0;
}
