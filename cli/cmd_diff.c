/* cmd_diff.c - gk diff: what changed between two releases of an archive, at
 * the levels an operator reasons at: targets (does the new release still run
 * on sm_75?), kernels, variants, and single images. Index only: no image is
 * decompressed, since the SHA-256 of each image is in the index. */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "util.h"

static const char diff_usage[] =
  "usage: gk diff OLD NEW [--json]\n"
  "\n"
  "Compares two archives' indexes: targets (backend, target), kernels and\n"
  "variants (kernel, variant) added or removed, and images (kernel, backend,\n"
  "target, variant) added, removed or changed. An image is changed when its\n"
  "key is in both and its SHA-256, format, entry points, launch metadata or\n"
  "toolchain differ; the fields that differ are named. Then the targets the\n"
  "builds skipped (the archives' metadata): newly skipped, no longer skipped,\n"
  "and whether each moved between built and skipped.\n"
  "\n"
  "Exit status: 0 whether or not the archives differ (read the output, or\n"
  "'--json' .identical), 1 when an archive cannot be read, 2 on usage errors.\n"
  "\n"
  "  --json   {old, new, identical, targets: {added, removed}, kernels: {added,\n"
  "           removed}, variants: {added, removed}, images: {added, removed,\n"
  "           changed: [{kernel, backend, target, variant, fields, old, new}]},\n"
  "           skipped: {added: [{backend, target?, reason, was}], removed:\n"
  "           [{backend, target?, reason, now}]}, unchanged} on stdout; was/now\n"
  "           is 'built' or 'absent'\n";

typedef struct diff_args {
  const char *paths[2]; /* OLD, NEW */
  int json;
} diff_args;

static const cli_option diff_opts[] = {
  CLI_FLAG("--json", NULL, diff_args, json),
  CLI_END};
/* "-" is an archive here: a file of that name. */
static const cli_command diff_cmd = {
  .name = "diff", .usage = diff_usage, .opts = diff_opts, .args = offsetof(diff_args, paths),
  .max_args = 2, .refuse = "takes two archives, OLD and NEW; '%s' is a third",
  .flags = CLI_DASH};

/* A key of 1 to 4 fields of a row, with the row it came from. */
typedef struct key {
  const char *f[4];
  const gk_image_info *im;
} key;

static int key_nf; /* fields compared by key_cmp (qsort has no context) */

static int key_cmp(const void *pa, const void *pb) {
  const key *a = pa, *b = pb;
  for (int i = 0; i < key_nf; i++) {
    int c = strcmp(a->f[i], b->f[i]);
    if (c) return c;
  }
  return 0;
}

typedef struct side {
  const char *path;
  gk_archive *ar;
  gk_image_info *rows;
  size_t n;
  json_t *skipped, *drivers; /* cli_build_notes */
} side;

/* Whether a side has images of a skipped entry's backend (and target). */
static int side_built(const side *s, const json_t *e) {
  const char *b = json_string_value(json_object_get(e, "backend"));
  const char *t = json_string_value(json_object_get(e, "target"));
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->rows[i].backend, b) && (!t || !strcmp(s->rows[i].target, t))) return 1;
  return 0;
}

static int same_skip(const json_t *a, const json_t *b) {
  return json_equal(json_object_get(a, "backend"), json_object_get(b, "backend")) &&
         (json_object_get(a, "target") ? json_equal(json_object_get(a, "target"),
                                                    json_object_get(b, "target"))
                                       : !json_object_get(b, "target"));
}

/* The entries of `from`'s skipped list that `other` does not skip, each
 * with `field` saying whether `other` built it ("built" or "absent"). */
static json_t *skip_delta(const side *from, const side *other, const char *field) {
  json_t *out = json_array();
  for (size_t i = 0; i < json_array_size(from->skipped); i++) {
    json_t *e = json_array_get(from->skipped, i);
    int in_other = 0;
    for (size_t j = 0; j < json_array_size(other->skipped) && !in_other; j++)
      in_other = same_skip(e, json_array_get(other->skipped, j));
    if (in_other) continue;
    json_t *o = json_deep_copy(e);
    json_object_set_new(o, field, json_string(side_built(other, e) ? "built" : "absent"));
    json_array_append_new(out, o);
  }
  return out;
}

/* The text of skip_delta's entries: "was" for those the new archive skips,
 * "now" for those it no longer does. */
static void print_skips(json_t *list, const char *field) {
  for (size_t i = 0; i < json_array_size(list); i++) {
    json_t *e = json_array_get(list, i);
    int built = !strcmp(json_string_value(json_object_get(e, field)), "built");
    const char *t = json_string_value(json_object_get(e, "target"));
    const char *why = json_string_value(json_object_get(e, "reason"));
    char name[512];
    snprintf(name, sizeof name, "%s%s%s", json_string_value(json_object_get(e, "backend")),
             t ? " " : "", t ? t : "");
    if (!strcmp(field, "was"))
      printf("%s: %s%s: %s\n", built ? "target moved from built to skipped" : "target skipped",
             name, built ? " (built before)" : "", why);
    else
      printf("%s: %s%s\n", built ? "target moved from skipped to built" : "target no longer skipped",
             name, built ? " (now built)" : "");
  }
}

static int side_load(side *s, const char *path) {
  s->path = path;
  s->ar = cli_open_archive("diff", path, 0);
  if (!s->ar) return -1;
  gk_archive_count(s->ar, &s->n);
  s->rows = calloc(s->n ? s->n : 1, sizeof *s->rows);
  if (!s->rows) {
    cli_error("diff", "out of memory reading '%s'", path);
    return -1;
  }
  for (size_t i = 0; i < s->n; i++)
    if (gk_archive_image(s->ar, i, &s->rows[i]) != GK_OK) {
      cli_error("diff", "cannot read the index of '%s': %s", path,
                gk_archive_errmsg(s->ar));
      return -1;
    }
  return 0;
}

/* The distinct keys of a side for one level: fields picked from each row by
 * offset into gk_image_info. */
static key *keys_of(const side *s, const size_t *off, int nf, size_t *count) {
  key *k = calloc(s->n ? s->n : 1, sizeof *k);
  size_t m = 0;
  if (!k) return NULL;
  for (size_t i = 0; i < s->n; i++) {
    for (int j = 0; j < nf; j++)
      k[i].f[j] = *(const char *const *)((const char *)&s->rows[i] + off[j]);
    k[i].im = &s->rows[i];
  }
  key_nf = nf;
  qsort(k, s->n, sizeof *k, key_cmp);
  for (size_t i = 0; i < s->n; i++)
    if (m == 0 || key_cmp(&k[m - 1], &k[i])) k[m++] = k[i];
  *count = m;
  return k;
}

/* One key as JSON, the fields named as in `names`. */
static json_t *key_json(const key *k, const char *const *names, int nf) {
  if (nf == 1) return json_string(k->f[0]);
  json_t *o = json_object();
  for (int j = 0; j < nf; j++) json_object_set_new(o, names[j], json_string(k->f[j]));
  return o;
}

static json_t *image_json(const gk_image_info *im) {
  char hex[65];
  cli_hex(im->sha256, hex);
  return json_pack("{s:s, s:I, s:s, s:s, s:s, s:s}", "format", im->format, "size",
                   (json_int_t)im->raw_size, "sha256", hex, "toolchain",
                   im->toolchain, "entry", im->entry, "launch", im->launch);
}

/* The metadata fields of two rows of the same key that differ, as a JSON
 * array of names; empty when the rows are the same image. */
static json_t *changed_fields(const gk_image_info *a, const gk_image_info *b) {
  json_t *f = json_array();
  if (memcmp(a->sha256, b->sha256, 32)) json_array_append_new(f, json_string("sha256"));
  if (a->raw_size != b->raw_size) json_array_append_new(f, json_string("size"));
  if (strcmp(a->format, b->format)) json_array_append_new(f, json_string("format"));
  if (strcmp(a->entry, b->entry)) json_array_append_new(f, json_string("entry"));
  if (strcmp(a->launch, b->launch)) json_array_append_new(f, json_string("launch"));
  if (strcmp(a->toolchain, b->toolchain))
    json_array_append_new(f, json_string("toolchain"));
  return f;
}

/* Text of one key: "qmatmul bits=4 cpu x86-64-v3" (no variant: left out). */
static void key_text(const key *k, int nf, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int j = 0; j < nf && used < size; j++)
    if (*k->f[j])
      used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? " " : "", k->f[j]);
}

static void print_side(const char *what, const char *label, json_t *arr) {
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *v = json_array_get(arr, i);
    if (json_is_string(v)) {
      printf("%s %s: %s\n", what, label, json_string_value(v));
      continue;
    }
    /* Objects: the values in key order, as key_text does. */
    const char *order[] = {"kernel", "variant", "backend", "target"};
    char buf[1024];
    size_t used = 0;
    buf[0] = '\0';
    for (size_t j = 0; j < 4 && used < sizeof buf; j++) {
      json_t *s = json_object_get(v, order[j]);
      if (s && *json_string_value(s))
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", used ? " " : "",
                                 json_string_value(s));
    }
    printf("%s %s: %s", what, label, buf);
    json_t *im = json_object_get(v, "image");
    if (im)
      printf(" (%s, %lld bytes)", json_string_value(json_object_get(im, "format")),
             (long long)json_integer_value(json_object_get(im, "size")));
    putchar('\n');
  }
}

/* The levels, coarse to fine. Images are keyed like the index. */
static const struct level {
  const char *name, *label; /* JSON member, text label */
  int nf;
  size_t off[4];
  const char *names[4];
} levels[] = {
    {"targets", "target", 2,
     {offsetof(gk_image_info, backend), offsetof(gk_image_info, target)},
     {"backend", "target"}},
    {"kernels", "kernel", 1, {offsetof(gk_image_info, kernel)}, {"kernel"}},
    {"variants", "variant", 2,
     {offsetof(gk_image_info, kernel), offsetof(gk_image_info, variant)},
     {"kernel", "variant"}},
    {"images", "image", 4,
     {offsetof(gk_image_info, kernel), offsetof(gk_image_info, variant),
      offsetof(gk_image_info, backend), offsetof(gk_image_info, target)},
     {"kernel", "variant", "backend", "target"}},
};
#define NLEVELS (sizeof levels / sizeof levels[0])

/* One level compared, {added, removed[, changed]}; *differences and
 * *unchanged (images) grow by what it finds. NULL when out of memory. */
static json_t *compare_level(const side s[2], const struct level *lv, size_t *differences,
                             size_t *unchanged) {
  size_t na, nb, a = 0, b = 0;
  key *ka = keys_of(&s[0], lv->off, lv->nf, &na);
  key *kb = keys_of(&s[1], lv->off, lv->nf, &nb);
  if (!ka || !kb) {
    free(ka);
    free(kb);
    return NULL;
  }
  int images = !strcmp(lv->name, "images");
  json_t *added = json_array(), *removed = json_array(), *changed = json_array();
  key_nf = lv->nf;
  /* Both sides sorted: one merge pass. */
  while (a < na || b < nb) {
    int c = a == na ? 1 : b == nb ? -1 : key_cmp(&ka[a], &kb[b]);
    const key *k = c < 0 ? &ka[a] : &kb[b];
    json_t *o = key_json(k, lv->names, lv->nf);
    if (images && c != 0) json_object_set_new(o, "image", image_json(k->im));
    if (c < 0) {
      json_array_append_new(removed, o);
      a++;
    } else if (c > 0) {
      json_array_append_new(added, o);
      b++;
    } else {
      json_t *f = images ? changed_fields(ka[a].im, kb[b].im) : NULL;
      if (f && json_array_size(f)) {
        json_object_set_new(o, "fields", f);
        json_object_set_new(o, "old", image_json(ka[a].im));
        json_object_set_new(o, "new", image_json(kb[b].im));
        json_array_append_new(changed, o);
      } else {
        *unchanged += images;
        json_decref(f);
        json_decref(o);
      }
      a++;
      b++;
    }
  }
  free(ka);
  free(kb);
  *differences += json_array_size(added) + json_array_size(removed) + json_array_size(changed);
  json_t *lvo = json_pack("{s:o, s:o}", "added", added, "removed", removed);
  if (images)
    json_object_set_new(lvo, "changed", changed);
  else
    json_decref(changed);
  return lvo;
}

/* Everything gk diff says, as its --json object; NULL when out of memory. */
static json_t *compare(const side s[2]) {
  json_t *root = json_pack("{s:s, s:s}", "old", s[0].path, "new", s[1].path);
  size_t unchanged = 0, differences = 0;
  for (size_t L = 0; L < NLEVELS; L++) {
    json_t *lvo = compare_level(s, &levels[L], &differences, &unchanged);
    if (!lvo) {
      json_decref(root);
      return NULL;
    }
    json_object_set_new(root, levels[L].name, lvo);
  }
  json_t *sk_added = skip_delta(&s[1], &s[0], "was");
  json_t *sk_removed = skip_delta(&s[0], &s[1], "now");
  differences += json_array_size(sk_added) + json_array_size(sk_removed);
  json_object_set_new(root, "skipped",
                      json_pack("{s:o, s:o}", "added", sk_added, "removed", sk_removed));
  json_object_set_new(root, "unchanged", json_integer((json_int_t)unchanged));
  json_object_set_new(root, "identical", json_boolean(differences == 0));
  return root;
}

/* "image changed: KEY: sha256 OLD -> NEW, format 'a' -> 'b'" for each. */
static void print_changed(json_t *changed) {
  for (size_t i = 0; i < json_array_size(changed); i++) {
    json_t *o = json_array_get(changed, i), *f = json_object_get(o, "fields");
    json_t *po = json_object_get(o, "old"), *pn = json_object_get(o, "new");
    char name[1024];
    key k = {{json_string_value(json_object_get(o, "kernel")),
              json_string_value(json_object_get(o, "variant")),
              json_string_value(json_object_get(o, "backend")),
              json_string_value(json_object_get(o, "target"))}, NULL};
    key_text(&k, 4, name, sizeof name);
    printf("image changed: %s:", name);
    for (size_t j = 0; j < json_array_size(f); j++) {
      const char *fld = json_string_value(json_array_get(f, j));
      json_t *vo = json_object_get(po, fld), *vn = json_object_get(pn, fld);
      if (json_is_integer(vo))
        printf("%s %s %lld -> %lld", j ? "," : "", fld, (long long)json_integer_value(vo),
               (long long)json_integer_value(vn));
      else if (!strcmp(fld, "sha256"))
        printf("%s sha256 %.16s -> %.16s", j ? "," : "", json_string_value(vo),
               json_string_value(vn));
      else
        printf("%s %s '%s' -> '%s'", j ? "," : "", fld, json_string_value(vo),
               json_string_value(vn));
    }
    putchar('\n');
  }
}

/* The text form of compare's object. */
static void print_text(json_t *root) {
  for (size_t L = 0; L < NLEVELS; L++) {
    json_t *lvo = json_object_get(root, levels[L].name);
    print_side(levels[L].label, "added", json_object_get(lvo, "added"));
    print_side(levels[L].label, "removed", json_object_get(lvo, "removed"));
    print_changed(json_object_get(lvo, "changed"));
  }
  json_t *sk = json_object_get(root, "skipped");
  print_skips(json_object_get(sk, "added"), "was");
  print_skips(json_object_get(sk, "removed"), "now");
  json_t *im = json_object_get(root, "images");
  size_t unchanged = (size_t)json_integer_value(json_object_get(root, "unchanged"));
  if (json_is_true(json_object_get(root, "identical")))
    printf("no differences: %zu images in both\n", unchanged);
  else
    printf("images: %zu added, %zu removed, %zu changed, %zu unchanged\n",
           json_array_size(json_object_get(im, "added")),
           json_array_size(json_object_get(im, "removed")),
           json_array_size(json_object_get(im, "changed")), unchanged);
}

int cmd_diff(int argc, char **argv) {
  diff_args a = {0};
  side s[2] = {{0}};
  json_t *root = NULL;
  int rc = cli_parse(&diff_cmd, argc, argv, &a);
  if (rc >= 0) return rc;
  if (!a.paths[1]) {
    cli_error("diff", "needs two archives, OLD and NEW (see 'gk diff --help')");
    return EXIT_USAGE;
  }
  rc = EXIT_FAIL;
  if (side_load(&s[0], a.paths[0]) || side_load(&s[1], a.paths[1]) ||
      cli_build_notes("diff", a.paths[0], (void **)&s[0].skipped, (void **)&s[0].drivers) ||
      cli_build_notes("diff", a.paths[1], (void **)&s[1].skipped, (void **)&s[1].drivers))
    goto diff_out;
  if (!(root = compare(s))) {
    cli_error("diff", "out of memory");
    goto diff_out;
  }
  if (a.json) {
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
  } else {
    print_text(root);
  }
  rc = EXIT_OK;
diff_out:
  json_decref(root);
  for (int i = 0; i < 2; i++) {
    free(s[i].rows);
    json_decref(s[i].skipped);
    json_decref(s[i].drivers);
    gk_archive_close(s[i].ar);
  }
  return rc;
}
