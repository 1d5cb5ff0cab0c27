/*
 * select.c - which image of a kernel fits a device best.
 *
 * Works on the index held in memory (rows sorted by kernel, backend,
 * target, variant). Each backend has its compatibility rule:
 *   cpu   the highest x86-64 level not above the device's level.
 * CUDA (SASS minor >= image minor, 'a'/'f' targets, PTX by driver version)
 * and ROCm (exact processor, feature settings) come with their backends;
 * until then their rows are never chosen.
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

/* The x86-64 rule: highest level <= the device's. Returns the row or -1. */
static long select_cpu(const gk__row *rows, size_t from, size_t to,
                       const char *variant, int dev_level) {
  long best = -1;
  int best_level = 0;
  for (size_t i = from; i < to; i++) {
    const gk_image_info *r = &rows[i].info;
    if (strcmp(r->backend, "cpu") != 0 || strcmp(r->variant, variant) != 0)
      continue;
    int level = gk__x86_level_from_name(r->target);
    if (level > best_level && level <= dev_level) {
      best = (long)i;
      best_level = level;
    }
  }
  return best;
}

GK_API int gk_archive_select(gk_archive *ar, const gk_device *dev,
                             const char *kernel, const char *variant,
                             size_t *index) {
  return gk_archive_select_ex(ar, dev, kernel, variant, 0, index);
}

/* `flags` matter to backends with JIT forms only (GK_LOAD_NO_JIT); the cpu
 * rule has none. */
GK_API int gk_archive_select_ex(gk_archive *ar, const gk_device *dev,
                                const char *kernel, const char *variant,
                                unsigned flags, size_t *index) {
  if (!ar) return GK_EINVAL;
  if (!dev || !kernel || !index)
    return gk__fail(ar, GK_EINVAL, "gk_archive_select: %s is NULL",
                    !dev      ? "dev"
                    : !kernel ? "kernel"
                              : "index");
  free(ar->msg);
  ar->msg = NULL;

  char devtext[160];
  const char *bname = gk_backend_name(dev->backend);
  if (!bname || strnlen(dev->arch, sizeof dev->arch) == sizeof dev->arch)
    return gk__fail(ar, GK_EINVAL,
                    "gk_archive_select: the device is not valid "
                    "(backend %d)",
                    (int)dev->backend);
  gk_device_format(dev, devtext, sizeof devtext);

  /* Rows are sorted by kernel first: this kernel's rows are one run. */
  const gk__row *rows = ar->rows;
  size_t from = 0, to;
  while (from < ar->nrows && strcmp(rows[from].info.kernel, kernel) != 0)
    from++;
  for (to = from; to < ar->nrows && strcmp(rows[to].info.kernel, kernel) == 0;)
    to++;
  size_t var_off = offsetof(gk_image_info, variant);
  gk__sb sb = {0};
  int status;

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

  long best = -1;
  const char *note = "";
  if (dev->backend == GK_BACKEND_CPU) {
    int level = gk__x86_level_from_name(dev->arch);
    if (!level) {
      status = gk__fail(ar, GK_EINVAL,
                        "device '%s' has an unknown x86-64 level; valid: %s",
                        devtext, gk__x86_level_list());
      goto out;
    }
    best = select_cpu(rows, from, to, want, level);
  } else {
    note = " (libgk does not select images for this backend yet)";
  }
  if (best < 0) {
    int first = 1;
    for (size_t i = from; i < to; i++) {
      if (strcmp(rows[i].info.variant, want) != 0) continue;
      gk__sb_printf(&sb, "%s%s %s", first ? "" : ", ", rows[i].info.backend,
                    rows[i].info.target);
      first = 0;
    }
    status = gk__fail(ar, GK_ENOIMAGE,
                      "no image of '%s'%s%s fits %s%s; archive "
                      "'%s' has %s",
                      kernel, *want ? " " : "", want, devtext, note, ar->name,
                      gk__sb_str(&sb));
    goto out;
  }
  *index = (size_t)best;
  status = GK_OK;
out:
  gk__sb_free(&sb);
  return status;
}
