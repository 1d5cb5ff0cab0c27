/*
 * gc.c - gk cache gc (gkcache.h, gkc_gc): trims the cache to a size, least
 * recently used objects first, under the cache's lock. It removes the
 * records that would point at nothing and rewrites those that lose a
 * candidate before it removes any object; kept runs and direct-mode
 * indexes go last. What it walks is walk.c's.
 */
#define _POSIX_C_SOURCE 200809L
#include "gkcache.h"
#include "cache_internal.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Order of removal: objects no record points at, then by last use, oldest
 * first; the name breaks ties so that gc is deterministic. */
static int by_use(const void *a, const void *b) {
  const gkc__file *x = *(gkc__file *const *)a, *y = *(gkc__file *const *)b;
  if ((x->live > 0) != (y->live > 0)) return x->live > 0 ? 1 : -1;
  if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int by_mtime(const void *a, const void *b) {
  const gkc__file *x = *(gkc__file *const *)a, *y = *(gkc__file *const *)b;
  if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* A record and the objects its candidates name, for gc. */
typedef struct grec {
  gkc__file *f;
  json_t *rec; /* NULL: does not parse */
  gkc__file **objs; /* per candidate; NULL when malformed or missing */
  size_t n;
} grec;

/* What a gc works on: every entry (fs), the objects moved out of it and
 * sorted by name (objs), the other files (other), the records with the
 * objects they name (recs) and, per object, the records naming it (refs,
 * from the object's ref_off). total: the bytes that would remain. */
typedef struct gc_plan {
  gkc__files fs, objs;
  gkc__odds other;
  grec *recs, **refs;
  size_t nrecs;
  gkc__file **order;
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
  gkc__files_free(&p->fs);
  gkc__files_free(&p->objs);
  gkc__odds_free(&p->other);
}

/* Temporaries no live writer can still rename into place. */
static void gc_remove_temps(gkc_cache *c, gc_plan *p, gkc_gc_result *out) {
  for (size_t i = 0; i < p->other.n; i++) {
    gkc__odd *x = &p->other.v[i];
    if (x->temp && gkc__temp_is_stale(c, gkc__base_name(x->path), x->beside, x->age) &&
        gkc__rm_rf(x->path) == 0)
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
      gkc__file *o = gkc__files_add(&p->objs);
      if (!o) return -1;
      *o = p->fs.v[i];
      p->fs.v[i].path = NULL;
    } else if (p->fs.v[i].kind == KEYS) {
      p->nrecs++;
    } else {
      (*nruns)++; /* runs and indexes: derived, small, trimmed last */
    }
  }
  if (p->objs.n) qsort(p->objs.v, p->objs.n, sizeof *p->objs.v, gkc__by_name);
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
      gkc__file *o = gkc__candidate_shape(json_array_get(cands, k), &obj, &size)
                    ? gkc__find_object(&p->objs, obj) : NULL;
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
      gkc__file *o = p->recs[r].objs[k];
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
    gkc__file *o = p->order[i];
    o->state = REMOVE;
    p->total -= o->bytes;
    for (size_t k = 0; k < o->live; k++) {
      gkc__file *rf = p->refs[o->ref_off + k]->f;
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
      if (gkc__rewrite_record(c, g->f->path, g->rec, keep) == 0) out->rewritten_records++;
    }
    free(keep);
  }
  for (size_t i = 0; i < p->objs.n; i++) {
    gkc__file *o = &p->objs.v[i];
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
  if (gkc__walk(c, ALL_ENTRIES, 1, &p.fs, &p.other) != 0) goto out;
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
