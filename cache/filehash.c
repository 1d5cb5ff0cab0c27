/*
 * filehash.c - the SHA-256 of every file a build reads, each read at most
 * once per build, and not at all when a stamp recorded with its hash shows
 * it unchanged (git's index does the same). store.c asks here whether a
 * record's dependencies still hold; index.c keeps the stamps across builds
 * (and answers gkc_hash_file, whose first try is the index's stamp).
 */
#define _POSIX_C_SOURCE 200809L
#include "cache_internal.h"
#include "gkcache.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* One memoized file hash, with the file's stamp when it was read. The table
 * is open addressing over a power of two; builds see tens to hundreds of
 * distinct files. */
struct gkc__memo {
  char *path;
  char hex[65];
  gkc__fstamp st;
  int settled; /* st was SETTLED_NS old when taken: index.c may trust it */
};

int gkc__copy_fd(int in, int out, unsigned char sha[32], uint64_t *size) {
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  unsigned char buf[65536];
  uint64_t total = 0;
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    crypto_hash_sha256_update(&st, buf, (size_t)n);
    for (ssize_t off = 0; out >= 0 && off < n;) {
      ssize_t w = write(out, buf + off, (size_t)(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return -1;
      off += w;
    }
    total += (uint64_t)n;
  }
  crypto_hash_sha256_final(&st, sha);
  if (size) *size = total;
  return 0;
}

static struct gkc__memo *memo_slot(gkc_cache *c, const char *path) {
  const gkc__hashes *h = &c->hashes;
  if (h->cap == 0) return NULL;
  size_t mask = h->cap - 1;
  for (size_t i = gkc__fnv1a(path) & mask;; i = (i + 1) & mask)
    if (!h->slot[i].path || strcmp(h->slot[i].path, path) == 0) return &h->slot[i];
}

static void to_stamp(const struct stat *st, gkc__fstamp *f) {
  f->size = (int64_t)st->st_size;
  f->ino = (int64_t)st->st_ino;
  f->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
  f->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* `taken`: when the stamp st was read (CLOCK_REALTIME, ns), before the
 * content: a stamp already SETTLED_NS old then cannot hide a later edit. */
static void memo_put(gkc_cache *c, const char *path, const char *hex,
                     const gkc__fstamp *st, int64_t taken) {
  gkc__hashes *h = &c->hashes;
  if (h->len * 2 >= h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 64;
    struct gkc__memo *old = h->slot;
    size_t oldcap = h->cap;
    struct gkc__memo *m = calloc(cap, sizeof *m);
    if (!m) return; /* memoizing is an optimization only */
    h->slot = m;
    h->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
      if (old[i].path) *memo_slot(c, old[i].path) = old[i];
    free(old);
  }
  struct gkc__memo *s = memo_slot(c, path);
  if (!s->path) {
    if (!(s->path = strdup(path))) return;
    h->len++;
  }
  memcpy(s->hex, hex, 65);
  s->st = *st;
  s->settled = st->mtime_ns < taken - SETTLED_NS && st->ctime_ns < taken - SETTLED_NS;
}

/* Hashes path (memoized); its stamp, taken before reading, into *stamp. */
int gkc__hash_file_stamp(gkc_cache *c, const char *path, char hex[65], gkc__fstamp *stamp) {
  struct gkc__memo *m = memo_slot(c, path);
  if (m && m->path) {
    memcpy(hex, m->hex, 65);
    *stamp = m->st;
    return 0;
  }
  int64_t taken = now_ns();
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return gk_err_set(&c->err, "cannot read '%s': %s", path, strerror(errno));
  struct stat st;
  unsigned char sha[32];
  int rc = fstat(fd, &st) == 0 ? gkc__copy_fd(fd, -1, sha, NULL) : -1;
  int e = errno;
  close(fd);
  if (rc != 0) return gk_err_set(&c->err, "cannot read '%s': %s", path, strerror(e));
  sodium_bin2hex(hex, 65, sha, 32);
  to_stamp(&st, stamp);
  memo_put(c, path, hex, stamp, taken);
  return 0;
}

/* Does the dependency at path still have the hash `want`? A stamp recorded
 * with it that the file still has answers without reading the file; the
 * answer is memoized either way, so each file costs one stat per build. */
static int dep_matches_stamp(gkc_cache *c, const char *path, const char *want,
                             const gkc__fstamp *rec) {
  struct gkc__memo *m = memo_slot(c, path);
  if (!(m && m->path) && rec) {
    struct stat st;
    gkc__fstamp now;
    if (stat(path, &st) != 0) return 0;
    to_stamp(&st, &now);
    if (memcmp(&now, rec, sizeof now) == 0) {
      /* A recorded stamp was settled when recorded, so it still is. */
      memo_put(c, path, want, &now, INT64_MAX);
      return 1;
    }
  }
  char hex[65];
  gkc__fstamp st;
  return gkc__hash_file_stamp(c, path, hex, &st) == 0 && strcmp(hex, want) == 0;
}

int gkc__dep_matches_json(gkc_cache *c, const char *path, const char *want, json_t *jstamp) {
  if (!(json_is_array(jstamp) && json_array_size(jstamp) == 4))
    return dep_matches_stamp(c, path, want, NULL);
  gkc__fstamp rec = {json_integer_value(json_array_get(jstamp, 0)),
                json_integer_value(json_array_get(jstamp, 1)),
                json_integer_value(json_array_get(jstamp, 2)),
                json_integer_value(json_array_get(jstamp, 3))};
  return dep_matches_stamp(c, path, want, &rec);
}

int gkc__check_file(gkc_cache *c, const char *path, const char *want,
                    const int64_t *stamp) {
  gkc__fstamp rec;
  if (stamp) rec = (gkc__fstamp){stamp[0], stamp[1], stamp[2], stamp[3]};
  return dep_matches_stamp(c, path, want, stamp ? &rec : NULL);
}

int gkc__memo_get(gkc_cache *c, const char *path, char hex[65], int64_t stamp[4]) {
  struct gkc__memo *m = memo_slot(c, path);
  if (!(m && m->path)) return 0;
  memcpy(hex, m->hex, 65);
  stamp[0] = m->st.size, stamp[1] = m->st.ino;
  stamp[2] = m->st.mtime_ns, stamp[3] = m->st.ctime_ns;
  return m->settled ? 1 : 2;
}

int gkc__memo_note(gkc_cache *c, const char *path, const char *hex) {
  struct stat st;
  int64_t taken = now_ns();
  if (stat(path, &st) != 0)
    return gk_err_set(&c->err, "cannot read '%s': %s", path, strerror(errno));
  gkc__fstamp f;
  to_stamp(&st, &f);
  memo_put(c, path, hex, &f, taken);
  return 0;
}

int gkc_files_each(gkc_cache *c, gkc_file_fn fn, void *ctx) {
  const gkc__hashes *h = &c->hashes;
  for (size_t i = 0; i < h->cap; i++) {
    const struct gkc__memo *m = &h->slot[i];
    if (!m->path) continue;
    int64_t st[4] = {m->st.size, m->st.ino, m->st.mtime_ns, m->st.ctime_ns};
    int rc = fn(ctx, m->path, m->hex, st, m->settled);
    if (rc) return rc;
  }
  return 0;
}

void gkc__hashes_free(gkc__hashes *h) {
  for (size_t i = 0; i < h->cap; i++) free(h->slot[i].path);
  free(h->slot);
  h->slot = NULL, h->cap = h->len = 0;
}
