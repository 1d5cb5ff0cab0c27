/*
 * fixture.h - writes test archives by following docs/archive.md alone, with
 * sqlite3, zstd and libsodium directly (not with libgk or the packager), so
 * that it also checks the document says enough to write a readable archive.
 * Plus small file helpers. Every helper fails the test (cmocka fail_msg) on
 * error, so callers need no checks.
 */
#ifndef GK_TEST_FIXTURE_H
#define GK_TEST_FIXTURE_H

#include <stddef.h>

typedef struct fx_image {
  const char *kernel, *backend, *target, *variant;
  const char *format;    /* NULL: "so" */
  const char *entry;     /* NULL: ["qmatmul"] for a shared object (every test
                          * image exports it), else ["<kernel>"] */
  const char *launch;    /* NULL: "{}" */
  const char *toolchain; /* NULL: "cc test" */
  const void *data;
  size_t size;
} fx_image;

/* Writes an archive of n images at path (via path.tmp + rename, rows in
 * primary-key order, blobs deduplicated by SHA-256, as gk pack does). */
void fx_write(const char *path, const fx_image *images, size_t n);

/* Runs SQL on an existing file (to damage an archive), with ?1 bound to
 * blob when blob is not NULL. The SQL may call gk_sha256(X) (SHA-256 of a
 * blob) to keep a blob's data_sha256 in step with new data. */
void fx_exec(const char *path, const char *sql, const void *blob, size_t n);

/* A path inside this test process's temporary folder (removed at exit).
 * The returned string is malloc'ed; the folder is created on first use. */
char *fx_path(const char *name);

void *fx_read_file(const char *path, size_t *size);
void fx_write_file(const char *path, const void *data, size_t size);

/* zstd level 3 of src; *n receives the size. malloc'ed. */
void *fx_zstd(const void *src, size_t size, size_t *n);

/* The bytes of a test image built by CMake (GK_TEST_IMAGE_A etc.). */
void *fx_image_bytes(const char *path, size_t *size);

/* Test images 1 and 2 (real x86-64 shared objects), read by fx_load_images
 * and freed by fx_free_images: a cmocka group's setup and teardown. */
extern void *fx_img_a, *fx_img_b;
extern size_t fx_img_a_size, fx_img_b_size;
int fx_load_images(void **state);
int fx_free_images(void **state);

/* The standard test archive at fx_path(name): three rows, two sharing one
 * blob (image A); qmatmul bits=4 for x86-64-v4 (image B) and x86-64-v3,
 * and softmax with its own entry points, launch data and toolchain.
 * Needs fx_load_images. The path is malloc'ed. */
char *fx_good_archive(const char *name);

/* Fails the test unless string s contains sub (cmocka.h comes first). */
#define assert_contains(s, sub)                                                \
  do {                                                                         \
    const char *s_ = (s);                                                      \
    if (!strstr(s_, (sub))) fail_msg("'%s' does not contain '%s'", s_, (sub)); \
  } while (0)

#endif
