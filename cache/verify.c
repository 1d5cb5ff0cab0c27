/*
 * verify.c - gk cache verify (gkcache.h, gkc_verify): reads every object
 * against its name, checks each key record's candidates and each kept run,
 * and reports (with GKC_FIX removes) damage, dangling candidates,
 * unreferenced objects, stale temporaries and strays. What it walks, and
 * how a temporary is judged, is walk.c's.
 */
#define _POSIX_C_SOURCE 200809L
#include "gkcache.h"
#include "cache_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* SHA-256 of the file at path, lowercase hex; -1 when it cannot be read. */
static int hash_path(const char *path, char hex[65]) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  unsigned char buf[65536], sha[32];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return -1;
    }
    if (n == 0) break;
    crypto_hash_sha256_update(&st, buf, (size_t)n);
  }
  close(fd);
  crypto_hash_sha256_final(&st, sha);
  sodium_bin2hex(hex, 65, sha, 32);
  return 0;
}

/* A kept run (runs/XX/KEY.json) is {code: integer, stdout, stderr: strings}. */
static int run_is_sound(const char *path) {
  json_t *r = json_load_file(path, 0, NULL);
  int ok = json_is_object(r) && json_is_integer(json_object_get(r, "code")) &&
           json_is_string(json_object_get(r, "stdout")) &&
           json_is_string(json_object_get(r, "stderr"));
  json_decref(r);
  return ok;
}

/* Object states in verify. */
enum { OBJ_UNCHECKED, OBJ_SOUND, OBJ_DAMAGED, OBJ_GONE };

typedef struct verifier {
  gkc_cache *c;
  unsigned flags;
  gkc_finding_fn fn;
  void *ctx;
  gkc_verify_summary *s;
} verifier;

static void report(verifier *v, gkc_finding_kind kind, const char *path, uint64_t bytes,
                   int fixed, const char *fmt, ...) GK__PRINTF(6, 7);

static void report(verifier *v, gkc_finding_kind kind, const char *path, uint64_t bytes,
                   int fixed, const char *fmt, ...) {
  char detail[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  gkc_finding f = {kind, kind < GKC_STALE_TEMP, path, detail, bytes, fixed};
  if (f.problem) v->s->problems++;
  else v->s->garbage++;
  if (fixed) v->s->fixed++, v->s->fixed_bytes += bytes;
  if (v->fn) v->fn(&f, v->ctx);
}

/* Removes path when fixing; returns whether it was removed. */
static int fix_remove(verifier *v, const char *path) {
  return (v->flags & GKC_FIX) && gkc__rm_rf(path) == 0;
}

/* Why a candidate cannot be used, or NULL when it can. Objects met after
 * the walk (a store since) are sound when present with the right size. */
static const char *candidate_fault(gkc__files *objs, json_t *cand, const char *root,
                                   char *buf, size_t size) {
  const char *obj;
  json_int_t want;
  if (!gkc__candidate_shape(cand, &obj, &want)) return "a candidate is malformed";
  gkc__file *o = gkc__find_object(objs, obj);
  struct stat st;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/objects/%.2s/%s", root, obj, obj);
  if (o && o->state == OBJ_DAMAGED) {
    snprintf(buf, size, "its candidate object %.16s... is damaged", obj);
    return buf;
  }
  if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(buf, size, "its candidate object %.16s... is missing", obj);
    return buf;
  }
  if ((json_int_t)st.st_size != want) {
    snprintf(buf, size, "its candidate object %.16s... has %lld bytes, the record says %lld",
             obj, (long long)st.st_size, (long long)want);
    return buf;
  }
  return NULL;
}

/* Checks one record under the lock and reports (and with GKC_FIX drops)
 * each candidate that cannot be used. Marks the objects it points at. */
static int recheck_record(verifier *v, gkc__files *objs, gkc__file *r) {
  json_t *rec = gkc__load_record(r->path);
  struct stat st;
  if (!rec) {
    if (lstat(r->path, &st) != 0) return 0; /* gone since: nothing to say */
    int fixed = fix_remove(v, r->path);
    report(v, GKC_BAD_RECORD, r->path, r->bytes, fixed,
           "key record does not parse as a gk cache record%s",
           fixed ? "; removed" : "; remove it (gk cache verify --fix)");
    return 0;
  }
  json_t *cands = json_object_get(rec, "candidates");
  size_t n = json_array_size(cands), bad = 0;
  char *keep = calloc(n ? n : 1, 1);
  if (!keep) {
    json_decref(rec);
    return gk_err_set(&v->c->err, "out of memory checking '%s'", r->path);
  }
  const char **why = calloc(n ? n : 1, sizeof *why);
  char (*bufs)[160] = calloc(n ? n : 1, sizeof *bufs);
  if (!why || !bufs) {
    free(keep), free(why), free(bufs), json_decref(rec);
    return gk_err_set(&v->c->err, "out of memory checking '%s'", r->path);
  }
  for (size_t i = 0; i < n; i++) {
    json_t *cand = json_array_get(cands, i);
    why[i] = candidate_fault(objs, cand, v->c->root, bufs[i], sizeof bufs[i]);
    keep[i] = why[i] == NULL;
    bad += !keep[i];
    const char *obj;
    json_int_t size;
    if (keep[i] && gkc__candidate_shape(cand, &obj, &size)) {
      gkc__file *o = gkc__find_object(objs, obj);
      if (o) o->live++;
    }
  }
  int fixed = 0;
  if (bad && (v->flags & GKC_FIX)) fixed = gkc__rewrite_record(v->c, r->path, rec, keep) == 0;
  for (size_t i = 0; i < n; i++)
    if (!keep[i])
      report(v, GKC_DANGLING, r->path, 0, fixed, "key record: %s%s", why[i],
             fixed ? (bad == n ? "; record removed" : "; candidate dropped")
                   : "; drop it (gk cache verify --fix)");
  free(keep), free(why), free(bufs);
  json_decref(rec);
  return 0;
}

int gkc_verify(gkc_cache *c, unsigned flags, gkc_finding_fn fn, void *ctx,
               gkc_verify_summary *summary) {
  gkc_verify_summary local;
  if (!summary) summary = &local;
  memset(summary, 0, sizeof *summary);
  verifier v = {c, flags, fn, ctx, summary};
  gkc__files fs = {0}, objs = {0}, recs = {0};
  gkc__odds other = {0};
  int rc = -1, locked = 0;
  if (gkc__walk(c, ALL_ENTRIES, 1, &fs, &other) != 0) goto verify_out;

  /* The slow part, without the lock: read every object. Objects go to
   * their own sorted list for the records to look up. */
  for (size_t i = 0; i < fs.n; i++) {
    if (fs.v[i].kind != OBJECTS) continue;
    gkc__file *o = gkc__files_add(&objs);
    if (!o) {
      gk_err_set(&c->err, "out of memory verifying the cache");
      goto verify_out;
    }
    *o = fs.v[i];
    fs.v[i].path = NULL;
    char hex[65];
    o->state = hash_path(o->path, hex) != 0 ? OBJ_GONE
               : strcmp(hex, o->name) == 0 ? OBJ_SOUND : OBJ_DAMAGED;
    summary->objects++;
  }
  if (objs.n) qsort(objs.v, objs.n, sizeof *objs.v, gkc__by_name);

  /* The rest is cheap and is done under the lock, so that what a store in
   * progress or a gc has half done is never reported: stores put the object
   * before the record, both under the lock. A cache that cannot be locked
   * (read-only) is still checked, less precisely; fixing needs the lock. */
  if (gkc__lock(c) == 0) locked = 1;
  else if (flags & GKC_FIX) goto verify_out;

  for (size_t i = 0; i < objs.n; i++) {
    gkc__file *o = &objs.v[i];
    char hex[65];
    if (o->state != OBJ_DAMAGED) continue;
    /* Checked again: a rename may have put sound bytes there since. */
    if (hash_path(o->path, hex) != 0 || strcmp(hex, o->name) == 0) {
      o->state = OBJ_SOUND;
      continue;
    }
    int fixed = fix_remove(&v, o->path);
    report(&v, GKC_DAMAGED_OBJECT, o->path, o->bytes, fixed,
           "object content hashes to %.16s..., not to its name%s", hex,
           fixed ? "; removed (a build compiles it again)"
                 : "; remove it (gk cache verify --fix)");
  }
  /* The records as they are now: listed again under the lock. */
  if (gkc__walk(c, 1u << KEYS, 0, &recs, NULL) != 0) goto verify_out;
  for (size_t i = 0; i < recs.n; i++) {
    summary->records++;
    if (recheck_record(&v, &objs, &recs.v[i]) != 0) goto verify_out;
  }
  /* Indexes are not checked: a reader trusts nothing in one and ignores a
   * damaged one (gkcache.h, gkc_index_open). */
  for (size_t i = 0; i < fs.n; i++) summary->indexes += fs.v[i].kind == INDEX;
  for (size_t i = 0; i < fs.n; i++) {
    gkc__file *f = &fs.v[i];
    if (f->kind == RUNS) {
      summary->runs++;
      if (run_is_sound(f->path)) continue;
      struct stat st;
      if (lstat(f->path, &st) != 0) continue;
      int fixed = fix_remove(&v, f->path);
      report(&v, GKC_BAD_RECORD, f->path, f->bytes, fixed,
             "kept run does not parse (code, stdout, stderr)%s",
             fixed ? "; removed (the query runs again)" : "; remove it (gk cache verify --fix)");
    }
  }
  /* An object no record points at: the records were read under the lock,
   * after the objects were listed, so a store that has put its object has
   * put its record too. */
  for (size_t i = 0; i < objs.n; i++) {
    gkc__file *o = &objs.v[i];
    if (o->state != OBJ_SOUND || o->live || access(o->path, F_OK) != 0) continue;
    int fixed = fix_remove(&v, o->path);
    report(&v, GKC_UNREFERENCED, o->path, o->bytes, fixed,
           "object no key record points at (a build was stopped between the two)%s",
           fixed ? "; removed" : "");
  }
  for (size_t i = 0; i < other.n; i++) {
    gkc__odd *x = &other.v[i];
    struct stat st;
    if (lstat(x->path, &st) != 0) continue;
    if (x->temp) {
      summary->temps++;
      if (!gkc__temp_is_stale(c, gkc__base_name(x->path), x->beside, x->age)) continue;
      int fixed = fix_remove(&v, x->path);
      report(&v, GKC_STALE_TEMP, x->path, x->bytes, fixed,
             "temporary left by a writer that is gone%s", fixed ? "; removed" : "");
    } else {
      int fixed = fix_remove(&v, x->path);
      report(&v, GKC_STRAY, x->path, x->bytes, fixed,
             "not a cache entry (a wrong name or type) among the entries%s",
             fixed ? "; removed" : "; remove it (gk cache verify --fix)");
    }
  }
  rc = 0;
verify_out:
  if (locked) gkc__unlock(c);
  gkc__files_free(&fs);
  gkc__files_free(&objs);
  gkc__files_free(&recs);
  gkc__odds_free(&other);
  return rc;
}
