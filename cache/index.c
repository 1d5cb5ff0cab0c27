/*
 * index.c - direct mode's index: one file per build name that lets a no-op
 * build answer every lookup with a stat per file instead of reading every
 * key's record (gkcache.h, gkc_index_open, is the manual). The public
 * functions on a build's own files are here too (gkc_hash_file,
 * gkc_file_matches, gkc_file_note): each asks the index first, then the
 * memo of filehash.c.
 *
 * The file, compact JSON:
 *   { "format": "gk-direct-index", "version": 1,
 *     "files":   [ [path, sha256, size, inode, mtime_ns, ctime_ns] | [path, sha256] ],
 *     "depsets": [ [file index, ...] ],
 *     "keys":    { KEY: [base, object, size, depset index] },
 *     "notes":   { NAME: string } }
 * Paths are absolute (resolved against the base the compiler ran in), so
 * the file belongs to this machine; the cache's records stay portable.
 *
 * Trust: a stamp is written only when it had settled when it was taken, the
 * rule hash_deps uses for records ("racy git"); a file without one is read
 * and hashed. Everything read from the file is checked before use, and any
 * doubt is a fall back to the record, never a hit.
 */
#define _POSIX_C_SOURCE 200809L
#include "cache_internal.h"
#include "gkcache.h"

#include <errno.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INDEX_FORMAT "gk-direct-index"

struct gkc__index {
  char *path;      /* DIR/v1/index/XX/SHA.json */
  char *old_text;  /* the file as loaded (NULL: none), to skip identical writes */
  size_t old_len;
  /* The loaded index; NULL members when there was none. */
  json_t *old;
  json_t *old_files;   /* array */
  json_t *old_paths;   /* path -> its position in old_files */
  json_t *old_depsets; /* array */
  json_t *old_keys;    /* object */
  json_t *old_notes;   /* object: gkc_index_get */
  int *carried;        /* per old depset: -2 unchecked, -1 changed, else new depset index */
  /* The index this build makes. */
  json_t *paths;       /* path -> position in files */
  json_t *files;       /* array of paths, in first-use order */
  json_t *set_ids;     /* "i,j,k" -> position in depsets */
  json_t *depsets;     /* array of arrays of file positions */
  json_t *keys;        /* key -> [base, object, size, depset] */
  json_t *notes;       /* name -> string: gkc_index_set */
  /* Whether this build learned something the loaded file lacks. When not,
   * gkc_index_save keeps the file as it is: every entry in it is checked
   * where it is used, so keeping one this build did not use is harmless. */
  int dirty;
};

void gkc__index_free(gkc__index *ix) {
  if (!ix) return;
  free(ix->path);
  free(ix->old_text);
  free(ix->carried);
  json_decref(ix->old);
  json_decref(ix->old_paths);
  json_decref(ix->paths);
  json_decref(ix->files);
  json_decref(ix->set_ids);
  json_decref(ix->depsets);
  json_decref(ix->keys);
  json_decref(ix->notes);
  free(ix);
}

/* Takes the parsed file if it has the expected shape; otherwise the index
 * starts empty (a damaged or foreign file is no error: it is a hint). */
static void adopt(gkc__index *ix, json_t *doc) {
  json_t *fmt = json_object_get(doc, "format");
  json_t *files = json_object_get(doc, "files");
  json_t *sets = json_object_get(doc, "depsets");
  json_t *keys = json_object_get(doc, "keys");
  if (!json_is_string(fmt) || strcmp(json_string_value(fmt), INDEX_FORMAT) != 0 ||
      json_integer_value(json_object_get(doc, "version")) != 1 || !json_is_array(files) ||
      !json_is_array(sets) || !json_is_object(keys)) {
    json_decref(doc);
    return;
  }
  json_t *paths = json_object();
  size_t i;
  json_t *f;
  json_array_foreach(files, i, f) {
    const char *p = json_string_value(json_array_get(f, 0));
    if (p && gkc__is_hex64(json_string_value(json_array_get(f, 1))))
      json_object_set_new(paths, p, json_integer((json_int_t)i));
  }
  ix->carried = malloc((json_array_size(sets) + 1) * sizeof *ix->carried);
  if (!paths || !ix->carried) {
    json_decref(paths);
    json_decref(doc);
    return;
  }
  for (i = 0; i < json_array_size(sets); i++) ix->carried[i] = -2;
  ix->old = doc;
  ix->old_files = files;
  ix->old_paths = paths;
  ix->old_depsets = sets;
  ix->old_keys = keys;
  ix->dirty = 0;
  json_t *notes = json_object_get(doc, "notes");
  ix->old_notes = json_is_object(notes) ? notes : NULL;
}

int gkc_index_open(gkc_cache *c, const char *name) {
  gkc__index_free(c->index);
  c->index = NULL;
  gkc__index *ix = calloc(1, sizeof *ix);
  unsigned char h[32];
  char hex[65];
  crypto_hash_sha256(h, (const unsigned char *)name, strlen(name));
  sodium_bin2hex(hex, sizeof hex, h, sizeof h);
  size_t n = strlen(c->root) + 100;
  if (ix) ix->path = malloc(n);
  if (ix && ix->path)
    snprintf(ix->path, n, "%s/index/%.2s/%s.json", c->root, hex, hex);
  if (ix) {
    ix->paths = json_object();
    ix->files = json_array();
    ix->set_ids = json_object();
    ix->depsets = json_array();
    ix->keys = json_object();
    ix->notes = json_object();
  }
  if (!ix || !ix->path || !ix->paths || !ix->files || !ix->set_ids || !ix->depsets ||
      !ix->keys || !ix->notes) {
    gkc__index_free(ix);
    return gk_err_set(&c->err, "out of memory opening the build index");
  }
  ix->dirty = 1; /* until a loaded file is adopted */
  ix->old_text = gkc_read_file(ix->path, (size_t)256 << 20, &ix->old_len);
  if (ix->old_text) {
    json_t *doc = json_loadb(ix->old_text, ix->old_len, 0, NULL);
    if (doc) adopt(ix, doc);
  }
  c->index = ix;
  return 0;
}

/* The position of path in the new index's files, added if new. */
static json_int_t use(gkc__index *ix, const char *path) {
  json_t *pos = json_object_get(ix->paths, path);
  if (pos) return json_integer_value(pos);
  json_int_t n = (json_int_t)json_array_size(ix->files);
  if (!ix->old_paths || !json_object_get(ix->old_paths, path)) ix->dirty = 1;
  /* _nocheck: a path need not be UTF-8. Such a file fails to parse later,
   * which only empties the index. */
  json_array_append_new(ix->files, json_string_nocheck(path));
  json_object_set_new_nocheck(ix->paths, path, json_integer(n));
  return n;
}

/* The new index's depset for the file positions in `list` (consumed). */
static json_int_t use_set(gkc__index *ix, json_t *list) {
  size_t cap = json_array_size(list) * 21 + 1, len = 0;
  char *id = malloc(cap);
  if (!id) {
    json_decref(list);
    return -1;
  }
  id[0] = '\0';
  size_t i;
  json_t *v;
  json_array_foreach(list, i, v)
    len += (size_t)snprintf(id + len, cap - len, "%s%lld", i ? "," : "",
                            (long long)json_integer_value(v));
  json_t *pos = json_object_get(ix->set_ids, id);
  json_int_t n;
  if (pos) {
    n = json_integer_value(pos);
    json_decref(list);
  } else {
    n = (json_int_t)json_array_size(ix->depsets);
    json_array_append_new(ix->depsets, list);
    json_object_set_new(ix->set_ids, id, json_integer(n));
  }
  free(id);
  return n;
}

/* A file of the loaded index: its path, hash and stamp (NULL when it has
 * none). Returns 0 when entry `f` is malformed. */
static int old_file(json_t *f, const char **path, const char **sha, int64_t stamp[4],
                    int *has_stamp) {
  *path = json_string_value(json_array_get(f, 0));
  *sha = json_string_value(json_array_get(f, 1));
  if (!*path || !gkc__is_hex64(*sha)) return 0;
  *has_stamp = json_array_size(f) == 6;
  for (size_t k = 0; *has_stamp && k < 4; k++) {
    json_t *v = json_array_get(f, k + 2);
    if (!json_is_integer(v)) return 0;
    stamp[k] = json_integer_value(v);
  }
  return 1;
}

/* Checks old depset d file by file, once per build; carries it into the new
 * index. Returns its new position, or -1 when a file changed. */
static int carry_set(gkc_cache *c, gkc__index *ix, size_t d) {
  if (ix->carried[d] != -2) return ix->carried[d];
  json_t *set = json_array_get(ix->old_depsets, d);
  json_t *list = json_array();
  int ok = json_is_array(set) && list != NULL;
  size_t i;
  json_t *v;
  if (ok) json_array_foreach(set, i, v) {
    const char *path, *sha;
    int64_t stamp[4];
    int has_stamp;
    json_t *f = json_array_get(ix->old_files, (size_t)json_integer_value(v));
    if (!json_is_integer(v) || !old_file(f, &path, &sha, stamp, &has_stamp) ||
        !gkc__check_file(c, path, sha, has_stamp ? stamp : NULL)) {
      ok = 0;
      break;
    }
    json_array_append_new(list, json_integer(use(ix, path)));
  }
  int n = -1;
  if (ok) n = (int)use_set(ix, list);
  else json_decref(list);
  ix->carried[d] = n < 0 ? -1 : n;
  if (n < 0) ix->dirty = 1;
  return ix->carried[d];
}

int gkc__index_lookup(gkc_cache *c, gkc__index *ix, const char *key, const char *base,
                      gkc_result *out) {
  json_t *e = ix->old_keys ? json_object_get(ix->old_keys, key) : NULL;
  if (!json_is_array(e) || json_array_size(e) != 4) return 0;
  const char *ebase = json_string_value(json_array_get(e, 0));
  const char *obj = json_string_value(json_array_get(e, 1));
  json_t *size = json_array_get(e, 2), *set = json_array_get(e, 3);
  if (!ebase || strcmp(ebase, base ? base : "") != 0 || !json_is_integer(size) ||
      !json_is_integer(set) || json_integer_value(set) < 0 ||
      (size_t)json_integer_value(set) >= json_array_size(ix->old_depsets))
    return 0;
  int n = carry_set(c, ix, (size_t)json_integer_value(set));
  if (n < 0 || !gkc__object_ok(c, obj, json_integer_value(size), out)) {
    ix->dirty = 1;
    return 0;
  }
  json_object_set_new(ix->keys, key, json_pack("[ssIi]", ebase, obj,
                                               json_integer_value(size), n));
  return 1;
}

void gkc__index_note(gkc_cache *c, gkc__index *ix, const char *key, const char *base,
                     const gkc_result *r, json_t *deps) {
  (void)c;
  ix->dirty = 1;
  json_t *list = json_array();
  size_t i;
  json_t *d;
  json_array_foreach(deps, i, d) {
    const char *p = json_string_value(json_array_get(d, 0));
    char buf[PATH_MAX];
    if (!p) {
      json_decref(list);
      return;
    }
    if (p[0] != '/' && base && *base) {
      int w = snprintf(buf, sizeof buf, "%s/%s", base, p);
      if (w < 0 || (size_t)w >= sizeof buf) {
        json_decref(list);
        return;
      }
      p = buf;
    }
    json_array_append_new(list, json_integer(use(ix, p)));
  }
  json_int_t n = use_set(ix, list);
  if (n >= 0)
    json_object_set_new(ix->keys, key, json_pack("[ssIi]", base ? base : "", r->sha256,
                                                 (json_int_t)r->size, (int)n));
}

/* gkc_hash_file's fast path: 1 with hex when the index's stamp of path still
 * holds; 0 otherwise. */
static int index_hash(gkc_cache *c, gkc__index *ix, const char *path, char hex[65]) {
  json_t *pos = ix->old_paths ? json_object_get(ix->old_paths, path) : NULL;
  const char *p, *sha;
  int64_t stamp[4];
  int has_stamp;
  if (!pos || !old_file(json_array_get(ix->old_files, (size_t)json_integer_value(pos)), &p,
                        &sha, stamp, &has_stamp) ||
      !has_stamp || !gkc__check_file(c, path, sha, stamp)) {
    ix->dirty = 1;
    return 0;
  }
  memcpy(hex, sha, 65);
  use(ix, path);
  return 1;
}

int gkc_hash_file(gkc_cache *c, const char *path, char hex[65]) {
  gkc__fstamp st;
  /* The index's stamp for path, when it still holds, spares the read. */
  gkc__index *ix = c->index;
  if (ix && index_hash(c, ix, path, hex)) return 0;
  if (gkc__hash_file_stamp(c, path, hex, &st) != 0) return -1;
  if (ix) use(ix, path);
  return 0;
}

int gkc_file_matches(gkc_cache *c, const char *path, const char *sha256) {
  char hex[65];
  return gkc__is_hex64(sha256) && gkc_hash_file(c, path, hex) == 0 &&
         strcmp(hex, sha256) == 0;
}

int gkc_file_note(gkc_cache *c, const char *path, const char *sha256) {
  if (!gkc__is_hex64(sha256)) return gk_err_set(&c->err, "bad SHA-256 '%s'", sha256);
  if (gkc__memo_note(c, path, sha256) != 0) return -1;
  gkc__index *ix = c->index;
  if (ix) use(ix, path);
  return 0;
}

const char *gkc_index_get(gkc_cache *c, const char *name) {
  gkc__index *ix = c->index;
  json_t *v = ix && ix->old_notes ? json_object_get(ix->old_notes, name) : NULL;
  return json_string_value(v);
}

int gkc_index_set(gkc_cache *c, const char *name, const char *value) {
  gkc__index *ix = c->index;
  if (!ix) return 0;
  const char *old = gkc_index_get(c, name);
  if (!old || strcmp(old, value) != 0) ix->dirty = 1;
  json_t *v = json_string(value);
  if (!v || json_object_set_new(ix->notes, name, v) != 0)
    return gk_err_set(&c->err, "cannot keep '%s' in the build index (not UTF-8?)", name);
  return 0;
}

/* Creates the folder that will hold `path` (index/ and index/XX). */
static int mkdir_parent(const char *path) {
  char buf[PATH_MAX];
  size_t n = strlen(path);
  if (n >= sizeof buf) return errno = ENAMETOOLONG, -1;
  memcpy(buf, path, n + 1);
  char *slash = strrchr(buf, '/');
  if (!slash) return errno = EINVAL, -1;
  *slash = '\0';
  return gkc__mkdirs(buf);
}

/* Does every file this build used have, in the loaded index, the hash and
 * stamp (or no stamp) the next index would give it? */
static int files_as_loaded(gkc_cache *c, gkc__index *ix) {
  size_t i;
  json_t *v;
  json_array_foreach(ix->files, i, v) {
    const char *p = json_string_value(v), *op, *osha;
    char hex[65];
    int64_t st[4], ost[4];
    int has_stamp, m = gkc__memo_get(c, p, hex, st);
    json_t *pos = json_object_get(ix->old_paths, p);
    if (!m || !pos ||
        !old_file(json_array_get(ix->old_files, (size_t)json_integer_value(pos)), &op, &osha,
                  ost, &has_stamp) ||
        strcmp(hex, osha) != 0 || has_stamp != (m == 1) ||
        (has_stamp && memcmp(st, ost, sizeof st) != 0))
      return 0;
  }
  return 1;
}

int gkc_index_save(gkc_cache *c) {
  gkc__index *ix = c->index;
  if (!ix) return 0;
  if (!ix->dirty && files_as_loaded(c, ix)) return 0;
  json_t *files = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(ix->files, i, v) {
    const char *p = json_string_value(v);
    char hex[65];
    int64_t st[4];
    int m = gkc__memo_get(c, p, hex, st);
    if (m == 1)
      json_array_append_new(files, json_pack("[ssIIII]", p, hex, (json_int_t)st[0],
                                             (json_int_t)st[1], (json_int_t)st[2],
                                             (json_int_t)st[3]));
    else /* unsettled, or never hashed: a hash that matches nothing */
      json_array_append_new(files, json_pack("[ss]", p, m ? hex : "-"));
  }
  json_t *doc = json_pack("{s:s, s:i, s:o, s:O, s:O, s:O}", "format", INDEX_FORMAT, "version", 1,
                          "files", files, "depsets", ix->depsets, "keys", ix->keys,
                          "notes", ix->notes);
  char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  if (!text) return gk_err_set(&c->err, "out of memory writing the build index");
  size_t len = strlen(text);
  int rc = 0;
  if (!(ix->old_text && ix->old_len == len && memcmp(ix->old_text, text, len) == 0))
    rc = gkc_write_file(c, ix->path, text, len);
  free(text);
  return rc;
}

int gkc_write_file(gkc_cache *c, const char *path, const char *data, size_t len) {
  if (mkdir_parent(path) != 0)
    return gk_err_set(&c->err, "cannot create the folder of '%s': %s", path, strerror(errno));
  return gkc__write_atomic(c, path, data, len);
}
