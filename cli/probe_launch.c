/* probe_launch.c - gk probe FILE --launch KERNEL VARIANT name=value...: what
 * a launch of each entry point of the image this device gets would use
 * (block, grid or workgroups, shared memory, the scalar block), evaluated by
 * libgk from the row's launch with the device's limits: the driver's when
 * the device is here, the known ones of a --device spec. For operators and
 * for debugging a recipe's count expressions. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "products.h"
#include "util.h"

#define MAX_VALUES GK_LAUNCH_MAX_PARAMS

typedef struct value {
  const char *name; /* argv text up to '=' */
  size_t len;
  const char *text;
  int used;
} value;

/* The value named `name`, or NULL. */
static value *find(value *v, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strlen(name) == v[i].len && strncmp(v[i].name, name, v[i].len) == 0) return &v[i];
  return NULL;
}

/* Evaluates every entry of row `idx` with the values; prints or adds them to
 * `out`. EXIT_OK, EXIT_FAIL or EXIT_USAGE after saying why. */
static int launches(const gk_image_info *row, const gk_device_limits *lim, value *vals,
                    int nvals, int json, json_t *out) {
  json_t *entries = json_loads(row->entry, 0, NULL);
  const int buffers = strcmp(row->backend, "cuda") != 0 && strcmp(row->backend, "rocm") != 0;
  int rc = EXIT_OK;
  if (!json_is_array(entries) || json_array_size(entries) == 0) {
    cli_error("probe", "'%s' %s: the row's entry list '%s' is not a list of names", row->kernel,
              row->target, row->entry);
    json_decref(entries);
    return EXIT_FAIL;
  }
  int width = 14; /* the entries' names in a column */
  for (size_t e = 0; e < json_array_size(entries); e++) {
    const char *entry = json_string_value(json_array_get(entries, e));
    if (entry && (int)strlen(entry) > width && strlen(entry) < 64) width = (int)strlen(entry);
  }
  for (size_t e = 0; e < json_array_size(entries) && rc == EXIT_OK; e++) {
    const char *entry = json_string_value(json_array_get(entries, e));
    gk_launch *L;
    if (!entry || gk_launch_parse(row, entry, &L) != GK_OK) {
      cli_error("probe", "%s", gk_last_error());
      rc = EXIT_FAIL;
      break;
    }
    gk_arg args[GK_LAUNCH_MAX_PARAMS];
    size_t np = gk_launch_nparams(L);
    for (size_t i = 0; i < np && rc == EXIT_OK; i++) {
      const char *name;
      gk_arg_type t;
      gk_launch_param(L, i, &name, &t);
      value *v = find(vals, nvals, name);
      char *end = NULL;
      if (v) v->used = 1;
      if (t == GK_ARG_PTR) {
        args[i] = gk_arg_ptr(0); /* pointers do not shape a launch */
      } else if (t == GK_ARG_F32) {
        args[i] = gk_arg_f32(v ? strtof(v->text, &end) : 0.0f);
      } else if (!v) {
        cli_error("probe", "--launch: '%s' needs a value for its parameter '%s' (%s=N)", entry,
                  name, name);
        rc = EXIT_USAGE;
      } else {
        errno = 0;
        long long x = strtoll(v->text, &end, 10);
        if (errno == ERANGE) end = NULL;
        args[i] = t == GK_ARG_I64 ? gk_arg_i64(x) : gk_arg_i32((int32_t)x);
        if (t == GK_ARG_I32 && (x < INT32_MIN || x > INT32_MAX)) end = NULL;
      }
      if (rc == EXIT_OK && v && (!end || end == v->text || *end)) {
        cli_error("probe", "--launch: '%s' is not a %s value for '%s'", v->text,
                  t == GK_ARG_F32 ? "float" : t == GK_ARG_I32 ? "32-bit integer" : "64-bit integer",
                  name);
        rc = EXIT_USAGE;
      }
    }
    gk_launch_dims d;
    if (rc == EXIT_OK && gk_launch_eval(L, lim, args, np, &d) != GK_OK) {
      cli_error("probe", "%s", gk_last_error());
      rc = EXIT_FAIL;
    }
    gk_launch_free(L);
    if (rc != EXIT_OK) break;
    char hex[2 * GK_LAUNCH_MAX_SCALAR_BYTES + 1] = "";
    for (uint32_t i = 0; i < d.scalar_size; i++) sprintf(hex + 2 * i, "%02x", d.scalars[i]);
    if (json) {
      json_t *o = json_pack("{s:s, s:[i,i,i], s:[i,i,i], s:i}", "entry", entry,
                            buffers ? "groups" : "grid", d.grid[0], d.grid[1], d.grid[2],
                            "block", d.block[0], d.block[1], d.block[2], "shared", d.shared);
      if (buffers) {
        json_object_set_new(o, "buffers", json_integer(d.nbuffers));
        json_object_set_new(o, "scalars", json_string(hex));
      }
      json_array_append_new(out, o);
    } else {
      printf("  %-*s %s %u x %u x %u, block %u x %u x %u", width, entry, buffers ? "groups" : "grid",
             d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2]);
      if (buffers) printf(", %u buffers, scalars %s\n", d.nbuffers, *hex ? hex : "(none)");
      else printf(", %u bytes shared\n", d.shared);
    }
  }
  json_decref(entries);
  for (int i = 0; rc == EXIT_OK && i < nvals; i++)
    if (!vals[i].used) {
      cli_error("probe", "--launch: '%.*s' is not a parameter of '%s'", (int)vals[i].len,
                vals[i].name, row->kernel);
      rc = EXIT_USAGE;
    }
  return rc;
}

/* What gk probe FILE --launch is asked. */
typedef struct launch_args {
  const char *path, *device;
  int no_jit, json;
  const char *kernel, *variant;
  value vals[MAX_VALUES];
  int nvals;
} launch_args;

/* --launch KERNEL VARIANT name=value...: the values run to the first
 * argument that is an option or has no '='. */
static int take_launch(void *field, const cli_arg *a) {
  launch_args *l = field;
  int *i = a->i;
  if (*i + 2 >= a->argc) {
    cli_error(a->cmd, "--launch needs KERNEL VARIANT ('-' for none) and name=value...");
    return -1;
  }
  l->kernel = a->argv[++*i];
  l->variant = a->argv[++*i];
  if (strcmp(l->variant, "-") == 0) l->variant = "";
  while (*i + 1 < a->argc && a->argv[*i + 1][0] != '-' && strchr(a->argv[*i + 1], '=')) {
    const char *v = a->argv[++*i], *eq = strchr(v, '=');
    if (l->nvals == MAX_VALUES || eq == v) {
      cli_error(a->cmd, "--launch: '%s': at most %d name=value", v, MAX_VALUES);
      return -1;
    }
    l->vals[l->nvals++] = (value){v, (size_t)(eq - v), eq + 1, 0};
  }
  return 0;
}

static const cli_option launch_opts[] = {
  CLI_VALUE("--device", NULL, "SPEC", launch_args, device),
  CLI_FLAG("--json", NULL, launch_args, json),
  CLI_FLAG("--no-jit", NULL, launch_args, no_jit),
  {"--launch", NULL, NULL, 0, take_launch, 0}, /* it takes the whole launch_args */
  CLI_END};
/* No usage: gk probe answers --help before it hands over. */
static const cli_command launch_cmd = {
  .name = "probe", .usage = NULL, .opts = launch_opts, CLI_ARCHIVE(launch_args)};

int cmd_probe_launch(int argc, char **argv) {
  launch_args l = {0};
  int rc = cli_parse(&launch_cmd, argc, argv, &l);
  if (rc >= 0) return rc;
  const char *path = l.path, *spec = l.device, *kernel = l.kernel, *variant = l.variant;
  int json = l.json, nvals = l.nvals;
  unsigned flags = l.no_jit ? GK_LOAD_NO_JIT : 0;
  value *vals = l.vals;
  if (!path) {
    cli_error("probe", "--launch needs an archive: gk probe FILE --launch KERNEL VARIANT ...");
    return EXIT_USAGE;
  }
  gk_device dev;
  char why[1024], desc[128];
  const char *product;
  if (spec ? cli_device_parse(spec, &dev, &product, why, sizeof why) != GK_OK
           : gk_device_detect(&dev) != GK_OK) {
    cli_error("probe", spec ? "--device '%s': %s" : "no device found%s%s", spec ? spec : "",
              spec ? why : "");
    return spec ? EXIT_USAGE : EXIT_FAIL;
  }
  gk_device_format(&dev, desc, sizeof desc);
  gk_archive *ar = cli_open_archive("probe", path, 0);
  if (!ar) return EXIT_FAIL;
  size_t idx;
  gk_image_info row;
  gk_module *m = NULL;
  gk_device_limits lim;
  const char *from = "known for the device spec";
  if (gk_archive_select_ex(ar, &dev, kernel, variant, flags, &idx) != GK_OK ||
      gk_archive_image(ar, idx, &row) != GK_OK) {
    cli_error("probe", "%s", gk_archive_errmsg(ar));
    gk_archive_close(ar);
    return EXIT_FAIL;
  }
  if (gk_device_limits_known(&dev, &lim) != GK_OK) {
    cli_error("probe", "'%s' on %s: a %s image is called, not launched (no launch row)", kernel,
              desc, row.backend);
    gk_archive_close(ar);
    return EXIT_FAIL;
  }
  /* A device that is here: its driver's limits, through a loaded module. */
  if (!spec && gk_module_load_ex(ar, &dev, kernel, variant, flags, &m) == GK_OK &&
      gk_module_limits(m, &lim) == GK_OK)
    from = "the driver's";
  json_t *out = json_array();
  if (!json)
    printf("device: %s\n%s %s -> %s %s (%s); limits %s: compute units %lld, %lld threads, "
           "groups %u x %u x %u\n",
           desc, kernel, *variant ? variant : "-", row.backend, row.target, row.format, from,
           (long long)lim.compute_units, (long long)lim.max_threads, lim.max_groups[0],
           lim.max_groups[1], lim.max_groups[2]);
  rc = launches(&row, &lim, vals, nvals, json, out);
  if (json && rc == EXIT_OK) {
    json_t *root = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:{s:I, s:I, s:[I,I,I], s:s}, s:O}", "device", desc,
        "kernel", kernel, "variant", variant, "backend", row.backend, "target", row.target,
        "format", row.format, "limits", "compute_units", (json_int_t)lim.compute_units,
        "max_threads", (json_int_t)lim.max_threads, "max_groups", (json_int_t)lim.max_groups[0],
        (json_int_t)lim.max_groups[1], (json_int_t)lim.max_groups[2], "from", from, "launches",
        out);
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(root);
  }
  json_decref(out);
  gk_module_unload(m);
  gk_archive_close(ar);
  return rc;
}
