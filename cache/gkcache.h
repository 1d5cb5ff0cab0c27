/*
 * gkcache.h - the compile cache of `gk build`: a content-addressed store of
 * built images, shared by every build on a machine. Build side only: the
 * loader never includes this.
 *
 * Layout under the cache folder DIR (created on open):
 *
 *   DIR/CACHEDIR.TAG             marks the folder as a cache (backup tools skip it)
 *   DIR/v1/objects/XX/SHA256     image bytes, named by the SHA-256 of the bytes
 *   DIR/v1/keys/XX/KEY.json      what a job key produced, and from which files
 *   DIR/v1/runs/XX/KEY.json      kept output of version queries (gk.run_cached)
 *   DIR/v1/index/XX/SHA.json     a build's index, for no-op builds (gkc_index_open)
 *   DIR/v1/tmp/                  temporaries, renamed into place:
 *                                HOST-PID-COUNTER-RANDOM[SUFFIX]
 *   DIR/v1/lock                  the writers' lock (flock)
 *
 * How a job is looked up (ccache's "direct mode"). Before compiling, the
 * caller hashes everything it knows into a KEY: toolchain identity and
 * version, the command line with machine-specific paths replaced by
 * placeholders, the source's SHA-256, the template params, the target. What
 * the source includes is known only after a compile: the record for KEY lists
 * candidates, each an object plus the files the compiler read besides the
 * source (from its depfile) with their SHA-256 at that time. A candidate is a
 * hit when every one of its files still has that hash, so editing a header
 * recompiles exactly the jobs that read it, while touching it without a
 * change does not (content, not time stamps, decides).
 *
 * Dependency paths are stored as the compiler wrote them. A relative one is
 * taken relative to `base`, the folder the compiler ran in: two checkouts of
 * the project at different places then share entries, and each checks its
 * own headers.
 *
 * Concurrency and crashes: every file is written under DIR/v1/tmp and
 * renamed into place, so a reader never sees a partial file, and a process
 * killed at any point leaves at worst temporaries in DIR/v1/tmp and an
 * object no record points at (gk cache verify --fix and gc remove both).
 * A store puts the object and then its record in place under DIR/v1/lock,
 * so that two processes recording one key keep both candidates and gc
 * (which holds the lock while it removes) never leaves a record pointing at
 * a removed object. Lookups take no lock. Objects are checked against their
 * name when fetched.
 *
 * Least recently used: a hit (and a store of bytes already present) sets the
 * object's mtime to now when it is older than an hour; gkc_gc removes the
 * oldest first. atime would do but is not kept on relatime or noatime
 * mounts.
 *
 * Threads: a handle is not thread-safe; use one handle per thread.
 * Errors: the build side's convention (common/gk_err.h). Functions returning
 * int give -1 on failure and leave a sentence naming the file at fault in
 * the handle's gk_err, read with gkc_errmsg(); those without a handle
 * (gkc_open, gkc_check_header) put it in the caller's gk_err instead.
 */
#ifndef GKCACHE_H
#define GKCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gk_err.h"

typedef struct gkc_cache gkc_cache;

/* What a lookup or a store gives: the object's SHA-256 (lowercase hex) and
 * its size in bytes. */
typedef struct gkc_result {
  char sha256[65];
  uint64_t size;
  int remote; /* gkc_lookup: 1 when the hit came from the remote cache */
} gkc_result;

/* Keys and hashes are 64 lowercase hex digits. */
#define GKC_HEX_LEN 64

/*
 * The cache folder to use when none is given: $GK_CACHE_DIR if set and not
 * empty, else $HOME/.gsc/gllm/kernels. Writes it into buf (NUL-terminated).
 * Returns 0, or -1 when neither variable is set or buf is too small.
 */
int gkc_default_dir(char *buf, size_t size);

/*
 * Opens (creating it and its parents if needed) the cache at `dir`.
 * On success *out is a new handle (free it with gkc_close) and 0 is
 * returned; on failure *out is NULL, -1 is returned and a sentence is in
 * err (which may be NULL).
 */
int gkc_open(const char *dir, gkc_cache **out, gk_err *err);

/* Closes a handle; NULL is a no-op. */
void gkc_close(gkc_cache *c);

/* The last error of this handle, "" if none. Owned by the handle, valid
 * until the next call on it. */
const char *gkc_errmsg(const gkc_cache *c);

/* The cache folder, as given to gkc_open. Owned by the handle. */
const char *gkc_dir(const gkc_cache *c);

/*
 * Writes into buf a fresh path under DIR/v1/tmp ending with `suffix` (may be
 * NULL), for a compiler to write to: it is on the cache's file system, so
 * gkc_store can rename it into place. Nothing is created. Returns 0, or -1
 * when buf is too small.
 */
int gkc_temp_path(gkc_cache *c, const char *suffix, char *buf, size_t size);

/*
 * SHA-256 of a file's content into hex[65]. Memoized by path for the life
 * of the handle (a build assumes its inputs do not change while it runs), so
 * a header shared by many jobs is read once. Returns 0 or -1.
 */
int gkc_hash_file(gkc_cache *c, const char *path, char hex[65]);

/*
 * Looks up `key` (64 hex digits). Relative dependency paths are resolved
 * against `base` (may be NULL for the current folder). Returns 1 on a hit
 * with *out filled, 0 on a miss (including an unreadable or damaged record,
 * or a missing object), -1 on an error (bad key).
 */
int gkc_lookup(gkc_cache *c, const char *key, const char *base,
               gkc_result *out);

/*
 * Records the result of compiling `key`: moves the file `image` (consumed:
 * renamed into the store, or copied then removed when on another file
 * system) into DIR/v1/objects, and records its `ndeps` dependency paths
 * (borrowed; hashed now, relative ones against `base`) in the key's record,
 * newest first. A dependency that cannot be hashed makes the store fail
 * (the image is still removed). Returns 0 with *out filled, or -1.
 */
int gkc_store(gkc_cache *c, const char *key, const char *base,
              const char *image, const char *const *deps, size_t ndeps,
              gkc_result *out);

/*
 * Copies the object `r` to `dest` atomically (a temporary file beside dest,
 * renamed over it; mode 0666 less the umask), checking its size and SHA-256
 * on the way. A damaged object is removed from the store, so that the next
 * build compiles it again. When `sync` is non-zero the copy is flushed to
 * disk before the rename. Returns 0 or -1; on failure dest is unchanged.
 */
int gkc_fetch(gkc_cache *c, const gkc_result *r, const char *dest, int sync);

/*
 * A shared remote cache behind the local one (remote.h has the protocol):
 * an HTTP server with bazel-remote's layout, GET/PUT BASE/cas/<sha256> for
 * bytes and BASE/ac/<key> for what a key produced (an REAPI ActionResult).
 * After it is set, a local miss in gkc_lookup asks the remote; a hit is
 * checked (every blob against its hash, every dependency against this
 * machine's files) and copied into the local cache. gkc_store uploads what
 * it stores, unless `readonly`. The remote never makes a call fail: a slow
 * or dead server is reported once on `log` (NULL: stderr) and left alone
 * for the life of the handle. Returns 0, or -1 for a URL that is not
 * http:// or https:// (nothing is sent before the first lookup).
 */
int gkc_set_remote(gkc_cache *c, const char *url, int readonly, FILE *log);

/*
 * The same, with credentials and trust. Everything is copied; the caller may
 * free o and what it points at after the call (wipe the secrets too).
 *
 * Credentials go to the server and nowhere else: no message, warning or
 * error shows a header's value, a password of the URL or of the netrc file,
 * and none of them is part of any key. TLS is always verified for https
 * (the server's certificate against ca_file or the system's CAs, and its
 * name); there is no switch to turn that off.
 *
 * Signed action entries: with sign_seed, every action entry uploaded carries
 * an Ed25519 signature (in the ActionResult's execution_metadata, an Any of
 * its own type, which bazel-remote keeps as it is) over the job key and the
 * outputs, so an entry cannot be moved to another key or changed. With
 * ntrusted > 0, a lookup accepts only entries signed by one of the trusted
 * public keys; any other entry (unsigned, another key, a signature that does
 * not match) is a miss, warned about once per handle. With none, entries
 * are accepted unsigned or signed, as gkc_set_remote does. Returns 0, or -1
 * for a URL that is not http:// or https://, or a header that is not
 * "Name: value" (message on the handle, without the value).
 */
typedef struct gkc_remote_options {
  int readonly;                 /* download only, never upload */
  const char *const *headers;   /* "Name: value" sent with every request */
  size_t nheaders;
  const char *netrc;            /* netrc file for the host's login; NULL:
                                   libcurl's default, $HOME/.netrc, if any */
  const char *ca_file;          /* PEM CAs to verify an https server with;
                                   NULL: the system's */
  const char *client_cert;      /* PEM client certificate (mutual TLS) */
  const char *client_key;       /* its unencrypted PEM key; NULL: in cert */
  const unsigned char *sign_seed;        /* 32-byte Ed25519 seed, or NULL */
  const unsigned char (*trusted)[32];    /* trusted public keys */
  size_t ntrusted;
} gkc_remote_options;
int gkc_set_remote_ex(gkc_cache *c, const char *url, const gkc_remote_options *o, FILE *log);

/* Is h a header gkc_set_remote_ex accepts ("Name: value" on one line)? 0,
 * or -1 with a sentence in err (may be NULL) that quotes the name, never
 * the value. */
int gkc_check_header(const char *h, gk_err *err);

/* url with any user:password part replaced by "***", for messages and keys
 * (malloc'd; NULL when out of memory). */
char *gkc_redact_url(const char *url);

/* Path of an object in the store (it may not exist). Returns 0, or -1 when
 * buf is too small. */
int gkc_object_path(const gkc_cache *c, const char *sha256, char *buf,
                    size_t size);

/* ---- maintenance: gk cache stats, verify, gc (walk.c, verify.c, gc.c) ----
 *
 * Sizes are disk usage, as du counts it (st_blocks * 512): what a limit on
 * the cache is meant to bound. "Entries" are objects, key records, kept
 * runs and direct-mode indexes; temporaries are counted apart.
 */

typedef struct gkc_usage {
  uint64_t objects, object_bytes;
  uint64_t records, record_bytes;
  uint64_t runs, run_bytes;       /* DIR/v1/runs: version queries */
  uint64_t indexes, index_bytes;  /* DIR/v1/index: direct mode's indexes */
  uint64_t temps, temp_bytes;     /* DIR/v1/tmp and leftover *.tmp.* files */
  uint64_t total_bytes;           /* objects + records + runs + indexes: what gc trims */
  int64_t oldest_use, newest_use; /* objects' mtimes, seconds since 1970; 0 if none */
} gkc_usage;

/*
 * Walks the cache without reading objects (one stat per file) and fills
 * *out. Safe while builds run (the numbers are then a snapshot). Returns 0,
 * or -1 when the cache folder cannot be read.
 */
int gkc_stats(gkc_cache *c, gkc_usage *out);

/* What gkc_verify reports, one call per finding. */
typedef enum gkc_finding_kind {
  /* Problems: the cache is inconsistent while one is left. */
  GKC_DAMAGED_OBJECT, /* content does not hash to the object's name */
  GKC_BAD_RECORD,     /* a key record that is not a record (unreadable, bad JSON) */
  GKC_DANGLING,       /* a record's candidate whose object is missing, damaged
                         or of another size */
  GKC_STRAY,          /* a file where only entries belong (objects/, keys/,
                         runs/, index/) that is not one: a wrong name or type */
  /* Garbage: harmless, never used, removed by --fix and by gc. */
  GKC_STALE_TEMP,     /* a temporary whose writer is gone (this host: its
                         process is dead; another host: older than a day) */
  GKC_UNREFERENCED    /* an object no record points at (a writer killed
                         between the object and its record) */
} gkc_finding_kind;

typedef struct gkc_finding {
  gkc_finding_kind kind;
  int problem;        /* 1 for the problem kinds, 0 for garbage */
  const char *path;   /* the file at fault; borrowed for the call */
  const char *detail; /* a sentence saying what is wrong; borrowed */
  uint64_t bytes;     /* its disk usage */
  int fixed;          /* 1: removed (or, for GKC_DANGLING, the record was
                         rewritten without the candidate) */
} gkc_finding;

typedef void (*gkc_finding_fn)(const gkc_finding *f, void *ctx);

/* What gkc_verify counted. */
typedef struct gkc_verify_summary {
  uint64_t objects, records, runs, temps; /* entries checked */
  uint64_t indexes;                       /* seen (their readers check them) */
  uint64_t problems, garbage;             /* findings of each class */
  uint64_t fixed, fixed_bytes;            /* removed or rewritten by GKC_FIX */
} gkc_verify_summary;

#define GKC_FIX 1u /* gkc_verify: repair what it finds (see below) */

/*
 * Checks every entry of the cache: each object hashes to its name, each key
 * record parses and each of its candidates points at a present, sound
 * object of the recorded size, each run parses, and no other file sits
 * among the entries. Temporaries of dead writers and objects no record
 * points at are reported as garbage. Every object is read, so this takes
 * as long as reading the cache.
 *
 * Safe while builds run: what looks wrong is checked again under the lock
 * before it is reported, so a store in progress is never mistaken for a
 * problem. With GKC_FIX, damaged objects, bad records, strays and garbage
 * are removed and records are rewritten without dangling candidates (a
 * build then compiles what was removed); the lock is held only for that.
 *
 * fn (may be NULL) is called for each finding, after any fix. *summary
 * (may be NULL) gets the counts. Returns 0 when the walk completed
 * (whatever it found: see summary->problems), -1 when it could not (the
 * cache folder unreadable, the lock unavailable for GKC_FIX).
 */
int gkc_verify(gkc_cache *c, unsigned flags, gkc_finding_fn fn, void *ctx,
               gkc_verify_summary *summary);

typedef struct gkc_gc_result {
  uint64_t before_bytes, after_bytes; /* gkc_usage.total_bytes */
  uint64_t removed_objects, removed_object_bytes;
  uint64_t removed_records;           /* records left without a candidate */
  uint64_t rewritten_records;         /* records that lost some candidates */
  uint64_t removed_runs;              /* kept runs and indexes */
  uint64_t removed_temps, removed_temp_bytes;
} gkc_gc_result;

/*
 * Trims the cache to at most max_bytes of entries (gkc_usage.total_bytes):
 * objects no record points at go first, then objects by last use (oldest
 * first); records lose the candidates of removed objects, and go when none
 * is left, so no record ever points at a removed object. Kept runs and
 * direct-mode indexes (derived: each spares a build some work) go, oldest
 * first, only when every object is gone. Temporaries of dead writers are
 * removed too.
 *
 * Holds the cache's lock for the whole pass: builds go on looking up while
 * it runs and wait only to store. A build that had a hit on an object gc
 * removes finds it gone when it copies it out and compiles it again (gk
 * build does). Returns 0 with *out filled (may be NULL), or -1.
 */
int gkc_gc(gkc_cache *c, uint64_t max_bytes, gkc_gc_result *out);

/*
 * Direct mode's index: what a no-op build needs, in one file. Looking every
 * job up through its record reads every candidate's dependency list (for a
 * CUDA or HIP compile, a few hundred headers each: megabytes of JSON for the
 * whole matrix). The index of one build - named by `name`, the caller's
 * choice (gk build: the output folder) - keeps, in DIR/v1/index/XX/SHA.json:
 * each file the build hashed (sources, headers, the images it wrote) once,
 * with its SHA-256 and, when it had settled (unchanged for 2 s when read),
 * its stamp (size, inode, mtime and ctime in ns); each distinct dependency
 * set once; and each key's object with its set. A later lookup of a key it
 * knows checks the set's files by stat (each file once per build, each set
 * once), the object by stat, and reads no record. Any difference - a file
 * whose stamp changed, even with the same size and mtime (ctime and inode
 * move on every write and rename), an object gone - falls back to the
 * record, so the index decides nothing the record would not: it can be
 * deleted at any time, and a damaged one is ignored.
 *
 * gkc_index_open loads it (a missing or damaged file gives an empty index)
 * and makes gkc_lookup, gkc_store and gkc_hash_file use and feed it.
 * gkc_index_save writes what this build used, atomically, and only when it
 * differs from what was loaded (a no-op build writes nothing). Returns 0 or
 * -1 (message in gkc_errmsg; the build itself is not wrong for it).
 */
int gkc_index_open(gkc_cache *c, const char *name);
int gkc_index_save(gkc_cache *c);

/* Writes `len` bytes to `path`, a file in the cache's folder (a build's
 * index, gk build's fast-path record beside it), atomically: a temporary of
 * the cache renamed into place, its folders made first. 0, or -1 with the
 * message in gkc_errmsg. */
int gkc_write_file(gkc_cache *c, const char *path, const char *data, size_t len);

/* The whole of file `path` in one read, with a NUL after it (to free), its
 * length in *len; NULL when it cannot be read, is empty, or is `cap` bytes
 * or more. */
char *gkc_read_file(const char *path, size_t cap, size_t *len);

/*
 * Notes the caller keeps in the index from one build to the next (gk build:
 * a digest of what its manifest is made from). gkc_index_get gives the value
 * `name` had when the index was loaded (NULL: none; owned by the handle,
 * valid until gkc_close); gkc_index_set keeps a value for the next build
 * (a note not set again is dropped). Without an index: NULL, and 0.
 */
const char *gkc_index_get(gkc_cache *c, const char *name);
int gkc_index_set(gkc_cache *c, const char *name, const char *value);

/*
 * Does the file at path have SHA-256 sha256 (64 hex digits)? For a build's
 * own outputs: with an index, a stamp recorded there that the file still has
 * answers without reading it. Returns 1 yes, 0 no (or unreadable).
 */
int gkc_file_matches(gkc_cache *c, const char *path, const char *sha256);

/* The build just wrote path with content sha256: remembered (and kept in
 * the index) so that the next build need not read it. Returns 0 or -1. */
int gkc_file_note(gkc_cache *c, const char *path, const char *sha256);

/*
 * For gk build's fast path (recipes/engine/fast.c), which keeps what a no-op
 * build looked at so that the next one can be checked by stat alone.
 *
 * gkc_files_each calls fn once for every file this handle hashed or checked
 * (gkc_hash_file, the dependency checks of gkc_lookup, gkc_file_matches,
 * gkc_file_note) with its SHA-256, the stamp it had then (size, inode,
 * mtime_ns, ctime_ns) and whether that stamp had settled (the file unchanged
 * for 2 s when the stamp was taken: only such a stamp may be trusted later).
 * Order unspecified. fn returns non-zero to stop; gkc_files_each returns
 * that value, or 0.
 *
 * gkc_object_used: is object sha256 in the store with `size` bytes? Records
 * the use for gkc_gc's least-recently-used order, as a lookup's hit does.
 * Returns 1 yes, 0 no.
 */
typedef int (*gkc_file_fn)(void *ctx, const char *path, const char *sha256,
                           const int64_t stamp[4], int settled);
int gkc_files_each(gkc_cache *c, gkc_file_fn fn, void *ctx);
int gkc_object_used(gkc_cache *c, const char *sha256, uint64_t size);

#endif
