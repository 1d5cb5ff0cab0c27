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

/* Moves the file `image` into the object store, named by its hash. */
int gkc__store_object(gkc_cache *c, const char *image, gkc_result *out);

/* Adds a candidate for key: object r with dependency list jdeps (consumed). */
int gkc__record_add(gkc_cache *c, const char *key, const gkc_result *r, json_t *jdeps);

#endif
