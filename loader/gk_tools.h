/*
 * gk_tools.h - what libgk lends gk's own build side (packager/) beyond
 * gk.h, so that the archive format has one reader: the loader. Not API:
 * not installed, and nothing here is exported from libgk.so (gk__ names,
 * hidden); code that links libgk.a reaches it.
 */
#ifndef GK_TOOLS_H
#define GK_TOOLS_H

#include <stddef.h>

#include "gk.h"

/* One `meta` row: its key and value (NUL-terminated, lengths without the
 * NUL), valid for the call only. 0 goes on; anything else ends the walk,
 * and gk__archive_meta returns it. */
typedef int (*gk__meta_fn)(void *ctx, const char *key, size_t key_len,
                           const char *value, size_t value_len);

/*
 * Calls fn for every row of the archive's `meta` table (docs/archive.md,
 * "Metadata") in key order, checked as the digest reads them ("Signatures":
 * each key once, in bytewise order, key and value TEXT). GK_OK; GK_ECORRUPT
 * or GK_ENOMEM with the archive's message set; or fn's non-zero return,
 * the message left to fn's caller.
 */
int gk__archive_meta(gk_archive *ar, gk__meta_fn fn, void *ctx);

#endif /* GK_TOOLS_H */
