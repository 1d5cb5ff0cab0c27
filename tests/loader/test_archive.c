/*
 * test_archive.c - opening archives (file and memory), the index, and
 * reading images, against good and damaged files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>
#include <sqlite3.h>
#include <zstd.h>

#include "fixture.h"
#include "gk.h"
#include "gk_internal.h"

#define assert_contains(s, sub)                                                \
  do {                                                                         \
    const char *s_ = (s);                                                      \
    if (!strstr(s_, (sub))) fail_msg("'%s' does not contain '%s'", s_, (sub)); \
  } while (0)

/* Image A (a real x86-64 shared object), loaded once. */
static void *img_a, *img_b;
static size_t img_a_size, img_b_size;

static int load_images(void **state) {
  (void)state;
  img_a = fx_image_bytes(GK_TEST_IMAGE_1, &img_a_size);
  img_b = fx_image_bytes(GK_TEST_IMAGE_2, &img_b_size);
  return 0;
}

static int free_images(void **state) {
  (void)state;
  free(img_a);
  free(img_b);
  return 0;
}

/* The standard test archive: three rows, two sharing one blob. */
static char *good_archive(const char *name) {
  char *path = fx_path(name);
  fx_image im[] = {
      {"qmatmul", "cpu", "x86-64-v4", "bits=4", .data = img_b,
       .size = img_b_size},
      {"qmatmul", "cpu", "x86-64-v3", "bits=4", .data = img_a,
       .size = img_a_size},
      {"softmax", "cpu", "x86-64", "", .data = img_a, .size = img_a_size,
       .entry = "[\"softmax\",\"softmax_tail\"]", .launch = "{\"block\":256}",
       .toolchain = "cc 12.2.0 x86_64-linux-gnu"},
  };
  fx_write(path, im, 3);
  return path;
}

/* Opens path, expecting `status` and a last-error text containing `msg`. */
static void expect_open_fails(const char *path, int status, const char *msg) {
  gk_archive *ar = (gk_archive *)1;
  int rc = gk_archive_open(path, &ar);
  if (rc != status)
    fail_msg("opening '%s': %s (%s), expected %s", path, gk_strerror(rc),
             gk_last_error(), gk_strerror(status));
  assert_null(ar);
  assert_contains(gk_last_error(), msg);
}

/* ---- opening: arguments and foreign files ----------------------------------
 */

static void open_bad_args(void **state) {
  (void)state;
  gk_archive *ar = (gk_archive *)1;
  assert_int_equal(gk_archive_open(NULL, &ar), GK_EINVAL);
  assert_null(ar);
  assert_contains(gk_last_error(), "path is NULL");
  assert_int_equal(gk_archive_open("x.gkfat", NULL), GK_EINVAL);
  assert_contains(gk_last_error(), "out is NULL");
  assert_int_equal(gk_archive_open("", &ar), GK_EINVAL);
  assert_contains(gk_last_error(), "path is empty");
  assert_int_equal(gk_archive_open_memory(NULL, 100, &ar), GK_EINVAL);
  assert_null(ar);
  assert_int_equal(gk_archive_open_memory("SQLite format 3", 16, NULL),
                   GK_EINVAL);
}

static void open_missing_file(void **state) {
  (void)state;
  char *path = fx_path("does-not-exist.gkfat");
  expect_open_fails(path, GK_EIO, "No such file or directory");
  assert_contains(gk_last_error(), path);
  free(path);
}

static void open_directory(void **state) {
  (void)state;
  char *path = fx_path("a-directory");
  assert_int_equal(mkdir(path, 0700), 0);
  expect_open_fails(path, GK_EIO, "Is a directory");
  free(path);
}

static void open_fifo(void **state) {
  (void)state;
  /* A FIFO with no writer must be refused, not block the open forever. */
  char *path = fx_path("a-fifo");
  assert_int_equal(mkfifo(path, 0600), 0);
  expect_open_fails(path, GK_ENOTARCHIVE, "not a regular file");
  free(path);
  expect_open_fails("/dev/null", GK_ENOTARCHIVE, "not a regular file");
}

static void open_text_file(void **state) {
  (void)state;
  char *path = fx_path("notes.txt");
  const char text[] = "these are not the kernels you are looking for\n";
  fx_write_file(path, text, sizeof text - 1);
  expect_open_fails(path, GK_ENOTARCHIVE, "not a SQLite database");
  assert_contains(gk_last_error(), path);
  free(path);
}

static void open_empty_file(void **state) {
  (void)state;
  /* SQLite itself would open an empty file as an empty database. */
  char *path = fx_path("empty.gkfat");
  fx_write_file(path, "", 0);
  expect_open_fails(path, GK_ENOTARCHIVE, "the file is empty");
  free(path);
}

static void open_random_bytes(void **state) {
  (void)state;
  char *path = fx_path("random.bin");
  unsigned char buf[8192];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof buf; i++) {
    x = x * 1103515245u + 12345u;
    buf[i] = (unsigned char)(x >> 16);
  }
  fx_write_file(path, buf, sizeof buf);
  expect_open_fails(path, GK_ENOTARCHIVE, "not a SQLite database");
  /* The same bytes behind a valid SQLite magic: SQLite must reject them. */
  memcpy(buf, "SQLite format 3", 16);
  fx_write_file(path, buf, sizeof buf);
  gk_archive *ar;
  int rc = gk_archive_open(path, &ar);
  if (rc != GK_ENOTARCHIVE && rc != GK_ECORRUPT)
    fail_msg("garbage with a SQLite magic: %s (%s)", gk_strerror(rc),
             gk_last_error());
  assert_contains(gk_last_error(), path);
  free(path);
}

static void open_foreign_sqlite(void **state) {
  (void)state;
  char *path = fx_path("foreign.db");
  fx_write_file(path, "", 0);
  fx_exec(path, "CREATE TABLE t (x); INSERT INTO t VALUES (1);", NULL, 0);
  expect_open_fails(path, GK_ENOTARCHIVE,
                    "is a SQLite database but not a gllm-kernels archive");
  assert_contains(gk_last_error(), path);
  assert_contains(gk_last_error(), "application_id 0x00000000");
  /* Another application's id is as foreign. */
  fx_exec(path, "PRAGMA application_id = 1", NULL, 0);
  expect_open_fails(path, GK_ENOTARCHIVE, "application_id 0x00000001");
  free(path);
}

static void open_wrong_version(void **state) {
  (void)state;
  char *path = good_archive("v4.gkfat");
  char sql[64], msg[64];
  /* A newer format: this libgk cannot know what changed. */
  snprintf(sql, sizeof sql, "PRAGMA user_version = %d", GK_ARCHIVE_FORMAT + 1);
  fx_exec(path, sql, NULL, 0);
  snprintf(msg, sizeof msg, "format version %d", GK_ARCHIVE_FORMAT + 1);
  expect_open_fails(path, GK_EVERSION, msg);
  snprintf(msg, sizeof msg, "reads version %d", GK_ARCHIVE_FORMAT);
  assert_contains(gk_last_error(), msg);
  assert_contains(gk_last_error(), "update libgk");
  assert_contains(gk_last_error(), path);
  /* Version 2 (deltas against one plain base: another prefix than today's
   * chains) and 1 (no deltas) are refused too, with what to do. */
  fx_exec(path, "PRAGMA user_version = 2", NULL, 0);
  expect_open_fails(path, GK_EVERSION, "format version 2");
  assert_contains(gk_last_error(), "pack it again");
  fx_exec(path, "PRAGMA user_version = 1", NULL, 0);
  expect_open_fails(path, GK_EVERSION, "format version 1");
  assert_contains(gk_last_error(), "pack it again");
  fx_exec(path, "PRAGMA user_version = 0", NULL, 0);
  expect_open_fails(path, GK_EVERSION, "format version 0");
  free(path);
}

/* ---- the lazy index ---------------------------------------------------------
 */

/* A selection reads its own rows only: a bad row of another kernel does not
 * stop it, and shows when the whole index is read. Rows written out of
 * gk pack's order are refused when read, by both ways. */
static void lazy_index(void **state) {
  (void)state;
  char *path = good_archive("lazy.gkfat");
  fx_exec(path, "UPDATE spec SET entry = x'5b5d' "
                "WHERE id = (SELECT spec FROM image WHERE kernel = 'softmax')", NULL, 0);
  gk_archive *ar;
  gk_device dev;
  char why[128];
  size_t idx, n = 99;
  assert_int_equal(gk_device_parse("cpu:x86-64-v4", &dev, why, sizeof why), GK_OK);
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_select(ar, &dev, "qmatmul", "bits=4", &idx), GK_OK);
  assert_int_equal(idx, 1); /* x86-64-v4 sorts after x86-64-v3 */
  gk_image_info info;
  assert_int_equal(gk_archive_image(ar, idx, &info), GK_OK);
  assert_string_equal(info.target, "x86-64-v4");
  void *p;
  size_t size;
  assert_int_equal(gk_archive_read(ar, idx, &p, &size), GK_OK);
  assert_int_equal(size, img_b_size);
  gk_free(p);
  assert_int_equal(gk_archive_count(ar, &n), GK_ECORRUPT);
  assert_int_equal(n, 0);
  assert_contains(gk_archive_errmsg(ar), "image row 3 has a bad 'entry'");
  /* Once the whole index failed, selections go its way and fail alike. */
  assert_int_equal(gk_archive_select(ar, &dev, "qmatmul", "bits=4", &idx), GK_ECORRUPT);
  gk_archive_close(ar);
  free(path);

  /* Two rows swapped in the table. */
  path = good_archive("order.gkfat");
  fx_exec(path, "UPDATE image SET rowid = 10 WHERE rowid = 1; "
                "UPDATE image SET rowid = 1 WHERE rowid = 2; "
                "UPDATE image SET rowid = 2 WHERE rowid = 10", NULL, 0);
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_select(ar, &dev, "qmatmul", "bits=4", &idx), GK_ECORRUPT);
  assert_contains(gk_archive_errmsg(ar), "is out of order in the index");
  gk_archive_close(ar);
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_count(ar, &n), GK_ECORRUPT);
  assert_contains(gk_archive_errmsg(ar), "is out of order in the index");
  gk_archive_close(ar);
  free(path);
}

/* ---- opening: schema damage ------------------------------------------------
 */

static void open_schema_damage(void **state) {
  (void)state;
#define SOFTMAX(col) " WHERE id = (SELECT " col " FROM image WHERE kernel = 'softmax')"
  /* read: the damage is in what the row names (its blob), which a
   * selection reading its own rows does not look at: the selection
   * succeeds and reading the image fails with this; the whole index says
   * `msg`. */
  static const struct {
    const char *sql, *msg, *read;
  } cases[] = {
      {"DROP TABLE blob", "it has no table 'blob'", NULL},
      {"DROP TABLE image", "it has no table 'image'", NULL},
      {"DROP TABLE spec", "it has no table 'spec'", NULL},
      {"ALTER TABLE spec DROP COLUMN launch",
       "table 'spec' has no column 'launch'", NULL},
      {"ALTER TABLE spec DROP COLUMN toolchain",
       "table 'spec' has no column 'toolchain'", NULL},
      {"ALTER TABLE image DROP COLUMN blob",
       "table 'image' has no column 'blob'", NULL},
      {"ALTER TABLE blob DROP COLUMN codec",
       "table 'blob' has no column 'codec'", NULL},
      {"ALTER TABLE image RENAME TO image0; "
       "CREATE VIEW image AS SELECT * FROM image0",
       "'image' is not an ordinary table", NULL},
      {"UPDATE image SET raw_size = 'big' WHERE kernel = 'softmax'", "has a bad 'raw_size'", NULL},
      {"UPDATE image SET raw_size = -1 WHERE kernel = 'softmax'", "has a bad 'raw_size'", NULL},
      {"UPDATE image SET sha256 = x'00' WHERE kernel = 'softmax'", "has a bad 'sha256'", NULL},
      {"UPDATE image SET sha256 = NULL WHERE kernel = 'softmax'", "has a bad 'sha256'", NULL},
      {"UPDATE blob SET sha256 = zeroblob(32)" SOFTMAX("blob"),
       "whose size or sha256 is another image's", "whose size or sha256 is another image's"},
      {"UPDATE blob SET raw_size = raw_size + 1" SOFTMAX("blob"),
       "whose size or sha256 is another image's", "but its blob says"},
      {"UPDATE image SET blob = 1 + blob % 2 WHERE kernel = 'softmax'",
       "whose size or sha256 is another image's", "another image's"},
      {"UPDATE image SET blob = 'x' WHERE kernel = 'softmax'", "has a bad 'blob'", NULL},
      {"DELETE FROM spec" SOFTMAX("spec"), "names a spec row that is not there", NULL},
      {"DELETE FROM blob" SOFTMAX("blob"), "names a blob row that is not there", "has no blob"},
      {"UPDATE image SET kernel = CAST(x'717500' AS TEXT) WHERE kernel = "
       "'softmax'",
       "has a bad 'kernel'", NULL},
      {"UPDATE image SET target = x'7633' WHERE kernel = 'softmax'",
       "has a bad 'target'", NULL},
      {"UPDATE spec SET entry = x'5b5d'" SOFTMAX("spec"), "has a bad 'entry'", NULL},
  };
#undef SOFTMAX
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *path = good_archive("schema.gkfat");
    /* The fixture's schema has NOT NULL and CHECK constraints; damage
     * ignores them, as a hostile writer would. */
    char sql[512];
    snprintf(sql, sizeof sql, "PRAGMA ignore_check_constraints = ON; %s",
             cases[i].sql);
    if (strstr(cases[i].sql, "NULL")) {
      /* NOT NULL cannot be switched off: rebuild the table without it. */
      snprintf(sql, sizeof sql,
               "CREATE TABLE i2 AS SELECT rowid AS r, * FROM image; DROP TABLE image; "
               "CREATE TABLE image (kernel, backend, variant, target, spec, blob, raw_size, "
               "sha256); INSERT INTO image (rowid, kernel, backend, variant, target, spec, "
               "blob, raw_size, sha256) SELECT * FROM i2; DROP TABLE i2; %s",
               cases[i].sql);
    }
    fx_exec(path, sql, NULL, 0);
    gk_archive *ar;
    int rc = gk_archive_open(path, &ar);
    const char *msg = gk_last_error();
    /* The schema is checked by the open; rows when the index is read
     * (lazily: count, listing, or a selection that meets them). */
    if ((strstr(cases[i].msg, "has a bad") || strstr(cases[i].msg, "not there") ||
         strstr(cases[i].msg, "another image")) &&
        rc == GK_OK) {
      size_t n = 99, idx;
      gk_device dev;
      char why[128];
      assert_int_equal(gk_device_parse("cpu:x86-64-v4", &dev, why, sizeof why), GK_OK);
      rc = gk_archive_select(ar, &dev, "softmax", "", &idx);
      if (cases[i].read && rc == GK_OK) {
        void *p = (void *)1;
        size_t size;
        rc = gk_archive_read(ar, idx, &p, &size);
        assert_null(p);
        if (!strstr(gk_archive_errmsg(ar), cases[i].read))
          fail_msg("'%s': reading softmax said '%s', not '%s'", cases[i].sql,
                   gk_archive_errmsg(ar), cases[i].read);
      }
      if (rc != GK_ECORRUPT)
        fail_msg("'%s': selecting and reading softmax gave %s (%s), expected GK_ECORRUPT",
                 cases[i].sql, gk_strerror(rc), gk_archive_errmsg(ar));
      gk_archive_close(ar);
      assert_int_equal(gk_archive_open(path, &ar), GK_OK);
      rc = gk_archive_count(ar, &n);
      msg = gk_archive_errmsg(ar);
      assert_int_equal(n, 0); /* nothing half-read */
    } else {
      assert_null(ar);
    }
    if (rc != GK_ECORRUPT)
      fail_msg("'%s': %s (%s), expected GK_ECORRUPT", cases[i].sql,
               gk_strerror(rc), msg);
    if (!strstr(msg, cases[i].msg) || !strstr(msg, path))
      fail_msg("'%s': message '%s' lacks '%s' or the path", cases[i].sql, msg,
               cases[i].msg);
    gk_archive_close(ar);
    free(path);
  }
}

static void open_extra_columns_ok(void **state) {
  (void)state;
  /* Columns beyond the format's are tolerated. */
  char *path = good_archive("extra.gkfat");
  fx_exec(path, "ALTER TABLE image ADD COLUMN note TEXT", NULL, 0);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  gk_archive_close(ar);
  free(path);
}

static void open_truncated(void **state) {
  (void)state;
  char *path = good_archive("truncated.gkfat");
  size_t n;
  void *bytes = fx_read_file(path, &n);
  assert_true(n > 8192);
  fx_write_file(path, bytes, n / 2);
  free(bytes);
  /* Either the open or every read must fail: never silently good. */
  gk_archive *ar;
  int rc = gk_archive_open(path, &ar);
  if (rc == GK_OK) {
    size_t count, size;
    void *p;
    assert_int_equal(gk_archive_count(ar, &count), GK_OK);
    int all_ok = count == 3;
    for (size_t i = 0; i < count; i++) {
      int r = gk_archive_read(ar, i, &p, &size);
      all_ok &= r == GK_OK;
      gk_free(p);
    }
    assert_false(all_ok);
    gk_archive_close(ar);
  } else {
    assert_true(rc == GK_ECORRUPT || rc == GK_ENOTARCHIVE);
  }
  free(path);
}

/* ---- the index -------------------------------------------------------------
 */

static void index_rows(void **state) {
  (void)state;
  char *path = good_archive("index.gkfat");
  gk_archive *ar = NULL;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_non_null(ar);
  assert_string_equal(gk_last_error(), "");
  assert_string_equal(gk_archive_errmsg(ar), "");
  size_t count = 0;
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  assert_int_equal(count, 3);

  /* Index order: (kernel, backend, target, variant). */
  const char *targets[] = {"x86-64-v3", "x86-64-v4", "x86-64"};
  for (size_t i = 0; i < count; i++) {
    gk_image_info info;
    assert_int_equal(gk_archive_image(ar, i, &info), GK_OK);
    assert_string_equal(info.target, targets[i]);
    assert_string_equal(info.backend, "cpu");
    assert_string_equal(info.format, "so");
    assert_true(info.packed_size > 0 && info.packed_size < info.raw_size);
  }
  gk_image_info info;
  assert_int_equal(gk_archive_image(ar, 2, &info), GK_OK);
  assert_string_equal(info.kernel, "softmax");
  assert_string_equal(info.variant, "");
  assert_string_equal(info.entry, "[\"softmax\",\"softmax_tail\"]");
  assert_string_equal(info.launch, "{\"block\":256}");
  assert_string_equal(info.toolchain, "cc 12.2.0 x86_64-linux-gnu");
  assert_int_equal(info.raw_size, img_a_size);
  unsigned char sha[32];
  crypto_hash_sha256(sha, img_a, img_a_size);
  assert_memory_equal(info.sha256, sha, 32);
  assert_int_equal(gk_archive_image(ar, 0, &info), GK_OK);
  assert_string_equal(info.kernel, "qmatmul");
  assert_string_equal(info.variant, "bits=4");
  assert_string_equal(info.entry, "[\"qmatmul\"]");
  assert_string_equal(info.launch, "{}");

  /* Out of range and NULL: statuses and messages, out untouched. */
  memset(&info, 0x33, sizeof info);
  gk_image_info copy = info;
  assert_int_equal(gk_archive_image(ar, 3, &info), GK_ERANGE);
  assert_memory_equal(&info, &copy, sizeof info);
  assert_contains(gk_archive_errmsg(ar), "has 3 images; there is no image 3");
  assert_contains(gk_archive_errmsg(ar), path);
  assert_int_equal(gk_archive_image(ar, SIZE_MAX, &info), GK_ERANGE);
  assert_int_equal(gk_archive_image(ar, 0, NULL), GK_EINVAL);
  assert_contains(gk_archive_errmsg(ar), "out is NULL");
  assert_int_equal(gk_archive_count(ar, NULL), GK_EINVAL);
  /* A successful call clears the message. */
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  assert_string_equal(gk_archive_errmsg(ar), "");
  gk_archive_close(ar);

  assert_int_equal(gk_archive_count(NULL, &count), GK_EINVAL);
  assert_int_equal(gk_archive_image(NULL, 0, &info), GK_EINVAL);
  assert_non_null(gk_archive_errmsg(NULL));
  gk_archive_close(NULL);
  gk_free(NULL);
  free(path);
}

static void index_empty_archive(void **state) {
  (void)state;
  char *path = fx_path("empty-index.gkfat");
  fx_write(path, NULL, 0);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  size_t count = 99;
  assert_int_equal(gk_archive_count(ar, &count), GK_OK);
  assert_int_equal(count, 0);
  void *p = (void *)1;
  size_t n;
  assert_int_equal(gk_archive_read(ar, 0, &p, &n), GK_ERANGE);
  assert_null(p);
  gk_archive_close(ar);
  free(path);
}

static void open_odd_paths(void **state) {
  (void)state;
  /* URI-special characters in a path must mean themselves. */
  const char *names[] = {"with space.gkfat",      "q?mark.gkfat",
                         "hash#.gkfat",           "pct%41.gkfat",
                         "amp&immutable=0.gkfat", "\xc3\xa9t\xc3\xa9.gkfat"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char *path = good_archive(names[i]);
    gk_archive *ar;
    int rc = gk_archive_open(path, &ar);
    if (rc != GK_OK) fail_msg("'%s': %s", path, gk_last_error());
    size_t count;
    assert_int_equal(gk_archive_count(ar, &count), GK_OK);
    assert_int_equal(count, 3);
    gk_archive_close(ar);
    free(path);
  }
  /* A relative path works too. */
  char *path = good_archive("relative.gkfat");
  char *slash = strrchr(path, '/');
  *slash = '\0';
  char cwd[4096];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(path), 0);
  gk_archive *ar;
  int rc = gk_archive_open("relative.gkfat", &ar);
  assert_int_equal(chdir(cwd), 0);
  if (rc != GK_OK) fail_msg("relative path: %s", gk_last_error());
  gk_archive_close(ar);
  free(path);
}

/* ---- reading ---------------------------------------------------------------
 */

static void read_good(void **state) {
  (void)state;
  char *path = good_archive("read.gkfat");
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  void *p;
  size_t n;
  assert_int_equal(gk_archive_read(ar, 0, &p, &n), GK_OK);
  assert_int_equal(n, img_a_size);
  assert_memory_equal(p, img_a, n);
  gk_free(p);
  assert_int_equal(gk_archive_read(ar, 1, &p, &n), GK_OK);
  assert_int_equal(n, img_b_size);
  assert_memory_equal(p, img_b, n);
  gk_free(p);
  /* Rows sharing one blob read the same bytes. */
  assert_int_equal(gk_archive_read(ar, 2, &p, &n), GK_OK);
  assert_memory_equal(p, img_a, n);
  gk_free(p);

  p = (void *)1;
  assert_int_equal(gk_archive_read(ar, 3, &p, &n), GK_ERANGE);
  assert_null(p);
  assert_contains(gk_archive_errmsg(ar), "no image 3");
  assert_int_equal(gk_archive_read(ar, 0, NULL, &n), GK_EINVAL);
  assert_int_equal(gk_archive_read(ar, 0, &p, NULL), GK_EINVAL);
  assert_null(p);
  assert_int_equal(gk_archive_read(NULL, 0, &p, &n), GK_EINVAL);
  gk_archive_close(ar);
  free(path);
}

/* Damages the v3 qmatmul row of a fresh archive with `sql` (?1 = blob) and
 * expects reading it to fail with `status` and `msg`. Other rows still read. */
static void expect_read_fails(const char *sql, const void *blob, size_t n,
                              int status, const char *msg) {
  char *path = good_archive("damaged.gkfat");
  fx_exec(path, sql, blob, n);
  gk_archive *ar;
  int rc = gk_archive_open(path, &ar);
  if (rc != GK_OK) fail_msg("'%s': open: %s", sql, gk_last_error());
  void *p = (void *)1;
  size_t size = 0;
  rc = gk_archive_read(ar, 0, &p, &size);
  if (rc != status)
    fail_msg("'%s': read gave %s (%s), expected %s", sql, gk_strerror(rc),
             gk_archive_errmsg(ar), gk_strerror(status));
  assert_null(p);
  if (!strstr(gk_archive_errmsg(ar), msg))
    fail_msg("'%s': message '%s' lacks '%s'", sql, gk_archive_errmsg(ar), msg);
  assert_contains(gk_archive_errmsg(ar), "'qmatmul' bits=4 cpu x86-64-v3");
  assert_contains(gk_archive_errmsg(ar), path);
  assert_int_equal(gk_archive_read(ar, 1, &p, &size), GK_OK);
  gk_free(p);
  gk_archive_close(ar);
  free(path);
}

/* The blob ids of the v3 and v4 images. */
#define V3_ID "(SELECT blob FROM image WHERE target = 'x86-64-v3')"
#define V4_ID "(SELECT blob FROM image WHERE target = 'x86-64-v4')"
/* New stored bytes with their own hash: what zstd-level checks meet. */
#define FRAME_SQL "UPDATE blob SET data = ?1, data_sha256 = gk_sha256(sha256, ?1) WHERE id = " V3_ID

static void read_zstd_garbage(void **state) {
  (void)state;
  expect_read_fails(
      "UPDATE blob SET data = x'0102030405060708', data_sha256 = "
      "gk_sha256(sha256, x'0102030405060708') WHERE id = " V3_ID,
      NULL, 0, GK_ECORRUPT, "is not a zstd frame");
}

static void read_other_content(void **state) {
  (void)state;
  /* A valid zstd frame of the right size, but not the indexed bytes. */
  unsigned char *other = malloc(img_a_size);
  memcpy(other, img_a, img_a_size);
  other[img_a_size / 2] ^= 1;
  size_t zn;
  void *z = fx_zstd(other, img_a_size, &zn);
  /* The stored bytes changed, their hash not: refused before zstd. */
  expect_read_fails("UPDATE blob SET data = ?1 WHERE id = " V3_ID, z, zn,
                    GK_EHASH, "does not match its SHA-256 (the stored bytes");
  /* Both changed together: the stored bytes are what the archive vouches
   * for, and a plain read hands them out (whoever can rewrite both could
   * rewrite the index's hash as well: only a signature tells). Checking the
   * image's own hash (GK_OPEN_CHECK_IMAGES, implied by trusted keys)
   * refuses them. */
  char *path = good_archive("other.gkfat");
  fx_exec(path, FRAME_SQL, z, zn);
  gk_archive *ar;
  void *p;
  size_t size;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_read(ar, 0, &p, &size), GK_OK);
  assert_int_equal(size, img_a_size);
  assert_memory_equal(p, other, size);
  gk_free(p);
  gk_archive_close(ar);
  gk_open_options o = {NULL, 0, GK_OPEN_CHECK_IMAGES};
  assert_int_equal(gk_archive_open_ex(path, &o, &ar), GK_OK);
  assert_int_equal(gk_archive_read(ar, 0, &p, &size), GK_EHASH);
  assert_null(p);
  assert_contains(gk_archive_errmsg(ar), "does not match its SHA-256");
  gk_archive_close(ar);
  free(path);
  free(z);
  free(other);
}

static void read_size_lies(void **state) {
  (void)state;
  /* Index and blob agree on a size the frame does not have. */
  expect_read_fails("UPDATE blob SET raw_size = raw_size + 1 WHERE id = " V3_ID
                    "; UPDATE image SET raw_size = raw_size + 1 WHERE blob = " V3_ID,
                    NULL, 0, GK_ECORRUPT, "declares another size than the index");
  /* The same, smaller. */
  expect_read_fails("UPDATE blob SET raw_size = 100 WHERE id = " V3_ID
                    "; UPDATE image SET raw_size = 100 WHERE blob = " V3_ID,
                    NULL, 0, GK_ECORRUPT, "declares another size than the index");
  /* Over the cap: refused before any allocation. */
  expect_read_fails("UPDATE blob SET raw_size = 2147483648 WHERE id = " V3_ID
                    "; UPDATE image SET raw_size = 2147483648 WHERE blob = " V3_ID,
                    NULL, 0, GK_ETOOBIG, "over libgk's limit");
  expect_read_fails("UPDATE blob SET raw_size = 9223372036854775807 WHERE id = " V3_ID
                    "; UPDATE image SET raw_size = 9223372036854775807 WHERE blob = " V3_ID,
                    NULL, 0, GK_ETOOBIG, "over libgk's limit");
}

static void read_frame_shapes(void **state) {
  (void)state;
  /* A frame that does not declare its size (as a streaming writer makes). */
  static const unsigned char no_size[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00,
                                          0x00, 0x01, 0x00, 0x00};
  expect_read_fails(FRAME_SQL,
                    no_size, sizeof no_size, GK_ECORRUPT,
                    "does not declare its size");
  /* A good frame followed by trailing bytes. */
  size_t zn;
  unsigned char *z = fx_zstd(img_a, img_a_size, &zn);
  unsigned char *longer = malloc(zn + 4);
  memcpy(longer, z, zn);
  memcpy(longer + zn, "junk", 4);
  expect_read_fails(FRAME_SQL, longer,
                    zn + 4, GK_ECORRUPT, "not exactly one zstd frame");
  /* A good frame cut short. */
  expect_read_fails(FRAME_SQL, z,
                    zn / 2, GK_ECORRUPT, "not exactly one zstd frame");
  free(longer);
  free(z);
  expect_read_fails("UPDATE blob SET data = x'', data_sha256 = gk_sha256(sha256, x'') "
                    "WHERE id = " V3_ID, NULL,
                    0, GK_ECORRUPT, "0 packed bytes");
}

static void read_blob_damage(void **state) {
  (void)state;
  /* data_sha256 covers the blob's own sha256: an identity rewritten in
   * both places shows on a plain read, before zstd. */
  expect_read_fails("UPDATE blob SET sha256 = zeroblob(32) WHERE id = " V3_ID
                    "; UPDATE image SET sha256 = zeroblob(32) WHERE blob = " V3_ID,
                    NULL, 0, GK_EHASH, "the stored bytes of blob");
  expect_read_fails("UPDATE blob SET codec = 'lz4' WHERE id = " V3_ID,
                    NULL, 0, GK_ECORRUPT,
                    "uses codec 'lz4'; libgk knows 'zstd' and 'zstd-delta'");
  /* A missing blob is the index's damage: the whole index is refused. */
  char *path = good_archive("damaged.gkfat");
  fx_exec(path, "DELETE FROM blob WHERE id = " V3_ID, NULL, 0);
  gk_archive *ar;
  size_t n = 99;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_count(ar, &n), GK_ECORRUPT);
  assert_int_equal(n, 0);
  assert_contains(gk_archive_errmsg(ar), "image 'qmatmul' bits=4 cpu x86-64-v3 (row 1) "
                                         "names a blob row that is not there");
  gk_archive_close(ar);
  free(path);
}

/* `src` as a zstd frame coded against the raw bytes `prefix`, as gk pack
 * writes a 'zstd-delta' blob. */
static void *delta_frame(const void *src, size_t n, const void *prefix, size_t pn,
                         size_t *zn) {
  ZSTD_CCtx *c = ZSTD_createCCtx();
  size_t cap = ZSTD_compressBound(n);
  void *z = malloc(cap);
  assert_non_null(c);
  assert_non_null(z);
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 19);
  ZSTD_CCtx_refPrefix(c, prefix, pn);
  *zn = ZSTD_compress2(c, z, cap, src, n);
  assert_false(ZSTD_isError(*zn));
  ZSTD_freeCCtx(c);
  return z;
}

/* Stores `z` as the data of the blobs `where` selects, with the
 * data_sha256 a reader checks the stored bytes against before zstd sees
 * them: of the bytes, after the base's sha256 for a delta (docs/archive.md). */
static void put_frame(const char *path, const char *where, const void *z, size_t zn) {
  char sql[1024];
  snprintf(sql, sizeof sql,
           "UPDATE blob SET data = ?1, data_sha256 = gk_sha256(sha256, (SELECT p.sha256 "
           "FROM blob AS p WHERE p.id = blob.base), ?1) WHERE %s",
           where);
  fx_exec(path, sql, z, zn);
}


/* Every image of good_archive()'s three reads back exactly, twice (the
 * decompression context is reused); row 1, the v4 image, is the delta whose
 * own frame is zn bytes. */
static void expect_reads_back(gk_archive *ar, size_t zn) {
  gk_image_info info;
  assert_int_equal(gk_archive_image(ar, 1, &info), GK_OK);
  assert_int_equal(info.packed_size, zn);
  for (size_t round = 0; round < 2; round++)
    for (size_t i = 0; i < 3; i++) {
      void *p;
      size_t n;
      assert_int_equal(gk_archive_read(ar, i, &p, &n), GK_OK);
      assert_int_equal(n, i == 1 ? img_b_size : img_a_size);
      assert_memory_equal(p, i == 1 ? img_b : img_a, n);
      gk_free(p);
    }
}

/* A delta-coded image reads back through its base, from a file and from
 * memory, and its base still reads on its own. */
static void read_delta(void **state) {
  (void)state;
  char *path = good_archive("delta.gkfat");
  size_t zn;
  void *z = delta_frame(img_b, img_b_size, img_a, img_a_size, &zn);
  size_t plain = ZSTD_compressBound(img_b_size);
  void *pz = malloc(plain);
  plain = ZSTD_compress(pz, plain, img_b, img_b_size, 19);
  free(pz);
  assert_true(zn < plain); /* the frame does lean on its prefix */
  fx_exec(path, "UPDATE blob SET codec = 'zstd-delta', base = " V3_ID
                " WHERE id = " V4_ID, NULL, 0);
  put_frame(path, "id = " V4_ID, z, zn);
  free(z);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  expect_reads_back(ar, zn);
  gk_archive_close(ar);
  free(path);
}

/* A chain of the greatest depth (GK_ARCHIVE_DELTA_DEPTH = 2): the v4 image
 * is coded against [A | M], where A is the v3 image's plain blob and M a
 * blob no row uses - the first half of the v4 image, itself a delta on A.
 * Returns the archive's path; M's id is MID_ID, *v4_zn the v4 frame's size. */
#define MID_ID 100
static char *chain_archive(const char *name, size_t *v4_zn) {
  char *path = good_archive(name);
  size_t h = img_b_size / 2, mn, zn;
  unsigned char *pre = malloc(img_a_size + h);
  assert_non_null(pre);
  memcpy(pre, img_a, img_a_size);
  memcpy(pre + img_a_size, img_b, h);
  void *mid = delta_frame(pre + img_a_size, h, pre, img_a_size, &mn);
  void *z = delta_frame(img_b, img_b_size, pre, img_a_size + h, &zn);
  /* The frame leans on both ancestors: without the root it is not v4. */
  ZSTD_DCtx *d = ZSTD_createDCtx();
  void *out = malloc(img_b_size);
  ZSTD_DCtx_refPrefix(d, pre + img_a_size, h);
  size_t got = ZSTD_decompressDCtx(d, out, img_b_size, z, zn);
  assert_true(ZSTD_isError(got) || got != img_b_size || memcmp(out, img_b, got) != 0);
  ZSTD_freeDCtx(d);
  free(out);
  /* M starts as a copy of A's row (whatever columns the schema has). */
  char sql[640];
  snprintf(sql, sizeof sql,
           "CREATE TABLE mid AS SELECT * FROM blob WHERE id = " V3_ID "; "
           "UPDATE mid SET id = %d, sha256 = zeroblob(32), raw_size = %zu, "
           "codec = 'zstd-delta', base = " V3_ID "; "
           "INSERT INTO blob SELECT * FROM mid; DROP TABLE mid; "
           "UPDATE blob SET codec = 'zstd-delta', base = %d WHERE id = " V4_ID,
           MID_ID, h, MID_ID);
  fx_exec(path, sql, NULL, 0);
  snprintf(sql, sizeof sql, "id = %d", MID_ID);
  put_frame(path, sql, mid, mn);
  put_frame(path, "id = " V4_ID, z, zn);
  free(mid);
  free(z);
  free(pre);
  if (v4_zn) *v4_zn = zn;
  return path;
}

/* Every image of an archive with a depth-2 chain reads back, from a file
 * and from memory, the context reused between reads. */
static void read_chain(void **state) {
  (void)state;
  size_t zn;
  char *path = chain_archive("chain.gkfat", &zn);
  size_t fn;
  void *file = fx_read_file(path, &fn);
  for (int mem = 0; mem < 2; mem++) {
    gk_archive *ar;
    assert_int_equal(mem ? gk_archive_open_memory(file, fn, &ar) : gk_archive_open(path, &ar),
                     GK_OK);
    expect_reads_back(ar, zn);
    gk_archive_close(ar);
  }
  free(file);
  free(path);
}

/* A chain deeper than GK_ARCHIVE_DELTA_DEPTH, or one that loops, is a
 * corrupt archive, said so, whatever its frames hold. */
static void expect_chain_fails(const char *sql, const char *msg) {
  char *path = chain_archive("chain-damaged.gkfat", NULL);
  fx_exec(path, sql, NULL, 0);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  void *p = (void *)1;
  size_t n;
  int rc = gk_archive_read(ar, 1, &p, &n);
  if (rc != GK_ECORRUPT)
    fail_msg("'%s': read gave %s (%s), expected GK_ECORRUPT", sql, gk_strerror(rc),
             gk_archive_errmsg(ar));
  assert_null(p);
  assert_contains(gk_archive_errmsg(ar), msg);
  assert_contains(gk_archive_errmsg(ar), "'qmatmul' bits=4 cpu x86-64-v4");
  assert_contains(gk_archive_errmsg(ar), path);
  gk_archive_close(ar);
  free(path);
}

static void read_chain_damage(void **state) {
  (void)state;
  char msg[128];
  /* The root made a delta on one more plain blob: depth 3. */
  snprintf(msg, sizeof msg, "is deeper than %d", GK_ARCHIVE_DELTA_DEPTH);
  expect_chain_fails("CREATE TABLE z AS SELECT * FROM blob WHERE id = " V3_ID "; "
                     "UPDATE z SET id = 200, sha256 = randomblob(32); "
                     "INSERT INTO blob SELECT * FROM z; DROP TABLE z; "
                     "UPDATE blob SET codec = 'zstd-delta', base = 200 WHERE id = "
                     V3_ID, msg);
  /* The root made a delta on the image itself: v4 -> M -> A -> v4. */
  expect_chain_fails("UPDATE blob SET codec = 'zstd-delta', base = " V4_ID " WHERE id = "
                     V3_ID, "loops back to blob");
  /* M on itself, and M on the image. */
  snprintf(msg, sizeof msg, "UPDATE blob SET base = %d WHERE id = %d", MID_ID, MID_ID);
  expect_chain_fails(msg, "loops back to blob 100");
  expect_chain_fails("UPDATE blob SET base = " V4_ID
                     " WHERE id = 100", "loops back to blob");
  /* A chain to a blob that is not there. */
  expect_chain_fails("UPDATE blob SET base = 999 WHERE id = 100", "has no base blob");
}

/* A damaged delta structure is refused with what is wrong. */
static void read_delta_damage(void **state) {
  (void)state;
  expect_read_fails("UPDATE blob SET codec = 'zstd-delta' WHERE id = " V3_ID,
                    NULL, 0, GK_ECORRUPT, "is a delta without a base");
  expect_read_fails("UPDATE blob SET base = 2 WHERE id = " V3_ID, NULL, 0,
                    GK_ECORRUPT, "is a plain frame with a base");
  expect_read_fails("UPDATE blob SET codec = 'zstd-delta', base = 99 WHERE id = "
                    V3_ID, NULL, 0, GK_ECORRUPT, "has no base blob");
  expect_read_fails("UPDATE blob SET codec = 'zstd-delta', base = id WHERE id = "
                    V3_ID, NULL, 0, GK_ECORRUPT, "the chain of bases of image");
  expect_read_fails("UPDATE blob SET codec = 'zstd-delta', base = id WHERE id = "
                    V3_ID, NULL, 0, GK_ECORRUPT, "loops back to blob");
  expect_read_fails("UPDATE blob SET codec = 'zstd-delta', base = 'x' WHERE id = "
                    V3_ID, NULL, 0, GK_ECORRUPT, "is a delta without a base");
  /* Coded against other bytes than its base's: never handed out. */
  size_t zn;
  /* A copy: zstd ignores a prefix that is the input's own buffer. */
  void *copy = malloc(img_a_size);
  memcpy(copy, img_a, img_a_size);
  void *z = delta_frame(img_a, img_a_size, copy, img_a_size, &zn);
  free(copy);
  assert_true(zn < img_a_size / 50); /* the frame does lean on its prefix */
  char *path = good_archive("delta-wrong-base.gkfat");
  fx_exec(path, "UPDATE blob SET codec = 'zstd-delta', base = " V4_ID " WHERE id = " V3_ID,
          NULL, 0);
  put_frame(path, "id = " V3_ID, z, zn);
  free(z);
  /* Rewritten whole (data, data_sha256 and base together), the stored
   * bytes are what the archive vouches for: checking the image's own hash
   * (implied by a signature) refuses what they decode to. */
  gk_archive *ar;
  gk_open_options o = {NULL, 0, GK_OPEN_CHECK_IMAGES};
  assert_int_equal(gk_archive_open_ex(path, &o, &ar), GK_OK);
  void *p = (void *)1;
  size_t n;
  int rc = gk_archive_read(ar, 0, &p, &n);
  if (rc != GK_EHASH && rc != GK_ECORRUPT)
    fail_msg("a delta against the wrong base gave %s (%s)", gk_strerror(rc),
             gk_archive_errmsg(ar));
  assert_null(p);
  gk_archive_close(ar);
  free(path);

  /* A good delta whose base pointer alone moves, to a copy of its base
   * under another identity (the same bytes: decoding would succeed): its
   * stored hash covers its base's identity, so a plain read refuses it
   * before decoding. */
  path = good_archive("delta-moved-base.gkfat");
  z = delta_frame(img_b, img_b_size, img_a, img_a_size, &zn);
  fx_exec(path, "UPDATE blob SET codec = 'zstd-delta', base = " V3_ID
                " WHERE id = " V4_ID, NULL, 0);
  put_frame(path, "id = " V4_ID, z, zn);
  free(z);
  fx_exec(path, "CREATE TABLE twin AS SELECT * FROM blob WHERE id = " V3_ID "; "
                "UPDATE twin SET id = 100, sha256 = zeroblob(32); "
                "INSERT INTO blob SELECT * FROM twin; DROP TABLE twin; "
                "UPDATE blob SET base = 100 WHERE id = " V4_ID, NULL, 0);
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  p = (void *)1;
  assert_int_equal(gk_archive_read(ar, 1, &p, &n), GK_EHASH);
  assert_null(p);
  assert_contains(gk_archive_errmsg(ar), "the stored bytes of blob");
  gk_archive_close(ar);
  free(path);
}

/* A cpu row whose bytes are not what a cpu row needs. The hash matches
 * (the fixture hashes what it packs): only the ELF check stands between
 * these bytes and dlopen. */
static void expect_format_error(const void *bytes, size_t n, const char *target,
                                const char *backend, const char *format,
                                int status, const char *msg) {
  char *path = fx_path("format.gkfat");
  fx_image im = {"k",           backend,  target, "", .format = format,
                 .data = bytes, .size = n};
  fx_write(path, &im, 1);
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  void *p;
  size_t size;
  int rc = gk_archive_read(ar, 0, &p, &size);
  if (rc != status)
    fail_msg("%s %s %s: %s (%s), expected %s", backend, target, format,
             gk_strerror(rc), gk_archive_errmsg(ar), gk_strerror(status));
  if (status != GK_OK) {
    assert_contains(gk_archive_errmsg(ar), "does not fit its row");
    assert_contains(gk_archive_errmsg(ar), msg);
  }
  gk_free(p);
  gk_archive_close(ar);
  free(path);
}

static void put16(unsigned char *p, unsigned v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}

static void read_elf_checks(void **state) {
  (void)state;
  const char text[] = "#!/bin/sh\necho not an ELF\n";
  expect_format_error(text, sizeof text - 1, "x86-64-v3", "cpu", "so",
                      GK_EFORMAT, "not an ELF file");
  expect_format_error("\177ELF", 4, "x86-64-v3", "cpu", "so", GK_EFORMAT,
                      "too short for an ELF header");
  expect_format_error(img_a, img_a_size, "x86-64-v5", "cpu", "so", GK_EFORMAT,
                      "'x86-64-v5' is not an x86-64 level");
  expect_format_error(
      img_a, img_a_size, "x86-64-v3", "cpu", "cubin", GK_EFORMAT,
      "format 'cubin' is not one libgk knows for backend 'cpu'");
  expect_format_error(img_a, img_a_size, "sm_86", "cuda", "cubin", GK_EFORMAT,
                      "built for x86-64 (e_machine 62), not CUDA");
  expect_format_error(img_a, img_a_size, "gfx90a", "rocm", "hsaco", GK_EFORMAT,
                      "not AMDGPU");
  /* PTX is text with its own directives (tests/cuda checks real PTX). */
  expect_format_error(text, sizeof text - 1, "compute_90", "cuda", "ptx",
                      GK_EFORMAT, "the PTX has no .version directive");

  unsigned char *b = malloc(img_a_size);
  struct {
    size_t off;
    unsigned value, width;
    const char *msg;
  } patches[] = {
      {18, 183, 2, "built for AArch64 (e_machine 183), not x86-64"},
      {18, 3, 2, "built for i386"},
      {16, 2, 2, "ELF type 2, not a shared object"},
      {16, 1, 2, "ELF type 1"},
      {4, 1, 1, "not a 64-bit little-endian ELF (class 1"},
      {5, 2, 1, "not a 64-bit little-endian ELF"},
      {20, 7, 1, "ELF header is malformed"},
      {52, 40, 2, "ELF header is malformed"},
      {34, 0xfff0, 2, "program headers lie outside the image"}, /* e_phoff */
      {56, 0xffff, 2, "program headers lie outside the image"}, /* e_phnum */
      {54, 8, 2, "program headers lie outside the image"}, /* e_phentsize */
      {60, 0xffff, 2, "section headers lie outside the image"}, /* e_shnum */
  };
  for (size_t i = 0; i < sizeof patches / sizeof patches[0]; i++) {
    memcpy(b, img_a, img_a_size);
    if (patches[i].width == 1)
      b[patches[i].off] = (unsigned char)patches[i].value;
    else
      put16(b + patches[i].off, patches[i].value);
    expect_format_error(b, img_a_size, "x86-64-v3", "cpu", "so", GK_EFORMAT,
                        patches[i].msg);
  }
  /* A shared object's header with the CUDA machine is not a cubin either:
   * cubins are executables (tests/cuda checks real ones). */
  memcpy(b, img_a, img_a_size);
  put16(b + 18, 190);
  expect_format_error(b, img_a_size, "sm_86", "cuda", "cubin", GK_EFORMAT,
                      "ELF type 3, not an executable (ET_EXEC)");
  free(b);
}

/* ---- memory ----------------------------------------------------------------
 */

static void memory_equals_file(void **state) {
  (void)state;
  char *path = good_archive("memory.gkfat");
  size_t n;
  void *bytes = fx_read_file(path, &n);
  gk_archive *af, *am;
  assert_int_equal(gk_archive_open(path, &af), GK_OK);
  assert_int_equal(gk_archive_open_memory(bytes, n, &am), GK_OK);
  assert_string_equal(gk_last_error(), "");
  size_t cf, cm;
  assert_int_equal(gk_archive_count(af, &cf), GK_OK);
  assert_int_equal(gk_archive_count(am, &cm), GK_OK);
  assert_int_equal(cf, cm);
  for (size_t i = 0; i < cf; i++) {
    gk_image_info a, b;
    assert_int_equal(gk_archive_image(af, i, &a), GK_OK);
    assert_int_equal(gk_archive_image(am, i, &b), GK_OK);
    assert_string_equal(a.kernel, b.kernel);
    assert_string_equal(a.target, b.target);
    assert_string_equal(a.variant, b.variant);
    assert_string_equal(a.entry, b.entry);
    assert_int_equal(a.raw_size, b.raw_size);
    assert_int_equal(a.packed_size, b.packed_size);
    assert_memory_equal(a.sha256, b.sha256, 32);
    void *pf, *pm;
    size_t sf, sm;
    assert_int_equal(gk_archive_read(af, i, &pf, &sf), GK_OK);
    assert_int_equal(gk_archive_read(am, i, &pm, &sm), GK_OK);
    assert_int_equal(sf, sm);
    assert_memory_equal(pf, pm, sf);
    gk_free(pf);
    gk_free(pm);
  }
  /* Errors name the memory archive. */
  assert_int_equal(gk_archive_image(am, 9, &(gk_image_info){0}), GK_ERANGE);
  assert_contains(gk_archive_errmsg(am), "<memory,");
  gk_archive_close(af);
  gk_archive_close(am);

  /* The bytes are only borrowed: they are intact after use and close. */
  size_t n2;
  void *again = fx_read_file(path, &n2);
  assert_int_equal(n, n2);
  assert_memory_equal(bytes, again, n);
  free(again);
  free(bytes);
  free(path);
}

static void memory_bad(void **state) {
  (void)state;
  gk_archive *ar = (gk_archive *)1;
  assert_int_equal(gk_archive_open_memory("x", 0, &ar), GK_ENOTARCHIVE);
  assert_null(ar);
  assert_contains(gk_last_error(), "no bytes");
  const char text[] = "hello, this is text and not a database at all";
  assert_int_equal(gk_archive_open_memory(text, sizeof text, &ar),
                   GK_ENOTARCHIVE);
  assert_contains(gk_last_error(), "<memory,");
  /* A foreign database in memory. */
  char *path = fx_path("foreign-mem.db");
  fx_write_file(path, "", 0);
  fx_exec(path, "CREATE TABLE t (x)", NULL, 0);
  size_t n;
  void *bytes = fx_read_file(path, &n);
  assert_int_equal(gk_archive_open_memory(bytes, n, &ar), GK_ENOTARCHIVE);
  assert_contains(gk_last_error(),
                  "is a SQLite database but not a gllm-kernels");
  free(bytes);
  free(path);
  /* A good archive cut short in memory: header claims more pages. */
  path = good_archive("cut.gkfat");
  bytes = fx_read_file(path, &n);
  int rc = gk_archive_open_memory(bytes, 4096, &ar);
  if (rc == GK_OK) {
    void *p;
    size_t size;
    int bad = 0;
    for (size_t i = 0; i < 3; i++) {
      bad |= gk_archive_read(ar, i, &p, &size) != GK_OK;
      gk_free(p);
    }
    assert_true(bad);
    gk_archive_close(ar);
  } else {
    assert_true(rc == GK_ECORRUPT || rc == GK_ENOTARCHIVE);
  }
  free(bytes);
  free(path);
}

/* gk_last_error is per thread. */
struct tls_case {
  const char *path;
  char seen[256];
};

static void *open_missing_in_thread(void *arg) {
  struct tls_case *c = arg;
  gk_archive *ar;
  gk_archive_open(c->path, &ar);
  snprintf(c->seen, sizeof c->seen, "%s", gk_last_error());
  return NULL;
}

static void last_error_is_thread_local(void **state) {
  (void)state;
  char *path = good_archive("tls.gkfat");
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_string_equal(gk_last_error(), "");
  struct tls_case c = {"/nonexistent/x.gkfat", ""};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, open_missing_in_thread, &c), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_contains(c.seen, "cannot open archive '/nonexistent/x.gkfat'");
  assert_string_equal(gk_last_error(), ""); /* ours untouched */
  gk_archive_close(ar);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(open_bad_args),
      cmocka_unit_test(open_missing_file),
      cmocka_unit_test(open_directory),
      cmocka_unit_test(open_fifo),
      cmocka_unit_test(open_text_file),
      cmocka_unit_test(open_empty_file),
      cmocka_unit_test(open_random_bytes),
      cmocka_unit_test(open_foreign_sqlite),
      cmocka_unit_test(open_wrong_version),
      cmocka_unit_test(open_schema_damage),
      cmocka_unit_test(lazy_index),
      cmocka_unit_test(open_extra_columns_ok),
      cmocka_unit_test(open_truncated),
      cmocka_unit_test(open_odd_paths),
      cmocka_unit_test(index_rows),
      cmocka_unit_test(index_empty_archive),
      cmocka_unit_test(read_good),
      cmocka_unit_test(read_zstd_garbage),
      cmocka_unit_test(read_other_content),
      cmocka_unit_test(read_size_lies),
      cmocka_unit_test(read_frame_shapes),
      cmocka_unit_test(read_blob_damage),
      cmocka_unit_test(read_delta),
      cmocka_unit_test(read_delta_damage),
      cmocka_unit_test(read_chain),
      cmocka_unit_test(read_chain_damage),
      cmocka_unit_test(read_elf_checks),
      cmocka_unit_test(memory_equals_file),
      cmocka_unit_test(memory_bad),
      cmocka_unit_test(last_error_is_thread_local),
  };
  return cmocka_run_group_tests_name("loader.archive", tests, load_images,
                                     free_images);
}
