/*
 * test_cache.c - the compile cache through its public API (gkcache.h):
 * hits, misses when a dependency changes, relative dependencies, damaged
 * objects, atomic fetch.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gkcache.h"

#define KEY1 "1111111111111111111111111111111111111111111111111111111111111111"
#define KEY2 "2222222222222222222222222222222222222222222222222222222222222222"

typedef struct fixture {
  char root[64];      /* scratch folder */
  char cache[256];
  char src[256]; /* a "source folder" with header.h */
  gkc_cache *c;
} fixture;

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(1 << 16);
  *len = fread(buf, 1, 1 << 16, f);
  fclose(f);
  return buf;
}

/* A fresh "compiled image" in the cache's tmp folder, as a compiler would
 * write it. */
static void make_image(fixture *fx, const char *content, char *path, size_t size) {
  assert_int_equal(gkc_temp_path(fx->c, ".so", path, size), 0);
  write_file(path, content);
}

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  strcpy(fx->root, "/tmp/gk-test-cache-XXXXXX");
  assert_non_null(mkdtemp(fx->root));
  snprintf(fx->cache, sizeof fx->cache, "%s/cache", fx->root);
  snprintf(fx->src, sizeof fx->src, "%s/src", fx->root);
  assert_int_equal(mkdir(fx->src, 0777), 0);
  char h[PATH_MAX];
  snprintf(h, sizeof h, "%s/header.h", fx->src);
  write_file(h, "#define A 1\n");
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

/* A fresh handle: memoized hashes are per handle, as they are per build. */
static void reopen(fixture *fx) {
  gkc_close(fx->c);
  gk_err err;
  assert_int_equal(gkc_open(fx->cache, &fx->c, &err), 0);
}

static void test_miss_then_hit(void **state) {
  fixture *fx = *state;
  gkc_result r, s;
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &r), 0);
  char img[PATH_MAX];
  make_image(fx, "image one", img, sizeof img);
  const char *deps[] = {"header.h"};
  assert_int_equal(gkc_store(fx->c, KEY1, fx->src, img, deps, 1, &r), 0);
  assert_int_equal(r.size, 9);
  assert_int_equal(access(img, F_OK), -1); /* consumed */
  reopen(fx);
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &s), 1);
  assert_string_equal(s.sha256, r.sha256);
  assert_int_equal(s.size, 9);
  /* Another key is another job. */
  assert_int_equal(gkc_lookup(fx->c, KEY2, fx->src, &s), 0);
}

static void test_dependency_change(void **state) {
  fixture *fx = *state;
  gkc_result r;
  char img[PATH_MAX], h[PATH_MAX];
  snprintf(h, sizeof h, "%s/header.h", fx->src);
  make_image(fx, "with A=1", img, sizeof img);
  const char *deps[] = {"header.h"};
  assert_int_equal(gkc_store(fx->c, KEY1, fx->src, img, deps, 1, &r), 0);

  write_file(h, "#define A 2\n"); /* same size, new content */
  reopen(fx);
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &r), 0);

  /* Compiling again adds a second candidate; both versions now hit. */
  make_image(fx, "with A=2", img, sizeof img);
  assert_int_equal(gkc_store(fx->c, KEY1, fx->src, img, deps, 1, &r), 0);
  char second[65];
  memcpy(second, r.sha256, 65);
  write_file(h, "#define A 1\n");
  reopen(fx);
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &r), 1);
  assert_string_not_equal(r.sha256, second);
  write_file(h, "#define A 2\n");
  reopen(fx);
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &r), 1);
  assert_string_equal(r.sha256, second);

  /* A dependency that disappeared is a miss, not an error. */
  unlink(h);
  reopen(fx);
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &r), 0);
}

/* Relative dependencies are checked against the base given at lookup: a
 * second checkout elsewhere checks its own header. */
static void test_relative_base(void **state) {
  fixture *fx = *state;
  gkc_result r;
  char img[PATH_MAX], other[256], h[PATH_MAX];
  make_image(fx, "img", img, sizeof img);
  const char *deps[] = {"header.h"};
  assert_int_equal(gkc_store(fx->c, KEY1, fx->src, img, deps, 1, &r), 0);
  snprintf(other, sizeof other, "%s/checkout2", fx->root);
  assert_int_equal(mkdir(other, 0777), 0);
  snprintf(h, sizeof h, "%s/header.h", other);
  write_file(h, "#define A 1\n");
  reopen(fx);
  assert_int_equal(gkc_lookup(fx->c, KEY1, other, &r), 1);
  write_file(h, "#define A 3\n");
  reopen(fx);
  assert_int_equal(gkc_lookup(fx->c, KEY1, other, &r), 0);
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &r), 1);
}

static void test_fetch_and_damage(void **state) {
  fixture *fx = *state;
  gkc_result r;
  char img[PATH_MAX], dest[PATH_MAX], obj[PATH_MAX];
  make_image(fx, "the image bytes", img, sizeof img);
  assert_int_equal(gkc_store(fx->c, KEY1, fx->src, img, NULL, 0, &r), 0);
  snprintf(dest, sizeof dest, "%s/out.so", fx->root);
  assert_int_equal(gkc_fetch(fx->c, &r, dest, 1), 0);
  size_t len;
  char *got = read_file(dest, &len);
  assert_non_null(got);
  assert_int_equal(len, 15);
  assert_memory_equal(got, "the image bytes", 15);
  free(got);

  /* A damaged object (same size, other bytes) is refused and removed; dest
   * keeps its previous content. */
  assert_int_equal(gkc_object_path(fx->c, r.sha256, obj, sizeof obj), 0);
  chmod(obj, 0644);
  write_file(obj, "THE image bytes");
  assert_int_equal(gkc_fetch(fx->c, &r, dest, 0), -1);
  assert_non_null(strstr(gkc_errmsg(fx->c), "damaged"));
  assert_int_equal(access(obj, F_OK), -1);
  got = read_file(dest, &len);
  assert_memory_equal(got, "the image bytes", 15);
  free(got);
  /* ... and the lookup misses, so the next build compiles it again. */
  reopen(fx);
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &r), 0);
}

static void test_bad_key_and_missing_dep(void **state) {
  fixture *fx = *state;
  gkc_result r;
  assert_int_equal(gkc_lookup(fx->c, "not-a-key", NULL, &r), -1);
  assert_non_null(strstr(gkc_errmsg(fx->c), "not-a-key"));
  char img[PATH_MAX];
  make_image(fx, "x", img, sizeof img);
  const char *deps[] = {"no-such-header.h"};
  assert_int_equal(gkc_store(fx->c, KEY1, fx->src, img, deps, 1, &r), -1);
  assert_non_null(strstr(gkc_errmsg(fx->c), "no-such-header.h"));
  assert_int_equal(access(img, F_OK), -1); /* not left behind */
}

/* A damaged record (a crash, a full disk) is a miss. */
static void test_damaged_record(void **state) {
  fixture *fx = *state;
  gkc_result r;
  char img[PATH_MAX], rec[PATH_MAX];
  make_image(fx, "x", img, sizeof img);
  assert_int_equal(gkc_store(fx->c, KEY1, fx->src, img, NULL, 0, &r), 0);
  snprintf(rec, sizeof rec, "%s/v1/keys/11/%s.json", fx->cache, KEY1);
  write_file(rec, "{\"format\": \"gk-cache-rec");
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &r), 0);
}

/* Stamps: a settled dependency is recorded with its stamp; rewriting it
 * with the same size and restoring its mtime still changes its ctime, so
 * the change is seen. */
static void test_stamp_sees_rewrite(void **state) {
  fixture *fx = *state;
  gkc_result r;
  char img[PATH_MAX], h[PATH_MAX];
  snprintf(h, sizeof h, "%s/header.h", fx->src);
  const char *deps[] = {"header.h"};
  /* Stored while header.h is fresh: no stamp. */
  make_image(fx, "img", img, sizeof img);
  assert_int_equal(gkc_store(fx->c, KEY1, fx->src, img, deps, 1, &r), 0);
  reopen(fx);
  sleep(3); /* let header.h settle, so that its stamp is recorded */
  make_image(fx, "img", img, sizeof img);
  assert_int_equal(gkc_store(fx->c, KEY1, fx->src, img, deps, 1, &r), 0);
  /* The same hashes, one with a stamp and one without, are one candidate
   * (two concurrent builds store a key so: cache.concurrent). */
  char rec[PATH_MAX];
  snprintf(rec, sizeof rec, "%s/v1/keys/11/%s.json", fx->cache, KEY1);
  size_t len = 0;
  char *text = read_file(rec, &len);
  assert_non_null(text);
  text[len < (1 << 16) ? len : (1 << 16) - 1] = '\0';
  const char *first = strstr(text, "\"object\"");
  assert_non_null(first);
  assert_null(strstr(first + 1, "\"object\""));
  assert_non_null(strstr(text, "]]")); /* the newer one: [path, hash, [stamp]] */
  free(text);
  reopen(fx);
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &r), 1);
  struct stat st;
  assert_int_equal(stat(h, &st), 0);
  write_file(h, "#define A 9\n");
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  assert_int_equal(utimensat(AT_FDCWD, h, times, 0), 0);
  reopen(fx);
  assert_int_equal(gkc_lookup(fx->c, KEY1, fx->src, &r), 0);
}

static void test_default_dir(void **state) {
  (void)state;
  char buf[256];
  setenv("GK_CACHE_DIR", "/some/where", 1);
  assert_int_equal(gkc_default_dir(buf, sizeof buf), 0);
  assert_string_equal(buf, "/some/where");
  unsetenv("GK_CACHE_DIR");
  setenv("HOME", "/home/u", 1);
  assert_int_equal(gkc_default_dir(buf, sizeof buf), 0);
  assert_string_equal(buf, "/home/u/.gsc/gllm/kernels");
  assert_int_equal(gkc_default_dir(buf, 4), -1);
}

static void test_open_failure(void **state) {
  (void)state;
  gkc_cache *c = (gkc_cache *)1;
  gk_err err;
  assert_int_equal(gkc_open("/proc/self/no/such/cache", &c, &err), -1);
  assert_null(c);
  assert_non_null(strstr(err.msg, "/proc/self/no/such/cache"));
  gkc_close(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_miss_then_hit, setup, teardown),
    cmocka_unit_test_setup_teardown(test_dependency_change, setup, teardown),
    cmocka_unit_test_setup_teardown(test_relative_base, setup, teardown),
    cmocka_unit_test_setup_teardown(test_fetch_and_damage, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_key_and_missing_dep, setup, teardown),
    cmocka_unit_test_setup_teardown(test_damaged_record, setup, teardown),
    cmocka_unit_test_setup_teardown(test_stamp_sees_rewrite, setup, teardown),
    cmocka_unit_test(test_default_dir),
    cmocka_unit_test(test_open_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
