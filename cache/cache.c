/*
 * cache.c - the content-addressed compile cache (gkcache.h is the manual).
 */
#define _POSIX_C_SOURCE 200809L
#include "gkcache.h"
#include "cache_internal.h"
#include "remote.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A record keeps this many candidates per key, newest first: enough for a
 * source whose includes depend on the flags, small enough to scan fast. */
#define MAX_CANDIDATES 8
#define RECORD_FORMAT "gk-cache-record"

/* A hit moves its object's mtime to now, which is how gk cache gc knows
 * what was used last (atime is not: relatime and noatime filesystems do not
 * keep it). Only an mtime older than this is moved, so that builds seconds
 * apart do not rewrite the inode of every object they hit; least recently
 * used is then exact to this resolution. */
#define TOUCH_NS (3600LL * 1000000000LL)

int gkc_default_dir(char *buf, size_t size) {
  const char *env = getenv("GK_CACHE_DIR");
  int n;
  if (env && *env) {
    n = snprintf(buf, size, "%s", env);
  } else {
    const char *home = getenv("HOME");
    if (!home || !*home) return -1;
    n = snprintf(buf, size, "%s/.gsc/gllm/kernels", home);
  }
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

int gkc_open(const char *dir, gkc_cache **out, gk_err *err) {
  *out = NULL;
  if (sodium_init() < 0) return gk_err_set(err, "cannot initialize libsodium");
  gkc_cache *c = calloc(1, sizeof *c);
  if (!c) goto oom;
  c->lockfd = -1;
  /* Temporaries carry a tag of the host that writes them, so that gk cache
   * verify --fix can tell a dead writer on this host (its pid is gone) from
   * a live one on another host sharing the cache over a network. */
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  snprintf(c->host, sizeof c->host, "%08lx", (unsigned long)(gkc__fnv1a(host) & 0xffffffffu));
  c->dir = gkc__dupf("%s", dir);
  c->root = gkc__dupf("%s/v1", dir);
  char *tmp = gkc__dupf("%s/v1/tmp", dir);
  if (!c->dir || !c->root || !tmp) {
    free(tmp);
    gkc_close(c);
    goto oom;
  }
  if (gkc__mkdirs(tmp) != 0) {
    gk_err_set(err, "cannot create cache folder '%s': %s", tmp, strerror(errno));
    free(tmp);
    gkc_close(c);
    return -1;
  }
  free(tmp);
  /* The tag is a courtesy for backup tools; failing to write it is harmless.
   * Written through a rename like everything else, so that a build killed
   * here or two first builds at once never leave half a tag. */
  static const char tag_text[] =
      "Signature: 8a477f597d28d172789f06886806bc55\n"
      "# This folder is a cache of gllm-kernels' gk build; "
      "it can be deleted at any time.\n";
  char *tag = gkc__dupf("%s/CACHEDIR.TAG", dir);
  if (tag && access(tag, F_OK) != 0) gkc__write_atomic(c, tag, tag_text, sizeof tag_text - 1);
  free(tag);
  *out = c;
  return 0;
oom:
  return gk_err_set(err, "out of memory opening cache '%s'", dir);
}

void gkc_close(gkc_cache *c) {
  if (!c) return;
  gkc__hashes_free(&c->hashes);
  gkc__remote_close(c->remote);
  gkc__index_free(c->index);
  if (c->lockfd >= 0) close(c->lockfd);
  free(c->dir);
  free(c->root);
  free(c);
}

const char *gkc_errmsg(const gkc_cache *c) { return c ? gk_err_msg(&c->err) : ""; }
const char *gkc_dir(const gkc_cache *c) { return c->dir; }

static int record_path(const gkc_cache *c, const char *key, char *buf,
                       size_t size) {
  int n = snprintf(buf, size, "%s/keys/%.2s/%s.json", c->root, key, key);
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Resolves a dependency path against base into buf. */
static const char *resolve(const char *base, const char *dep, char *buf,
                           size_t size) {
  if (dep[0] == '/' || !base || !*base) return dep;
  int n = snprintf(buf, size, "%s/%s", base, dep);
  return n < 0 || (size_t)n >= size ? NULL : buf;
}

/* A candidate is usable when all its dependencies still hash the same and
 * its object is present with the recorded size. */
static int64_t ts_ns(struct timespec t) {
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Records a use of the object at path whose mtime is `mtime` (see
 * TOUCH_NS). Best effort: a read-only cache is still a cache. */
static void touch_used(const char *path, struct timespec mtime) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (ts_ns(mtime) < ts_ns(now) - TOUCH_NS) utimensat(AT_FDCWD, path, NULL, 0);
}

static int candidate_matches(gkc_cache *c, json_t *cand, const char *base,
                             gkc_result *out) {
  const char *obj = json_string_value(json_object_get(cand, "object"));
  json_t *jsize = json_object_get(cand, "size");
  json_t *deps = json_object_get(cand, "deps");
  if (!gkc__is_hex64(obj) || !json_is_integer(jsize) || !json_is_array(deps)) return 0;
  size_t i;
  json_t *d;
  json_array_foreach(deps, i, d) {
    const char *p = json_string_value(json_array_get(d, 0));
    const char *h = json_string_value(json_array_get(d, 1));
    char buf[PATH_MAX];
    const char *path = p ? resolve(base, p, buf, sizeof buf) : NULL;
    if (!path || !gkc__is_hex64(h) || !gkc__dep_matches_json(c, path, h, json_array_get(d, 2)))
      return 0;
  }
  char opath[PATH_MAX];
  struct stat st;
  if (gkc_object_path(c, obj, opath, sizeof opath) != 0 || stat(opath, &st) != 0 ||
      (json_int_t)st.st_size != json_integer_value(jsize))
    return 0;
  touch_used(opath, st.st_mtim);
  memcpy(out->sha256, obj, 65);
  out->size = (uint64_t)st.st_size;
  return 1;
}

json_t *gkc__load_record(const char *path) {
  /* One read and json_loadb: json_load_file reads a character at a time. */
  size_t n;
  char *buf = gkc_read_file(path, (size_t)64 << 20, &n);
  json_t *rec = buf ? json_loadb(buf, n, 0, NULL) : NULL;
  free(buf);
  if (!rec) return NULL;
  if (!json_is_object(rec) ||
      !json_is_array(json_object_get(rec, "candidates")) ||
      !json_is_string(json_object_get(rec, "format")) ||
      strcmp(json_string_value(json_object_get(rec, "format")), RECORD_FORMAT) != 0) {
    json_decref(rec);
    return NULL;
  }
  return rec;
}

int gkc_lookup(gkc_cache *c, const char *key, const char *base,
               gkc_result *out) {
  if (!gkc__is_hex64(key)) return gk_err_set(&c->err, "bad cache key '%s'", key ? key : "(null)");
  char path[PATH_MAX];
  if (record_path(c, key, path, sizeof path) != 0)
    return gk_err_set(&c->err, "cache path too long");
  out->remote = 0;
  /* Direct mode's fast path: no record to read when the index knows key. */
  if (c->index && gkc__index_lookup(c, c->index, key, base, out)) return 1;
  json_t *rec = gkc__load_record(path);
  int hit = 0;
  size_t i;
  json_t *cand;
  json_array_foreach(json_object_get(rec, "candidates"), i, cand) {
    if ((hit = candidate_matches(c, cand, base, out))) {
      if (c->index) gkc__index_note(c, c->index, key, base, out, json_object_get(cand, "deps"));
      break;
    }
  }
  json_decref(rec);
  if (!hit && c->remote) hit = gkc__remote_lookup(c, c->remote, key, base, out);
  return hit;
}

/* Names the image: its SHA-256 and size into *out. */
static int hash_image(gkc_cache *c, const char *image, gkc_result *out) {
  int fd = open(image, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return gk_err_set(&c->err, "cannot read '%s': %s", image, strerror(errno));
  unsigned char sha[32];
  uint64_t size;
  int rc = gkc__copy_fd(fd, -1, sha, &size);
  int e = errno;
  close(fd);
  if (rc != 0) return gk_err_set(&c->err, "cannot read '%s': %s", image, strerror(e));
  sodium_bin2hex(out->sha256, 65, sha, 32);
  out->size = size;
  return 0;
}

/* Moves the image named by hash_image into the object store. */
static int place_object(gkc_cache *c, const char *image, gkc_result *out) {
  unsigned char sha[32];
  uint64_t size = out->size;
  int rc, e;
  char dest[PATH_MAX];
  if (gkc_object_path(c, out->sha256, dest, sizeof dest) != 0)
    return gk_err_set(&c->err, "cache path too long");
  char *dir = gkc__dupf("%.*s", (int)(strrchr(dest, '/') - dest), dest);
  if (!dir || gkc__mkdirs(dir) != 0) {
    e = errno;
    free(dir);
    return gk_err_set(&c->err, "cannot create '%s' in the cache: %s", dest, strerror(e));
  }
  free(dir);
  struct stat st;
  if (stat(dest, &st) == 0 && (uint64_t)st.st_size == size) {
    unlink(image); /* the same bytes are already there */
    touch_used(dest, st.st_mtim);
    return 0;
  }
  if (rename(image, dest) == 0) return 0;
  if (errno != EXDEV)
    return gk_err_set(&c->err, "cannot move '%s' into the cache: %s", image, strerror(errno));
  /* Another file system: copy through a temporary in the store. */
  char tmp[PATH_MAX];
  if (gkc_temp_path(c, ".part", tmp, sizeof tmp) != 0) return -1;
  int in = open(image, O_RDONLY | O_CLOEXEC);
  int outfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  uint64_t copied = 0;
  rc = in >= 0 && outfd >= 0 ? gkc__copy_fd(in, outfd, sha, &copied) : -1;
  e = errno;
  if (in >= 0) close(in);
  if (outfd >= 0 && close(outfd) != 0 && rc == 0) rc = -1, e = errno;
  if (rc == 0 && rename(tmp, dest) != 0) rc = -1, e = errno;
  if (rc != 0) {
    unlink(tmp);
    return gk_err_set(&c->err, "cannot copy '%s' into the cache: %s", image, strerror(e));
  }
  unlink(image);
  return 0;
}

/* Hashes the dependencies into the record's form: [path, sha256, stamp]
 * (the stamp only for a file that had settled when it was read). */
static int hash_deps(gkc_cache *c, const char *base, const char *const *deps,
                     size_t ndeps, json_t **out) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t settled = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec - SETTLED_NS;
  json_t *jdeps = json_array();
  for (size_t i = 0; i < ndeps; i++) {
    char buf[PATH_MAX], hex[65];
    gkc__fstamp st;
    const char *path = resolve(base, deps[i], buf, sizeof buf);
    if (!path) {
      json_decref(jdeps);
      return gk_err_set(&c->err, "dependency path too long: '%s'", deps[i]);
    }
    if (gkc__hash_file_stamp(c, path, hex, &st) != 0) {
      json_decref(jdeps);
      return -1;
    }
    if (st.mtime_ns < settled && st.ctime_ns < settled)
      json_array_append_new(jdeps, json_pack("[ss[IIII]]", deps[i], hex,
                                             (json_int_t)st.size, (json_int_t)st.ino,
                                             (json_int_t)st.mtime_ns,
                                             (json_int_t)st.ctime_ns));
    else
      json_array_append_new(jdeps, json_pack("[ss]", deps[i], hex));
  }
  *out = jdeps;
  return 0;
}

/* Adds a candidate (object r, dependencies jdeps: consumed) to key's
 * record, newest first; an older candidate with the same dependency hashes
 * is replaced rather than kept twice. */
static int record_add(gkc_cache *c, const char *key, const gkc_result *r, json_t *jdeps) {
  char rpath[PATH_MAX];
  if (record_path(c, key, rpath, sizeof rpath) != 0) {
    json_decref(jdeps);
    return gk_err_set(&c->err, "cache path too long");
  }
  json_t *cands = json_array();
  json_array_append_new(cands, json_pack("{s:s, s:I, s:O}", "object", r->sha256, "size",
                                         (json_int_t)r->size, "deps", jdeps));
  json_t *old = gkc__load_record(rpath);
  if (old) {
    size_t i;
    json_t *cand;
    json_array_foreach(json_object_get(old, "candidates"), i, cand) {
      if (json_array_size(cands) >= MAX_CANDIDATES) break;
      if (!json_equal(json_object_get(cand, "deps"), jdeps))
        json_array_append(cands, cand);
    }
    json_decref(old);
  }
  json_decref(jdeps);
  json_t *rec = json_pack("{s:s, s:i, s:o}", "format", RECORD_FORMAT, "version", 1,
                          "candidates", cands);
  char *text = json_dumps(rec, JSON_COMPACT);
  json_decref(rec);
  if (!text) return gk_err_set(&c->err, "out of memory writing a cache record");
  char *dir = gkc__dupf("%.*s", (int)(strrchr(rpath, '/') - rpath), rpath);
  int rc = -1;
  if (!dir || gkc__mkdirs(dir) != 0)
    gk_err_set(&c->err, "cannot create '%s' in the cache: %s", rpath, strerror(errno));
  else
    rc = gkc__write_atomic(c, rpath, text, strlen(text));
  free(dir);
  free(text);
  return rc;
}

int gkc_store(gkc_cache *c, const char *key, const char *base,
              const char *image, const char *const *deps, size_t ndeps,
              gkc_result *out) {
  if (!gkc__is_hex64(key)) {
    unlink(image);
    return gk_err_set(&c->err, "bad cache key '%s'", key ? key : "(null)");
  }
  json_t *jdeps = NULL;
  if (hash_deps(c, base, deps, ndeps, &jdeps) != 0) {
    unlink(image);
    return -1;
  }
  out->remote = 0;
  /* Kept for the upload: gkc__put consumes jdeps. */
  if (c->remote) json_incref(jdeps);
  json_t *ideps = c->index ? json_incref(jdeps) : NULL; /* for the index */
  if (gkc__put(c, key, image, jdeps, out) != 0) {
    if (c->remote) json_decref(jdeps);
    json_decref(ideps);
    unlink(image);
    return -1;
  }
  if (ideps) gkc__index_note(c, c->index, key, base, out, ideps);
  json_decref(ideps);
  if (c->remote) {
    gkc__remote_store(c, c->remote, key, out, jdeps);
    json_decref(jdeps);
  }
  return 0;
}

int gkc_fetch(gkc_cache *c, const gkc_result *r, const char *dest, int sync) {
  char src[PATH_MAX];
  if (!gkc__is_hex64(r->sha256) || gkc_object_path(c, r->sha256, src, sizeof src) != 0)
    return gk_err_set(&c->err, "bad object name '%s'", r->sha256);
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return gk_err_set(&c->err, "cannot read cache object '%s': %s", src, strerror(errno));
  /* The temporary sits beside dest so that the rename stays on one file
   * system; its name says what it is if a crash leaves it behind. */
  char *tmp = gkc__dupf("%s.tmp.%ld.%lu", dest, (long)getpid(), ++c->counter);
  int out = tmp ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666) : -1;
  if (out < 0) {
    int e = errno;
    close(in);
    gk_err_set(&c->err, "cannot write '%s': %s", tmp ? tmp : dest, strerror(e));
    free(tmp);
    return -1;
  }
  unsigned char sha[32];
  uint64_t size = 0;
  int rc = gkc__copy_fd(in, out, sha, &size);
  int e = errno;
  close(in);
  if (rc == 0 && sync && fsync(out) != 0) rc = -1, e = errno;
  if (close(out) != 0 && rc == 0) rc = -1, e = errno;
  if (rc != 0) {
    unlink(tmp);
    gk_err_set(&c->err, "cannot copy '%s' to '%s': %s", src, tmp, strerror(e));
    free(tmp);
    return -1;
  }
  char hex[65];
  sodium_bin2hex(hex, sizeof hex, sha, 32);
  if (size != r->size || strcmp(hex, r->sha256) != 0) {
    unlink(tmp);
    unlink(src);
    gk_err_set(&c->err, "cache object '%s' is damaged (removed it; build again to recompile)",
               src);
    free(tmp);
    return -1;
  }
  if (rename(tmp, dest) != 0) {
    e = errno;
    unlink(tmp);
    gk_err_set(&c->err, "cannot write '%s': %s", dest, strerror(e));
    free(tmp);
    return -1;
  }
  free(tmp);
  return 0;
}

/* ---- for remote.c (cache_internal.h) ------------------------------------ */

int gkc__dep_matches(gkc_cache *c, const char *base, const char *dep, const char *want) {
  char buf[PATH_MAX];
  const char *path = resolve(base, dep, buf, sizeof buf);
  return path && gkc__is_hex64(want) && gkc__dep_matches_json(c, path, want, NULL);
}

int gkc__hash_deps(gkc_cache *c, const char *base, const char *const *deps, size_t n,
                   json_t **out) {
  return hash_deps(c, base, deps, n, out);
}

int gkc__put(gkc_cache *c, const char *key, const char *image, json_t *jdeps,
             gkc_result *out) {
  /* Hashing, the slow part, happens before the lock. Under it, the object and
   * the record that points at it appear together as far as gk cache gc is
   * concerned (gc holds the lock while it removes), and two builds recording
   * the same key no longer lose one another's candidate. A lock that cannot
   * be had (a filesystem without flock) costs only those two guarantees. */
  if (hash_image(c, image, out) != 0) {
    json_decref(jdeps);
    return -1;
  }
  int locked = gkc__lock(c) == 0;
  int rc = place_object(c, image, out);
  if (rc == 0) rc = record_add(c, key, out, jdeps);
  else json_decref(jdeps);
  if (locked) gkc__unlock(c);
  return rc;
}

int gkc_set_remote(gkc_cache *c, const char *url, int readonly, FILE *log) {
  gkc_remote_options o = {0};
  o.readonly = readonly;
  return gkc_set_remote_ex(c, url, &o, log);
}

int gkc_set_remote_ex(gkc_cache *c, const char *url, const gkc_remote_options *o, FILE *log) {
  gkc__remote *r = gkc__remote_open(url, o, log, &c->err);
  if (!r) return -1;
  gkc__remote_close(c->remote);
  c->remote = r;
  return 0;
}

/* ---- for index.c (the direct-mode index) ----------------------------------- */

int gkc__object_ok(gkc_cache *c, const char *sha, int64_t size, gkc_result *out) {
  char opath[PATH_MAX];
  struct stat st;
  if (!gkc__is_hex64(sha) || gkc_object_path(c, sha, opath, sizeof opath) != 0 ||
      stat(opath, &st) != 0 || (int64_t)st.st_size != size)
    return 0;
  touch_used(opath, st.st_mtim);
  memcpy(out->sha256, sha, 65);
  out->size = (uint64_t)st.st_size;
  return 1;
}

/* ---- for gk build's fast path (gkcache.h) --------------------------------- */

int gkc_object_used(gkc_cache *c, const char *sha256, uint64_t size) {
  gkc_result r;
  return gkc__object_ok(c, sha256, (int64_t)size, &r);
}
