/*
 * select.c - which image of a kernel fits a device best.
 *
 * Works on the index held in memory (rows sorted by kernel, backend,
 * variant, target). The rule that says whether a row runs on a device, and
 * how well, is the device's backend's (gk__backend: `valid`, `fits`, in
 * the backend's file: cpu.c, cuda_arch.c, rocm_isa.c, ...); this file
 * finds the rows it applies to and keeps the best.
 *
 * When nothing fits, the message lists what the archive does hold (in the
 * backend's terms when it has `holdings`), which is what a user needs to
 * decide between another device, another archive or a rebuild.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Lists the distinct values of a field over rows [from, to), sorted
 * ("bits=2, bits=4, bits=8"), whatever the row order. */
static void list_distinct(gk__sb *sb, const gk__row *rows, size_t from,
                          size_t to, size_t off) {
  const char **v = malloc((to - from + 1) * sizeof *v);
  if (!v) {
    sb->oom = 1;
    return;
  }
  size_t n = 0;
  for (size_t i = from; i < to; i++)
    v[n++] = *(const char *const *)((const char *)&rows[i].info + off);
  qsort(v, n, sizeof *v, cmp_str);
  for (size_t i = 0; i < n; i++)
    if (i == 0 || strcmp(v[i], v[i - 1]) != 0)
      gk__sb_printf(sb, "%s%s", i ? ", " : "", *v[i] ? v[i] : "''");
  free(v);
}

/*
 * Runs the backend's rule over rows [from, to) of one variant. Fills up to
 * `cap` candidates (every row of the variant, in index order) and returns
 * the best row, or -1. `flags` matter to backends with JIT forms only
 * (GK_LOAD_NO_JIT).
 */
static long choose(const gk__backend *b, const gk__row *rows, size_t from, size_t to,
                   const char *want, const gk_device *dev, unsigned flags,
                   gk_candidate *cand, size_t cap, size_t *ncand) {
  long best = -1, best_score = 0;
  size_t n = 0;
  for (size_t i = from; i < to; i++) {
    const gk_image_info *r = &rows[i].info;
    /* Reasons only for a listing: formatting them cost a quick selection
     * more than its rule. */
    char why[sizeof cand->why];
    const size_t wn = cap ? sizeof why : 0;
    long score = 0;
    int ok = 0;
    if (strcmp(r->variant, want) != 0) continue;
    if (strcmp(r->backend, b->name) != 0)
      gk__say(why, wn, "built for %s, device is %s", r->backend, b->name);
    else
      ok = b->fits(dev, r, flags, &score, why, wn);
    if (ok && (best < 0 || score > best_score)) {
      best = (long)i;
      best_score = score;
    }
    if (n < cap) {
      cand[n].index = i;
      cand[n].fits = ok;
      cand[n].chosen = 0;
      memcpy(cand[n].why, why, sizeof why);
    }
    n++;
  }
  for (size_t c = 0; c < n && c < cap; c++)
    cand[c].chosen = (long)cand[c].index == best;
  if (ncand) *ncand = n;
  return best;
}

GK_API int gk_archive_select(gk_archive *ar, const gk_device *dev,
                             const char *kernel, const char *variant,
                             size_t *index) {
  return gk_archive_select_ex(ar, dev, kernel, variant, 0, index);
}

static int param_cmp(const void *pa, const void *pb) {
  const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
  size_t na = strcspn(a, "="), nb = strcspn(b, "=");
  int c = strncmp(a, b, na < nb ? na : nb);
  return c ? c : (na > nb) - (na < nb);
}

/* A variant as the index writes it: 'k=v' parameters sorted by name and
 * joined by ',' ("head_dim=64,dtype=f16,causal=0" ->
 * "causal=0,dtype=f16,head_dim=64"), into buf; the variant itself when it
 * has one parameter or does not fit. */
static const char *canonical_variant(const char *v, char *buf, size_t size) {
  char *parts[64];
  size_t n = 0, len = v ? strlen(v) : 0;
  if (!v || !strchr(v, ',') || len >= size) return v;
  memcpy(buf, v, len + 1);
  for (char *p = buf; p && n < 64; n++) {
    parts[n] = p;
    p = strchr(p, ',');
    if (p) *p++ = '\0';
  }
  if (n == 64) return v;
  qsort(parts, n, sizeof *parts, param_cmp);
  char tmp[512];
  size_t used = 0;
  for (size_t i = 0; i < n; i++)
    used += (size_t)snprintf(tmp + used, sizeof tmp - used, "%s%s", i ? "," : "", parts[i]);
  memcpy(buf, tmp, used + 1);
  return buf;
}

/* The rows of `kernel` in the whole index, [*from, *to), and the variant
 * they are asked for in *want: as named, or the kernel's only one when none
 * is named. GK_ENOKERNEL, with a message listing what there is, when the
 * kernel or the variant is not there. */
static int find_variant(gk_archive *ar, const char *kernel, const char *variant,
                        size_t *from, size_t *to, const char **want) {
  /* Rows are sorted by kernel first: this kernel's rows are one run. */
  const gk__row *rows = ar->rows;
  size_t f = 0, t;
  while (f < ar->nrows && strcmp(rows[f].info.kernel, kernel) != 0) f++;
  for (t = f; t < ar->nrows && strcmp(rows[t].info.kernel, kernel) == 0;) t++;
  gk__sb sb = {0};
  int status = GK_OK;
  if (f == t) {
    list_distinct(&sb, rows, 0, ar->nrows, offsetof(gk_image_info, kernel));
    status = gk__fail(ar, GK_ENOKERNEL, "archive '%s' has no kernel '%s'; %s%s",
                      ar->name, kernel, ar->nrows ? "it has " : "it is empty",
                      gk__sb_str(&sb));
    goto out;
  }
  const char *w = variant ? variant : "";
  size_t nvariants = 0, match = 0;
  const char *only = NULL;
  for (size_t i = f; i < t; i++) {
    const char *v = rows[i].info.variant;
    if (strcmp(v, w) == 0) match++;
    int dup = 0;
    for (size_t j = f; j < i && !dup; j++)
      dup = strcmp(rows[j].info.variant, v) == 0;
    if (!dup) {
      nvariants++;
      only = v;
    }
  }
  if (!match && !*w && nvariants == 1) {
    w = only;
  } else if (!match) {
    list_distinct(&sb, rows, f, t, offsetof(gk_image_info, variant));
    if (*w)
      status = gk__fail(ar, GK_ENOKERNEL,
                        "archive '%s' has no variant '%s' of kernel '%s'; it has %s",
                        ar->name, w, kernel, gk__sb_str(&sb));
    else
      status = gk__fail(ar, GK_ENOKERNEL,
                        "kernel '%s' has %zu variants in archive '%s' (%s); name one", kernel,
                        nvariants, ar->name, gk__sb_str(&sb));
    goto out;
  }
  *from = f;
  *to = t;
  *want = w;
out:
  gk__sb_free(&sb);
  return status;
}

/* GK_ENOIMAGE, with a message saying what the archive holds of the variant
 * (rows [from, to)) instead. */
static int no_image(gk_archive *ar, const gk__backend *b, const gk_device *dev,
                    const char *kernel, const char *want, size_t from, size_t to,
                    unsigned flags) {
  const gk__row *rows = ar->rows;
  gk__sb has = {0}, note = {0};
  if (b->holdings) {
    b->holdings(&has, &note, rows, from, to, want, dev, flags);
  } else {
    int first = 1;
    for (size_t i = from; i < to; i++) {
      if (strcmp(rows[i].info.variant, want) != 0) continue;
      gk__sb_printf(&has, "%s%s %s", first ? "" : ", ", rows[i].info.backend,
                    rows[i].info.target);
      first = 0;
    }
  }
  int status = gk__fail(ar, GK_ENOIMAGE, "no image of '%s'%s%s fits %s; archive '%s' has %s%s%s",
                        kernel, *want ? " " : "", want, GK__DEVICE(dev), ar->name, gk__sb_str(&has),
                        note.len ? "; " : "", gk__sb_str(&note));
  gk__sb_free(&has);
  gk__sb_free(&note);
  return status;
}

/* gk__select and explain: the device's backend, the kernel's variant, the
 * backend's rule over its rows. The chosen row goes to *row (explain: row
 * NULL, the candidates are the answer). */
static int select_common(gk_archive *ar, const gk_device *dev,
                         const char *kernel, const char *variant,
                         unsigned flags, const gk__row **row, gk_candidate *cand,
                         size_t cap, size_t *ncand) {
  if (!ar) return GK_EINVAL;
  if (!dev || !kernel || (!row && !ncand))
    return gk__fail(ar, GK_EINVAL, "gk_archive_select: %s is NULL",
                    !dev      ? "dev"
                    : !kernel ? "kernel"
                              : "index");
  free(ar->msg);
  ar->msg = NULL;
  /* A caller may name the parameters in any order. */
  char canon[512];
  variant = canonical_variant(variant, canon, sizeof canon);
  const char *want = variant ? variant : "";

  const gk__backend *b = gk__backend_of(dev->backend);
  if (!b || strnlen(dev->arch, sizeof dev->arch) == sizeof dev->arch)
    return gk__fail(ar, GK_EINVAL,
                    "gk_archive_select: the device is not valid "
                    "(backend %d)",
                    (int)dev->backend);
  char why[256];
  int valid = b->valid(dev, why, sizeof why);

  /* The quick way, for a named variant (or "") on a valid device: read
   * only the rows of (kernel, backend, variant). Anything else - no such
   * rows, none that fits, a listing (explain), a damaged index - goes the
   * whole index's way, which also words the messages. */
  if (!ar->whole && !ar->broken && row && !cand && valid) {
    gk__row *some;
    size_t nsome;
    int suspect, rc = gk__index_some(ar, kernel, b->name, want, &some, &nsome, &suspect);
    if (rc != GK_OK) return rc;
    long best = nsome ? choose(b, some, 0, nsome, want, dev, flags, NULL, 0, NULL) : -1;
    if (best >= 0) {
      *row = &some[best];
      return GK_OK;
    }
  }
  int status = gk__index_whole(ar);
  size_t from = 0, to = 0;
  if (status != GK_OK || (status = find_variant(ar, kernel, variant, &from, &to, &want)))
    return status;
  if (!valid) return gk__fail(ar, GK_EINVAL, "device '%s' %s", GK__DEVICE(dev), why);
  long best = choose(b, ar->rows, from, to, want, dev, flags, cand, cap, ncand);
  if (!row) return GK_OK; /* explain */
  if (best < 0) return no_image(ar, b, dev, kernel, want, from, to, flags);
  *row = &ar->rows[best];
  return GK_OK;
}

int gk__select(gk_archive *ar, const gk_device *dev, const char *kernel, const char *variant,
               unsigned flags, const gk__row **row) {
  return select_common(ar, dev, kernel, variant, flags, row, NULL, 0, NULL);
}

GK_API int gk_archive_select_ex(gk_archive *ar, const gk_device *dev,
                                const char *kernel, const char *variant,
                                unsigned flags, size_t *index) {
  if (!index) return ar ? gk__fail(ar, GK_EINVAL, "gk_archive_select: index is NULL") : GK_EINVAL;
  const gk__row *row;
  int rc = gk__select(ar, dev, kernel, variant, flags, &row);
  if (rc == GK_OK) *index = row->pos;
  return rc;
}

GK_API int gk_archive_explain(gk_archive *ar, const gk_device *dev,
                              const char *kernel, const char *variant,
                              unsigned flags, gk_candidate *out, size_t cap,
                              size_t *count) {
  if (!count || (!out && cap))
    return ar ? gk__fail(ar, GK_EINVAL, "gk_archive_explain: %s is NULL",
                         !count ? "count" : "out")
              : GK_EINVAL;
  *count = 0;
  return select_common(ar, dev, kernel, variant, flags, NULL, out, cap, count);
}
