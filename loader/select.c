/*
 * select.c - which image of a kernel fits a device best.
 *
 * Works on the index held in memory (rows sorted by kernel, backend,
 * variant, target). Each backend has its compatibility rule:
 *   cpu   the highest x86-64 level not above the device's level.
 *   cuda  exact 'a' match, then 'f' family, then same-major SASS (highest
 *         minor not above the device's), then PTX - with the driver version
 *         checked against the toolkit (cuda_arch.c).
 *   rocm  the device's processor with every +/- feature of the image equal
 *         to the device's, pinned images first; then a generic target
 *         covering the processor (rocm_isa.c).
 * The others will have their rules in their backends' files.
 *
 * When nothing fits, the message lists what the archive does hold, which
 * is what a user needs to decide between another device, another archive
 * or a rebuild.
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

/* The x86-64 rule: an image of level L runs on a CPU of level >= L; the
 * highest such level is the best. */
static int cpu_fits(const gk_device *dev, const gk_image_info *row,
                    unsigned flags, long *score, char *why, size_t why_size) {
  int have = gk__x86_level_from_name(dev->arch);
  int need = gk__x86_level_from_name(row->target);
  (void)flags;
  if (!need) {
    gk__say(why, why_size, "unknown x86-64 level '%s'", row->target);
    return 0;
  }
  if (need > have) {
    gk__say(why, why_size, "needs %s, device is %s", row->target, dev->arch);
    return 0;
  }
  *score = need;
  gk__say(why, why_size, "%s runs on %s", row->target, dev->arch);
  return 1;
}

static int cpu_valid(const gk_device *dev, char *why, size_t why_size) {
  if (gk__x86_level_from_name(dev->arch)) return 1;
  gk__say(why, why_size, "has an unknown x86-64 level; valid: %s",
           gk__x86_level_list());
  return 0;
}

/*
 * One compatibility rule per backend. `valid` checks the device itself
 * (NULL: any); `fits` says whether a row of the same backend runs on the
 * device, with a score to rank the rows that do (higher is better) and a
 * reason either way, which `gk probe` shows. A backend adds its line here
 * and its functions in its own file.
 */
static const struct {
  gk_backend backend;
  int (*valid)(const gk_device *dev, char *why, size_t why_size);
  gk__fits_fn fits;
} rules[] = {
  {GK_BACKEND_CPU, cpu_valid, cpu_fits},
  {GK_BACKEND_CUDA, gk__cuda_valid, gk__cuda_fits},   /* cuda_arch.c */
  {GK_BACKEND_ROCM, gk__rocm_valid, gk__rocm_fits}, /* rocm_isa.c */
  {GK_BACKEND_VULKAN, gk__vk_valid, gk__vk_fits},   /* vulkan_spirv.c */
  {GK_BACKEND_WGSL, gk__wgsl_valid, gk__wgsl_fits},   /* wgsl.c */
  {GK_BACKEND_METAL, gk__metal_valid, gk__metal_fits}, /* metal_target.c */
};

/* Backends that word "what the archive has" themselves when nothing fits
 * (else: a list of backend and target), with in `note` why, in the
 * backend's terms ("PTX from CUDA 13.0 needs a driver >= 13.0"). */
typedef void (*holdings_fn)(gk__sb *has, gk__sb *note, const gk__row *rows,
                            size_t from, size_t to, const char *variant,
                            const gk_device *dev, unsigned flags);
static const struct {
  gk_backend backend;
  holdings_fn fn;
} holdings_rules[] = {
  {GK_BACKEND_CUDA, gk__cuda_holdings},
};

static const gk__fits_fn *find_rule(gk_backend b, int (**valid)(const gk_device *, char *, size_t)) {
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (rules[i].backend == b) {
      *valid = rules[i].valid;
      return &rules[i].fits;
    }
  return NULL;
}

/*
 * Runs the device's rule over rows [from, to) of one variant. Fills up to
 * `cap` candidates (every row of the variant, in index order) and returns
 * the best row, or -1.
 */
static long choose(const gk__row *rows, size_t from, size_t to,
                   const char *want, const gk_device *dev, unsigned flags,
                   gk_candidate *cand, size_t cap, size_t *ncand) {
  int (*valid)(const gk_device *, char *, size_t) = NULL;
  const gk__fits_fn *fits = find_rule(dev->backend, &valid);
  const char *bname = gk_backend_name(dev->backend);
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
    if (strcmp(r->backend, bname) != 0)
      gk__say(why, wn, "built for %s, device is %s", r->backend, bname);
    else if (!fits)
      gk__say(why, wn, "libgk does not load %s images yet", bname);
    else
      ok = (*fits)(dev, r, flags, &score, why, wn);
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

/* `flags` matter to backends with JIT forms only (GK_LOAD_NO_JIT); the cpu
 * rule has none. */
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

/* select_ex and explain: finds the kernel's variant, runs the rule. */
static int select_common(gk_archive *ar, const gk_device *dev,
                         const char *kernel, const char *variant,
                         unsigned flags, size_t *index, gk_candidate *cand,
                         size_t cap, size_t *ncand) {
  if (!ar) return GK_EINVAL;
  if (!dev || !kernel || (!index && !ncand))
    return gk__fail(ar, GK_EINVAL, "gk_archive_select: %s is NULL",
                    !dev      ? "dev"
                    : !kernel ? "kernel"
                              : "index");
  free(ar->msg);
  ar->msg = NULL;
  /* A caller may name the parameters in any order. */
  char canon[512];
  variant = canonical_variant(variant, canon, sizeof canon);

  char devtext[160];
  const char *bname = gk_backend_name(dev->backend);
  if (!bname || strnlen(dev->arch, sizeof dev->arch) == sizeof dev->arch)
    return gk__fail(ar, GK_EINVAL,
                    "gk_archive_select: the device is not valid "
                    "(backend %d)",
                    (int)dev->backend);
  gk_device_format(dev, devtext, sizeof devtext);

  /* The quick way, for a named variant (or "") on a device with a rule:
   * read only the rows of (kernel, backend, variant). Anything else - no
   * such rows, none that fits, a listing (explain), a damaged index - goes
   * the whole index's way, which also words the messages. */
  int (*valid)(const gk_device *, char *, size_t) = NULL;
  const char *note = "";
  char why[256];
  if (!ar->whole && !ar->broken && index && !cand && find_rule(dev->backend, &valid) &&
      (!valid || valid(dev, why, sizeof why))) {
    gk__row *some;
    size_t nsome;
    int suspect, rc = gk__index_some(ar, kernel, bname, variant ? variant : "",
                                     &some, &nsome, &suspect);
    if (rc != GK_OK) return rc;
    long best = nsome ? choose(some, 0, nsome, variant ? variant : "", dev, flags,
                               NULL, 0, NULL)
                      : -1;
    if (best >= 0) {
      *index = some[best].pos;
      return GK_OK;
    }
  }
  int status = gk__index_whole(ar);
  if (status != GK_OK) return status;

  /* Rows are sorted by kernel first: this kernel's rows are one run. */
  const gk__row *rows = ar->rows;
  size_t from = 0, to;
  while (from < ar->nrows && strcmp(rows[from].info.kernel, kernel) != 0)
    from++;
  for (to = from; to < ar->nrows && strcmp(rows[to].info.kernel, kernel) == 0;)
    to++;
  size_t var_off = offsetof(gk_image_info, variant);
  gk__sb sb = {0};

  if (from == to) {
    list_distinct(&sb, rows, 0, ar->nrows, offsetof(gk_image_info, kernel));
    status = gk__fail(ar, GK_ENOKERNEL, "archive '%s' has no kernel '%s'; %s%s",
                      ar->name, kernel, ar->nrows ? "it has " : "it is empty",
                      gk__sb_str(&sb));
    goto out;
  }

  /* The variant: as named, or the kernel's only one when none is named. */
  const char *want = variant ? variant : "";
  size_t nvariants = 0, match = 0;
  const char *only = NULL;
  for (size_t i = from; i < to; i++) {
    const char *v = rows[i].info.variant;
    if (strcmp(v, want) == 0) match++;
    int dup = 0;
    for (size_t j = from; j < i && !dup; j++)
      dup = strcmp(rows[j].info.variant, v) == 0;
    if (!dup) {
      nvariants++;
      only = v;
    }
  }
  if (!match && !*want && nvariants == 1) {
    want = only;
  } else if (!match) {
    list_distinct(&sb, rows, from, to, var_off);
    if (*want)
      status =
          gk__fail(ar, GK_ENOKERNEL,
                   "archive '%s' has no variant '%s' of kernel '%s'; it has %s",
                   ar->name, want, kernel, gk__sb_str(&sb));
    else
      status = gk__fail(
          ar, GK_ENOKERNEL,
          "kernel '%s' has %zu variants in archive '%s' (%s); name one", kernel,
          nvariants, ar->name, gk__sb_str(&sb));
    goto out;
  }

  if (!find_rule(dev->backend, &valid))
    note = " (libgk does not select images for this backend yet)";
  else if (valid && !valid(dev, why, sizeof why)) {
    status = gk__fail(ar, GK_EINVAL, "device '%s' %s", devtext, why);
    goto out;
  }
  long best = choose(rows, from, to, want, dev, flags, cand, cap, ncand);
  if (!index) { /* explain: the candidates are the answer */
    status = GK_OK;
    goto out;
  }
  if (best < 0) {
    holdings_fn holdings = NULL;
    gk__sb extra = {0};
    for (size_t r = 0; r < sizeof holdings_rules / sizeof holdings_rules[0]; r++)
      if (holdings_rules[r].backend == dev->backend) holdings = holdings_rules[r].fn;
    if (holdings) {
      holdings(&sb, &extra, rows, from, to, want, dev, flags);
    } else {
      int first = 1;
      for (size_t i = from; i < to; i++) {
        if (strcmp(rows[i].info.variant, want) != 0) continue;
        gk__sb_printf(&sb, "%s%s %s", first ? "" : ", ", rows[i].info.backend,
                      rows[i].info.target);
        first = 0;
      }
    }
    status = gk__fail(ar, GK_ENOIMAGE,
                      "no image of '%s'%s%s fits %s%s; archive "
                      "'%s' has %s%s%s",
                      kernel, *want ? " " : "", want, devtext, note, ar->name,
                      gk__sb_str(&sb), extra.len ? "; " : "", gk__sb_str(&extra));
    gk__sb_free(&extra);
    goto out;
  }
  *index = (size_t)best;
  status = GK_OK;
out:
  gk__sb_free(&sb);
  return status;
}

GK_API int gk_archive_select_ex(gk_archive *ar, const gk_device *dev,
                                const char *kernel, const char *variant,
                                unsigned flags, size_t *index) {
  if (!index) return ar ? gk__fail(ar, GK_EINVAL, "gk_archive_select: index is NULL") : GK_EINVAL;
  return select_common(ar, dev, kernel, variant, flags, index, NULL, 0, NULL);
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
