/*
 * unpack.c - reading one image out of an open archive (gk_archive_read):
 * its blob, decoded as docs/archive.md ("Blobs") says - one zstd frame, or
 * a frame coded against the raw bytes of its chain of bases - then its
 * SHA-256 and its header checked before anyone sees the bytes.
 *
 * Only the blobs of the image asked for (and its chain) are read; sizes from the file are
 * believed only after they agree with each other (index row, blob row,
 * zstd frame header) and with the cap GK__MAX_IMAGE.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>
#include <sqlite3.h>
#include <zstd.h>

#include "gk_internal.h"

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT, libcrypto_once = PTHREAD_ONCE_INIT;
static int sodium_ready;

static void sodium_start(void) { sodium_ready = sodium_init() >= 0; }

/* libsodium, initialised once per process for every caller in libgk. */
int gk__sodium_ready(void) {
  pthread_once(&sodium_once, sodium_start);
  return sodium_ready;
}

/* SHA-256 is most of the time a read takes: libsodium's is portable C
 * (147 us for a 60 KB cubin on this machine's EPYC), OpenSSL's libcrypto
 * uses the CPU's SHA extensions (38 us; bench/load.sh measures both). So
 * libcrypto is used when the system has it, loaded rather than linked so
 * that libgk needs nothing new to build or run; libsodium otherwise. Both
 * compute the same function: which one ran changes no result. */
typedef int (*evp_digest_fn)(const void *data, size_t n, unsigned char *md,
                             unsigned int *len, const void *type, void *engine);
static evp_digest_fn evp_digest;
static const void *evp_sha256;
/* The streaming calls, for a hash over parts without copying them. */
static void *(*evp_ctx_new)(void);
static void (*evp_ctx_free)(void *);
static int (*evp_init)(void *, const void *, void *);
static int (*evp_update)(void *, const void *, size_t);
static int (*evp_final)(void *, unsigned char *, unsigned int *);

static void libcrypto_start(void) {
  void *dl = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
  if (!dl) return;
  /* An explicitly fetched digest skips OpenSSL 3's per-call lookup. */
  const void *(*fetch)(void *, const char *, const char *) =
      (const void *(*)(void *, const char *, const char *))dlsym(dl, "EVP_MD_fetch");
  evp_digest = (evp_digest_fn)dlsym(dl, "EVP_Digest");
  evp_ctx_new = (void *(*)(void))dlsym(dl, "EVP_MD_CTX_new");
  evp_ctx_free = (void (*)(void *))dlsym(dl, "EVP_MD_CTX_free");
  evp_init = (int (*)(void *, const void *, void *))dlsym(dl, "EVP_DigestInit_ex");
  evp_update = (int (*)(void *, const void *, size_t))dlsym(dl, "EVP_DigestUpdate");
  evp_final = (int (*)(void *, unsigned char *, unsigned int *))dlsym(dl, "EVP_DigestFinal_ex");
  evp_sha256 = fetch ? fetch(NULL, "SHA256", NULL) : NULL;
  if (!evp_digest || !evp_sha256 || !evp_ctx_new || !evp_ctx_free || !evp_init ||
      !evp_update || !evp_final) {
    evp_digest = NULL;
    dlclose(dl);
  }
  /* Kept open for the life of the process, like the digest it fetched. */
}

static void sha256(unsigned char out[32], const void *p, size_t n) {
  unsigned int len = 0;
  pthread_once(&libcrypto_once, libcrypto_start);
  if (evp_digest && evp_digest(p, n, out, &len, evp_sha256, NULL) == 1 && len == 32)
    return;
  crypto_hash_sha256(out, p, n);
}

/* SHA-256 of parts end to end (n of them; a NULL part is skipped). */
static void sha256_parts(unsigned char out[32], const void *const *p, const size_t *len,
                         int n) {
  pthread_once(&libcrypto_once, libcrypto_start);
  void *ctx = evp_digest ? evp_ctx_new() : NULL;
  if (ctx) {
    int ok = evp_init(ctx, evp_sha256, NULL) == 1;
    for (int i = 0; ok && i < n; i++)
      if (p[i]) ok = evp_update(ctx, p[i], len[i]) == 1;
    unsigned int got = 0;
    ok = ok && evp_final(ctx, out, &got) == 1 && got == 32;
    evp_ctx_free(ctx);
    if (ok) return;
  }
  crypto_hash_sha256_state h;
  crypto_hash_sha256_init(&h);
  for (int i = 0; i < n; i++)
    if (p[i]) crypto_hash_sha256_update(&h, p[i], len[i]);
  crypto_hash_sha256_final(&h, out);
}

/* A blob row: its bytes are borrowed from SQLite (valid until the
 * statement that read them is reset). */
typedef struct blob_row {
  sqlite3_int64 id, raw, base; /* base: 0 for a plain frame */
  int delta;
  const unsigned char *data;
  size_t n;
  unsigned char data_sha[32]; /* what data must hash to (data_sha256) */
  unsigned char sha[32];      /* the raw image's SHA-256 (sha256) */
  const unsigned char *base_sha; /* a delta: its base's sha, hashed first */
} blob_row;

/* Steps `st` (bound to one blob) and checks the row: a known codec, sizes
 * in range, a delta naming a base. `expect_raw` < 0: any size. Its bytes
 * are read by blob_data, only when they are to be decoded. */
static int blob_fetch(gk_archive *ar, sqlite3_stmt *st, const gk_image_info *row,
                      const char *whose, sqlite3_int64 expect_raw, blob_row *b) {
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE)
    return gk__fail(ar, GK_ECORRUPT, "archive '%s' is corrupt: image %s has no %s",
                    ar->name, GK__WHAT(row), whose);
  if (rc != SQLITE_ROW) return gk__sql_fail(ar, rc, "read the blob table");
  b->id = sqlite3_column_int64(st, 0);
  b->raw = sqlite3_column_int64(st, 1);
  const char *codec = (const char *)sqlite3_column_text(st, 2);
  int has_base = sqlite3_column_type(st, 3) != SQLITE_NULL;
  b->base = sqlite3_column_int64(st, 3);
  if (sqlite3_column_type(st, 1) != SQLITE_INTEGER || b->raw < 0 ||
      (expect_raw >= 0 && b->raw != expect_raw))
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: image %s is %lld bytes in the index "
                    "but its %s says %lld",
                    ar->name, GK__WHAT(row), (long long)expect_raw, whose, (long long)b->raw);
  if ((uint64_t)b->raw > GK__MAX_IMAGE)
    return gk__fail(ar, GK_ETOOBIG,
                    "archive '%s': the %s of image %s is %lld bytes, over libgk's "
                    "limit of %llu", ar->name, whose, GK__WHAT(row), (long long)b->raw,
                    (unsigned long long)GK__MAX_IMAGE);
  b->delta = codec && strcmp(codec, "zstd-delta") == 0;
  if (!codec || (!b->delta && strcmp(codec, "zstd") != 0))
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s': image %s uses codec '%s'; libgk knows 'zstd' "
                    "and 'zstd-delta'",
                    ar->name, GK__WHAT(row), codec ? codec : "(null)");
  if (b->delta != has_base || (has_base && sqlite3_column_type(st, 3) != SQLITE_INTEGER))
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: the %s of image %s is %s",
                    ar->name, whose, GK__WHAT(row),
                    b->delta ? "a delta without a base" : "a plain frame with a base");
  b->data = NULL; /* blob_data: until then SQLite reads the row's first page only */
  b->n = 0;
  if (sqlite3_column_type(st, 5) != SQLITE_BLOB || sqlite3_column_bytes(st, 5) != 32)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: the %s of image %s has a bad 'data_sha256'",
                    ar->name, whose, GK__WHAT(row));
  memcpy(b->data_sha, sqlite3_column_blob(st, 5), 32);
  if (sqlite3_column_type(st, 6) != SQLITE_BLOB || sqlite3_column_bytes(st, 6) != 32)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: the %s of image %s has a bad 'sha256'",
                    ar->name, whose, GK__WHAT(row));
  memcpy(b->sha, sqlite3_column_blob(st, 6), 32);
  b->base_sha = NULL;
  return GK_OK;
}

/* The stored bytes of the row blob_fetch just stepped to (st not reset). */
static int blob_data(gk_archive *ar, sqlite3_stmt *st, const gk_image_info *row,
                     blob_row *b) {
  b->data = sqlite3_column_blob(st, 4);
  int n = sqlite3_column_bytes(st, 4);
  if (sqlite3_errcode(ar->db) == SQLITE_NOMEM)
    return gk__fail(ar, GK_ENOMEM, "archive '%s': out of memory reading image %s",
                    ar->name, GK__WHAT(row));
  if (n <= 0 || !b->data)
    return gk__fail(ar, GK_ECORRUPT, "archive '%s': image %s has 0 packed bytes",
                    ar->name, GK__WHAT(row));
  b->n = (size_t)n;
  return GK_OK;
}

/* Decompresses one blob into dst (exactly b->raw bytes), against `prefix`
 * for a delta. Its stored bytes must hash to the blob row's data_sha256
 * first, taken over the blob's own sha256, then for a delta its base's,
 * then the bytes: so a sha256 rewritten or a base pointer that moved shows
 * too (docs/archive.md, "Reading"): zstd never parses
 * bytes the archive does not vouch for, and the hash runs over the
 * compressed size (a fraction of the image; a delta is small). The frame
 * must be exactly one zstd frame declaring exactly that size: then dst is
 * the right size by construction. */
static int unpack(gk_archive *ar, const blob_row *b, const gk_image_info *row,
                  void *dst, const void *prefix, size_t pn) {
  unsigned char hash[32];
  if (!gk__sodium_ready())
    return gk__fail(ar, GK_EIO, "libsodium failed to initialise (reading image %s)",
                    GK__WHAT(row));
  const void *parts[] = {b->sha, b->base_sha, b->data};
  const size_t lens[] = {32, 32, b->n};
  sha256_parts(hash, parts, lens, 3);
  if (memcmp(hash, b->data_sha, 32) != 0)
    return gk__fail(ar, GK_EHASH,
                    "archive '%s': image %s does not match its SHA-256 (the stored "
                    "bytes of blob %lld differ from what gk pack wrote)",
                    ar->name, GK__WHAT(row), (long long)b->id);
  unsigned long long declared = ZSTD_getFrameContentSize(b->data, b->n);
  if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN ||
      declared != (unsigned long long)b->raw)
    return gk__fail(ar, GK_ECORRUPT, "archive '%s' is corrupt: the data of image %s %s",
                    ar->name, GK__WHAT(row),
                    declared == ZSTD_CONTENTSIZE_ERROR ? "is not a zstd frame"
                    : declared == ZSTD_CONTENTSIZE_UNKNOWN
                        ? "is a zstd frame that does not declare its size"
                        : "declares another size than the index");
  size_t framed = ZSTD_findFrameCompressedSize(b->data, b->n);
  if (ZSTD_isError(framed) || framed != b->n)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: the data of image %s is not exactly "
                    "one zstd frame", ar->name, GK__WHAT(row));
  /* One context per archive, kept: creating one costs about as much as
   * decompressing a small image. */
  if (!ar->dctx && !(ar->dctx = ZSTD_createDCtx()))
    return gk__fail(ar, GK_ENOMEM, "archive '%s': out of memory reading image %s",
                    ar->name, GK__WHAT(row));
  ZSTD_DCtx_reset(ar->dctx, ZSTD_reset_session_and_parameters);
  size_t got;
  if (pn && ZSTD_isError(got = ZSTD_DCtx_refPrefix(ar->dctx, prefix, pn)))
    ;
  else
    got = ZSTD_decompressDCtx(ar->dctx, dst, (size_t)b->raw, b->data, b->n);
  if (ZSTD_isError(got) || got != (size_t)b->raw)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: image %s does not decompress (%s)",
                    ar->name, GK__WHAT(row), ZSTD_isError(got) ? ZSTD_getErrorName(got)
                                                      : "short output");
  return GK_OK;
}

/* Decompresses the row's image into raw (row->raw_size bytes). A plain
 * frame is decoded from the one step that reads its blob row. A delta's
 * chain is walked up first by the rows' numbers alone - at most
 * GK_ARCHIVE_DELTA_DEPTH bases, ending in a plain frame; a longer chain or
 * a loop is corruption - then decoded root first into one buffer, each
 * frame against the bytes before it (the prefix gk pack coded it against),
 * and the image's own frame last, against the whole buffer. Each frame is
 * read where SQLite holds it, one blob at a time through one statement:
 * nothing is copied but the decoded bytes. */
static int read_image(gk_archive *ar, const gk__row *r, unsigned char *raw) {
  const gk_image_info *row = &r->info;
  sqlite3_stmt *st = ar->blob_stmt;
  blob_row b, chain[GK_ARCHIVE_DELTA_DEPTH];
  unsigned char *prefix = NULL;
  size_t pn = 0;
  int k = 0, status;
  sqlite3_bind_int64(st, 1, r->blob);
  status = blob_fetch(ar, st, row, "blob", (sqlite3_int64)row->raw_size, &b);
  /* The row's sha256 is its blob's (its size was checked above): a blob
   * number damaged into another's would hand out that image under this
   * row's name. */
  if (status == GK_OK && memcmp(b.sha, row->sha256, 32) != 0)
    status = gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: image %s names blob %lld, whose size or "
                      "sha256 is another image's",
                      ar->name, GK__WHAT(row), (long long)b.id);
  /* A plain frame is decoded from the row just read. */
  if (status == GK_OK && !b.delta && (status = blob_data(ar, st, row, &b)) == GK_OK)
    status = unpack(ar, &b, row, raw, NULL, 0);
  sqlite3_reset(st);
  if (status || !b.delta) goto read_out;
  for (int more = b.delta; more;) {
    sqlite3_int64 next = k ? chain[k - 1].base : b.base;
    int loops = next == b.id;
    for (int q = 0; q < k; q++) loops |= next == chain[q].id;
    if (loops) {
      status = gk__fail(ar, GK_ECORRUPT,
                        "archive '%s' is corrupt: the chain of bases of image %s "
                        "loops back to blob %lld", ar->name, GK__WHAT(row), (long long)next);
      goto read_out;
    }
    if (k == GK_ARCHIVE_DELTA_DEPTH) {
      status = gk__fail(ar, GK_ECORRUPT,
                        "archive '%s' is corrupt: the chain of bases of image %s is "
                        "deeper than %d (its base blob %lld is a delta too)",
                        ar->name, GK__WHAT(row), GK_ARCHIVE_DELTA_DEPTH,
                        (long long)chain[k - 1].id);
      goto read_out;
    }
    sqlite3_bind_int64(st, 1, next);
    status = blob_fetch(ar, st, row, "base blob", -1, &chain[k]);
    sqlite3_reset(st);
    if (status) goto read_out;
    pn += (size_t)chain[k].raw;
    more = chain[k++].delta;
  }
  if (pn > GK__MAX_IMAGE) {
    status = gk__fail(ar, GK_ETOOBIG,
                      "archive '%s': the bases of image %s are %zu bytes, over libgk's "
                      "limit of %llu", ar->name, GK__WHAT(row), pn,
                      (unsigned long long)GK__MAX_IMAGE);
    goto read_out;
  }
  if (k && !(prefix = malloc(pn ? pn : 1))) {
    status = gk__fail(ar, GK_ENOMEM, "archive '%s': out of memory reading image %s",
                      ar->name, GK__WHAT(row));
    goto read_out;
  }
  /* Root first; each delta's stored hash covers its base's identity. */
  size_t off = 0;
  for (int q = k - 1; q >= -1; q--) {
    blob_row *x = q >= 0 ? &chain[q] : &b, again;
    sqlite3_bind_int64(st, 1, x->id);
    status = blob_fetch(ar, st, row, q >= 0 ? "base blob" : "blob", x->raw, &again);
    if (status == GK_OK && (again.delta != x->delta || again.base != x->base ||
                            memcmp(again.sha, x->sha, 32) != 0))
      status = gk__fail(ar, GK_ECORRUPT, "archive '%s' changed while open (blob %lld)",
                        ar->name, (long long)x->id);
    if (status == GK_OK) status = blob_data(ar, st, row, &again);
    if (status == GK_OK) {
      again.base_sha = q + 1 < k ? chain[q + 1].sha : NULL;
      status = q >= 0 ? unpack(ar, &again, row, prefix + off, prefix, off)
                      : unpack(ar, &again, row, raw, prefix, pn);
    }
    sqlite3_reset(st);
    if (status) goto read_out;
    if (q >= 0) off += (size_t)chain[q].raw;
  }
read_out:
  free(prefix);
  return status;
}

int gk__read(gk_archive *ar, const gk__row *r, const gk__entries *e, void **bytes,
             size_t *size) {
  int status = gk__blob_stmts(ar);
  if (status) return status;
  const gk_image_info *row = &r->info;
  char why[256];
  unsigned char *raw = NULL, hash[32];

  if (row->raw_size > GK__MAX_IMAGE) {
    status =
        gk__fail(ar, GK_ETOOBIG,
                 "archive '%s': image %s is %llu bytes, over libgk's limit of "
                 "%llu",
                 ar->name, GK__WHAT(row), (unsigned long long)row->raw_size,
                 (unsigned long long)GK__MAX_IMAGE);
    goto out;
  }
  size_t rawn = (size_t)row->raw_size;
  /* The caller's buffer is the only allocation the size of the image for a
   * plain frame; a delta adds its base's. */
  if (!(raw = malloc(rawn ? rawn : 1))) {
    status =
        gk__fail(ar, GK_ENOMEM, "archive '%s': out of memory reading image %s",
                 ar->name, GK__WHAT(row));
    goto out;
  }
  if ((status = read_image(ar, r, raw))) goto out;

  /* The stored bytes were checked; decoding them is deterministic, and gk
   * pack checked that it gives this image. Its own hash is what a
   * signature vouches for: checked when asked (gk_open_options). */
  if (ar->check_images && (sha256(hash, raw, rawn), memcmp(hash, row->sha256, 32) != 0)) {
    status = gk__fail(ar, GK_EHASH,
                      "archive '%s': image %s does not match its SHA-256",
                      ar->name, GK__WHAT(row));
    goto out;
  }
  if ((status = gk__image_check(raw, rawn, row, e, why, sizeof why))) {
    gk__fail(ar, status, "archive '%s': image %s does not fit its row: %s",
             ar->name, GK__WHAT(row), why);
    goto out;
  }
  *bytes = raw;
  *size = rawn;
  raw = NULL;
out:
  free(raw);
  return status;
}

GK_API int gk_archive_read(gk_archive *ar, size_t i, void **bytes,
                           size_t *size) {
  if (bytes) *bytes = NULL;
  if (!ar) return GK_EINVAL;
  if (!bytes || !size)
    return gk__fail(ar, GK_EINVAL, "gk_archive_read: %s is NULL",
                    bytes ? "size" : "bytes");
  free(ar->msg);
  ar->msg = NULL;
  int status;
  const gk__row *r = gk__index_row(ar, i, &status);
  return r ? gk__read(ar, r, NULL, bytes, size) : status;
}

GK_API void gk_free(void *p) { free(p); }

/* ---- image checks -------------------------------------------------------- */

int gk__image_check(const void *bytes, size_t size, const gk_image_info *row,
                    const gk__entries *e, char *why, size_t why_size) {
  char tmp[256];
  gk__entries parsed;
  if (!why || why_size == 0) {
    why = tmp;
    why_size = sizeof tmp;
  }
  why[0] = '\0';
  const gk__backend *b = gk__backend_named(row->backend);
  for (size_t i = 0; b && i < sizeof b->formats / sizeof b->formats[0]; i++) {
    if (!b->formats[i].name || strcmp(b->formats[i].name, row->format) != 0) continue;
    /* Every format checks that the image has each entry of the row. */
    if (!e && gk__entries_parse(row->entry, &parsed) >= 0) e = &parsed;
    if (!e || e->n < 0) {
      snprintf(why, why_size, "the row's entry list '%s' is not a JSON array of at most %d names",
               row->entry, GK__ENTRY_MAX);
      return GK_EFORMAT;
    }
    return b->formats[i].check(bytes, size, row, e, why, why_size);
  }
  snprintf(why, why_size, "format '%s' is not one libgk knows for backend '%s'", row->format,
           row->backend);
  return GK_EFORMAT;
}

GK_API int gk_image_check(const void *bytes, size_t size, const gk_image_info *row,
                          char *why, size_t why_size) {
  if (!bytes || !row || !row->backend || !row->format || !row->target || !row->entry) {
    if (why && why_size) snprintf(why, why_size, "gk_image_check: no image or no row");
    return GK_EINVAL;
  }
  return gk__image_check(bytes, size, row, NULL, why, why_size);
}
