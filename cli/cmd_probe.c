/* cmd_probe.c - gk probe: which device is here (or which one a spec
 * describes), and which image of each kernel it would get from an archive.
 * Answers an operator's "what would this machine load?" without a GPU. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "products.h"
#include "util.h"

static const char probe_usage[] =
  "usage: gk probe [FILE] [--device SPEC] [--kernel NAME] [-v] [--no-jit] [--json]\n"
  "       gk probe FILE --launch KERNEL VARIANT name=value... [--device SPEC] [--json]\n"
  "\n"
  "Shows the device libgk finds here (CUDA > ROCm > Metal > Vulkan > CPU), the\n"
  "cards its target is (NVIDIA's and AMD's lists) and, given an archive, the\n"
  "image each kernel and variant would get on it, one line each, or why none\n"
  "fits; then what the build of the archive skipped for the device's backend\n"
  "and the driver its images need.\n"
  "\n"
  "  --device SPEC  describe a device instead of detecting one:\n"
  "                 cpu:x86-64-v2, cuda:sm_86, cuda:sm_90,driver=12.4,\n"
  "                 rocm:gfx90a:sramecc+:xnack-; short forms: sm_86,\n"
  "                 cuda:8.6, gfx90a, x86-64-v2; or a product: 'RTX 4090',\n"
  "                 MI300X, 'Radeon RX 7900 XTX' (its target, said first)\n"
  "  --kernel NAME  only that kernel (every variant of it)\n"
  "  -v, --verbose  under each kernel, every image of it with the rule's\n"
  "                 verdict: '*' the one chosen, '+' fits but ranks lower,\n"
  "                 '-' does not fit, and why\n"
  "  --no-jit       never choose an image the driver must compile (CUDA PTX)\n"
  "  --json         {device, product?, products: [name], backends?, images:\n"
  "                 [{kernel, variant, backend, target, format} or {kernel,\n"
  "                 variant, error, message}, each with candidates: [{backend,\n"
  "                 target, format, fits, chosen, why}]], missing, skipped:\n"
  "                 [{backend, target?, reason}], min_driver} on stdout\n"
  "\n"
  "Exit status: 0 when every kernel (and variant) has an image for the\n"
  "device, 1 when some has none or the archive cannot be read, 2 on usage\n"
  "errors.\n"
  "\n"
  "--launch: what a launch of each entry point of the image KERNEL VARIANT ('-'\n"
  "for none) gets would use with the integer parameters given as name=value:\n"
  "grid (cuda, rocm) or groups, block, shared memory, the scalar block; with\n"
  "the driver's limits, or a --device spec's known ones. --json: {device,\n"
  "kernel, variant, backend, target, format, limits, launches: [{entry, grid |\n"
  "groups: [x, y, z], block: [x, y, z], shared, buffers?, scalars?}]}.\n";

typedef struct probe_args {
  const char *path, *device, *kernel;
  int verbose, no_jit, json;
} probe_args;

static const cli_option probe_opts[] = {
  CLI_VALUE("--device", NULL, "SPEC", probe_args, device),
  CLI_VALUE("--kernel", NULL, "NAME", probe_args, kernel),
  CLI_FLAG("--verbose", "-v", probe_args, verbose),
  CLI_FLAG("--no-jit", NULL, probe_args, no_jit),
  CLI_FLAG("--json", NULL, probe_args, json),
  CLI_END};
static const cli_command probe_cmd = {
  .name = "probe", .usage = probe_usage, .opts = probe_opts, CLI_ARCHIVE(probe_args)};

typedef struct kv {
  const char *kernel, *variant;
} kv;

static int kv_cmp(const void *pa, const void *pb) {
  const kv *a = pa, *b = pb;
  int c = strcmp(a->kernel, b->kernel);
  return c ? c : strcmp(a->variant, b->variant);
}

/* The distinct (kernel, variant) pairs of the archive, sorted; only
 * those of `only` when it is not NULL. */
static kv *distinct_kernels(gk_archive *ar, const char *only, size_t *count) {
  size_t n = 0, m = 0;
  gk_archive_count(ar, &n);
  kv *all = calloc(n ? n : 1, sizeof *all);
  if (!all) return NULL;
  for (size_t i = 0; i < n; i++) {
    gk_image_info im;
    gk_archive_image(ar, i, &im);
    all[i].kernel = im.kernel;
    all[i].variant = im.variant;
  }
  qsort(all, n, sizeof *all, kv_cmp);
  for (size_t i = 0; i < n; i++)
    if (!only || !strcmp(all[i].kernel, only)) all[m++] = all[i];
  n = m;
  m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || kv_cmp(&all[m - 1], &all[i])) all[m++] = all[i];
  *count = m;
  return all;
}

/* One line's worth of why nothing fits: the device's backend has no image
 * of the kernel, or the first of its images and why that one does not. */
static void short_reason(const json_t *cand, const char *backend, char *buf, size_t size) {
  size_t n = 0, first = (size_t)-1;
  for (size_t i = 0; i < json_array_size(cand); i++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(cand, i), "backend")),
                backend)) {
      if (first == (size_t)-1) first = i;
      n++;
    }
  if (!n) {
    snprintf(buf, size, "no %s image", backend);
    return;
  }
  json_t *c = json_array_get(cand, first);
  snprintf(buf, size, "%zu %s image%s, none fits (%s: %s%s)", n, backend, n == 1 ? "" : "s",
           json_string_value(json_object_get(c, "target")),
           json_string_value(json_object_get(c, "why")), n > 1 ? "; -v for the others" : "");
}

/* Whether a skipped target is the device's own: its processor, before any
 * ':feature' setting (gfx942 for gfx942:sramecc+:xnack-). */
static int same_processor(const char *target, const char *arch) {
  size_t a = strcspn(arch, ":"), t = strcspn(target, ":");
  return a == t && strncmp(target, arch, a) == 0;
}
/* Why each image of k was or was not chosen for dev (gk_archive_explain),
 * as JSON; *chosen is the row explain says a selection returns, or
 * (size_t)-1 when none. NULL when the loader cannot say (its message is on
 * the archive). */
static json_t *candidates_json(gk_archive *ar, const gk_device *dev, const kv *k,
                               unsigned flags, size_t *chosen) {
  size_t count = 0, cap = 16;
  gk_candidate *c = NULL;
  int st;
  *chosen = (size_t)-1;
  /* The count may exceed the array: grow it and ask again. */
  for (;;) {
    gk_candidate *more = realloc(c, cap * sizeof *c);
    if (!more) {
      free(c);
      return NULL;
    }
    c = more;
    st = gk_archive_explain(ar, dev, k->kernel, k->variant, flags, c, cap, &count);
    if (st != GK_OK || count <= cap) break;
    cap = count;
  }
  if (st != GK_OK) {
    free(c);
    return NULL;
  }
  json_t *arr = json_array();
  for (size_t i = 0; i < count; i++) {
    gk_image_info im;
    gk_archive_image(ar, c[i].index, &im);
    if (c[i].chosen) *chosen = c[i].index;
    json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:b, s:b, s:s}", "backend",
                                         im.backend, "target", im.target, "format",
                                         im.format, "fits", c[i].fits, "chosen",
                                         c[i].chosen, "why", c[i].why));
  }
  free(c);
  return arr;
}

/* -v: a kernel's candidates under its line, marked '*' chosen, '+' fits,
 * '-' does not (every one '-' when none was chosen). */
static void print_candidates(const json_t *cand, int chosen) {
  for (size_t j = 0; j < json_array_size(cand); j++) {
    json_t *c = json_array_get(cand, j);
    char mark = !chosen ? '-'
                : json_is_true(json_object_get(c, "chosen")) ? '*'
                : json_is_true(json_object_get(c, "fits"))   ? '+'
                                                             : '-';
    printf("      %c %s %s (%s): %s\n", mark, json_string_value(json_object_get(c, "backend")),
           json_string_value(json_object_get(c, "target")),
           json_string_value(json_object_get(c, "format")),
           json_string_value(json_object_get(c, "why")));
  }
}

/* What kernel/variant k gets on dev: the row explain chose, or why none
 * (the selection's message, *missing counting it), as a JSON row with its
 * candidates, printed unless --json. 0, or -1 when the loader could not
 * explain. */
static int probe_kernel(gk_archive *ar, const gk_device *dev, const kv *k, unsigned flags,
                        const probe_args *a, json_t *rows, size_t *missing) {
  size_t idx;
  int st = GK_OK;
  char unexplained[1024] = "";
  json_t *row, *cand = candidates_json(ar, dev, k, flags, &idx);
  if (!cand) snprintf(unexplained, sizeof unexplained, "%s", gk_archive_errmsg(ar));
  /* Explain says which row a selection returns; a selection is asked
   * only for what explain cannot give: why there is none. */
  if (idx == (size_t)-1) st = gk_archive_select_ex(ar, dev, k->kernel, k->variant, flags, &idx);
  if (st == GK_OK) {
    gk_image_info im;
    gk_archive_image(ar, idx, &im);
    row = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kernel", im.kernel, "variant", im.variant,
                    "backend", im.backend, "target", im.target, "format", im.format);
    if (!a->json) {
      printf("  %-18s %-10s -> %s %s (%s)\n", im.kernel, *im.variant ? im.variant : "-",
             im.backend, im.target, im.format);
      if (a->verbose && cand) print_candidates(cand, 1);
    }
  } else {
    row = json_pack("{s:s, s:s, s:s, s:s}", "kernel", k->kernel, "variant", k->variant, "error",
                    gk_strerror(st), "message", gk_archive_errmsg(ar));
    (*missing)++;
    if (!a->json) {
      /* Without -v, the candidates give a line's reason. */
      char why_none[512];
      if (a->verbose || !cand)
        snprintf(why_none, sizeof why_none, "%s", gk_archive_errmsg(ar));
      else
        short_reason(cand, gk_backend_name(dev->backend), why_none, sizeof why_none);
      printf("  %-18s %-10s -> none: %s\n", k->kernel, *k->variant ? k->variant : "-",
             why_none);
      if (a->verbose && cand) print_candidates(cand, 0);
    }
  }
  json_object_set_new(row, "candidates", cand ? cand : json_array());
  json_array_append_new(rows, row);
  if (cand) return 0;
  cli_error("probe", "cannot explain the choice for '%s' %s: %s", k->kernel, k->variant,
            unexplained);
  return -1;
}

/* Every backend's detection result: what an operator checks first. */
static json_t *backends_json(int print) {
  json_t *arr = json_array();
  for (int b = GK_BACKEND_CUDA; b <= GK_BACKEND_CPU; b++) {
    gk_device d;
    char why[256] = "", desc[128];
    int rc = gk_device_detect_backend((gk_backend)b, &d, why, sizeof why);
    if (rc == GK_OK) {
      gk_device_format(&d, desc, sizeof desc);
      json_array_append_new(arr, json_pack("{s:s, s:b, s:s, s:s}", "backend",
                                           gk_backend_name(b), "present", 1,
                                           "device", desc, "name", d.name));
      if (print) printf("  %-7s %s (%s)\n", gk_backend_name(b), desc, d.name);
    } else {
      json_array_append_new(arr, json_pack("{s:s, s:b, s:s}", "backend",
                                           gk_backend_name(b), "present", 0,
                                           "why", *why ? why : gk_strerror(rc)));
      if (print)
        printf("  %-7s none: %s\n", gk_backend_name(b), *why ? why : gk_strerror(rc));
    }
  }
  return arr;
}

int cmd_probe(int argc, char **argv) {
  probe_args a = {0};
  int rc = EXIT_OK;
  gk_device dev;
  char desc[128], why[1024] = "", names[2048];
  const char *product = NULL;

  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--launch") == 0 && !cli_is_help(argv[1])) return cmd_probe_launch(argc, argv);
  int st = cli_parse(&probe_cmd, argc, argv, &a);
  if (st >= 0) return st;
  const char *path = a.path, *spec = a.device, *only = a.kernel;
  int json = a.json;
  unsigned flags = a.no_jit ? GK_LOAD_NO_JIT : 0;
  if (only && !path) {
    cli_error("probe", "--kernel needs an archive (see 'gk probe --help')");
    return EXIT_USAGE;
  }
  if (spec) {
    if (cli_device_parse(spec, &dev, &product, why, sizeof why) != GK_OK) {
      cli_error("probe", "--device '%s': %s", spec, why);
      return EXIT_USAGE;
    }
  } else if (gk_device_detect(&dev) != GK_OK) {
    cli_error("probe", "no device found, not even the CPU");
    return EXIT_FAIL;
  }
  gk_device_format(&dev, desc, sizeof desc);

  /* The cards the device's target is, and the product --device named. */
  const cli_target *t = cli_target_find(gk_backend_name(dev.backend), dev.arch);
  const char *list[64];
  size_t np = cli_target_products(t, list, 64);
  json_t *root = json_pack("{s:s, s:s, s:s, s:[]}", "device", desc, "backend",
                           gk_backend_name(dev.backend), "name", dev.name, "products");
  for (size_t i = 0; i < np && i < 64; i++)
    json_array_append_new(json_object_get(root, "products"), json_string(list[i]));
  if (product) json_object_set_new(root, "product", json_string(product));
  cli_target_products_text(t, names, sizeof names);
  if (!json && product) printf("%s is %s (%s)\n", spec, desc, product);
  if (!json) printf("device: %s%s%s%s\n", desc, *dev.name ? " (" : "", dev.name,
                    *dev.name ? ")" : "");
  if (!json && *names) printf("products: %s\n", names);
  if (!spec) {
    if (!json) printf("backends:\n");
    json_object_set_new(root, "backends", backends_json(!json));
  }
  if (path) {
    gk_archive *ar = cli_open_archive("probe", path, 0);
    size_t n = 0, missing = 0;
    kv *ks;
    json_t *skipped = NULL, *drivers = NULL;
    if (!ar) {
      json_decref(root);
      return EXIT_FAIL;
    }
    if (cli_build_notes("probe", path, (void **)&skipped, (void **)&drivers)) {
      gk_archive_close(ar);
      json_decref(root);
      return EXIT_FAIL;
    }
    ks = distinct_kernels(ar, only, &n);
    if (ks && only && n == 0) {
      kv *all = distinct_kernels(ar, NULL, &n);
      char names[1024] = "";
      size_t len = 0;
      for (size_t i = 0; all && i < n && len + 1 < sizeof names; i++)
        if (i == 0 || strcmp(all[i].kernel, all[i - 1].kernel))
          len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                                  all[i].kernel);
      cli_error("probe", "no kernel '%s' in '%s'; it has %s", only, path, *names ? names : "none");
      free(all);
      free(ks);
      json_decref(skipped), json_decref(drivers), json_decref(root);
      gk_archive_close(ar);
      return EXIT_FAIL;
    }
    json_t *rows = json_array();
    if (!json) printf("images:\n");
    for (size_t i = 0; ks && i < n; i++)
      if (probe_kernel(ar, &dev, &ks[i], flags, &a, rows, &missing) != 0) rc = EXIT_FAIL;
    json_object_set_new(root, "images", rows);
    json_object_set_new(root, "missing", json_integer((json_int_t)missing));
    /* What the build skipped for this backend, and the driver it needs:
     * an MI300X learns here that gfx942 was planned but not built. */
    const char *bname = gk_backend_name(dev.backend);
    json_t *mine = json_array();
    for (size_t i = 0; i < json_array_size(skipped); i++) {
      json_t *e = json_array_get(skipped, i);
      if (strcmp(json_string_value(json_object_get(e, "backend")), bname)) continue;
      json_array_append(mine, e);
      if (json) continue;
      const char *t = json_string_value(json_object_get(e, "target"));
      char line[1024];
      cli_skip_text(e, line, sizeof line);
      printf("%s%s\n", line,
             t && same_processor(t, dev.arch) ? " (this device's target)" : "");
    }
    json_object_set_new(root, "skipped", mine);
    json_t *need = json_object_get(drivers, bname);
    json_object_set(root, "min_driver", json_is_string(need) ? need : json_null());
    if (!json && json_is_string(need)) {
      int have = dev.driver_version;
      printf("%s: images need a driver >= %s", bname, json_string_value(need));
      if (have > 0)
        printf(", this device's is %d.%d", have / 1000, have % 1000 / 10);
      putchar('\n');
    }
    if (missing) {
      cli_error("probe", "%zu of %zu kernels/variants have no image for %s", missing, n, desc);
      rc = EXIT_FAIL;
    }
    json_decref(skipped);
    json_decref(drivers);
    free(ks);
    gk_archive_close(ar);
  }
  if (json) {
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
  }
  json_decref(root);
  return rc;
}
