/*
 * fuzz.c - fuzz target for everything libgk does with an untrusted archive:
 * the bytes are opened from memory AND from a file, the index is walked,
 * every image is read and verified, selection and explanation run for a
 * device of every backend, and the best images are loaded where that needs
 * no GPU (cpu, cuda with no driver here, wgsl, metal). The bytes also go
 * through the ELF readers as a cpu, cuda and rocm image.
 *
 * Beyond "no crash" it checks what the loader promises: the file and memory
 * opens agree (status, rows, every read's status and bytes), and an image
 * that reads or loads successfully has exactly the size and SHA-256 its row
 * states. A broken promise aborts, which libFuzzer reports as a finding.
 *
 * Used three ways: test_mutate.c feeds gk_fuzz_one deterministic mutations
 * of a good archive; tests/fuzz replays the committed corpus through
 * LLVMFuzzerTestOneInput (ctest fuzz.archive_replay); and with -DGK_FUZZ=ON
 * (clang) fuzz_archive is a libFuzzer binary: ci/fuzz.sh runs it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_CLOEXEC, mkstemp */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <sodium.h>

#include "gk.h"
#include "gk_internal.h"

int gk_fuzz_one(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bounds keep one input fast: an index can hold many rows, and each read
 * decompresses up to the image cap. */
enum { MAX_ROWS = 64, MAX_LOADS = 4 };

/* A device of every backend, as specs (what a user or `gk probe` gives). */
static const char *const device_specs[] = {
    "cpu:x86-64",          "cpu:x86-64-v2",      "cpu:x86-64-v3",
    "cpu:x86-64-v4",       "cuda:sm_75",         "cuda:sm_86,driver=12.4",
    "cuda:sm_90",          "cuda:sm_120,driver=13.0",
    "rocm:gfx90a:sramecc+:xnack-", "rocm:gfx1030", "rocm:gfx1100",
    "vulkan:vulkan1.1",    "vulkan:vulkan1.3",   "wgsl:webgpu",
    "metal:macos-metal3.1"};

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz: broken promise: %s\n", what);
    abort();
  }
}

/* An image handed out must be the one its row names. */
static void check_image(const gk_image_info *info, const void *bytes,
                        size_t size) {
  unsigned char h[32];
  crypto_hash_sha256(h, bytes, size);
  check(size == info->raw_size, "image size differs from its row");
  check(memcmp(h, info->sha256, 32) == 0, "image bytes differ from their SHA-256");
}

/* Reads every row; returns a hash over every status and image, so the file
 * and memory opens can be compared. */
static void read_all(gk_archive *ar, size_t n, unsigned char digest[32]) {
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  for (size_t i = 0; i < n && i < MAX_ROWS; i++) {
    gk_image_info info;
    int rc = gk_archive_image(ar, i, &info);
    check(rc == GK_OK, "gk_archive_image failed below the row count");
    void *p;
    size_t len;
    rc = gk_archive_read(ar, i, &p, &len);
    check((rc == GK_OK) == (p != NULL), "read status and bytes disagree");
    check(rc == GK_OK || *gk_archive_errmsg(ar), "a failed read has no message");
    crypto_hash_sha256_update(&st, (const unsigned char *)&rc, sizeof rc);
    if (rc == GK_OK) {
      check_image(&info, p, len);
      crypto_hash_sha256_update(&st, p, len);
      gk_free(p);
    }
  }
  crypto_hash_sha256_final(&st, digest);
}

/* Selection, explanation and loading over every kernel/variant. */
static void select_all(gk_archive *ar, size_t n) {
  gk_device devs[sizeof device_specs / sizeof device_specs[0]];
  size_t ndev = 0;
  for (size_t d = 0; d < sizeof device_specs / sizeof device_specs[0]; d++)
    if (gk_device_parse(device_specs[d], &devs[ndev], NULL, 0) == GK_OK) ndev++;
  int loads = 0;
  for (size_t i = 0; i < n && i < MAX_ROWS; i++) {
    gk_image_info info;
    if (gk_archive_image(ar, i, &info) != GK_OK) continue;
    /* Rows are sorted by kernel: visit each (kernel, variant) once. */
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++) {
      gk_image_info o;
      if (gk_archive_image(ar, j, &o) == GK_OK &&
          strcmp(o.kernel, info.kernel) == 0 && strcmp(o.variant, info.variant) == 0)
        seen = 1;
    }
    if (seen) continue;
    for (size_t d = 0; d < ndev; d++) {
      size_t index, other;
      int sel = gk_archive_select(ar, &devs[d], info.kernel, info.variant, &index);
      check(sel != GK_OK || index < n, "selection chose a row past the index");
      check(sel == GK_OK || *gk_archive_errmsg(ar), "a failed selection has no message");
      gk_archive_select_ex(ar, &devs[d], info.kernel, NULL, GK_LOAD_NO_JIT, &other);
      gk_candidate cand[8];
      size_t count;
      gk_archive_explain(ar, &devs[d], info.kernel, info.variant, 0, cand, 8, &count);
      /* Loading needs no GPU for these; vulkan and rocm would start real
       * runtimes (lavapipe, HSA) per input, which is not what is fuzzed. */
      gk_backend b = devs[d].backend;
      if (loads < MAX_LOADS &&
          (b == GK_BACKEND_CUDA || b == GK_BACKEND_WGSL || b == GK_BACKEND_METAL ||
           (b == GK_BACKEND_CPU && strcmp(devs[d].arch, "x86-64") == 0))) {
        gk_module *m;
        loads++;
        int rc = gk_module_load(ar, &devs[d], info.kernel, info.variant, &m);
        check((rc == GK_OK) == (m != NULL), "load status and module disagree");
        if (rc == GK_OK) {
          /* The module is the image selection chose, bytes verified. */
          const gk_image_info *mi = gk_module_info(m);
          gk_image_info row;
          check(sel == GK_OK && gk_archive_image(ar, index, &row) == GK_OK &&
                    memcmp(mi->sha256, row.sha256, 32) == 0,
                "loaded an image other than the selected one");
          (void)gk_module_symbol(m, info.kernel);
          gk_module_unload(m);
        } else {
          check(*gk_archive_errmsg(ar) != '\0', "a failed load has no message");
        }
      }
    }
  }
}

/* Before anything reads the whole index: selections that read only their
 * rows (a binary search on rowids), for names the seed archives hold. A
 * selection may fail, but what it hands out is a row of the kind asked for
 * whose bytes are its own. */
static void select_lazily(gk_archive *ar) {
  static const char *const picks[][2] = {
      {"qmatmul", "bits=4"}, {"rmsnorm", ""}, {"flash_attention", "causal=1,dtype=f16,head_dim=64"}};
  gk_device dev;
  if (gk_device_parse("cpu:x86-64-v4", &dev, NULL, 0) != GK_OK) abort();
  for (size_t k = 0; k < sizeof picks / sizeof picks[0]; k++) {
    size_t index;
    int sel = gk_archive_select(ar, &dev, picks[k][0], picks[k][1], &index);
    check(sel == GK_OK || *gk_archive_errmsg(ar), "a failed selection has no message");
    if (sel != GK_OK) continue;
    gk_image_info info;
    check(gk_archive_image(ar, index, &info) == GK_OK, "a selected row cannot be read");
    check(strcmp(info.kernel, picks[k][0]) == 0 && strcmp(info.variant, picks[k][1]) == 0 &&
              strcmp(info.backend, "cpu") == 0,
          "selection handed out a row of another kind");
    void *p;
    size_t len;
    int rc = gk_archive_read(ar, index, &p, &len);
    check(rc == GK_OK || *gk_archive_errmsg(ar), "a failed read has no message");
    if (rc == GK_OK) {
      check_image(&info, p, len);
      gk_free(p);
    }
  }
}

/* The same bytes as a file. One scratch file per process, rewritten for
 * each input, in tmpfs when there is one: on ext4, closing a file that was
 * truncated and rewritten flushes it (auto_da_alloc), which made each input
 * wait for the disk. (A memfd's /proc/self/fd path would not do: SQLite
 * resolves the link to "/memfd:... (deleted)", which cannot be opened.) */
static char scratch[64];
static void remove_scratch(void) { unlink(scratch); }
static int open_as_file(const uint8_t *data, size_t size, gk_archive **ar,
                        int *fd) {
  if (!scratch[0]) {
    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/gk-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int f = mkstemp(scratch);
    if (f < 0) {
      perror(scratch);
      abort();
    }
    close(f);
    atexit(remove_scratch);
  }
  *fd = open(scratch, O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (*fd < 0) return GK_EIO;
  for (size_t off = 0; off < size;) {
    ssize_t w = write(*fd, data + off, size - off);
    if (w <= 0) abort();
    off += (size_t)w;
  }
  return gk_archive_open(scratch, ar);
}

/* Returns 1 when the bytes opened as an archive, 0 otherwise. */
int gk_fuzz_one(const uint8_t *data, size_t size) {
  if (sodium_init() < 0) abort();
  gk_archive *ar = NULL, *far = NULL;
  int fd = -1;
  int rc = gk_archive_open_memory(data, size, &ar);
  check((rc == GK_OK) == (ar != NULL), "open status and handle disagree");
  check(rc == GK_OK || *gk_last_error(), "a failed open has no message");
  int frc = open_as_file(data, size, &far, &fd);
  /* Both must be clear, and agree - except that SQLite parses a schema
   * more strictly in a deserialized buffer than in a read-only file (a
   * CHECK naming a missing column fails only there; corpus/archive/
   * schema-check-*), so "corrupt" against "opened" is accepted. */
  check(frc == GK_OK || *gk_last_error(), "a failed file open has no message");
  if (fd >= 0 && frc != rc && frc != GK_ECORRUPT && rc != GK_ECORRUPT) {
    fprintf(stderr, "memory: %s, file: %s (%s)\n", gk_strerror(rc), gk_strerror(frc),
            gk_last_error());
    check(0, "file and memory opens disagree");
  }
  if (rc == GK_OK) {
    size_t n = 0, fn = 0;
    select_lazily(ar);
    /* The index is read when first needed; its damage shows there. */
    int crc = gk_archive_count(ar, &n);
    check(crc == GK_OK || (*gk_archive_errmsg(ar) && n == 0),
          "a failed count has no message, or counted rows");
    int fcrc = far ? gk_archive_count(far, &fn) : crc;
    check(!far || fcrc == crc || fcrc == GK_ECORRUPT || crc == GK_ECORRUPT,
          "file and memory indexes differ");
    if (crc == GK_OK) {
      unsigned char d1[32], d2[32];
      read_all(ar, n, d1);
      if (far && fcrc == GK_OK) {
        check(fn == n, "file and memory indexes differ");
        read_all(far, fn, d2);
        check(memcmp(d1, d2, 32) == 0, "file and memory reads differ");
      }
      select_all(ar, n);
      gk_image_info info;
      check(gk_archive_image(ar, n, &info) == GK_ERANGE, "row past the end exists");
    }
  }
  gk_archive_close(ar);
  gk_archive_close(far);
  if (fd >= 0) close(fd);

  static const gk_image_info rows[] = {
      {.kernel = "k", .backend = "cpu", .target = "x86-64-v3", .variant = "",
       .format = "so", .entry = "[\"k\"]", .launch = "{}", .toolchain = ""},
      {.kernel = "k", .backend = "cuda", .target = "sm_90", .variant = "",
       .format = "cubin", .entry = "[\"k\"]", .launch = "{}",
       .toolchain = "nvcc 13.0.88"},
      {.kernel = "k", .backend = "rocm", .target = "gfx90a", .variant = "",
       .format = "hsaco", .entry = "[\"k\"]", .launch = "{}", .toolchain = ""},
  };
  char why[256];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    gk__image_check(data, size, &rows[i], NULL, why, sizeof why);
  return rc == GK_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gk_fuzz_one(data, size);
  return 0;
}
