/*
 * plan.c - chooses how each blob of a fat archive is coded: plain, or as a
 * delta on a parent blob (docs/archive.md, "Deltas").
 */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "gk.h" /* GK_ARCHIVE_DELTA_DEPTH */
#include "gkpack.h"
#include "pack_internal.h"

/* Sibling images share most of their bytes (sm_90 and sm_90a cubins differ
 * in a few bytes, sm_80 and sm_86 in a few KB), which per-image compression
 * cannot see. So an image may be stored as a zstd frame compressed against
 * the raw bytes of the images above it in a small tree of its family
 * (zstd's prefix API): its chain, root first. Depth 1 (one plain base per
 * image) left most of the redundancy unused: the variants of a kernel for
 * one SM and the SMs of one variant are both close, and a tree lets an
 * image lean on both. Its depth is capped (GK_ARCHIVE_DELTA_DEPTH): reading
 * an image decompresses its ancestors first, one frame per level. */

/* Images are only coded against images of the same backend, kernel and
 * format (variants do share code: qmatmul bits=2 and bits=4 for one SM;
 * across kernels the sizes changed by 0.2%). Families past this size are
 * cut into runs of it, in blob order, to bound the m^2 estimates. */
#define FAMILY_MAX 128
/* Level of the trial compressions that choose bases: a cheap level ranks
 * candidates as the final level does, at a fraction of its time (level 9
 * chose trees 0.1% smaller for twice the time). */
#define ESTIMATE_LEVEL 3

size_t gkp__zcompress(gkp__zbuf *z, const void *src, size_t n, const void *prefix,
                      size_t pn, int level) {
  size_t bound = ZSTD_compressBound(n);
  if (bound > z->cap) {
    void *p = realloc(z->buf, bound);
    if (!p) return (size_t)-ZSTD_error_memory_allocation;
    z->buf = p;
    z->cap = bound;
  }
  ZSTD_CCtx_reset(z->cctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 0);
  /* A prefix is raw content (never parsed as a zstd dictionary), on both
   * sides, whatever its first bytes. */
  if (pn) ZSTD_CCtx_refPrefix(z->cctx, prefix, pn);
  return ZSTD_compress2(z->cctx, z->buf, z->cap, src, n);
}

void gkp__zbuf_free(gkp__zbuf *z) {
  ZSTD_freeCCtx(z->cctx);
  free(z->buf);
  z->cctx = NULL, z->buf = NULL, z->cap = 0;
}

static int family_cmp3(const gkp_image *a, const gkp_image *b) {
  int c;
  if ((c = strcmp(a->backend, b->backend))) return c;
  if ((c = strcmp(a->kernel, b->kernel))) return c;
  return strcmp(a->format, b->format);
}

/* qsort context is not in C11: the blob array for family_sort. */
static const gkp__blob *sort_blobs;
static int family_sort(const void *pa, const void *pb) {
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  int c = family_cmp3(sort_blobs[a].im, sort_blobs[b].im);
  return c ? c : (a > b) - (a < b);
}

/* An image whose delta on a sibling is under 1/TWIN_RATIO of its plain
 * frame is that sibling's *twin* (cuda: sm_86 and sm_89, sm_90 and sm_90a
 * cubins differ in a few dozen bytes). On the cuda matrix (trial sizes at
 * ESTIMATE_LEVEL) twins measure 1/500 to 1/37, the small ones paying for
 * the frame's own bytes, and the closest other pair 1/22 (rope sm_86 and
 * sm_87). */
#define TWIN_RATIO 32

/*
 * Finds the twins of a run: twin[i] is the lowest-indexed image j < i that
 * is not itself a twin, with D[i][j] and D[j][i] both under 1/TWIN_RATIO of
 * P[i] and P[j]; -1 when there is none. In the search that sets twins
 * aside, a twin is coded on its j and is never anyone's parent. Without
 * that rule the search spent chain depth on twins: a twin that is some
 * image's parent pushes that image a level down, and an image already at
 * the depth cap left its twin no room below it, so the twin was coded
 * against another sibling at 3-10 KB instead of 30-80 bytes. That cost
 * 13.5 KB (1.8%) of the cuda blobs at depth 2.
 */
static void find_twins(size_t m, const size_t *P, const size_t *D, long *twin) {
  for (size_t i = 0; i < m; i++) {
    twin[i] = -1;
    /* With chains of one blob a twin would have no room below a delta. */
    for (size_t j = 0; j < i && twin[i] < 0 && GK_ARCHIVE_DELTA_DEPTH > 1; j++)
      if (twin[j] < 0 && D[i * m + j] < P[i] / TWIN_RATIO && D[j * m + i] < P[j] / TWIN_RATIO)
        twin[i] = (long)j;
  }
}

/* Work space of one family run's search (m images). */
typedef struct plan_run {
  size_t m;
  const size_t *P, *D; /* trial sizes: P[i] plain, D[i*m+j] i against j */
  const long *twin;    /* find_twins, or all -1 */
  size_t *cur;         /* each image's cost under par */
  long *par;           /* its parent, -1 when plain */
  int *dep, *hgt;      /* depth of each image, height of the tree below it */
} plan_run;

/*
 * One search over the forests of a run, into r->par; returns the total of
 * the trial sizes (the model cost). Depth 1 first: greedy facility location
 * over the images that are not twins. Start with every image plain;
 * repeatedly make a base (plain) the image that lowers the run's total the
 * most, each other image costing the smaller of its current cost and D
 * against the new base; then code each image against its best base. Its
 * bases are a better start than "all plain" (the search alone ended 4.4%
 * larger on the cuda matrix: greedy moves from scratch commit to too many
 * roots). Then deeper: repeatedly re-parent the one image whose move saves
 * the most (cost D[i][j] instead of its current one), among moves that keep
 * the forest acyclic and within GK_ARCHIVE_DELTA_DEPTH, until none saves
 * anything; every move lowers the total, so it ends. A twin stays on its
 * partner, which counts it as a child and so keeps a level free for it.
 * Ties go to the lower image, then the lower parent.
 */
static size_t search(plan_run *r) {
  size_t m = r->m, total = 0;
  const size_t *P = r->P, *D = r->D;
  const long *twin = r->twin;
  size_t *cur = r->cur;
  long *par = r->par;
  int *dep = r->dep, *hgt = r->hgt, *isbase = r->dep; /* isbase: dep's storage */
  for (size_t i = 0; i < m; i++) cur[i] = P[i], par[i] = -1, isbase[i] = 0;
  for (;;) {
    size_t best = m, best_gain = 0;
    for (size_t c = 0; c < m; c++) {
      if (isbase[c] || twin[c] >= 0) continue;
      /* c turning plain costs what its own delta saved. */
      size_t gain = 0, loss = P[c] - cur[c];
      for (size_t i = 0; i < m; i++)
        if (!isbase[i] && twin[i] < 0 && i != c && D[i * m + c] < cur[i])
          gain += cur[i] - D[i * m + c];
      if (gain > loss && gain - loss > best_gain) {
        best_gain = gain - loss;
        best = c;
      }
    }
    if (best == m) break;
    isbase[best] = 1;
    cur[best] = P[best];
    for (size_t i = 0; i < m; i++)
      if (!isbase[i] && twin[i] < 0 && D[i * m + best] < cur[i]) cur[i] = D[i * m + best];
  }
  for (size_t i = 0; i < m; i++) {
    if (twin[i] >= 0) {
      par[i] = twin[i];
      cur[i] = D[i * m + par[i]];
      continue;
    }
    if (isbase[i] || cur[i] >= P[i]) continue;
    for (size_t j = 0; j < m; j++)
      if (isbase[j] && (par[i] < 0 || D[i * m + j] < D[i * m + par[i]])) par[i] = (long)j;
    cur[i] = D[i * m + par[i]];
  }
  for (;;) {
    for (size_t i = 0; i < m; i++) dep[i] = hgt[i] = 0;
    for (size_t i = 0; i < m; i++) {
      int d = 1;
      for (long x = par[i]; x >= 0; x = par[x], d++) {
        dep[i]++;
        if (hgt[x] < d) hgt[x] = d;
      }
    }
    size_t bi = m, bj = m, best_gain = 0;
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < m; j++) {
        if (j == i || twin[i] >= 0 || twin[j] >= 0 || par[i] == (long)j ||
            D[i * m + j] >= cur[i] || cur[i] - D[i * m + j] <= best_gain ||
            dep[j] + 1 + hgt[i] > GK_ARCHIVE_DELTA_DEPTH)
          continue;
        long x = (long)j; /* j below i would close a cycle */
        while (x >= 0 && x != (long)i) x = par[x];
        if (x == (long)i) continue;
        best_gain = cur[i] - D[i * m + j];
        bi = i, bj = j;
      }
    if (bi == m) break;
    par[bi] = (long)bj;
    cur[bi] = D[bi * m + bj];
  }
  for (size_t i = 0; i < m; i++) total += cur[i];
  return total;
}

/*
 * Chooses the parents of one family run (blob indices fam[0..m)): trial
 * sizes P (plain) and D (i against j alone) at ESTIMATE_LEVEL, then two
 * searches (search()), with twins set aside on their partners and without,
 * keeping the forest of the lower total (the one with twins on ties). The
 * twin rule is what most runs want (the cuda blobs: flash_attention -9.9
 * KB, qmatmul -4.6 KB), but in runs of 9 where twins are a fifth of the
 * images it cost up to 1.3 KB; the model total picked the better of the
 * two in 5 of the 6 cuda cubin runs, for one more search (~1 ms; the
 * trials take the time). D ranks single parents; the final frame also sees
 * the grandparent, which only helps (choosing by the full chain's cost
 * measured 0.3% smaller for twice the trials). The choice depends on the
 * images alone.
 */
static int choose_bases(gkp__zbuf *zb, gkp__blob *blobs, const size_t *fam, size_t m,
                        gk_err *err) {
  size_t *P = calloc(m, sizeof *P), *D = calloc(m * m, sizeof *D);
  size_t *cur = calloc(m, sizeof *cur);
  long *par = calloc(m, sizeof *par), *twin = calloc(m, sizeof *twin);
  long *none = calloc(m, sizeof *none), *best = calloc(m, sizeof *best);
  int *dep = calloc(m, sizeof *dep), *hgt = calloc(m, sizeof *hgt);
  int rc = -1;
  if (!P || !D || !cur || !par || !twin || !none || !best || !dep || !hgt) {
    gk_err_set(err, "out of memory choosing delta bases");
    goto bases_out;
  }
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < m; j++) {
      const gkp_image *a = blobs[fam[i]].im, *b = blobs[fam[j]].im;
      size_t z = gkp__zcompress(zb, a->data, a->size, i == j ? NULL : b->data,
                               i == j ? 0 : b->size, ESTIMATE_LEVEL);
      if (ZSTD_isError(z)) {
        gk_err_set(err, "cannot compress %s/%s/%s: %s", a->backend,
                   a->kernel, a->target, ZSTD_getErrorName(z));
        goto bases_out;
      }
      if (i == j) P[i] = z;
      else D[i * m + j] = z;
    }
  find_twins(m, P, D, twin);
  for (size_t i = 0; i < m; i++) none[i] = -1;
  plan_run r = {m, P, D, twin, cur, par, dep, hgt};
  size_t with = search(&r);
  memcpy(best, par, m * sizeof *par);
  r.twin = none;
  size_t without = search(&r);
  if (without < with) memcpy(best, par, m * sizeof *par);
  for (size_t i = 0; i < m; i++) blobs[fam[i]].base = best[i] < 0 ? -1 : (long)fam[best[i]];
  rc = 0;
bases_out:
  free(P), free(D), free(cur), free(par), free(twin), free(none), free(best);
  free(dep), free(hgt);
  return rc;
}

/* Sets every blob's base, family by family. */
int gkp__plan_deltas(gkp__blob *blobs, size_t nb, gk_err *err) {
  size_t *order = calloc(nb ? nb : 1, sizeof *order);
  if (!order) return gk_err_set(err, "out of memory choosing delta bases");
  gkp__zbuf zb = {ZSTD_createCCtx(), NULL, 0};
  if (!zb.cctx) {
    free(order);
    return gk_err_set(err, "out of memory choosing delta bases");
  }
  for (size_t i = 0; i < nb; i++) order[i] = i, blobs[i].base = -1;
  sort_blobs = blobs;
  qsort(order, nb, sizeof *order, family_sort);
  for (size_t i = 0; i < nb;) {
    size_t j = i + 1;
    while (j < nb && j - i < FAMILY_MAX &&
           family_cmp3(blobs[order[i]].im, blobs[order[j]].im) == 0)
      j++;
    if (j - i > 1 && choose_bases(&zb, blobs, order + i, j - i, err)) {
      gkp__zbuf_free(&zb);
      free(order);
      return -1;
    }
    i = j;
  }
  gkp__zbuf_free(&zb);
  free(order);
  return 0;
}
