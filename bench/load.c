/*
 * load.c - gk_bench_load: how long libgk takes to hand out one image, and
 * how much memory it takes doing so, against a bare ZSTD_decompress of that
 * image alone, measured in this process (issue 9, item 2).
 *
 * usage: gk_bench_load ARCHIVE --kernel K [--variant V] --devices SPEC,SPEC...
 *                      [--runs N] [--json FILE]
 *
 * For each device spec (gk_device_parse: "cuda:sm_90,driver=13.0") the
 * image libgk selects is looked up in the archive's blob table (this
 * program reads the storage with SQLite; libgk does not expose it), and the
 * first selection stored as a plain frame and the first stored as a delta
 * are measured:
 *   file   gk_archive_open + gk_archive_select + gk_archive_read + close
 *   memory the same through gk_archive_open_memory (bytes already in memory)
 *   bare   ZSTD_decompress of the image compressed alone (zstd level 19,
 *          which is exactly its blob for a plain frame) into a buffer
 *          allocated beforehand
 * Medians of --runs runs each, interleaved so drift hits all three alike.
 * Memory: this program replaces malloc (through glibc's __libc_* entry
 * points) to count the bytes live; "peak" is the largest number of bytes
 * live above the level before the open, during one file-path call
 * sequence, and "extra" is that peak minus the image's own size (the
 * buffer handed to the caller); the same for gk_archive_read alone on an
 * archive already open (the read path without the index). SQLite, zstd and libsodium allocate through
 * malloc, so their memory is counted too.
 * Also times SHA-256 of the image with libsodium and with OpenSSL's
 * libcrypto (EVP), which can use the CPU's SHA instructions.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <jansson.h>
#include <malloc.h>
#include <openssl/evp.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "gk.h"

/* ---- counting allocator ------------------------------------------------ */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

/* Single-threaded benchmark: plain counters are enough. */
static long long live, peak;

#if defined(__SANITIZE_ADDRESS__)
#define GK_BENCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GK_BENCH_ASAN 1
#endif
#endif
#ifdef GK_BENCH_ASAN
/* Under AddressSanitizer (ci/sanitize.sh) malloc is ASan's: interposing
 * glibc's allocator under it is an ASan error. Its allocation hooks count
 * the same bytes. */
/* From <sanitizer/allocator_interface.h>, which gcc does not install. */
int __sanitizer_install_malloc_and_free_hooks(
    void (*malloc_hook)(const volatile void *, size_t),
    void (*free_hook)(const volatile void *));
size_t __sanitizer_get_allocated_size(const volatile void *p);
static void on_malloc(const volatile void *p, size_t n) {
  (void)p;
  live += (long long)n;
  if (live > peak) peak = live;
}
static void on_free(const volatile void *p) {
  live -= (long long)__sanitizer_get_allocated_size(p);
}
__attribute__((constructor)) static void install_hooks(void) {
  __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#else


/* The replacements must be exported: the project builds with hidden
 * visibility (CMakeLists.txt), and a hidden malloc in the executable counts
 * only the executable's own calls (libgk, linked in), not SQLite's or
 * zstd's, which are shared libraries: their memory went uncounted until
 * 2026-11-23. */
#define GK_BENCH_EXPORT __attribute__((visibility("default")))

static void count(void *p, long long sign) {
  if (!p) return;
  live += sign * (long long)malloc_usable_size(p);
  if (live > peak) peak = live;
}
GK_BENCH_EXPORT void *malloc(size_t n) {
  void *p = __libc_malloc(n);
  count(p, 1);
  return p;
}
GK_BENCH_EXPORT void *calloc(size_t a, size_t b) {
  void *p = __libc_calloc(a, b);
  count(p, 1);
  return p;
}
GK_BENCH_EXPORT void *realloc(void *p, size_t n) {
  if (p) live -= (long long)malloc_usable_size(p);
  void *q = __libc_realloc(p, n);
  if (!q && p && n) live += (long long)malloc_usable_size(p);
  count(q, 1);
  return q;
}
GK_BENCH_EXPORT void free(void *p) {
  count(p, -1);
  __libc_free(p);
}
#endif

/* ---- helpers ------------------------------------------------------------ */

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, dcmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "gk_bench_load: ");
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  exit(1);
}

static void *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) die("cannot open '%s'%s", path, "");
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = __libc_malloc(len > 0 ? (size_t)len : 1);
  if (!p || fread(p, 1, (size_t)len, f) != (size_t)len) die("cannot read '%s'%s", path, "");
  fclose(f);
  *n = (size_t)len;
  return p;
}

/* How row `idx` is stored: its codec, packed size, and base target. */
typedef struct storage {
  char codec[32], base_target[160];
  long long packed;
} storage;

static void storage_of(const char *path, const gk_image_info *row, storage *s) {
  sqlite3 *db;
  sqlite3_stmt *st;
  memset(s, 0, sizeof *s);
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ||
      sqlite3_prepare_v2(db,
                         "SELECT b.codec, length(b.data), "
                         " (SELECT i.target || ' ' || i.variant FROM image i"
                         "  JOIN blob c ON c.sha256 = i.sha256"
                         "  WHERE c.id = b.base ORDER BY i.kernel, i.backend, i.variant,"
                         "  i.target LIMIT 1) FROM blob b WHERE b.sha256 = ?1",
                         -1, &st, NULL))
    die("cannot read the blob table of '%s': %s", path, sqlite3_errmsg(db));
  sqlite3_bind_blob(st, 1, row->sha256, 32, SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) {
    snprintf(s->codec, sizeof s->codec, "%s", (const char *)sqlite3_column_text(st, 0));
    s->packed = sqlite3_column_int64(st, 1);
    const unsigned char *t = sqlite3_column_text(st, 2);
    snprintf(s->base_target, sizeof s->base_target, "%s", t ? (const char *)t : "");
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
}

/* One open + select + read + close; returns the microseconds taken. */
static double one_load(const char *path, const void *mem, size_t memn,
                       const gk_device *dev, const char *kernel, const char *variant,
                       size_t want_n) {
  gk_archive *ar;
  size_t idx, n;
  void *bytes;
  double t0 = now_us();
  int rc = mem ? gk_archive_open_memory(mem, memn, &ar) : gk_archive_open(path, &ar);
  if (rc != GK_OK) die("open: %s%s", gk_last_error(), "");
  if (gk_archive_select(ar, dev, kernel, variant, &idx) != GK_OK ||
      gk_archive_read(ar, idx, &bytes, &n) != GK_OK || n != want_n)
    die("select/read: %s%s", gk_archive_errmsg(ar), "");
  gk_free(bytes);
  gk_archive_close(ar);
  return now_us() - t0;
}

/* What any SQLite open of these bytes costs, whatever reads it after:
 * a connection, the bytes attached read-only, the schema parsed (the first
 * catalogue lookup does it), the connection closed. libgk cannot go below
 * this on an archive it has to open; it is measured here, in the same run,
 * to say how much of the gap to the bare decompress is SQLite's. */
static double sqlite_floor(const void *mem, size_t memn, long long *bytes, long long *held) {
  sqlite3 *db;
  const long long base = live;
  peak = live;
  double t0 = now_us();
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) ||
      sqlite3_deserialize(db, "main", (unsigned char *)(uintptr_t)mem, (sqlite3_int64)memn,
                          (sqlite3_int64)memn, SQLITE_DESERIALIZE_READONLY) ||
      sqlite3_table_column_metadata(db, "main", "image", "kernel", NULL, NULL, NULL, NULL,
                                    NULL))
    die("sqlite floor: %s%s", sqlite3_errmsg(db), "");
  const double t = now_us() - t0;
  *bytes = peak - base; /* the most while opening and reading the schema */
  *held = live - base;  /* what the open connection keeps */
  sqlite3_close(db);
  return t;
}

/* ---- one case ------------------------------------------------------------ */

static json_t *measure(const char *path, const void *mem, size_t memn,
                       const gk_device *dev, const char *spec, const char *kernel,
                       const char *variant, const gk_image_info *row,
                       const storage *st, int runs) {
  gk_archive *ar;
  size_t idx, n;
  void *img;
  if (gk_archive_open(path, &ar) != GK_OK) die("open: %s%s", gk_last_error(), "");
  gk_archive_select(ar, dev, kernel, variant, &idx);
  if (gk_archive_read(ar, idx, &img, &n) != GK_OK) die("read: %s%s", gk_archive_errmsg(ar), "");
  gk_archive_close(ar);

  /* The bare baseline: the image compressed alone, decompressed alone. */
  size_t cap = ZSTD_compressBound(n);
  void *z = __libc_malloc(cap), *dst = __libc_malloc(n ? n : 1);
  size_t zn = ZSTD_compress(z, cap, img, n, 19);
  if (ZSTD_isError(zn)) die("zstd: %s%s", ZSTD_getErrorName(zn), "");

  double *tf = __libc_malloc(sizeof(double) * (size_t)runs);
  double *tm = __libc_malloc(sizeof(double) * (size_t)runs);
  double *tb = __libc_malloc(sizeof(double) * (size_t)runs);
  double *ts = __libc_malloc(sizeof(double) * (size_t)runs);
  double *to = __libc_malloc(sizeof(double) * (size_t)runs);
  double *oo = __libc_malloc(sizeof(double) * (size_t)runs);
  double *rd = __libc_malloc(sizeof(double) * (size_t)runs);
  double *sl = __libc_malloc(sizeof(double) * (size_t)runs);
  double *fl = __libc_malloc(sizeof(double) * (size_t)runs);
  double *cl = __libc_malloc(sizeof(double) * (size_t)runs);
  long long peak_file = 0, peak_mem = 0, peak_read = 0, floor_bytes = 0, floor_held = 0;
  unsigned char h[32];
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  for (int r = -3; r < runs; r++) { /* three warm-up rounds */
    long long base = live;
    peak = live;
    double f = one_load(path, NULL, 0, dev, kernel, variant, n);
    if (peak - base > peak_file) peak_file = peak - base;
    base = live;
    peak = live;
    double m = one_load(NULL, mem, memn, dev, kernel, variant, n);
    if (peak - base > peak_mem) peak_mem = peak - base;
    double t0 = now_us();
    size_t got = ZSTD_decompress(dst, n, z, zn);
    double b = now_us() - t0;
    if (got != n) die("bare ZSTD_decompress failed%s%s", "", "");
    t0 = now_us();
    crypto_hash_sha256(h, img, n);
    double s = now_us() - t0;
    t0 = now_us();
    unsigned int hl;
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    EVP_DigestUpdate(md, img, n);
    EVP_DigestFinal_ex(md, h, &hl);
    double o = now_us() - t0;
    /* The parts: opening from memory alone, and reading (decompress,
     * SHA-256, header check) alone on an open archive. */
    t0 = now_us();
    if (gk_archive_open_memory(mem, memn, &ar) != GK_OK) die("open: %s%s", gk_last_error(), "");
    double op = now_us() - t0;
    t0 = now_us();
    gk_archive_select(ar, dev, kernel, variant, &idx);
    double se = now_us() - t0;
    void *again;
    size_t an;
    long long before = live;
    peak = live;
    t0 = now_us();
    if (gk_archive_read(ar, idx, &again, &an) != GK_OK) die("read: %s%s", gk_archive_errmsg(ar), "");
    double rr = now_us() - t0;
    if (peak - before > peak_read) peak_read = peak - before;
    gk_free(again);
    t0 = now_us();
    gk_archive_close(ar);
    double c = now_us() - t0;
    long long fb, fh;
    double fo = sqlite_floor(mem, memn, &fb, &fh);
    if (fb > floor_bytes) floor_bytes = fb;
    if (fh > floor_held) floor_held = fh;
    if (r >= 0) {
      tf[r] = f, tm[r] = m, tb[r] = b, ts[r] = s, to[r] = o, oo[r] = op, rd[r] = rr;
      sl[r] = se, fl[r] = fo, cl[r] = c;
    }
  }
  EVP_MD_CTX_free(md);
  double mf = median(tf, runs), mm = median(tm, runs), mb = median(tb, runs);
  /* The context every zstd decompression needs (ZSTD_decompress makes one
   * too; libgk keeps one per archive). */
  ZSTD_DCtx *dc = ZSTD_createDCtx();
  const long long dctx_bytes = dc ? (long long)ZSTD_sizeof_DCtx(dc) : 0;
  ZSTD_freeDCtx(dc);
  json_t *j = json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:i,"
      " s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:f, s:f, s:f, s:f, s:I, s:f,"
      " s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:f}",
      "device", spec, "kernel", kernel, "variant", variant, "target", row->target,
      "storage", st->codec, "base_target", st->base_target,
      "raw_size", (json_int_t)n, "packed_size", (json_int_t)st->packed,
      "bare_frame_size", (json_int_t)zn, "runs", runs,
      "file_us", mf, "memory_us", mm, "bare_zstd_us", mb,
      "file_ratio", mf / mb, "memory_ratio", mm / mb,
      "sha256_libsodium_us", median(ts, runs), "sha256_openssl_us", median(to, runs),
      "peak_bytes_file", (json_int_t)peak_file, "peak_bytes_memory", (json_int_t)peak_mem,
      "extra_over_image_file", (double)(peak_file - (long long)n) / (double)n,
      "extra_over_image_memory", (double)(peak_mem - (long long)n) / (double)n,
      "open_memory_us", median(oo, runs), "read_us", median(rd, runs),
      "peak_bytes_read", (json_int_t)peak_read,
      "extra_over_image_read", (double)(peak_read - (long long)n) / (double)n,
      "select_us", median(sl, runs), "close_us", median(cl, runs),
      "sqlite_floor_us", median(fl, runs),
      "floor_ratio", (median(fl, runs) + mb) / mb,
      "sqlite_floor_bytes", (json_int_t)floor_bytes, "sqlite_held_bytes", (json_int_t)floor_held,
      "zstd_dctx_bytes", (json_int_t)dctx_bytes,
      /* A reader holds the connection and a context while it decodes; the
       * schema's peak comes before, alone. */
      "memory_floor_over_image",
      (double)(floor_held + dctx_bytes > floor_bytes ? floor_held + dctx_bytes : floor_bytes) /
          (double)n);
  __libc_free(tf), __libc_free(tm), __libc_free(tb), __libc_free(ts), __libc_free(to);
  __libc_free(oo), __libc_free(rd), __libc_free(sl), __libc_free(fl), __libc_free(cl);
  __libc_free(z), __libc_free(dst);
  gk_free(img);
  return j;
}

static const char usage[] =
    "usage: gk_bench_load ARCHIVE --kernel K [--variant V] --devices SPEC,SPEC...\n"
    "                     [--runs N] [--json FILE]\n"
    "Times open + select + read (decompress, SHA-256, header check) of one image\n"
    "through libgk, from a file and from memory, against a bare ZSTD_decompress\n"
    "of that image alone, and counts the bytes allocated meanwhile; for the first\n"
    "device whose image is a plain frame and the first whose image is a delta.\n";

int main(int argc, char **argv) {
  const char *path = NULL, *kernel = NULL, *variant = "", *devices = NULL, *out = NULL;
  int runs = 200;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      return 0;
    }
    const char **opt = !strcmp(argv[i], "--kernel")    ? &kernel
                       : !strcmp(argv[i], "--variant") ? &variant
                       : !strcmp(argv[i], "--devices") ? &devices
                       : !strcmp(argv[i], "--json")    ? &out
                       : NULL;
    if (opt && i + 1 < argc) {
      *opt = argv[++i];
    } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
      runs = atoi(argv[++i]);
    } else if (argv[i][0] != '-' && !path) {
      path = argv[i];
    } else {
      fprintf(stderr, "gk_bench_load: unknown argument '%s'\n%s", argv[i], usage);
      return 2;
    }
  }
  if (!path || !kernel || !devices || runs < 1) {
    fputs(usage, stderr);
    return 2;
  }
  if (sodium_init() < 0) die("libsodium failed to initialise%s%s", "", "");
  size_t memn;
  void *mem = read_file(path, &memn);
  gk_archive *ar;
  size_t count = 0;
  if (gk_archive_open(path, &ar) != GK_OK) die("%s%s", gk_last_error(), "");
  gk_archive_count(ar, &count);

  json_t *cases = json_array();
  int have_plain = 0, have_delta = 0;
  char *list = strdup(devices);
  for (char *save = NULL, *spec = strtok_r(list, ",", &save); spec;
       spec = strtok_r(NULL, ",", &save)) {
    /* "cuda:sm_90;driver=13.0" in the list stands for "cuda:sm_90,driver=13.0". */
    for (char *p = spec; *p; p++)
      if (*p == ';') *p = ',';
    gk_device dev;
    char why[256];
    size_t idx;
    gk_image_info row;
    if (gk_device_parse(spec, &dev, why, sizeof why) != GK_OK) die("device '%s': %s", spec, why);
    if (gk_archive_select(ar, &dev, kernel, variant, &idx) != GK_OK) {
      fprintf(stderr, "gk_bench_load: %s: %s\n", spec, gk_archive_errmsg(ar));
      continue;
    }
    gk_archive_image(ar, idx, &row);
    storage st;
    storage_of(path, &row, &st);
    int delta = strcmp(st.codec, "zstd") != 0;
    if (delta ? have_delta : have_plain) continue;
    if (delta) have_delta = 1;
    else have_plain = 1;
    fprintf(stderr, "gk_bench_load: %s -> %s %s (%s, %lld of %llu bytes)\n", spec,
            row.kernel, row.target, st.codec, st.packed, (unsigned long long)row.raw_size);
    json_array_append_new(cases, measure(path, mem, memn, &dev, spec, kernel, variant,
                                         &row, &st, runs));
  }
  free(list);
  gk_archive_close(ar);
  json_t *doc = json_pack("{s:s, s:I, s:I, s:o}", "archive", path,
                          "archive_bytes", (json_int_t)memn, "images", (json_int_t)count,
                          "cases", cases);
  char *text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
  if (out) {
    FILE *f = fopen(out, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) die("cannot write '%s'%s", out, "");
  } else {
    puts(text);
  }
  free(text);
  json_decref(doc);
  __libc_free(mem);
  return have_plain || have_delta ? 0 : 1;
}
