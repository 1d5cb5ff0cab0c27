/*
 * test_read.c - reading images (gk_archive_read): plain frames, deltas and
 * their chains, against good and damaged blobs, and the header checks of
 * what a read hands out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "fixture.h"
#include "gk.h"
#include "gk_internal.h"

/* ---- reading ---------------------------------------------------------------
 */

static void read_good(void **state) {
  (void)state;
  char *path = fx_good_archive("read.gkfat");
  gk_archive *ar;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  void *p;
  size_t n;
  assert_int_equal(gk_archive_read(ar, 0, &p, &n), GK_OK);
  assert_int_equal(n, fx_img_a_size);
  assert_memory_equal(p, fx_img_a, n);
  gk_free(p);
  assert_int_equal(gk_archive_read(ar, 1, &p, &n), GK_OK);
  assert_int_equal(n, fx_img_b_size);
  assert_memory_equal(p, fx_img_b, n);
  gk_free(p);
  /* Rows sharing one blob read the same bytes. */
  assert_int_equal(gk_archive_read(ar, 2, &p, &n), GK_OK);
  assert_memory_equal(p, fx_img_a, n);
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

/* From a file, libgk reads through its own SQLite VFS (loader/vfs.c), which
 * reads ahead when SQLite walks a blob's overflow pages in order. Images of
 * 0 to 70 KB of incompressible tail (blobs of one to ~80 pages, one of them
 * at the end of the file, where a read-ahead comes back short) read the
 * same from the file as from the file's bytes in memory, and as written. */
static void read_file_as_memory(void **state) {
  (void)state;
  enum { N = 6 };
  static const size_t tails[N] = {0, 1000, 9000, 17000, 33000, 70000};
  static const char *const variants[N] = {"t=0", "t=1", "t=2", "t=3", "t=4", "t=5"};
  unsigned char *data[N];
  fx_image im[N];
  uint64_t x = 88172645463325252u;
  for (size_t i = 0; i < N; i++) {
    data[i] = malloc(fx_img_a_size + tails[i]);
    memcpy(data[i], fx_img_a, fx_img_a_size);
    for (size_t k = 0; k < tails[i]; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      data[i][fx_img_a_size + k] = (unsigned char)x;
    }
    im[i] = (fx_image){"k", "cpu", "x86-64-v2", variants[i], .data = data[i],
                       .size = fx_img_a_size + tails[i]};
  }
  char *path = fx_path("readahead.gkfat");
  fx_write(path, im, N);
  size_t fn;
  void *bytes = fx_read_file(path, &fn);
  gk_archive *af, *am;
  assert_int_equal(gk_archive_open(path, &af), GK_OK);
  assert_int_equal(gk_archive_open_memory(bytes, fn, &am), GK_OK);
  size_t count;
  assert_int_equal(gk_archive_count(af, &count), GK_OK);
  assert_int_equal(count, N);
  for (size_t r = 0; r < count; r++) {
    gk_image_info info;
    assert_int_equal(gk_archive_image(af, r, &info), GK_OK);
    size_t i = (size_t)(info.variant[2] - '0');
    assert_true(i < N && !strcmp(info.variant, variants[i]));
    void *pf, *pm;
    size_t nf, nm;
    assert_int_equal(gk_archive_read(af, r, &pf, &nf), GK_OK);
    assert_int_equal(gk_archive_read(am, r, &pm, &nm), GK_OK);
    assert_int_equal(nf, fx_img_a_size + tails[i]);
    assert_int_equal(nm, nf);
    assert_memory_equal(pf, data[i], nf);
    assert_memory_equal(pm, data[i], nm);
    gk_free(pf);
    gk_free(pm);
  }
  gk_archive_close(af);
  gk_archive_close(am);
  free(bytes);
  free(path);
  for (size_t i = 0; i < N; i++) free(data[i]);
}

/* Damages the v3 qmatmul row of a fresh archive with `sql` (?1 = blob) and
 * expects reading it to fail with `status` and `msg`. Other rows still read. */
static void expect_read_fails(const char *sql, const void *blob, size_t n,
                              int status, const char *msg) {
  char *path = fx_good_archive("damaged.gkfat");
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
  unsigned char *other = malloc(fx_img_a_size);
  memcpy(other, fx_img_a, fx_img_a_size);
  other[fx_img_a_size / 2] ^= 1;
  size_t zn;
  void *z = fx_zstd(other, fx_img_a_size, &zn);
  /* The stored bytes changed, their hash not: refused before zstd. */
  expect_read_fails("UPDATE blob SET data = ?1 WHERE id = " V3_ID, z, zn,
                    GK_EHASH, "does not match its SHA-256 (the stored bytes");
  /* Both changed together: the stored bytes are what the archive vouches
   * for, and a plain read hands them out (whoever can rewrite both could
   * rewrite the index's hash as well: only a signature tells). Checking the
   * image's own hash (GK_OPEN_CHECK_IMAGES, implied by trusted keys)
   * refuses them. */
  char *path = fx_good_archive("other.gkfat");
  fx_exec(path, FRAME_SQL, z, zn);
  gk_archive *ar;
  void *p;
  size_t size;
  assert_int_equal(gk_archive_open(path, &ar), GK_OK);
  assert_int_equal(gk_archive_read(ar, 0, &p, &size), GK_OK);
  assert_int_equal(size, fx_img_a_size);
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

/* The v3 row's blob and index row both say `size` (an SQL expression of
 * raw_size) where the frame declares another. */
static void expect_size_lie(const char *size, int status, const char *msg) {
  char sql[512];
  snprintf(sql, sizeof sql,
           "UPDATE blob SET raw_size = %s WHERE id = " V3_ID
           "; UPDATE image SET raw_size = %s WHERE blob = " V3_ID,
           size, size);
  expect_read_fails(sql, NULL, 0, status, msg);
}

static void read_size_lies(void **state) {
  (void)state;
  /* Index and blob agree on a size the frame does not have: larger, smaller. */
  expect_size_lie("raw_size + 1", GK_ECORRUPT, "declares another size than the index");
  expect_size_lie("100", GK_ECORRUPT, "declares another size than the index");
  /* Over the cap: refused before any allocation. */
  expect_size_lie("2147483648", GK_ETOOBIG, "over libgk's limit");
  expect_size_lie("9223372036854775807", GK_ETOOBIG, "over libgk's limit");
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
  unsigned char *z = fx_zstd(fx_img_a, fx_img_a_size, &zn);
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
  char *path = fx_good_archive("damaged.gkfat");
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


/* Every image of fx_good_archive()'s three reads back exactly, twice (the
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
      assert_int_equal(n, i == 1 ? fx_img_b_size : fx_img_a_size);
      assert_memory_equal(p, i == 1 ? fx_img_b : fx_img_a, n);
      gk_free(p);
    }
}

/* A delta-coded image reads back through its base, from a file and from
 * memory, and its base still reads on its own. */
static void read_delta(void **state) {
  (void)state;
  char *path = fx_good_archive("delta.gkfat");
  size_t zn;
  void *z = delta_frame(fx_img_b, fx_img_b_size, fx_img_a, fx_img_a_size, &zn);
  size_t plain = ZSTD_compressBound(fx_img_b_size);
  void *pz = malloc(plain);
  plain = ZSTD_compress(pz, plain, fx_img_b, fx_img_b_size, 19);
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
  char *path = fx_good_archive(name);
  size_t h = fx_img_b_size / 2, mn, zn;
  unsigned char *pre = malloc(fx_img_a_size + h);
  assert_non_null(pre);
  memcpy(pre, fx_img_a, fx_img_a_size);
  memcpy(pre + fx_img_a_size, fx_img_b, h);
  void *mid = delta_frame(pre + fx_img_a_size, h, pre, fx_img_a_size, &mn);
  void *z = delta_frame(fx_img_b, fx_img_b_size, pre, fx_img_a_size + h, &zn);
  /* The frame leans on both ancestors: without the root it is not v4. */
  ZSTD_DCtx *d = ZSTD_createDCtx();
  void *out = malloc(fx_img_b_size);
  ZSTD_DCtx_refPrefix(d, pre + fx_img_a_size, h);
  size_t got = ZSTD_decompressDCtx(d, out, fx_img_b_size, z, zn);
  assert_true(ZSTD_isError(got) || got != fx_img_b_size || memcmp(out, fx_img_b, got) != 0);
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
  void *copy = malloc(fx_img_a_size);
  memcpy(copy, fx_img_a, fx_img_a_size);
  void *z = delta_frame(fx_img_a, fx_img_a_size, copy, fx_img_a_size, &zn);
  free(copy);
  assert_true(zn < fx_img_a_size / 50); /* the frame does lean on its prefix */
  char *path = fx_good_archive("delta-wrong-base.gkfat");
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
  path = fx_good_archive("delta-moved-base.gkfat");
  z = delta_frame(fx_img_b, fx_img_b_size, fx_img_a, fx_img_a_size, &zn);
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
  expect_format_error(fx_img_a, fx_img_a_size, "x86-64-v5", "cpu", "so", GK_EFORMAT,
                      "'x86-64-v5' is not an x86-64 level");
  expect_format_error(
      fx_img_a, fx_img_a_size, "x86-64-v3", "cpu", "cubin", GK_EFORMAT,
      "format 'cubin' is not one libgk knows for backend 'cpu'");
  expect_format_error(fx_img_a, fx_img_a_size, "sm_86", "cuda", "cubin", GK_EFORMAT,
                      "built for x86-64 (e_machine 62), not CUDA");
  expect_format_error(fx_img_a, fx_img_a_size, "gfx90a", "rocm", "hsaco", GK_EFORMAT,
                      "not AMDGPU");
  /* PTX is text with its own directives (tests/backends/cuda checks real PTX). */
  expect_format_error(text, sizeof text - 1, "compute_90", "cuda", "ptx",
                      GK_EFORMAT, "the PTX has no .version directive");

  unsigned char *b = malloc(fx_img_a_size);
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
    memcpy(b, fx_img_a, fx_img_a_size);
    if (patches[i].width == 1)
      b[patches[i].off] = (unsigned char)patches[i].value;
    else
      put16(b + patches[i].off, patches[i].value);
    expect_format_error(b, fx_img_a_size, "x86-64-v3", "cpu", "so", GK_EFORMAT,
                        patches[i].msg);
  }
  /* A shared object's header with the CUDA machine is not a cubin either:
   * cubins are executables (tests/backends/cuda checks real ones). */
  memcpy(b, fx_img_a, fx_img_a_size);
  put16(b + 18, 190);
  expect_format_error(b, fx_img_a_size, "sm_86", "cuda", "cubin", GK_EFORMAT,
                      "ELF type 3, not an executable (ET_EXEC)");
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(read_good),
      cmocka_unit_test(read_file_as_memory),
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
  };
  return cmocka_run_group_tests_name("loader.read", tests, fx_load_images, fx_free_images);
}
