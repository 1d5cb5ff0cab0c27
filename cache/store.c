/*
 * store.c - the local store: objects named by their SHA-256 and the key
 * records that list, for each job key, the candidates a lookup may use
 * (gkcache.h, "How a job is looked up"). cache.c and remote.c put into it
 * and look up in it, index.c checks its objects, verify.c and gc.c read its
 * records and rewrite them with fewer candidates (gkc__rewrite_record); it
 * asks filehash.c for the hashes of the files a record depends on.
 */
#define _POSIX_C_SOURCE 200809L
#include "cache_internal.h"
#include "gkcache.h"

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

int gkc__record_path(const gkc_cache *c, const char *key, char *buf, size_t size) {
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

/* A candidate is usable when all its dependencies still hash the same and
 * its object is present with the recorded size. */
int gkc__candidate_matches(gkc_cache *c, json_t *cand, const char *base, gkc_result *out) {
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
  return gkc__object_ok(c, obj, (int64_t)json_integer_value(jsize), out);
}

int gkc__dep_matches(gkc_cache *c, const char *base, const char *dep, const char *want) {
  char buf[PATH_MAX];
  const char *path = resolve(base, dep, buf, sizeof buf);
  return path && gkc__is_hex64(want) && gkc__dep_matches_json(c, path, want, NULL);
}

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

/* Is candidate `cand` well formed? Its object's name into *obj. */
int gkc__candidate_shape(json_t *cand, const char **obj, json_int_t *size) {
  *obj = json_string_value(json_object_get(cand, "object"));
  json_t *js = json_object_get(cand, "size");
  *size = json_integer_value(js);
  return gkc__is_hex64(*obj) && json_is_integer(js) &&
         json_is_array(json_object_get(cand, "deps"));
}

/* Writes rec back to path with only the candidates whose `keep` is set, or
 * removes the file when none is kept. Returns 0 or -1. */
int gkc__rewrite_record(gkc_cache *c, const char *path, json_t *rec, const char *keep) {
  json_t *cands = json_object_get(rec, "candidates");
  json_t *kept = json_array();
  size_t i, n = 0;
  json_t *cand;
  json_array_foreach(cands, i, cand) {
    if (keep[i]) json_array_append(kept, cand), n++;
  }
  if (n == 0) {
    json_decref(kept);
    if (unlink(path) != 0 && errno != ENOENT)
      return gk_err_set(&c->err, "cannot remove '%s': %s", path, strerror(errno));
    return 0;
  }
  json_object_set_new(rec, "candidates", kept);
  char *text = json_dumps(rec, JSON_COMPACT);
  if (!text) return gk_err_set(&c->err, "out of memory rewriting '%s'", path);
  int rc = gkc__write_atomic(c, path, text, strlen(text));
  free(text);
  return rc;
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
int gkc__hash_deps(gkc_cache *c, const char *base, const char *const *deps, size_t ndeps,
                   json_t **out) {
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

/* Do two dependency lists name the same files with the same hashes? Their
 * stamps do not count: two builds that hash one file, one before it has
 * settled (no stamp) and one after, describe the same candidate. */
static int same_hashes(json_t *a, json_t *b) {
  if (!json_is_array(a) || !json_is_array(b) || json_array_size(a) != json_array_size(b))
    return 0;
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
    for (size_t f = 0; f < 2; f++)
      if (!json_equal(json_array_get(x, f), json_array_get(y, f))) return 0;
  }
  return 1;
}

/* Adds a candidate (object r, dependencies jdeps: consumed) to key's
 * record, newest first; an older candidate with the same dependency hashes
 * (same_hashes) is replaced rather than kept twice. */
static int record_add(gkc_cache *c, const char *key, const gkc_result *r, json_t *jdeps) {
  char rpath[PATH_MAX];
  if (gkc__record_path(c, key, rpath, sizeof rpath) != 0) {
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
      if (!same_hashes(json_object_get(cand, "deps"), jdeps))
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
