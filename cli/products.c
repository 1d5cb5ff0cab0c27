/*
 * products.c - the products behind each GPU target, and back from a name.
 *
 * One table, every target of recipes/toolchains (nvcc.lua, hipcc.lua,
 * hipclang.lua) whose vendor names products for it. The names are the
 * vendors', as their lists write them, read on 2026-11-26 from stored copies
 * of:
 *   NVIDIA  "CUDA GPU Compute Capability", https://developer.nvidia.com/cuda-gpus
 *           (compute capability 12.1 down to 7.5: the stored page stops
 *           inside 8.6, its rest is from a verbatim copy of the same table;
 *           older capabilities are on the legacy page, and CUDA 13 builds
 *           none of them)
 *   LLVM    "User Guide for AMDGPU Backend", https://llvm.org/docs/AMDGPUUsage.html:
 *           the "Example Products" column of the AMDGPU Processors table and
 *           the Supported Processors of the AMDGPU Generic Processors table
 *   AMD     "AMD GPU specifications", https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html:
 *           the Name (Ryzen APUs: the Graphics model) of each LLVM target name
 * A target no list names products for is not here (sm_88, gfx904, gfx909,
 * gfx940, gfx941, gfx1013, gfx1033 to gfx1036, gfx1153; Metal, Vulkan and
 * CPU targets): nothing is said rather than guessed. A generic AMD target
 * lists the processors LLVM says it runs on, and has their products.
 *
 * The rows are the targets as a device reports them: an image's target
 * finds the row of its compute capability or processor (cli_target_find).
 * NVIDIA's rule lets an sm_XY image run on later X.y devices too; the row
 * names only the cards of X.Y itself, what an operator looks for.
 */
#include "products.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

const char cli_products_source[] =
    "NVIDIA's CUDA GPUs list, LLVM's AMDGPU processors, AMD's ROCm GPU specifications; "
    "read 2026-11-26";

#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

static const cli_target table[] = {
  /* NVIDIA, by compute capability. */
  {"cuda", "sm_75", NAMES("NVIDIA T4", "Quadro RTX 8000", "Quadro RTX 6000", "Quadro RTX 5000",
                          "Quadro RTX 4000", "Quadro RTX 3000", "Quadro T2000", "NVIDIA T1200",
                          "NVIDIA T1000", "NVIDIA T600", "NVIDIA T500", "NVIDIA T400",
                          "GeForce GTX 1650 Ti", "NVIDIA TITAN RTX", "GeForce RTX 2080 Ti",
                          "GeForce RTX 2080", "GeForce RTX 2070", "GeForce RTX 2060"), NULL},
  {"cuda", "sm_80", NAMES("NVIDIA A100", "NVIDIA A30"), NULL},
  {"cuda", "sm_86", NAMES("NVIDIA A40", "NVIDIA A10", "NVIDIA A16", "NVIDIA A2",
                          "NVIDIA RTX A6000", "NVIDIA RTX A5000", "NVIDIA RTX A4000",
                          "NVIDIA RTX A3000", "NVIDIA RTX A2000", "GeForce RTX 3090 Ti",
                          "GeForce RTX 3090", "GeForce RTX 3080 Ti", "GeForce RTX 3080",
                          "GeForce RTX 3070 Ti", "GeForce RTX 3070", "GeForce RTX 3060 Ti",
                          "GeForce RTX 3060", "GeForce RTX 3050 Ti", "GeForce RTX 3050"), NULL},
  {"cuda", "sm_87", NAMES("Jetson AGX Orin", "Jetson Orin NX", "Jetson Orin Nano"), NULL},
  {"cuda", "sm_89", NAMES("NVIDIA L4", "NVIDIA L40", "NVIDIA L40S", "NVIDIA RTX 6000 Ada",
                          "NVIDIA RTX 5000 Ada", "NVIDIA RTX 4500 Ada", "NVIDIA RTX 4000 Ada",
                          "NVIDIA RTX 4000 SFF Ada", "NVIDIA RTX 2000 Ada", "GeForce RTX 4090",
                          "GeForce RTX 4080", "GeForce RTX 4070 Ti", "GeForce RTX 4070",
                          "GeForce RTX 4060 Ti", "GeForce RTX 4060", "GeForce RTX 4050"), NULL},
  {"cuda", "sm_90", NAMES("NVIDIA GH200", "NVIDIA H200", "NVIDIA H100"), NULL},
  {"cuda", "sm_100", NAMES("NVIDIA GB200", "NVIDIA B200"), NULL},
  {"cuda", "sm_103", NAMES("NVIDIA GB300", "NVIDIA B300"), NULL},
  {"cuda", "sm_110", NAMES("Jetson T5000", "Jetson T4000"), NULL},
  {"cuda", "sm_120", NAMES("NVIDIA RTX PRO 6000 Blackwell Server Edition",
                           "NVIDIA RTX PRO 4500 Blackwell Server Edition",
                           "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                           "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
                           "NVIDIA RTX PRO 5000 Blackwell", "NVIDIA RTX PRO 4500 Blackwell",
                           "NVIDIA RTX PRO 4000 Blackwell", "NVIDIA RTX PRO 4000 Blackwell SFF Edition",
                           "NVIDIA RTX PRO 2000 Blackwell", "GeForce RTX 5090", "GeForce RTX 5080",
                           "GeForce RTX 5070 Ti", "GeForce RTX 5070", "GeForce RTX 5060 Ti",
                           "GeForce RTX 5060", "GeForce RTX 5050"), NULL},
  {"cuda", "sm_121", NAMES("NVIDIA GB10 (DGX Spark)"), NULL},

  /* AMD, by processor (GCN5/CDNA, RDNA 1 to 4, then the generic targets). */
  {"rocm", "gfx900", NAMES("Radeon Vega Frontier Edition", "Radeon RX Vega 56", "Radeon RX Vega 64",
                           "Radeon RX Vega 64 Liquid", "Radeon Instinct MI25"), NULL},
  {"rocm", "gfx902", NAMES("Ryzen 3 2200G", "Ryzen 5 2400G"), NULL},
  {"rocm", "gfx906", NAMES("Radeon Instinct MI50", "Radeon Instinct MI60", "Radeon VII",
                           "Radeon Pro VII"), NULL},
  {"rocm", "gfx908", NAMES("AMD Instinct MI100"), NULL},
  {"rocm", "gfx90a", NAMES("AMD Instinct MI210", "AMD Instinct MI250", "AMD Instinct MI250X"), NULL},
  {"rocm", "gfx90c", NAMES("Ryzen 7 4700G", "Ryzen 7 4700GE", "Ryzen 5 4600G", "Ryzen 5 4600GE",
                           "Ryzen 3 4300G", "Ryzen 3 4300GE", "Ryzen Pro 4000G", "Ryzen 7 Pro 4700G",
                           "Ryzen 7 Pro 4750GE", "Ryzen 5 Pro 4650G", "Ryzen 5 Pro 4650GE",
                           "Ryzen 3 Pro 4350G", "Ryzen 3 Pro 4350GE"), NULL},
  {"rocm", "gfx942", NAMES("AMD Instinct MI300X", "AMD Instinct MI300A", "AMD Instinct MI325X"), NULL},
  {"rocm", "gfx950", NAMES("AMD Instinct MI355X", "AMD Instinct MI350X", "AMD Instinct MI350P"), NULL},
  {"rocm", "gfx1010", NAMES("Radeon RX 5700", "Radeon RX 5700 XT", "Radeon Pro 5600 XT",
                            "Radeon Pro 5600M"), NULL},
  {"rocm", "gfx1011", NAMES("Radeon Pro V520"), NULL},
  {"rocm", "gfx1012", NAMES("Radeon RX 5500", "Radeon RX 5500 XT", "Radeon Pro W5500"), NULL},
  {"rocm", "gfx1030", NAMES("Radeon RX 6950 XT", "Radeon RX 6900 XT", "Radeon RX 6800 XT",
                            "Radeon RX 6800", "Radeon PRO W6800", "Radeon PRO V620"), NULL},
  {"rocm", "gfx1031", NAMES("Radeon RX 6750 XT", "Radeon RX 6700 XT", "Radeon RX 6700"), NULL},
  {"rocm", "gfx1032", NAMES("Radeon RX 6650 XT", "Radeon RX 6600 XT", "Radeon RX 6600",
                            "Radeon PRO W6600"), NULL},
  {"rocm", "gfx1100", NAMES("Radeon RX 7900 XTX", "Radeon RX 7900 XT", "Radeon RX 7900 GRE",
                            "Radeon PRO W7900", "Radeon PRO W7900 Dual Slot", "Radeon PRO W7800",
                            "Radeon PRO W7800 48GB"), NULL},
  {"rocm", "gfx1101", NAMES("Radeon RX 7800 XT", "Radeon RX 7700 XT", "Radeon RX 7700",
                            "Radeon PRO W7700", "Radeon PRO V710"), NULL},
  {"rocm", "gfx1102", NAMES("Radeon RX 7600 XT", "Radeon RX 7600"), NULL},
  {"rocm", "gfx1103", NAMES("Radeon 780M", "Radeon 760M", "Radeon 740M"), NULL},
  {"rocm", "gfx1150", NAMES("Radeon 890M", "Radeon 880M"), NULL},
  {"rocm", "gfx1151", NAMES("Radeon 8060S", "Radeon 8065S", "Radeon 8050S", "Radeon 8040S"), NULL},
  {"rocm", "gfx1152", NAMES("Radeon 860M", "Radeon 840M", "Radeon 820M"), NULL},
  {"rocm", "gfx1200", NAMES("Radeon RX 9060 XT", "Radeon RX 9060 XT LP", "Radeon RX 9060",
                            "Radeon RX 9050"), NULL},
  {"rocm", "gfx1201", NAMES("Radeon RX 9070 XT", "Radeon RX 9070", "Radeon RX 9070 GRE",
                            "Radeon AI PRO R9700", "Radeon AI PRO R9700S", "Radeon AI PRO R9600",
                            "Radeon AI PRO R9600D"), NULL},
  {"rocm", "gfx9-generic", NULL,
   NAMES("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c")},
  {"rocm", "gfx9-4-generic", NULL, NAMES("gfx942", "gfx950")},
  {"rocm", "gfx10-1-generic", NULL, NAMES("gfx1010", "gfx1011", "gfx1012", "gfx1013")},
  {"rocm", "gfx10-3-generic", NULL,
   NAMES("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036")},
  {"rocm", "gfx11-generic", NULL,
   NAMES("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153")},
  {"rocm", "gfx12-generic", NULL, NAMES("gfx1200", "gfx1201")},
};
#define NTARGETS (sizeof table / sizeof table[0])

/* ---- target -> products --------------------------------------------------- */

const cli_target *cli_target_find(const char *backend, const char *target) {
  char key[32];
  if (!backend || !target) return NULL;
  if (strcmp(backend, "cuda") == 0) {
    /* sm_XY, sm_XYa, sm_XYf and compute_XY: the capability X.Y. */
    const char *p = strncmp(target, "sm_", 3) == 0 ? target + 3
                    : strncmp(target, "compute_", 8) == 0 ? target + 8 : NULL;
    if (!p) return NULL;
    size_t digits = strspn(p, "0123456789");
    const char *end = p + digits;
    if (*end == 'a' || *end == 'f') end++;
    if (digits < 2 || digits > 3 || *end) return NULL;
    snprintf(key, sizeof key, "sm_%.*s", (int)digits, p);
  } else {
    /* A rocm target ID's processor, before any ":feature+". */
    snprintf(key, sizeof key, "%.*s", (int)strcspn(target, ":"), target);
  }
  for (size_t i = 0; i < NTARGETS; i++)
    if (strcmp(table[i].backend, backend) == 0 && strcmp(table[i].target, key) == 0)
      return &table[i];
  return NULL;
}

size_t cli_target_products(const cli_target *t, const char **out, size_t max) {
  size_t n = 0;
  if (!t) return 0;
  if (!t->covers) {
    for (; t->products[n]; n++)
      if (n < max) out[n] = t->products[n];
    return n;
  }
  for (const char *const *c = t->covers; *c; c++) {
    const cli_target *p = cli_target_find(t->backend, *c);
    for (size_t i = 0; p && p->products[i]; i++, n++)
      if (n < max) out[n] = p->products[i];
  }
  return n;
}

void cli_target_products_text(const cli_target *t, char *buf, size_t size) {
  const char *names[64];
  size_t n = cli_target_products(t, names, 64), len = 0;
  if (size) buf[0] = '\0';
  for (size_t i = 0; i < n && i < 64 && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", names[i]);
}

/* ---- name -> product ------------------------------------------------------ */

/*
 * Names compare as words: lower case, letters and digits apart ("MI300X" is
 * mi 300 x, "RTX4090" rtx 4090), punctuation and the vendors' own names
 * (nvidia, amd) dropped, since a driver writes "NVIDIA GeForce RTX 4090"
 * where the list has "GeForce RTX 4090".
 */
enum { MAXWORDS = 16, WORDLEN = 24 };
typedef struct words {
  char w[MAXWORDS][WORDLEN];
  int n;
} words;

static int kind(int c) { return isdigit(c) ? 1 : isalpha(c) ? 2 : 0; }

static void split(const char *s, words *out) {
  out->n = 0;
  while (*s) {
    int k = kind((unsigned char)*s);
    if (!k) {
      s++;
      continue;
    }
    size_t len = 0;
    char w[WORDLEN];
    for (; kind((unsigned char)*s) == k; s++)
      if (len + 1 < sizeof w) w[len++] = (char)tolower((unsigned char)*s);
    w[len] = '\0';
    if (strcmp(w, "nvidia") && strcmp(w, "amd") && out->n < MAXWORDS)
      memcpy(out->w[out->n++], w, len + 1);
  }
}

/* How the words of a product match the query's: 3 the same, 2 the product's
 * are the first of the query's (a driver's "H100 80GB HBM3"), 1 the query's
 * are among the product's in order ("W7900" of "Radeon PRO W7900"), 0 not. */
static int match(const words *q, const words *p) {
  int i = 0;
  if (q->n == 0) return 0;
  while (i < p->n && i < q->n && strcmp(p->w[i], q->w[i]) == 0) i++;
  if (i == p->n) return i == q->n ? 3 : 2;
  i = 0;
  for (int j = 0; j < p->n && i < q->n; j++)
    if (strcmp(p->w[j], q->w[i]) == 0) i++;
  return i == q->n;
}

/* The words run together ("rtx4090"), for distances. */
static void squash(const words *w, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (int i = 0; i < w->n; i++)
    len += (size_t)snprintf(out + len, len < size ? size - len : 0, "%s", w->w[i]);
}

/* Edits that turn q into some part of p (whatever p has before and after
 * costs nothing): how near a mistyped "rtx 4099" is to "GeForce RTX 4090". */
static size_t distance(const char *q, const char *p) {
  size_t m = strlen(q), n = strlen(p), best, row[WORDLEN * MAXWORDS + 1];
  if (n > WORDLEN * MAXWORDS) n = WORDLEN * MAXWORDS;
  for (size_t j = 0; j <= n; j++) row[j] = 0;
  for (size_t i = 1; i <= m; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= n; j++) {
      size_t up = row[j], v = diag + (q[i - 1] != p[j - 1]);
      if (up + 1 < v) v = up + 1;
      if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
      diag = up;
      row[j] = v;
    }
  }
  best = row[0];
  for (size_t j = 1; j <= n; j++)
    if (row[j] < best) best = row[j];
  return best;
}

int cli_product_find(const char *query, cli_product *out, size_t max, size_t *n) {
  words q, p;
  int best = 0, longest = 0;
  *n = 0;
  split(query ? query : "", &q);
  /* The best kind of match, and for a driver's longer name the product
   * that takes the most of it ("RTX 3090 Ti" before "RTX 3090"). */
  for (size_t i = 0; i < NTARGETS; i++)
    for (size_t j = 0; table[i].products && table[i].products[j]; j++) {
      split(table[i].products[j], &p);
      int m = match(&q, &p);
      if (m > best) best = m, longest = 0;
      if (m == best && m == 2 && p.n > longest) longest = p.n;
    }
  /* Then every product of that match, one a target: its shortest name. */
  size_t targets = 0;
  for (size_t i = 0; i < NTARGETS && best; i++) {
    int shortest = 0;
    for (size_t j = 0; table[i].products && table[i].products[j]; j++) {
      split(table[i].products[j], &p);
      if (match(&q, &p) != best || (best == 2 && p.n != longest)) continue;
      if (!shortest) {
        if (targets++ < max) out[(*n)++] = (cli_product){table[i].products[j], &table[i]};
      } else if (p.n < shortest && *n && out[*n - 1].target == &table[i]) {
        out[*n - 1].name = table[i].products[j];
      } else {
        continue;
      }
      shortest = p.n;
    }
  }
  if (targets) return targets == 1 ? CLI_PRODUCT_FOUND : CLI_PRODUCT_AMBIGUOUS;

  /* None: the names nearest the query, each no more than half its length
   * away, best first. */
  char qs[WORDLEN * MAXWORDS], ps[WORDLEN * MAXWORDS];
  squash(&q, qs, sizeof qs);
  size_t limit = strlen(qs) / 2, dist[8];
  if (max > 8) max = 8;
  for (size_t i = 0; i < NTARGETS && *qs; i++)
    for (size_t j = 0; table[i].products && table[i].products[j]; j++) {
      split(table[i].products[j], &p);
      squash(&p, ps, sizeof ps);
      size_t d = distance(qs, ps), k = *n;
      if (d > limit) continue;
      while (k > 0 && dist[k - 1] > d) k--;
      if (k >= max) continue;
      size_t last = *n < max ? (*n)++ : max - 1;
      memmove(&out[k + 1], &out[k], (last - k) * sizeof *out);
      memmove(&dist[k + 1], &dist[k], (last - k) * sizeof *dist);
      out[k] = (cli_product){table[i].products[j], &table[i]};
      dist[k] = d;
    }
  return CLI_PRODUCT_NONE;
}

/* ---- --device ------------------------------------------------------------- */

/* Whether a --device value is meant as a spec, so that a mistake in it gets
 * the spec's own message ("did you mean cuda:sm_89?"), not product names. */
static int spec_like(const char *s) {
  static const char *const starts[] = {"sm", "compute_", "gfx", "x86"};
  char low[16];
  size_t i = 0;
  for (; s[i] && i + 1 < sizeof low; i++) low[i] = (char)tolower((unsigned char)s[i]);
  low[i] = '\0';
  if (strpbrk(s, ":,") || gk_backend_from_name(s) != GK_BACKEND_NONE) return 1;
  for (i = 0; i < sizeof starts / sizeof starts[0]; i++)
    if (strncmp(low, starts[i], strlen(starts[i])) == 0) return 1;
  return 0;
}

/* "A (cuda:sm_89), B (rocm:gfx1100)" for the products in p. */
static void list_products(const cli_product *p, size_t n, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%s (%s:%s)", i ? ", " : "", p[i].name,
                            p[i].target->backend, p[i].target->target);
}

int cli_device_parse(const char *spec, gk_device *dev, const char **product, char *why,
                     size_t why_size) {
  cli_product m[4];
  size_t n = 0;
  char list[512], target[64];
  *product = NULL;
  if (!why) why_size = 0;
  int st = gk_device_parse(spec, dev, why, why_size);
  if (st == GK_OK || !spec || spec_like(spec)) return st;
  switch (cli_product_find(spec, m, sizeof m / sizeof m[0], &n)) {
  case CLI_PRODUCT_FOUND:
    snprintf(target, sizeof target, "%s:%s", m[0].target->backend, m[0].target->target);
    st = gk_device_parse(target, dev, why, why_size);
    if (st != GK_OK) return st;
    snprintf(dev->name, sizeof dev->name, "%s (from a spec)", spec);
    *product = m[0].name;
    return GK_OK;
  case CLI_PRODUCT_AMBIGUOUS:
    list_products(m, n, list, sizeof list);
    snprintf(why, why_size, "'%s' could be %s%s; give the target or more of the name", spec,
             list, n == sizeof m / sizeof m[0] ? ", ..." : "");
    return GK_EINVAL;
  default:
    list_products(m, n > 3 ? 3 : n, list, sizeof list);
    snprintf(why, why_size,
             "not a device spec (BACKEND:ARCH, like cuda:sm_89) nor a product gk knows%s%s",
             n ? "; closest: " : " (like 'RTX 4090' or 'MI300X')", list);
    return GK_EINVAL;
  }
}
