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
 *   DIR/v1/tmp/                  temporaries, renamed into place
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
 * Concurrency: every file is written under DIR/v1/tmp and renamed into place,
 * so a reader never sees a partial file and several processes may share the
 * cache. Two processes recording the same key at once may lose one candidate
 * (the last rename wins); a later build recompiles it, never uses a wrong one.
 * Objects are checked against their name when fetched.
 *
 * Threads: a handle is not thread-safe; use one handle per thread.
 * Errors: functions returning int give -1 on failure and leave a sentence
 * naming the file at fault in gkc_errmsg().
 */
#ifndef GKCACHE_H
#define GKCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
int gkc_open(const char *dir, gkc_cache **out, char *err, size_t errsize);

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

/* Path of an object in the store (it may not exist). Returns 0, or -1 when
 * buf is too small. */
int gkc_object_path(const gkc_cache *c, const char *sha256, char *buf,
                    size_t size);

#endif
