/*
 * maint.c - keeping the cache sound and bounded: gkc_stats, gkc_verify and
 * gkc_gc (gkcache.h is the manual; docs/cache.md the user's view).
 *
 * Every pass walks the same three entry folders, objects/, keys/ and runs/,
 * each split into 256 subfolders named by two hex digits, plus tmp/. What a
 * walk finds is judged by name first: an entry has exactly the name its
 * content or key gives it, a temporary has the name its writer gave it, and
 * anything else is a stray.
 */
#define _POSIX_C_SOURCE 200809L
#include "gkcache.h"
#include "cache_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A temporary of a writer on another host (or of unknown origin) is taken
 * for abandoned after this long: no compile or copy takes a day. */
#define FOREIGN_TEMP_NS (86400LL * 1000000000LL)
/* A temporary written beside an entry (gk.write_atomic: NAME.tmp.PID.N)
 * names its pid but not its host: it must also be this old, so that a
 * writer on another host with a pid that happens to be free here is left
 * alone while it works (those writes take microseconds). */
#define PID_TEMP_NS (60LL * 1000000000LL)

static const char *const ENTRY_DIRS[] = {"objects", "keys", "runs", "index"};
enum { OBJECTS, KEYS, RUNS, INDEX, NKINDS };
#define ALL_ENTRIES ((1u << NKINDS) - 1)

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int64_t mtime_ns(const struct stat *st) {
  return (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

static uint64_t disk_bytes(const struct stat *st) { return (uint64_t)st->st_blocks * 512u; }

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s/%s", a, b);
  return s;
}

/* Disk usage of a file or a folder tree (a container job's folder). */
static uint64_t du(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return 0;
  uint64_t total = disk_bytes(&st);
  if (!S_ISDIR(st.st_mode)) return total;
  DIR *d = opendir(path);
  if (!d) return total;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char *p = join(path, e->d_name);
    if (p) total += du(p);
    free(p);
  }
  closedir(d);
  return total;
}

/* rm -rf; links are removed, never followed. */
static int rm_rf(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode)) return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char *p = join(path, e->d_name);
      if (p) rm_rf(p);
      free(p);
    }
    closedir(d);
  }
  return rmdir(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* ---- temporaries ---------------------------------------------------------- */

static int pid_alive(long pid) {
  return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* Reads a decimal number at *s, moving past it; -1 when there is none. */
static long read_num(const char **s) {
  char *end;
  errno = 0;
  long v = strtol(*s, &end, 10);
  if (end == *s || errno != 0 || v <= 0) return -1;
  *s = end;
  return v;
}

/*
 * Is the temporary `name` abandoned? In tmp/ names are HOST-PID-..., from
 * gkc_temp_path: this host's are judged by whether their process lives,
 * another host's by age. Beside an entry (`beside`) names end in
 * .tmp.PID.N (gk.write_atomic).
 */
static int temp_is_stale(gkc_cache *c, const char *name, int beside, int64_t age) {
  if (age > FOREIGN_TEMP_NS) return 1;
  const char *p;
  long pid;
  if (beside) {
    p = strstr(name, ".tmp.");
    if (!p) return 0;
    p += 5;
    pid = read_num(&p);
    return pid > 0 && !pid_alive(pid) && age > PID_TEMP_NS;
  }
  if (strlen(name) > 9 && name[8] == '-' && gkc__is_hex(name, 8)) {
    if (strncmp(name, c->host, 8) != 0) return 0;
    p = name + 9;
    pid = read_num(&p);
    return pid > 0 && *p == '-' && !pid_alive(pid);
  }
  /* PID-COUNTER-RANDOM: what caches before host tags wrote. */
  p = name;
  pid = read_num(&p);
  return pid > 0 && *p == '-' && !pid_alive(pid) && age > PID_TEMP_NS;
}

/* A name gk.write_atomic gives its temporary beside KEY.json. */
static int is_beside_temp(const char *name) {
  const char *p = strstr(name, ".tmp.");
  return p && p != name;
}

/* ---- the walk ------------------------------------------------------------- */

/* One file met by a walk of an entry folder. */
typedef struct file {
  char *path;
  char name[72];  /* the entry's name: 64 hex digits, less ".json" */
  int kind;       /* OBJECTS, KEYS, RUNS, INDEX */
  uint64_t bytes; /* disk usage */
  int64_t size, mtime;
  int state;      /* per pass */
  size_t live;    /* usable candidates (records); candidates naming it (objects) */
  size_t ref_off; /* gc: where its records start in the reverse index */
} file;

typedef struct files {
  file *v;
  size_t n, cap;
} files;

static file *files_add(files *f) {
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 256;
    file *v = realloc(f->v, cap * sizeof *v);
    if (!v) return NULL;
    f->v = v;
    f->cap = cap;
  }
  file *x = &f->v[f->n++];
  memset(x, 0, sizeof *x);
  return x;
}

static void files_free(files *f) {
  for (size_t i = 0; i < f->n; i++) free(f->v[i].path);
  free(f->v);
  memset(f, 0, sizeof *f);
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const file *)a)->name, ((const file *)b)->name);
}

static file *find_object(files *objs, const char *sha) {
  file key;
  snprintf(key.name, sizeof key.name, "%s", sha);
  return bsearch(&key, objs->v, objs->n, sizeof key, by_name);
}

/* What a walk does with something that is not an entry. */
typedef struct odd {
  char *path;
  uint64_t bytes;
  int64_t age;
  int temp; /* 1: a temporary (judged by temp_is_stale), 0: a stray */
  int beside;
} odd;

typedef struct odds {
  odd *v;
  size_t n, cap;
} odds;

static int odds_add(odds *o, const char *path, uint64_t bytes, int64_t age, int temp,
                    int beside) {
  if (o->n == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 16;
    odd *v = realloc(o->v, cap * sizeof *v);
    if (!v) return -1;
    o->v = v;
    o->cap = cap;
  }
  char *p = strdup(path);
  if (!p) return -1;
  o->v[o->n++] = (odd){p, bytes, age, temp, beside};
  return 0;
}

static void odds_free(odds *o) {
  for (size_t i = 0; i < o->n; i++) free(o->v[i].path);
  free(o->v);
  memset(o, 0, sizeof *o);
}

/*
 * Walks ROOT/objects, ROOT/keys, ROOT/runs and ROOT/index (the ones asked
 * for in `which`, a bit mask of 1 << OBJECTS ...) and ROOT/tmp when `temps`:
 * entries go to `out` (objects sorted by name), everything else to `other`
 * (may be NULL: ignored). A missing folder is empty. Returns 0 or -1.
 */
static int walk(gkc_cache *c, unsigned which, int temps, files *out, odds *other) {
  const char *root = c->root;
  int64_t now = now_ns();
  for (int k = 0; k < NKINDS; k++) {
    if (!(which & (1u << k))) continue;
    char *top = join(root, ENTRY_DIRS[k]);
    if (!top) return gk_err_set(&c->err, "out of memory walking the cache");
    DIR *d = opendir(top);
    if (!d) {
      int e = errno;
      free(top);
      if (e == ENOENT) continue;
      return gk_err_set(&c->err, "cannot read cache folder '%s/%s': %s", root, ENTRY_DIRS[k],
                        strerror(e));
    }
    struct dirent *e;
    while ((e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char *sub = join(top, e->d_name);
      struct stat st;
      if (!sub || lstat(sub, &st) != 0) {
        free(sub);
        continue;
      }
      if (!S_ISDIR(st.st_mode) || strlen(e->d_name) != 2 || !gkc__is_hex(e->d_name, 2)) {
        if (other && odds_add(other, sub, du(sub), now - mtime_ns(&st), 0, 0) != 0) {
          free(sub);
          closedir(d);
          free(top);
          return gk_err_set(&c->err, "out of memory walking the cache");
        }
        free(sub);
        continue;
      }
      DIR *sd = opendir(sub);
      struct dirent *f;
      while (sd && (f = readdir(sd))) {
        const char *n = f->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0) continue;
        char *path = join(sub, n);
        if (!path || lstat(path, &st) != 0) {
          free(path);
          continue;
        }
        size_t len = strlen(n);
        int named = k == OBJECTS
                        ? len == GKC_HEX_LEN && gkc__is_hex(n, len)
                        : len == GKC_HEX_LEN + 5 && gkc__is_hex(n, GKC_HEX_LEN) &&
                              strcmp(n + GKC_HEX_LEN, ".json") == 0;
        named = named && strncmp(n, e->d_name, 2) == 0 && S_ISREG(st.st_mode);
        int ok = 0;
        if (named) {
          file *x = files_add(out);
          if (x) {
            x->path = path;
            path = NULL;
            snprintf(x->name, sizeof x->name, "%.64s", n);
            x->kind = k;
            x->bytes = disk_bytes(&st);
            x->size = (int64_t)st.st_size;
            x->mtime = mtime_ns(&st);
            ok = 1;
          }
        } else if (other) {
          int beside = k != OBJECTS && S_ISREG(st.st_mode) && is_beside_temp(n);
          ok = odds_add(other, path, du(path), now - mtime_ns(&st), beside, beside) == 0;
        } else {
          ok = 1;
        }
        free(path);
        if (!ok) {
          closedir(sd);
          free(sub);
          closedir(d);
          free(top);
          return gk_err_set(&c->err, "out of memory walking the cache");
        }
      }
      if (sd) closedir(sd);
      free(sub);
    }
    closedir(d);
    free(top);
  }
  if (temps && other) {
    char *tmp = join(root, "tmp");
    DIR *d = tmp ? opendir(tmp) : NULL;
    if (d) {
      struct dirent *e;
      while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *p = join(tmp, e->d_name);
        struct stat st;
        if (p && lstat(p, &st) == 0 &&
            odds_add(other, p, du(p), now - mtime_ns(&st), 1, 0) != 0) {
          free(p);
          closedir(d);
          free(tmp);
          return gk_err_set(&c->err, "out of memory walking the cache");
        }
        free(p);
      }
      closedir(d);
    }
    free(tmp);
  }
  /* qsort(NULL, 0, ...) is undefined (UBSan): an empty cache has no list. */
  if (out->n) qsort(out->v, out->n, sizeof *out->v, by_name);
  return 0;
}

/* The base name of a path, for temp_is_stale. */
static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* ---- stats ---------------------------------------------------------------- */

int gkc_stats(gkc_cache *c, gkc_usage *u) {
  memset(u, 0, sizeof *u);
  files fs = {0};
  odds other = {0};
  if (walk(c, ALL_ENTRIES, 1, &fs, &other) != 0) {
    files_free(&fs);
    odds_free(&other);
    return -1;
  }
  for (size_t i = 0; i < fs.n; i++) {
    file *f = &fs.v[i];
    if (f->kind == OBJECTS) {
      u->objects++, u->object_bytes += f->bytes;
      int64_t s = f->mtime / 1000000000LL;
      if (!u->oldest_use || s < u->oldest_use) u->oldest_use = s;
      if (s > u->newest_use) u->newest_use = s;
    } else if (f->kind == KEYS) {
      u->records++, u->record_bytes += f->bytes;
    } else if (f->kind == RUNS) {
      u->runs++, u->run_bytes += f->bytes;
    } else {
      u->indexes++, u->index_bytes += f->bytes;
    }
  }
  for (size_t i = 0; i < other.n; i++)
    if (other.v[i].temp) u->temps++, u->temp_bytes += other.v[i].bytes;
  u->total_bytes = u->object_bytes + u->record_bytes + u->run_bytes + u->index_bytes;
  files_free(&fs);
  odds_free(&other);
  return 0;
}

/* ---- records ---------------------------------------------------------------- */

/* Is candidate `cand` well formed? Its object's name into *obj. */
static int candidate_shape(json_t *cand, const char **obj, json_int_t *size) {
  *obj = json_string_value(json_object_get(cand, "object"));
  json_t *js = json_object_get(cand, "size");
  *size = json_integer_value(js);
  return gkc__is_hex64(*obj) && json_is_integer(js) &&
         json_is_array(json_object_get(cand, "deps"));
}

/* Writes rec back to path with only the candidates whose `keep` is set, or
 * removes the file when none is kept. Returns 0 or -1. */
static int rewrite_record(gkc_cache *c, const char *path, json_t *rec, const char *keep) {
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

/* ---- verify --------------------------------------------------------------- */

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
  return (v->flags & GKC_FIX) && rm_rf(path) == 0;
}

/* Why a candidate cannot be used, or NULL when it can. Objects met after
 * the walk (a store since) are sound when present with the right size. */
static const char *candidate_fault(files *objs, json_t *cand, const char *root,
                                   char *buf, size_t size) {
  const char *obj;
  json_int_t want;
  if (!candidate_shape(cand, &obj, &want)) return "a candidate is malformed";
  file *o = find_object(objs, obj);
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
static int recheck_record(verifier *v, files *objs, file *r) {
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
    if (keep[i] && candidate_shape(cand, &obj, &size)) {
      file *o = find_object(objs, obj);
      if (o) o->live++;
    }
  }
  int fixed = 0;
  if (bad && (v->flags & GKC_FIX)) fixed = rewrite_record(v->c, r->path, rec, keep) == 0;
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
  files fs = {0}, objs = {0}, recs = {0};
  odds other = {0};
  int rc = -1, locked = 0;
  if (walk(c, ALL_ENTRIES, 1, &fs, &other) != 0) goto verify_out;

  /* The slow part, without the lock: read every object. Objects go to
   * their own sorted list for the records to look up. */
  for (size_t i = 0; i < fs.n; i++) {
    if (fs.v[i].kind != OBJECTS) continue;
    file *o = files_add(&objs);
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
  if (objs.n) qsort(objs.v, objs.n, sizeof *objs.v, by_name);

  /* The rest is cheap and is done under the lock, so that what a store in
   * progress or a gc has half done is never reported: stores put the object
   * before the record, both under the lock. A cache that cannot be locked
   * (read-only) is still checked, less precisely; fixing needs the lock. */
  if (gkc__lock(c) == 0) locked = 1;
  else if (flags & GKC_FIX) goto verify_out;

  for (size_t i = 0; i < objs.n; i++) {
    file *o = &objs.v[i];
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
  if (walk(c, 1u << KEYS, 0, &recs, NULL) != 0) goto verify_out;
  for (size_t i = 0; i < recs.n; i++) {
    summary->records++;
    if (recheck_record(&v, &objs, &recs.v[i]) != 0) goto verify_out;
  }
  /* Indexes are not checked: a reader trusts nothing in one and ignores a
   * damaged one (gkcache.h, gkc_index_open). */
  for (size_t i = 0; i < fs.n; i++) summary->indexes += fs.v[i].kind == INDEX;
  for (size_t i = 0; i < fs.n; i++) {
    file *f = &fs.v[i];
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
    file *o = &objs.v[i];
    if (o->state != OBJ_SOUND || o->live || access(o->path, F_OK) != 0) continue;
    int fixed = fix_remove(&v, o->path);
    report(&v, GKC_UNREFERENCED, o->path, o->bytes, fixed,
           "object no key record points at (a build was stopped between the two)%s",
           fixed ? "; removed" : "");
  }
  for (size_t i = 0; i < other.n; i++) {
    odd *x = &other.v[i];
    struct stat st;
    if (lstat(x->path, &st) != 0) continue;
    if (x->temp) {
      summary->temps++;
      if (!temp_is_stale(c, base_name(x->path), x->beside, x->age)) continue;
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
  files_free(&fs);
  files_free(&objs);
  files_free(&recs);
  odds_free(&other);
  return rc;
}

/* ---- gc ----------------------------------------------------------------------- */

/* Order of removal: objects no record points at, then by last use, oldest
 * first; the name breaks ties so that gc is deterministic. */
static int by_use(const void *a, const void *b) {
  const file *x = *(file *const *)a, *y = *(file *const *)b;
  if ((x->live > 0) != (y->live > 0)) return x->live > 0 ? 1 : -1;
  if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int by_mtime(const void *a, const void *b) {
  const file *x = *(file *const *)a, *y = *(file *const *)b;
  if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* A record and the objects its candidates name, for gc. */
typedef struct grec {
  file *f;
  json_t *rec; /* NULL: does not parse */
  file **objs; /* per candidate; NULL when malformed or missing */
  size_t n;
} grec;

/* What a gc works on: every entry (fs), the objects moved out of it and
 * sorted by name (objs), the other files (other), the records with the
 * objects they name (recs) and, per object, the records naming it (refs,
 * from the object's ref_off). total: the bytes that would remain. */
typedef struct gc_plan {
  files fs, objs;
  odds other;
  grec *recs, **refs;
  size_t nrecs;
  file **order;
  uint64_t total;
} gc_plan;

enum { KEEP, REMOVE };

static void gc_free(gc_plan *p) {
  for (size_t r = 0; r < p->nrecs && p->recs; r++) {
    json_decref(p->recs[r].rec);
    free(p->recs[r].objs);
  }
  free(p->recs);
  free(p->refs);
  free(p->order);
  files_free(&p->fs);
  files_free(&p->objs);
  odds_free(&p->other);
}

/* Temporaries no live writer can still rename into place. */
static void gc_remove_temps(gkc_cache *c, gc_plan *p, gkc_gc_result *out) {
  for (size_t i = 0; i < p->other.n; i++) {
    odd *x = &p->other.v[i];
    if (x->temp && temp_is_stale(c, base_name(x->path), x->beside, x->age) &&
        rm_rf(x->path) == 0)
      out->removed_temps++, out->removed_temp_bytes += x->bytes;
  }
}

/* The objects out of fs, sorted by name; the total size and the number of
 * records and runs. 0, or -1 out of memory. */
static int gc_sort_entries(gc_plan *p, size_t *nruns) {
  *nruns = 0;
  for (size_t i = 0; i < p->fs.n; i++) {
    p->total += p->fs.v[i].bytes;
    if (p->fs.v[i].kind == OBJECTS) {
      file *o = files_add(&p->objs);
      if (!o) return -1;
      *o = p->fs.v[i];
      p->fs.v[i].path = NULL;
    } else if (p->fs.v[i].kind == KEYS) {
      p->nrecs++;
    } else {
      (*nruns)++; /* runs and indexes: derived, small, trimmed last */
    }
  }
  if (p->objs.n) qsort(p->objs.v, p->objs.n, sizeof *p->objs.v, by_name);
  return 0;
}

/* Each record with the objects its candidates name (counted in the
 * object's and the record's live), then the reverse index refs. 0, or -1
 * out of memory. */
static int gc_link(gc_plan *p) {
  size_t nrecs = p->nrecs;
  p->nrecs = 0; /* counts the records loaded, for gc_free */
  if (!(p->recs = calloc(nrecs ? nrecs : 1, sizeof *p->recs))) return -1;
  for (size_t i = 0; i < p->fs.n; i++) {
    if (p->fs.v[i].kind != KEYS) continue;
    grec *g = &p->recs[p->nrecs++];
    g->f = &p->fs.v[i];
    g->rec = gkc__load_record(g->f->path);
    json_t *cands = json_object_get(g->rec, "candidates");
    g->n = json_array_size(cands);
    if (!(g->objs = calloc(g->n ? g->n : 1, sizeof *g->objs))) return -1;
    for (size_t k = 0; k < g->n; k++) {
      const char *obj;
      json_int_t size;
      file *o = candidate_shape(json_array_get(cands, k), &obj, &size)
                    ? find_object(&p->objs, obj) : NULL;
      if (o && o->size == size) {
        g->objs[k] = o;
        o->live++;
        g->f->live++;
      }
    }
  }
  /* The reverse index: for each object, the records whose candidates name
   * it (a record once per candidate). */
  size_t nrefs = 0;
  for (size_t i = 0; i < p->objs.n; i++) {
    p->objs.v[i].ref_off = nrefs;
    nrefs += p->objs.v[i].live;
    p->objs.v[i].live = 0;
  }
  if (!(p->refs = malloc((nrefs ? nrefs : 1) * sizeof *p->refs))) return -1;
  for (size_t r = 0; r < p->nrecs; r++)
    for (size_t k = 0; k < p->recs[r].n; k++) {
      file *o = p->recs[r].objs[k];
      if (o) p->refs[o->ref_off + o->live++] = &p->recs[r];
    }
  return 0;
}

/* Marks what goes until the total fits max_bytes: records without a usable
 * candidate (dangling, or not parsing) whatever the size; objects in
 * by_use order, and with each the records left with no candidate; then
 * kept runs and direct-mode indexes, oldest first: each spares a later
 * build some work, none holds anything a build cannot redo. 0, or -1 out
 * of memory. */
static int gc_choose(gc_plan *p, size_t nruns, uint64_t max_bytes) {
  for (size_t r = 0; r < p->nrecs; r++)
    if (p->recs[r].f->live == 0) p->total -= p->recs[r].f->bytes;
  if (!(p->order = malloc((p->objs.n + nruns + 1) * sizeof *p->order))) return -1;
  for (size_t i = 0; i < p->objs.n; i++) p->order[i] = &p->objs.v[i];
  qsort(p->order, p->objs.n, sizeof *p->order, by_use);
  for (size_t i = 0; i < p->objs.n && p->total > max_bytes; i++) {
    file *o = p->order[i];
    o->state = REMOVE;
    p->total -= o->bytes;
    for (size_t k = 0; k < o->live; k++) {
      file *rf = p->refs[o->ref_off + k]->f;
      if (--rf->live == 0) p->total -= rf->bytes;
    }
  }
  size_t nr = 0;
  for (size_t i = 0; i < p->fs.n; i++)
    if (p->fs.v[i].kind == RUNS || p->fs.v[i].kind == INDEX) p->order[nr++] = &p->fs.v[i];
  qsort(p->order, nr, sizeof *p->order, by_mtime);
  for (size_t i = 0; i < nr && p->total > max_bytes; i++) {
    p->order[i]->state = REMOVE;
    p->total -= p->order[i]->bytes;
  }
  return 0;
}

/* Does what gc_choose decided: records first (so that no record ever
 * points at a removed object, even for a moment: one left with no
 * candidate is removed, one that lost some is rewritten), objects after,
 * then runs and indexes. 0, or -1 out of memory. */
static int gc_act(gkc_cache *c, gc_plan *p, gkc_gc_result *out) {
  for (size_t r = 0; r < p->nrecs; r++) {
    grec *g = &p->recs[r];
    size_t dropped = 0;
    char *keep = calloc(g->n ? g->n : 1, 1);
    if (!keep) return -1;
    for (size_t k = 0; k < g->n; k++) {
      keep[k] = g->f->live > 0 && g->objs[k] && g->objs[k]->state == KEEP;
      dropped += !keep[k];
    }
    if (g->f->live == 0) {
      if (unlink(g->f->path) == 0) out->removed_records++;
    } else if (dropped && g->rec) {
      if (rewrite_record(c, g->f->path, g->rec, keep) == 0) out->rewritten_records++;
    }
    free(keep);
  }
  for (size_t i = 0; i < p->objs.n; i++) {
    file *o = &p->objs.v[i];
    if (o->state == REMOVE && unlink(o->path) == 0)
      out->removed_objects++, out->removed_object_bytes += o->bytes;
  }
  for (size_t i = 0; i < p->fs.n; i++)
    if ((p->fs.v[i].kind == RUNS || p->fs.v[i].kind == INDEX) && p->fs.v[i].state == REMOVE &&
        unlink(p->fs.v[i].path) == 0)
      out->removed_runs++;
  return 0;
}

int gkc_gc(gkc_cache *c, uint64_t max_bytes, gkc_gc_result *out) {
  gkc_gc_result local;
  if (!out) out = &local;
  memset(out, 0, sizeof *out);
  gc_plan p = {0};
  size_t nruns = 0;
  int rc = -1;
  if (gkc__lock(c) != 0) return -1;
  if (walk(c, ALL_ENTRIES, 1, &p.fs, &p.other) != 0) goto out;
  gc_remove_temps(c, &p, out);
  if (gc_sort_entries(&p, &nruns) != 0) goto oom;
  out->before_bytes = out->after_bytes = p.total;
  if (p.total <= max_bytes) {
    rc = 0;
    goto out;
  }
  if (gc_link(&p) != 0 || gc_choose(&p, nruns, max_bytes) != 0 || gc_act(c, &p, out) != 0)
    goto oom;
  /* Measured again: a rewritten record may take other room than before. */
  gkc_usage u;
  if (gkc_stats(c, &u) == 0) out->after_bytes = u.total_bytes;
  rc = 0;
  goto out;
oom:
  gk_err_set(&c->err, "out of memory trimming the cache");
out:
  gkc__unlock(c);
  gc_free(&p);
  return rc;
}
