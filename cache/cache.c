/*
 * cache.c - the content-addressed compile cache (gkcache.h is the manual):
 * the public functions that tie the local store (store.c), the direct-mode
 * index (index.c) and the remote cache (remote.c) together. The other
 * files' public functions are theirs (cache_internal.h: who calls whom).
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
#include <unistd.h>

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

int gkc_lookup(gkc_cache *c, const char *key, const char *base,
               gkc_result *out) {
  if (!gkc__is_hex64(key)) return gk_err_set(&c->err, "bad cache key '%s'", key ? key : "(null)");
  char path[PATH_MAX];
  if (gkc__record_path(c, key, path, sizeof path) != 0)
    return gk_err_set(&c->err, "cache path too long");
  out->remote = 0;
  /* Direct mode's fast path: no record to read when the index knows key. */
  if (c->index && gkc__index_lookup(c, c->index, key, base, out)) return 1;
  json_t *rec = gkc__load_record(path);
  int hit = 0;
  size_t i;
  json_t *cand;
  json_array_foreach(json_object_get(rec, "candidates"), i, cand) {
    if ((hit = gkc__candidate_matches(c, cand, base, out))) {
      if (c->index) gkc__index_note(c, c->index, key, base, out, json_object_get(cand, "deps"));
      break;
    }
  }
  json_decref(rec);
  if (!hit && c->remote) hit = gkc__remote_lookup(c, c->remote, key, base, out);
  return hit;
}

int gkc_store(gkc_cache *c, const char *key, const char *base,
              const char *image, const char *const *deps, size_t ndeps,
              gkc_result *out) {
  if (!gkc__is_hex64(key)) {
    unlink(image);
    return gk_err_set(&c->err, "bad cache key '%s'", key ? key : "(null)");
  }
  json_t *jdeps = NULL;
  if (gkc__hash_deps(c, base, deps, ndeps, &jdeps) != 0) {
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

/* ---- for gk build's fast path (gkcache.h) --------------------------------- */

int gkc_object_used(gkc_cache *c, const char *sha256, uint64_t size) {
  gkc_result r;
  return gkc__object_ok(c, sha256, (int64_t)size, &r);
}
