/*
 * walk.c - what gk cache stats, verify (verify.c) and gc (gc.c) share: the
 * walk of the cache's entry folders, the judging of temporaries, and
 * gkc_stats, which is a walk summed up (gkcache.h is the manual;
 * docs/cache.md the user's view).
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
#include <signal.h>
#include <stdio.h>
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

/* Named in the order of the kinds (cache_internal.h: OBJECTS ...). */
static const char *const ENTRY_DIRS[] = {"objects", "keys", "runs", "index"};

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
int gkc__rm_rf(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode)) return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char *p = join(path, e->d_name);
      if (p) gkc__rm_rf(p);
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
int gkc__temp_is_stale(gkc_cache *c, const char *name, int beside, int64_t age) {
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

gkc__file *gkc__files_add(gkc__files *f) {
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 256;
    gkc__file *v = realloc(f->v, cap * sizeof *v);
    if (!v) return NULL;
    f->v = v;
    f->cap = cap;
  }
  gkc__file *x = &f->v[f->n++];
  memset(x, 0, sizeof *x);
  return x;
}

void gkc__files_free(gkc__files *f) {
  for (size_t i = 0; i < f->n; i++) free(f->v[i].path);
  free(f->v);
  memset(f, 0, sizeof *f);
}

int gkc__by_name(const void *a, const void *b) {
  return strcmp(((const gkc__file *)a)->name, ((const gkc__file *)b)->name);
}

gkc__file *gkc__find_object(gkc__files *objs, const char *sha) {
  gkc__file key;
  snprintf(key.name, sizeof key.name, "%s", sha);
  return bsearch(&key, objs->v, objs->n, sizeof key, gkc__by_name);
}

static int odds_add(gkc__odds *o, const char *path, uint64_t bytes, int64_t age, int temp,
                    int beside) {
  if (o->n == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 16;
    gkc__odd *v = realloc(o->v, cap * sizeof *v);
    if (!v) return -1;
    o->v = v;
    o->cap = cap;
  }
  char *p = strdup(path);
  if (!p) return -1;
  o->v[o->n++] = (gkc__odd){p, bytes, age, temp, beside};
  return 0;
}

void gkc__odds_free(gkc__odds *o) {
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
int gkc__walk(gkc_cache *c, unsigned which, int temps, gkc__files *out, gkc__odds *other) {
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
          gkc__file *x = gkc__files_add(out);
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
  if (out->n) qsort(out->v, out->n, sizeof *out->v, gkc__by_name);
  return 0;
}

/* The base name of a path, for gkc__temp_is_stale. */
const char *gkc__base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* ---- stats ---------------------------------------------------------------- */

int gkc_stats(gkc_cache *c, gkc_usage *u) {
  memset(u, 0, sizeof *u);
  gkc__files fs = {0};
  gkc__odds other = {0};
  if (gkc__walk(c, ALL_ENTRIES, 1, &fs, &other) != 0) {
    gkc__files_free(&fs);
    gkc__odds_free(&other);
    return -1;
  }
  for (size_t i = 0; i < fs.n; i++) {
    gkc__file *f = &fs.v[i];
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
  gkc__files_free(&fs);
  gkc__odds_free(&other);
  return 0;
}
