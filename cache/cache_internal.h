/*
 * cache_internal.h - what cache.c lends remote.c (the shared remote cache
 * needs the local cache's dependency checks and store). Not API.
 */
#ifndef GKC_CACHE_INTERNAL_H
#define GKC_CACHE_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "gkcache.h"

/* Does dependency `dep` (as a compiler wrote it; relative ones against
 * base) still have SHA-256 `want`? Memoized per build. */
int gkc__dep_matches(gkc_cache *c, const char *base, const char *dep, const char *want);

/* Hashes deps[0..n) into a record's dependency list ([path, sha256, stamp]
 * arrays). Returns 0 with *out (owned by the caller) or -1. */
int gkc__hash_deps(gkc_cache *c, const char *base, const char *const *deps, size_t n,
                   json_t **out);

/* Moves the file `image` into the object store, named by its hash, and adds
 * it as a candidate for key with dependency list jdeps (consumed), both
 * under the cache's lock. 0 with *out filled, or -1 (image left to the
 * caller). */
int gkc__put(gkc_cache *c, const char *key, const char *image, json_t *jdeps,
             gkc_result *out);

/* ---- for maint.c (gk cache verify, gc, stats) ---- */

/* The cache's lock, DIR/v1/lock (flock, exclusive; blocks). Writers hold it
 * while they put an object and its record in place, gc and verify --fix
 * while they remove. Returns 0 or -1 (message on the handle). */
int gkc__lock(gkc_cache *c);
void gkc__unlock(gkc_cache *c);

/* A key record (keys/XX/KEY.json), checked for its format; NULL when
 * missing, unreadable or not a record. */
json_t *gkc__load_record(const char *path);

/* dest <- data through a temporary in DIR/v1/tmp and a rename. */
int gkc__write_atomic(gkc_cache *c, const char *dest, const char *data, size_t len);

int gkc__fail(gkc_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gkc__is_hex64(const char *s);
/* 1 when the n bytes at s are lowercase hex digits. */
int gkc__is_hex(const char *s, size_t n);
/* mkdir -p; an existing folder is success (cache.c). */
int gkc__mkdirs(const char *path);
const char *gkc__root(const gkc_cache *c); /* DIR/v1 */
/* 8 hex digits naming this host; temporaries are named
 * tmp/HOST-PID-COUNTER-RANDOM[SUFFIX]. */
const char *gkc__host_tag(const gkc_cache *c);

/* ---- the direct-mode index (index.c; gkcache.h: gkc_index_open) ---- */

typedef struct gkc__index gkc__index;
void gkc__index_free(gkc__index *ix);
/* gkc_lookup's fast path: 1 with *out filled when the index knows key for
 * base and every file of its dependency set is unchanged; 0 otherwise. */
int gkc__index_lookup(gkc_cache *c, gkc__index *ix, const char *key, const char *base,
                      gkc_result *out);
/* A hit through a record, or a store: key -> r, with the record's
 * dependency list `deps` (borrowed; paths relative to base). */
void gkc__index_note(gkc_cache *c, gkc__index *ix, const char *key, const char *base,
                     const gkc_result *r, json_t *deps);
/* gkc_hash_file's fast path: 1 with hex when the index's stamp of path still
 * holds; 0 otherwise. */
int gkc__index_hash(gkc_cache *c, gkc__index *ix, const char *path, char hex[65]);
/* Keeps path (hashed this build) in the next index. */
void gkc__index_use(gkc__index *ix, const char *path);

/* ... and what cache.c lends it. */
gkc__index **gkc__index_slot(gkc_cache *c);
/* Does path still hash to want? stamp (size, inode, mtime_ns, ctime_ns;
 * NULL: none) answers without reading when the file still has it. */
int gkc__check_file(gkc_cache *c, const char *path, const char *want, const int64_t *stamp);
/* path's memoized hash and stamp: 0 not hashed this build, 1 with a stamp
 * that was settled when taken (safe to trust later), 2 with one that was not. */
int gkc__memo_get(gkc_cache *c, const char *path, char hex[65], int64_t stamp[4]);
/* path now has content hex (the build just wrote it): memoized with its stamp. */
int gkc__memo_note(gkc_cache *c, const char *path, const char *hex);
/* Is object sha present with size? 1 with *out filled (and its use recorded
 * for gc), else 0. */
int gkc__object_ok(gkc_cache *c, const char *sha, int64_t size, gkc_result *out);

#endif
