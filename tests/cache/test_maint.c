/*
 * test_maint.c - gkc_verify, gkc_gc and gkc_stats through the public API
 * (gkcache.h), on caches filled with gkc_store and then damaged by hand the
 * ways a crash, a full disk or a bad disk leave them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "gkcache.h"

typedef struct fixture {
  char root[64];
  char cache[256];
  gkc_cache *c;
} fixture;

/* What the findings callback saw. */
typedef struct seen {
  int n, problems, fixed;
  int kinds[8];
  char last_path[PATH_MAX];
  char last_detail[512];
} seen;

static void on_finding(const gkc_finding *f, void *ctx) {
  seen *s = ctx;
  s->n++;
  s->problems += f->problem;
  s->fixed += f->fixed;
  s->kinds[f->kind]++;
  snprintf(s->last_path, sizeof s->last_path, "%s", f->path);
  snprintf(s->last_detail, sizeof s->last_detail, "%s", f->detail);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

/* A 64-hex key from a small number. */
static void key_of(int i, char key[65]) {
  for (int k = 0; k < 64; k++) key[k] = "0123456789abcdef"[(i * 7 + k) % 16];
  key[0] = "0123456789abcdef"[i % 16];
  key[1] = "0123456789abcdef"[(i / 16) % 16];
  key[64] = '\0';
}

/* Stores `bytes` of content derived from i under key i. */
static gkc_result store(fixture *fx, int i, size_t bytes) {
  char img[PATH_MAX], key[65];
  assert_int_equal(gkc_temp_path(fx->c, ".so", img, sizeof img), 0);
  FILE *f = fopen(img, "w");
  assert_non_null(f);
  for (size_t k = 0; k < bytes; k++) fputc((int)((k * 31 + (size_t)i) & 0xff), f);
  fprintf(f, "image %d", i);
  assert_int_equal(fclose(f), 0);
  key_of(i, key);
  gkc_result r;
  assert_int_equal(gkc_store(fx->c, key, NULL, img, NULL, 0, &r), 0);
  return r;
}

static void object_path(fixture *fx, const gkc_result *r, char *buf, size_t size) {
  assert_int_equal(gkc_object_path(fx->c, r->sha256, buf, size), 0);
}

static void record_path(fixture *fx, int i, char *buf, size_t size) {
  char key[65];
  key_of(i, key);
  snprintf(buf, size, "%s/v1/keys/%.2s/%s.json", fx->cache, key, key);
}

static void set_mtime(const char *path, time_t t) {
  struct timespec ts[2] = {{t, 0}, {t, 0}};
  assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  strcpy(fx->root, "/tmp/gk-test-maint-XXXXXX");
  assert_non_null(mkdtemp(fx->root));
  snprintf(fx->cache, sizeof fx->cache, "%s/cache", fx->root);
  gk_err err;
  assert_int_equal(gkc_open(fx->cache, &fx->c, &err), 0);
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  gkc_close(fx->c);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->root);
  assert_int_equal(system(cmd), 0);
  free(fx);
  return 0;
}

static void test_clean_cache(void **state) {
  fixture *fx = *state;
  for (int i = 0; i < 5; i++) store(fx, i, 1000);
  seen s = {0};
  gkc_verify_summary sum;
  assert_int_equal(gkc_verify(fx->c, 0, on_finding, &s, &sum), 0);
  assert_int_equal(s.n, 0);
  assert_int_equal(sum.objects, 5);
  assert_int_equal(sum.records, 5);
  assert_int_equal(sum.problems + sum.garbage, 0);
  gkc_usage u;
  assert_int_equal(gkc_stats(fx->c, &u), 0);
  assert_int_equal(u.objects, 5);
  assert_int_equal(u.records, 5);
  assert_true(u.object_bytes >= 5 * 1000);
  assert_int_equal(u.total_bytes, u.object_bytes + u.record_bytes + u.run_bytes);
}

/* A flipped byte: found, and --fix removes the object and the candidate
 * that pointed at it, leaving a consistent cache. */
static void test_damaged_object(void **state) {
  fixture *fx = *state;
  gkc_result r = store(fx, 1, 4000);
  store(fx, 2, 4000);
  char obj[PATH_MAX], rec[PATH_MAX];
  object_path(fx, &r, obj, sizeof obj);
  record_path(fx, 1, rec, sizeof rec);
  int fd = open(obj, O_WRONLY);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, "X", 1, 100), 1);
  close(fd);

  seen s = {0};
  gkc_verify_summary sum;
  assert_int_equal(gkc_verify(fx->c, 0, on_finding, &s, &sum), 0);
  assert_int_equal(s.kinds[GKC_DAMAGED_OBJECT], 1);
  assert_int_equal(s.kinds[GKC_DANGLING], 1); /* the record pointing at it */
  assert_int_equal(sum.problems, 2);
  assert_int_equal(s.fixed, 0);
  assert_true(exists(obj)); /* nothing touched without GKC_FIX */

  memset(&s, 0, sizeof s);
  assert_int_equal(gkc_verify(fx->c, GKC_FIX, on_finding, &s, &sum), 0);
  assert_int_equal(s.fixed, 2);
  assert_false(exists(obj));
  assert_false(exists(rec)); /* its only candidate is gone */
  memset(&s, 0, sizeof s);
  assert_int_equal(gkc_verify(fx->c, 0, on_finding, &s, &sum), 0);
  assert_int_equal(s.n, 0);
  assert_int_equal(sum.objects, 1);
}

/* A record whose object was deleted behind the cache's back, one that is
 * not JSON, and files that are no entries. */
static void test_dangling_bad_and_stray(void **state) {
  fixture *fx = *state;
  gkc_result r1 = store(fx, 1, 100);
  store(fx, 2, 100);
  store(fx, 3, 100);
  char obj[PATH_MAX], rec2[PATH_MAX], stray[PATH_MAX + 32];
  object_path(fx, &r1, obj, sizeof obj);
  assert_int_equal(unlink(obj), 0);
  record_path(fx, 2, rec2, sizeof rec2);
  write_file(rec2, "{\"format\": \"gk-cache-re");
  snprintf(stray, sizeof stray, "%s.part", obj); /* a non-atomic writer's leftover */
  write_file(stray, "half");

  seen s = {0};
  gkc_verify_summary sum;
  assert_int_equal(gkc_verify(fx->c, 0, on_finding, &s, &sum), 0);
  assert_int_equal(s.kinds[GKC_DANGLING], 1);
  assert_int_equal(s.kinds[GKC_BAD_RECORD], 1);
  assert_int_equal(s.kinds[GKC_STRAY], 1);
  /* Record 2's object is now unreferenced: harmless garbage. */
  assert_int_equal(s.kinds[GKC_UNREFERENCED], 1);
  assert_int_equal(sum.problems, 3);
  assert_int_equal(sum.garbage, 1);

  memset(&s, 0, sizeof s);
  assert_int_equal(gkc_verify(fx->c, GKC_FIX, on_finding, &s, &sum), 0);
  assert_int_equal(s.fixed, 4);
  assert_false(exists(stray));
  assert_false(exists(rec2));
  memset(&s, 0, sizeof s);
  assert_int_equal(gkc_verify(fx->c, 0, on_finding, &s, &sum), 0);
  assert_int_equal(s.n, 0);
  assert_int_equal(sum.records, 1);
  assert_int_equal(sum.objects, 1);
}

/* Temporaries: a dead writer's are garbage, a live one's are left alone,
 * whatever their age; another host's only after a day. */
static void test_temps(void **state) {
  fixture *fx = *state;
  store(fx, 1, 100);
  pid_t child = fork();
  if (child == 0) _exit(0);
  assert_int_equal(waitpid(child, NULL, 0), child);
  char mine[PATH_MAX], dead[PATH_MAX], other[PATH_MAX], old_other[PATH_MAX + 8];
  assert_int_equal(gkc_temp_path(fx->c, ".so", mine, sizeof mine), 0);
  write_file(mine, "in progress");
  set_mtime(mine, time(NULL) - 3600);
  /* The same name with the dead child's pid. */
  const char *base = strrchr(mine, '/') + 1;
  snprintf(dead, sizeof dead, "%.*s/%.8s-%ld-1-abcdef.so", (int)(base - mine - 1), mine, base,
           (long)child);
  write_file(dead, "left by a killed build");
  snprintf(other, sizeof other, "%s/v1/tmp/%s-%ld-1-abcdef.d", fx->cache,
           strncmp(base, "00000000", 8) ? "00000000" : "11111111", (long)child);
  write_file(other, "another host, working");
  snprintf(old_other, sizeof old_other, "%s.old", other);
  write_file(old_other, "another host, long gone");
  set_mtime(old_other, time(NULL) - 3 * 86400);

  seen s = {0};
  gkc_verify_summary sum;
  assert_int_equal(gkc_verify(fx->c, 0, on_finding, &s, &sum), 0);
  assert_int_equal(sum.temps, 4);
  assert_int_equal(s.kinds[GKC_STALE_TEMP], 2);
  assert_int_equal(sum.problems, 0); /* garbage only: consistent */
  assert_int_equal(gkc_verify(fx->c, GKC_FIX, NULL, NULL, &sum), 0);
  assert_int_equal(sum.fixed, 2);
  assert_true(exists(mine));
  assert_true(exists(other));
  assert_false(exists(dead));
  assert_false(exists(old_other));
}

/* gc: least recently used first, a hit counts as a use, and no record is
 * left pointing at a removed object. */
static void test_gc_lru(void **state) {
  fixture *fx = *state;
  gkc_result r[6];
  char obj[6][PATH_MAX];
  time_t now = time(NULL);
  for (int i = 0; i < 6; i++) {
    r[i] = store(fx, i, 20000);
    object_path(fx, &r[i], obj[i], sizeof obj[i]);
    /* Object i was last used i days ago: 5 is the oldest. */
    set_mtime(obj[i], now - (time_t)i * 86400 - 60);
  }
  /* A hit on 5 makes it the newest (its mtime was older than an hour). */
  char key[65];
  key_of(5, key);
  gkc_result hit;
  assert_int_equal(gkc_lookup(fx->c, key, NULL, &hit), 1);
  struct stat st;
  assert_int_equal(stat(obj[5], &st), 0);
  assert_true(st.st_mtime >= now - 5);

  gkc_usage u;
  assert_int_equal(gkc_stats(fx->c, &u), 0);
  uint64_t per = u.total_bytes / 6;
  /* Room for three entries: 4, 3 and 2 (the oldest but 5) go. */
  gkc_gc_result g;
  assert_int_equal(gkc_gc(fx->c, per * 3 + per / 2, &g), 0);
  assert_int_equal(g.removed_objects, 3);
  assert_int_equal(g.removed_records, 3);
  assert_true(g.after_bytes <= per * 3 + per / 2);
  assert_int_equal(g.before_bytes, u.total_bytes);
  for (int i = 0; i < 6; i++) assert_int_equal(exists(obj[i]), i == 0 || i == 1 || i == 5);
  seen s = {0};
  assert_int_equal(gkc_verify(fx->c, 0, on_finding, &s, NULL), 0);
  assert_int_equal(s.n, 0);
  for (int i = 0; i < 6; i++) {
    key_of(i, key);
    assert_int_equal(gkc_lookup(fx->c, key, NULL, &hit), i == 0 || i == 1 || i == 5);
  }
  /* Within the size: nothing goes. */
  assert_int_equal(gkc_gc(fx->c, g.after_bytes, &g), 0);
  assert_int_equal(g.removed_objects + g.removed_records, 0);
  /* To zero: everything. */
  assert_int_equal(gkc_gc(fx->c, 0, &g), 0);
  assert_int_equal(g.after_bytes, 0);
  assert_int_equal(gkc_stats(fx->c, &u), 0);
  assert_int_equal(u.objects + u.records + u.runs, 0);
}

/* Two keys with the same bytes share an object; a key with two candidates
 * loses only the removed one (its record is rewritten, not removed). */
static void test_gc_shared_and_rewritten(void **state) {
  fixture *fx = *state;
  char key[65], img[PATH_MAX];
  key_of(1, key);
  gkc_result a, b;
  /* Two candidates for key 1: dependency lists differ (one, then none). */
  char dep[PATH_MAX];
  snprintf(dep, sizeof dep, "%s/h.h", fx->root);
  write_file(dep, "#define X 1\n");
  const char *deps[] = {dep};
  assert_int_equal(gkc_temp_path(fx->c, ".so", img, sizeof img), 0);
  write_file(img, "old bytes, much longer than the new ones ................");
  assert_int_equal(gkc_store(fx->c, key, NULL, img, deps, 1, &a), 0);
  assert_int_equal(gkc_temp_path(fx->c, ".so", img, sizeof img), 0);
  write_file(img, "new bytes");
  assert_int_equal(gkc_store(fx->c, key, NULL, img, NULL, 0, &b), 0);
  char oa[PATH_MAX], ob[PATH_MAX], rec[PATH_MAX];
  object_path(fx, &a, oa, sizeof oa);
  object_path(fx, &b, ob, sizeof ob);
  record_path(fx, 1, rec, sizeof rec);
  set_mtime(oa, time(NULL) - 86400);
  gkc_usage u;
  assert_int_equal(gkc_stats(fx->c, &u), 0);
  gkc_gc_result g;
  assert_int_equal(gkc_gc(fx->c, u.total_bytes - 1, &g), 0);
  assert_int_equal(g.removed_objects, 1);
  assert_int_equal(g.rewritten_records, 1);
  assert_false(exists(oa));
  assert_true(exists(ob));
  assert_true(exists(rec));
  seen s = {0};
  assert_int_equal(gkc_verify(fx->c, 0, on_finding, &s, NULL), 0);
  assert_int_equal(s.n, 0);
  gkc_result hit;
  assert_int_equal(gkc_lookup(fx->c, key, NULL, &hit), 1);
  assert_string_equal(hit.sha256, b.sha256);
}

/* An object no record names goes first, whatever its age. */
static void test_gc_unreferenced_first(void **state) {
  fixture *fx = *state;
  gkc_result r1 = store(fx, 1, 8000);
  gkc_result r2 = store(fx, 2, 8000);
  char o1[PATH_MAX], o2[PATH_MAX], rec2[PATH_MAX];
  object_path(fx, &r1, o1, sizeof o1);
  object_path(fx, &r2, o2, sizeof o2);
  record_path(fx, 2, rec2, sizeof rec2);
  set_mtime(o1, time(NULL) - 86400); /* older, but still named */
  assert_int_equal(unlink(rec2), 0); /* o2: a writer killed before its record */
  gkc_usage u;
  assert_int_equal(gkc_stats(fx->c, &u), 0);
  gkc_gc_result g;
  assert_int_equal(gkc_gc(fx->c, u.total_bytes - 1, &g), 0);
  assert_int_equal(g.removed_objects, 1);
  assert_true(exists(o1));
  assert_false(exists(o2));
}

/* Processes recording one key at once keep every candidate: the record's
 * read-modify-write is under the cache's lock (without it, the last rename
 * wins and the others' candidates are lost). */
static void test_concurrent_records(void **state) {
  fixture *fx = *state;
  enum { KIDS = 6, NKEYS = 12 };
  char dep[KIDS][PATH_MAX];
  for (int k = 0; k < KIDS; k++) {
    snprintf(dep[k], sizeof dep[k], "%s/dep%d.h", fx->root, k);
    char text[32];
    snprintf(text, sizeof text, "#define D %d\n", k);
    write_file(dep[k], text);
  }
  int go[2];
  assert_int_equal(pipe(go), 0);
  pid_t kids[KIDS];
  for (int k = 0; k < KIDS; k++) {
    kids[k] = fork();
    assert_true(kids[k] >= 0);
    if (kids[k] != 0) continue;
    close(go[1]);
    gkc_cache *c;
    gk_err err;
    char b;
    if (gkc_open(fx->cache, &c, &err) != 0) _exit(2);
    if (read(go[0], &b, 1) != 0) _exit(3); /* all start when the pipe closes */
    for (int j = 0; j < NKEYS; j++) {
      char img[PATH_MAX], key[65];
      gkc_result r;
      if (gkc_temp_path(c, ".so", img, sizeof img) != 0) _exit(4);
      FILE *f = fopen(img, "w");
      if (!f) _exit(5);
      fprintf(f, "kid %d key %d", k, j);
      fclose(f);
      key_of(j, key);
      const char *deps[] = {dep[k]};
      if (gkc_store(c, key, NULL, img, deps, 1, &r) != 0) _exit(6);
    }
    gkc_close(c);
    _exit(0);
  }
  close(go[0]);
  close(go[1]);
  for (int k = 0; k < KIDS; k++) {
    int st;
    assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  for (int j = 0; j < NKEYS; j++) {
    char rec[PATH_MAX];
    record_path(fx, j, rec, sizeof rec);
    json_t *r = json_load_file(rec, 0, NULL);
    assert_non_null(r);
    assert_int_equal(json_array_size(json_object_get(r, "candidates")), KIDS);
    json_decref(r);
  }
  seen s = {0};
  assert_int_equal(gkc_verify(fx->c, 0, on_finding, &s, NULL), 0);
  assert_int_equal(s.n, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_clean_cache, setup, teardown),
    cmocka_unit_test_setup_teardown(test_damaged_object, setup, teardown),
    cmocka_unit_test_setup_teardown(test_dangling_bad_and_stray, setup, teardown),
    cmocka_unit_test_setup_teardown(test_temps, setup, teardown),
    cmocka_unit_test_setup_teardown(test_gc_lru, setup, teardown),
    cmocka_unit_test_setup_teardown(test_gc_shared_and_rewritten, setup, teardown),
    cmocka_unit_test_setup_teardown(test_gc_unreferenced_first, setup, teardown),
    cmocka_unit_test_setup_teardown(test_concurrent_records, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
