/*
 * cache_internal.h - what the parts of the cache lend each other. Not API.
 *
 * Who calls whom. The files are layers: each calls only files below it, so
 * there is no cycle (docs/cache.md, "The code"):
 *
 *   cache.c      the public API: open, lookup, store, fetch, the remote;
 *                ties the local store, the index and the remote together
 *                  -> remote, index, store, filehash, common
 *   verify.c     gk cache verify                   -> walk, store, common
 *   gc.c         gk cache gc                       -> walk, store, common
 *   walk.c       what stats, verify and gc share: the walk of the entry
 *                folders, temporaries; gk cache stats      -> common
 *   remote.c     the remote cache: HTTP client and protocol (remote.h)
 *                  -> remote_ac, store, common, curl_load
 *   remote_ac.c  its entries: ActionResult protobuf and signatures
 *   index.c      direct mode's index; gkc_hash_file and gkc_file_*, which
 *                ask it first   -> store, filehash, common
 *   store.c      objects and key records: put, candidates, rewrites,
 *                object checks   -> filehash, common
 *   filehash.c   this build's file hashes (the memo)   -> common
 *   common.c     what all use: hex names, paths, atomic writes, the lock
 *   curl_load.c  libcurl's functions, through dlopen
 *
 * The sections below go from the bottom up (remote.h declares what
 * remote.c and remote_ac.c lend). The handle's struct is here for every
 * file to read.
 */
#ifndef GKC_CACHE_INTERNAL_H
#define GKC_CACHE_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gk_compiler.h" /* GK__PRINTF */
#include "gkcache.h"

/* ---- the handle ---- */

/* What identifies a file's version without reading it (git's index and
 * ccache's inode cache use the same). ctime changes on any write, even one
 * that restores mtime. */
typedef struct gkc__fstamp {
  int64_t size, ino, mtime_ns, ctime_ns;
} gkc__fstamp;

/* A stamp is trusted only for a file that had not changed for this long when
 * it was hashed: on a file system with coarse time stamps, an edit right
 * after hashing could otherwise keep the same stamp ("racy git"). */
#define SETTLED_NS 2000000000LL

/* This build's file hashes, one per path (filehash.c; in the handle). */
typedef struct gkc__hashes {
  struct gkc__memo *slot;
  size_t cap, len;
} gkc__hashes;

typedef struct gkc__index gkc__index;

/* The handle (gkcache.h), whose fields every part of the cache reads. */
struct gkc_cache {
  char *dir;
  char *root;  /* DIR/v1 */
  gk_err err;  /* the last failure: gkc_errmsg */
  unsigned long counter;
  char host[9]; /* 8 hex digits naming this host; temporaries are named
                   tmp/HOST-PID-COUNTER-RANDOM[SUFFIX] */
  int lockfd;   /* DIR/v1/lock, opened on first use; -1 before */
  gkc__hashes hashes;         /* this build's file hashes (filehash.c) */
  struct gkc__remote *remote; /* NULL: local only */
  gkc__index *index;          /* the direct-mode index (index.c); NULL: none */
};

/* ---- common.c: what every part uses ---- */

/* 1 when the n bytes at s are lowercase hex digits; _hex64: s is a string
 * of 64 of them (a key, a SHA-256). */
int gkc__is_hex(const char *s, size_t n);
int gkc__is_hex64(const char *s);

/* A malloc'd sprintf; NULL when out of memory. */
char *gkc__dupf(const char *fmt, ...) GK__PRINTF(1, 2);

/* FNV-1a of a string: the memo's slots, the host tag. */
uint64_t gkc__fnv1a(const char *s);

/* mkdir -p; an existing folder is success. */
int gkc__mkdirs(const char *path);

/* dest <- data through a temporary in DIR/v1/tmp and a rename. 0, or -1
 * with the message on the handle. */
int gkc__write_atomic(gkc_cache *c, const char *dest, const char *data, size_t len);

/* The cache's lock, DIR/v1/lock (flock, exclusive; blocks). Writers hold it
 * while they put an object and its record in place, gc and verify --fix
 * while they remove. Returns 0 or -1 (message on the handle). */
int gkc__lock(gkc_cache *c);
void gkc__unlock(gkc_cache *c);

/* ---- filehash.c: the hashes of the files a build reads ---- */

void gkc__hashes_free(gkc__hashes *h);

/* SHA-256 of the open descriptor in's remaining content, copied to the
 * descriptor out on the way unless out < 0; the byte count into *size
 * unless NULL. 0 or -1 (errno). */
int gkc__copy_fd(int in, int out, unsigned char sha[32], uint64_t *size);
/* Hashes path (once per build); its stamp, taken before reading, into
 * *stamp. 0, or -1 with a message on the handle. */
int gkc__hash_file_stamp(gkc_cache *c, const char *path, char hex[65], gkc__fstamp *stamp);
/* Does the file at path still hash to want? jstamp, a record's [size, ino,
 * mtime_ns, ctime_ns] (NULL or anything else: none), answers without reading
 * when the file still has it. */
int gkc__dep_matches_json(gkc_cache *c, const char *path, const char *want, json_t *jstamp);
/* Does path still hash to want? stamp (size, inode, mtime_ns, ctime_ns;
 * NULL: none) answers without reading when the file still has it. */
int gkc__check_file(gkc_cache *c, const char *path, const char *want, const int64_t *stamp);
/* path's memoized hash and stamp: 0 not hashed this build, 1 with a stamp
 * that was settled when taken (safe to trust later), 2 with one that was not. */
int gkc__memo_get(gkc_cache *c, const char *path, char hex[65], int64_t stamp[4]);
/* path now has content hex (the build just wrote it): memoized with its stamp. */
int gkc__memo_note(gkc_cache *c, const char *path, const char *hex);

/* ---- store.c: the local store of objects and key records ---- */

/* Path of key's record, DIR/v1/keys/XX/KEY.json. 0, or -1 when buf is too
 * small. */
int gkc__record_path(const gkc_cache *c, const char *key, char *buf, size_t size);

/* A key record, checked for its format; NULL when missing, unreadable or
 * not a record. */
json_t *gkc__load_record(const char *path);

/* Is candidate cand of a record usable (relative dependency paths against
 * base)? 1 with *out filled (and the object's use recorded for gc), else 0. */
int gkc__candidate_matches(gkc_cache *c, json_t *cand, const char *base, gkc_result *out);

/* Does dependency `dep` (as a compiler wrote it; relative ones against
 * base) still have SHA-256 `want`? Memoized per build. */
int gkc__dep_matches(gkc_cache *c, const char *base, const char *dep, const char *want);

/* Is object sha present with size? 1 with *out filled (and its use recorded
 * for gc), else 0. */
int gkc__object_ok(gkc_cache *c, const char *sha, int64_t size, gkc_result *out);

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

/* Is candidate cand well formed? Its object's name and size into *obj, *size. */
int gkc__candidate_shape(json_t *cand, const char **obj, json_int_t *size);

/* Rewrites path as rec with only the candidates keep[i] marks (none: removes it). 0 or -1. */
int gkc__rewrite_record(gkc_cache *c, const char *path, json_t *rec, const char *keep);

/* ---- index.c: the direct-mode index (gkcache.h: gkc_index_open) ---- */

void gkc__index_free(gkc__index *ix);
/* gkc_lookup's fast path: 1 with *out filled when the index knows key for
 * base and every file of its dependency set is unchanged; 0 otherwise. */
int gkc__index_lookup(gkc_cache *c, gkc__index *ix, const char *key, const char *base,
                      gkc_result *out);
/* A hit through a record, or a store: key -> r, with the record's
 * dependency list `deps` (borrowed; paths relative to base). */
void gkc__index_note(gkc_cache *c, gkc__index *ix, const char *key, const char *base,
                     const gkc_result *r, json_t *deps);

/* ---- walk.c: the entry folders, as stats, verify and gc walk them ---- */

/* The kinds of entry, each a folder (walk.c: ENTRY_DIRS); a walk takes a
 * bit mask of them (1 << OBJECTS ...). */
enum { OBJECTS, KEYS, RUNS, INDEX, NKINDS };
#define ALL_ENTRIES ((1u << NKINDS) - 1)

/* One file met by a walk of an entry folder. */
typedef struct gkc__file {
  char *path;
  char name[72];  /* the entry's name: 64 hex digits, less ".json" */
  int kind;       /* OBJECTS, KEYS, RUNS, INDEX */
  uint64_t bytes; /* disk usage */
  int64_t size, mtime;
  int state;      /* per pass */
  size_t live;    /* usable candidates (records); candidates naming it (objects) */
  size_t ref_off; /* gc: where its records start in the reverse index */
} gkc__file;

typedef struct gkc__files {
  gkc__file *v;
  size_t n, cap;
} gkc__files;

/* What a walk does with something that is not an entry. */
typedef struct gkc__odd {
  char *path;
  uint64_t bytes;
  int64_t age;
  int temp; /* 1: a temporary (judged by gkc__temp_is_stale), 0: a stray */
  int beside;
} gkc__odd;

typedef struct gkc__odds {
  gkc__odd *v;
  size_t n, cap;
} gkc__odds;

/* Entries in `which` into out (objects sorted), the rest into other (walk.c). 0 or -1. */
int gkc__walk(gkc_cache *c, unsigned which, int temps, gkc__files *out, gkc__odds *other);
/* A zeroed file appended to f; NULL when out of memory. */
gkc__file *gkc__files_add(gkc__files *f);
/* Frees f's paths and array and empties it; likewise gkc__odds_free. */
void gkc__files_free(gkc__files *f);
void gkc__odds_free(gkc__odds *o);
/* qsort order of gkc__file by name. */
int gkc__by_name(const void *a, const void *b);
/* The object named sha in objs (sorted by name), or NULL. */
gkc__file *gkc__find_object(gkc__files *objs, const char *sha);
/* Is the temporary `name` (a base name) abandoned by its writer? */
int gkc__temp_is_stale(gkc_cache *c, const char *name, int beside, int64_t age);
/* The base name of a path (what follows its last '/'). */
const char *gkc__base_name(const char *path);
/* rm -rf without following links; 0, or -1 when something stays. */
int gkc__rm_rf(const char *path);

#endif
