/*
 * manifest.c - packs a `gk build` output folder (docs/manifest.md).
 *
 * The manifest is input from another program, possibly from another machine
 * (CI artifacts), so every field is checked and every image is re-hashed
 * before it goes into an archive: a truncated download or an edited file is
 * caught here, not at load time on a user's machine.
 */
#include "gkpack.h"

#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack_internal.h"

/* Reads a whole file; NULL with errno set on failure. */
static void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  long len;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
    goto read_out;
  buf = malloc(len ? (size_t)len : 1);
  if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    buf = NULL;
    errno = EIO;
  }
  *size = (size_t)len;
read_out:
  fclose(f);
  return buf;
}

/* A manifest path must stay inside the folder: relative, no "..". */
static int safe_relpath(const char *p) {
  if (!*p || *p == '/') return 0;
  for (const char *s = p; *s;) {
    const char *e = strchr(s, '/');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if ((len == 2 && s[0] == '.' && s[1] == '.') || len == 0) return 0;
    s += len + (e ? 1 : 0);
  }
  return 1;
}

static const char *str_field(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static int hex_equal(const unsigned char *sha, const char *hex) {
  char buf[65];
  sodium_bin2hex(buf, sizeof buf, sha, 32);
  return hex && strcmp(buf, hex) == 0;
}

/* The manifest's "meta" object (written by gk build: source revision,
 * dirty flag, recipe hashes) as archive meta rows: strings as they are,
 * anything else as compact JSON with sorted keys, so that equal manifests
 * give equal archives. */
static int meta_rows(json_t *root, const char *mpath, gkp_meta **out, char ***texts,
                     size_t *n, gk_err *err) {
  json_t *m = json_object_get(root, "meta"), *v;
  const char *k;
  *n = 0;
  if (!m) return 0;
  if (!json_is_object(m)) return gk_err_set(err, "%s: 'meta' must be an object", mpath);
  size_t cap = json_object_size(m);
  *out = calloc(cap ? cap : 1, sizeof **out);
  *texts = calloc(cap ? cap : 1, sizeof **texts);
  if (!*out || !*texts) return gk_err_set(err, "out of memory");
  json_object_foreach(m, k, v) {
    char *t = json_is_string(v) ? strdup(json_string_value(v))
                                : json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!t) return gk_err_set(err, "out of memory");
    (*texts)[*n] = t;
    (*out)[*n] = (gkp_meta){k, t};
    (*n)++;
  }
  return 0;
}

int gkp_pack_dir(const char *dir, const char *path, int level, gkp_check_fn check, gk_err *err) {
  char mpath[4096];
  json_error_t jerr;
  json_t *root = NULL, *list;
  gkp_image *ims = NULL;
  unsigned char(*shas)[32] = NULL; /* each image's, checked against the manifest */
  char **texts = NULL; /* entry/launch JSON texts, two per image */
  gkp_meta *meta = NULL;
  char **metatexts = NULL;
  size_t n = 0, nmeta = 0;
  int rc = -1;

  if (sodium_init() < 0) return gk_err_set(err, "libsodium failed to initialize");
  snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
  root = json_load_file(mpath, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    if (jerr.line <= 0) {
      /* jansson says "unable to open PATH: REASON"; the path is ours. */
      const char *why = strstr(jerr.text, ": ") ? strstr(jerr.text, ": ") + 2 : jerr.text;
      gk_err_set(err, "cannot read '%s': %s (run 'gk build --out %s' first)",
                 mpath, why, dir);
    }
    else
      gk_err_set(err, "%s:%d: %s", mpath, jerr.line, jerr.text);
    return -1;
  }
  const char *fmt = str_field(root, "format");
  list = json_object_get(root, "images");
  if (!fmt || strcmp(fmt, "gllm-kernels-manifest") ||
      json_integer_value(json_object_get(root, "version")) != 1 ||
      !json_is_array(list)) {
    gk_err_set(err,
               "'%s' is not a gk build manifest (format 'gllm-kernels-manifest', "
               "version 1, with an 'images' array)", mpath);
    goto dir_out;
  }
  n = json_array_size(list);
  ims = calloc(n ? n : 1, sizeof *ims);
  shas = calloc(n ? n : 1, sizeof *shas);
  texts = calloc(2 * n + 1, sizeof *texts);
  if (!ims || !shas || !texts) {
    gk_err_set(err, "out of memory");
    goto dir_out;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_array_get(list, i);
    gkp_image *im = &ims[i];
    const char *rel = str_field(o, "path"), *sha = str_field(o, "sha256");
    json_t *entry = json_object_get(o, "entry"), *launch = json_object_get(o, "launch");
    char ipath[4096];
    size_t size = 0;

    im->kernel = str_field(o, "kernel");
    im->backend = str_field(o, "backend");
    im->target = str_field(o, "target");
    im->variant = str_field(o, "variant");
    im->format = str_field(o, "format");
    im->toolchain = str_field(o, "toolchain");
    if (!im->kernel || !im->backend || !im->target || !im->variant ||
        !im->format || !rel || !sha || !json_is_array(entry) ||
        (launch && !json_is_object(launch))) {
      gk_err_set(err,
                 "%s: images[%zu] lacks one of kernel, backend, target, variant, "
                 "format, path, sha256 (strings) or entry (array)", mpath, i);
      goto dir_out;
    }
    if (!safe_relpath(rel)) {
      gk_err_set(err, "%s: images[%zu]: path '%s' leaves the folder", mpath,
                 i, rel);
      goto dir_out;
    }
    snprintf(ipath, sizeof ipath, "%s/%s", dir, rel);
    im->data = read_file(ipath, &size);
    if (!im->data) {
      gk_err_set(err, "cannot read image '%s': %s", ipath, strerror(errno));
      goto dir_out;
    }
    im->size = size;
    /* Hashed once: the archive records this digest (gkp_image.sha256). */
    crypto_hash_sha256(shas[i], im->data, size);
    im->sha256 = shas[i];
    if (!hex_equal(shas[i], sha) ||
        (json_object_get(o, "size") &&
         json_integer_value(json_object_get(o, "size")) != (json_int_t)size)) {
      gk_err_set(err,
                 "image '%s' does not match its manifest entry (size or sha256 "
                 "differ): rebuild with 'gk build'", ipath);
      goto dir_out;
    }
    texts[2 * i] = json_dumps(entry, JSON_COMPACT);
    texts[2 * i + 1] = launch ? json_dumps(launch, JSON_COMPACT | JSON_SORT_KEYS)
                              : strdup("{}");
    if (!texts[2 * i] || !texts[2 * i + 1]) {
      gk_err_set(err, "out of memory");
      goto dir_out;
    }
    im->entry_json = texts[2 * i];
    im->launch_json = texts[2 * i + 1];
    char why[512];
    if (check && check(im, why, sizeof why) != 0) {
      gk_err_set(err, "image '%s' (kernel '%s') does not fit its manifest entry: %s; "
                 "fix the kernel's recipe and run 'gk build' again", ipath, im->kernel, why);
      goto dir_out;
    }
  }
  if (meta_rows(root, mpath, &meta, &metatexts, &nmeta, err)) goto dir_out;
  /* What the build could not make, and why, travels with the archive
   * (meta "skipped"): an operator reads it there, not in a CI log. */
  json_t *sk = json_object_get(root, "skipped");
  if (sk && !json_is_array(sk)) {
    gk_err_set(err, "%s: 'skipped' must be an array", mpath);
    goto dir_out;
  }
  if (json_array_size(sk)) {
    if (json_object_get(json_object_get(root, "meta"), "skipped")) {
      gk_err_set(err, "%s: 'skipped' is both in 'meta' and beside it; "
                 "gk build writes it beside 'meta' only", mpath);
      goto dir_out;
    }
    char *t = json_dumps(sk, JSON_COMPACT | JSON_SORT_KEYS);
    gkp_meta *more = realloc(meta, (nmeta + 1) * sizeof *meta);
    char **mt = realloc(metatexts, (nmeta + 1) * sizeof *metatexts);
    if (more) meta = more;
    if (mt) metatexts = mt;
    if (!t || !more || !mt) {
      free(t);
      gk_err_set(err, "out of memory");
      goto dir_out;
    }
    metatexts[nmeta] = t;
    meta[nmeta++] = (gkp_meta){"skipped", t};
  }
  rc = gkp_write_meta(path, ims, n, meta, nmeta, level, err);

dir_out:
  for (size_t i = 0; i < nmeta; i++) free(metatexts[i]);
  free(metatexts);
  free(meta);
  for (size_t i = 0; ims && i < n; i++) free((void *)ims[i].data);
  for (size_t i = 0; texts && i < 2 * n; i++) free(texts[i]);
  free(ims);
  free(shas);
  free(texts);
  json_decref(root);
  return rc;
}
