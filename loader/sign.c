/*
 * sign.c - signed archives: the canonical digest of an archive's logical
 * content, Ed25519 signatures over it, and opens that require one.
 *
 * What is signed is the archive as the loader sees it through gk.h - the
 * `meta` table and every index row (strings, raw size, SHA-256 of the raw
 * image) - and not how it is stored. Image bytes are covered through their
 * SHA-256, which gk_archive_read checks before any driver sees them, so the
 * blob table (codec, compression level, delta coding) can change under a
 * signature: re-compressing an archive keeps its digest. The byte layout of
 * the digest's input is docs/archive.md, "Signatures"; it must not change
 * without a new magic, or every published signature stops verifying.
 *
 * libgk only reads signatures. Writing them is the packager's job
 * (gkp_sign, which gk sign calls), as writing archives is.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>
#include <sqlite3.h>

#include "gk_internal.h"
#include "gk_tools.h"

/* The first bytes of the digest's input; docs/archive.md. */
static const char digest_magic[] = "gllm-kernels archive digest v2\n";

/* "3f2a9c0d1b7e4a55": how messages name a key (its first 8 bytes in hex),
 * as `gk keygen` and `gk verify` print it. */
static void key_id(const uint8_t key[32], char out[17]) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 8; i++) {
    out[2 * i] = hex[key[i] >> 4];
    out[2 * i + 1] = hex[key[i] & 15];
  }
  out[16] = '\0';
}

static void put_u64(crypto_hash_sha256_state *h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  crypto_hash_sha256_update(h, b, 8);
}

/* A string as its length (u64, little-endian) then its bytes: no two
 * sequences of fields serialize alike, whatever the fields hold. */
static void put_str(crypto_hash_sha256_state *h, const void *s, size_t n) {
  put_u64(h, n);
  crypto_hash_sha256_update(h, s, n);
}

/* Whether `name` is an ordinary table of the archive (not a view, not
 * absent): 1, 0, or a negative status with the message set. */
static int has_table(gk_archive *ar, const char *name) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(ar->db,
                              "SELECT type FROM sqlite_master WHERE name = ?1 "
                              "COLLATE NOCASE AND type IN ('table', 'view')",
                              -1, &st, NULL);
  if (rc != SQLITE_OK)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: cannot read its schema: %s",
                    ar->name, sqlite3_errmsg(ar->db));
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  int found = 0;
  if (rc == SQLITE_ROW) {
    const char *type = (const char *)sqlite3_column_text(st, 0);
    found = type && strcmp(type, "table") == 0
                ? 1
                : gk__fail(ar, GK_ECORRUPT,
                           "archive '%s' is corrupt: '%s' is not an ordinary "
                           "table",
                           ar->name, name);
  } else if (rc != SQLITE_DONE) {
    found = gk__fail(ar, GK_ECORRUPT,
                     "archive '%s' is corrupt: cannot read its schema: %s",
                     ar->name, sqlite3_errmsg(ar->db));
  }
  sqlite3_finalize(st);
  return found;
}

/* GK_OK when the archive has its `meta` table. */
static int meta_table(gk_archive *ar) {
  int rc = has_table(ar, "meta");
  if (rc > 0) return GK_OK;
  return rc < 0 ? rc
                : gk__fail(ar, GK_ECORRUPT, "archive '%s' is corrupt: it has no table 'meta'",
                           ar->name);
}

/* The meta rows, which the loader itself never uses, in the one form a
 * digest may have: sorted by key in SQLite's BINARY order (memcmp, then
 * length), each key once, both columns TEXT. A file breaking that was not
 * written by gk pack. fn is called for each; *seen counts them. */
static int each_meta(gk_archive *ar, gk__meta_fn fn, void *ctx, sqlite3_int64 *seen) {
  sqlite3_stmt *st = NULL;
  int status = GK_OK;
  *seen = 0;
  int rc = sqlite3_prepare_v2(ar->db,
                          "SELECT key, value FROM meta ORDER BY key COLLATE "
                          "BINARY",
                          -1, &st, NULL);
  if (rc != SQLITE_OK)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: cannot read 'meta': %s",
                    ar->name, sqlite3_errmsg(ar->db));
  char *prev = NULL;
  int prevn = 0;
  while (status == GK_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (sqlite3_column_type(st, 0) != SQLITE_TEXT ||
        sqlite3_column_type(st, 1) != SQLITE_TEXT) {
      status = gk__fail(ar, GK_ECORRUPT,
                        "archive '%s' is corrupt: a 'meta' row is not text",
                        ar->name);
      break;
    }
    const char *k = (const char *)sqlite3_column_text(st, 0);
    int kn = sqlite3_column_bytes(st, 0);
    const char *v = (const char *)sqlite3_column_text(st, 1);
    int vn = sqlite3_column_bytes(st, 1);
    if (!k || !v) {
      status = gk__fail(ar, GK_ENOMEM,
                        "archive '%s': out of memory reading 'meta'", ar->name);
      break;
    }
    if (prev) {
      int c = memcmp(prev, k, (size_t)(prevn < kn ? prevn : kn));
      if (c > 0 || (c == 0 && prevn >= kn)) {
        status = gk__fail(ar, GK_ECORRUPT,
                          "archive '%s' is corrupt: 'meta' key '%s' is "
                          "repeated or out of order",
                          ar->name, k);
        break;
      }
    }
    free(prev);
    if (!(prev = malloc((size_t)kn + 1))) {
      status = gk__fail(ar, GK_ENOMEM,
                        "archive '%s': out of memory reading 'meta'", ar->name);
      break;
    }
    memcpy(prev, k, (size_t)kn);
    prevn = kn;
    (*seen)++;
    status = fn(ctx, k, (size_t)kn, v, (size_t)vn);
  }
  if (status == GK_OK && rc != SQLITE_DONE)
    status = gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: cannot read 'meta': %s",
                      ar->name, sqlite3_errmsg(ar->db));
  free(prev);
  sqlite3_finalize(st);
  return status;
}

static int hash_one_meta(void *h, const char *k, size_t kn, const char *v, size_t vn) {
  put_str(h, k, kn);
  put_str(h, v, vn);
  return 0;
}

/* The meta rows as the digest takes them: their count, then each row. */
static int hash_meta(gk_archive *ar, crypto_hash_sha256_state *h) {
  int status = meta_table(ar);
  if (status != GK_OK) return status;
  sqlite3_stmt *st = NULL;
  sqlite3_int64 n = 0, seen = 0;
  /* Counted first: the count precedes the rows in the digest's input. */
  int rc = sqlite3_prepare_v2(ar->db, "SELECT count(*) FROM meta", -1, &st, NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  else
    status = gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: cannot read 'meta': %s",
                      ar->name, sqlite3_errmsg(ar->db));
  sqlite3_finalize(st);
  if (status != GK_OK) return status;
  put_u64(h, (uint64_t)n);
  if ((status = each_meta(ar, hash_one_meta, h, &seen)) == GK_OK && seen != n)
    status = gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: 'meta' changed while read",
                      ar->name);
  return status;
}

int gk__archive_meta(gk_archive *ar, gk__meta_fn fn, void *ctx) {
  sqlite3_int64 seen;
  int rc = meta_table(ar);
  if (rc == GK_OK) rc = each_meta(ar, fn, ctx, &seen);
  if (rc == GK_OK) {
    free(ar->msg);
    ar->msg = NULL;
  }
  return rc;
}

/* The rows as gk_archive_image gives them - exactly what selection and
 * loading act on - so the signature covers the loader's view, whichever
 * way index.c reads the index. packed_size is storage: not hashed. */
static int hash_rows(gk_archive *ar, crypto_hash_sha256_state *h) {
  size_t n = 0;
  int rc = gk_archive_count(ar, &n);
  if (rc != GK_OK) return rc;
  put_u64(h, n);
  gk_image_info prev, row;
  for (size_t i = 0; i < n; i++) {
    if ((rc = gk_archive_image(ar, i, &row)) != GK_OK) return rc;
    /* The index order is part of what is signed; a file whose rows do not
     * come strictly sorted (a duplicate key, a schema collation changed)
     * cannot have been written by gk pack. */
    if (i > 0 && gk__row_cmp(&prev, &row) >= 0) {
      char what[256];
      gk__row_describe(&row, what, sizeof what);
      return gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: image %s is repeated or out of "
                      "order in the index",
                      ar->name, what);
    }
    const char *const s[] = {row.kernel, row.backend, row.target,
                             row.variant, row.format, row.entry,
                             row.launch, row.toolchain};
    for (int f = 0; f < 8; f++) put_str(h, s[f], strlen(s[f]));
    put_u64(h, row.raw_size);
    crypto_hash_sha256_update(h, row.sha256, 32);
    prev = row;
  }
  return GK_OK;
}

static int sodium_ok(gk_archive *ar) {
  if (gk__sodium_ready()) return GK_OK;
  return gk__fail(ar, GK_EIO, "libsodium failed to initialise (archive '%s')",
                  ar->name);
}

GK_API int gk_archive_digest(gk_archive *ar, uint8_t digest[32]) {
  if (!ar) return GK_EINVAL;
  if (!digest)
    return gk__fail(ar, GK_EINVAL, "gk_archive_digest: digest is NULL");
  int rc = sodium_ok(ar);
  if (rc != GK_OK) return rc;
  crypto_hash_sha256_state h;
  crypto_hash_sha256_init(&h);
  crypto_hash_sha256_update(&h, (const unsigned char *)digest_magic,
                            sizeof digest_magic - 1);
  if ((rc = hash_meta(ar, &h)) != GK_OK || (rc = hash_rows(ar, &h)) != GK_OK)
    return rc;
  crypto_hash_sha256_final(&h, digest);
  free(ar->msg);
  ar->msg = NULL;
  return GK_OK;
}

/* Walks the signature table's rows, calling fn(ctx, key, sig) for each
 * well-formed one (32-byte key, 64-byte signature); a malformed row is
 * counted in *bad and skipped. *table is 0 when the archive has no
 * signature table at all. fn returns non-zero to stop. */
static int each_signature(gk_archive *ar, int *table, size_t *bad,
                          int (*fn)(void *ctx, const uint8_t *key,
                                    const uint8_t *sig),
                          void *ctx) {
  *bad = 0;
  int rc = has_table(ar, "signature");
  *table = rc > 0;
  if (rc <= 0) return rc;
  sqlite3_stmt *st = NULL;
  rc = sqlite3_prepare_v2(ar->db,
                          "SELECT public_key, sig FROM signature ORDER BY "
                          "public_key",
                          -1, &st, NULL);
  if (rc != SQLITE_OK)
    return gk__fail(ar, GK_ESIGNATURE,
                    "archive '%s' has a malformed signature table (%s); sign "
                    "it again with 'gk sign'",
                    ar->name, sqlite3_errmsg(ar->db));
  int status = GK_OK;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (sqlite3_column_type(st, 0) != SQLITE_BLOB ||
        sqlite3_column_bytes(st, 0) != 32 ||
        sqlite3_column_type(st, 1) != SQLITE_BLOB ||
        sqlite3_column_bytes(st, 1) != 64) {
      (*bad)++;
      continue;
    }
    if (fn(ctx, sqlite3_column_blob(st, 0), sqlite3_column_blob(st, 1))) break;
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    status = gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: cannot read its signatures: %s",
                      ar->name, sqlite3_errmsg(ar->db));
  sqlite3_finalize(st);
  return status;
}

typedef struct list_ctx {
  uint8_t (*keys)[32];
  size_t cap, n;
} list_ctx;

static int list_one(void *ctx, const uint8_t *key, const uint8_t *sig) {
  list_ctx *c = ctx;
  (void)sig;
  if (c->n < c->cap) memcpy(c->keys[c->n], key, 32);
  c->n++;
  return 0;
}

GK_API int gk_archive_signers(gk_archive *ar, uint8_t (*keys)[32], size_t cap,
                              size_t *count) {
  if (!ar) return GK_EINVAL;
  if (!count || (cap && !keys))
    return gk__fail(ar, GK_EINVAL, "gk_archive_signers: %s is NULL",
                    count ? "keys" : "count");
  list_ctx c = {keys, cap, 0};
  int table;
  size_t bad;
  int rc = each_signature(ar, &table, &bad, list_one, &c);
  if (rc != GK_OK) return rc;
  free(ar->msg);
  ar->msg = NULL;
  *count = c.n;
  return GK_OK;
}

typedef struct find_ctx {
  const uint8_t *key;
  uint8_t sig[64];
  int found;
  size_t others;
  char other_id[17]; /* the first other signer, for the message */
} find_ctx;

static int find_one(void *ctx, const uint8_t *key, const uint8_t *sig) {
  find_ctx *c = ctx;
  if (memcmp(key, c->key, 32) == 0) {
    memcpy(c->sig, sig, 64);
    c->found = 1;
  } else if (c->others++ == 0) {
    key_id(key, c->other_id);
  }
  return 0;
}

GK_API int gk_archive_verify_signature(gk_archive *ar, const uint8_t pubkey[32]) {
  if (!ar) return GK_EINVAL;
  if (!pubkey)
    return gk__fail(ar, GK_EINVAL, "gk_archive_verify_signature: pubkey is NULL");
  uint8_t digest[32];
  char id[17];
  key_id(pubkey, id);
  int rc = gk_archive_digest(ar, digest);
  if (rc != GK_OK) return rc;
  find_ctx c;
  memset(&c, 0, sizeof c);
  c.key = pubkey;
  int table;
  size_t bad;
  if ((rc = each_signature(ar, &table, &bad, find_one, &c)) != GK_OK) return rc;
  if (!c.found) {
    if (c.others == 1)
      return gk__fail(ar, GK_ESIGNATURE,
                      "archive '%s' is not signed by key %s; it is signed by "
                      "key %s (check that you have the publisher's public "
                      "key)",
                      ar->name, id, c.other_id);
    if (c.others)
      return gk__fail(ar, GK_ESIGNATURE,
                      "archive '%s' is not signed by key %s; it is signed by "
                      "key %s and %zu other key(s) (check that you have the "
                      "publisher's public key)",
                      ar->name, id, c.other_id, c.others - 1);
    return gk__fail(ar, GK_ESIGNATURE,
                    "archive '%s' is not signed%s; sign it with 'gk sign "
                    "ARCHIVE --key NAME.key', or get a signed copy from its "
                    "publisher",
                    ar->name,
                    !table ? ""
                    : bad  ? " (its signature table holds only malformed rows)"
                           : " (its signature table is empty)");
  }
  if (crypto_sign_verify_detached(c.sig, digest, sizeof digest, pubkey) != 0)
    return gk__fail(ar, GK_ESIGNATURE,
                    "archive '%s': the signature by key %s does not match the "
                    "archive's contents: its index or metadata changed after "
                    "signing (or the signature is damaged); do not use it, get "
                    "the archive again from its publisher",
                    ar->name, id);
  free(ar->msg);
  ar->msg = NULL;
  return GK_OK;
}

/* The check an open with trusted keys makes: a valid signature by any one
 * of them. On failure the message is that of the first key's check, which
 * says what is wrong (unsigned, another signer, tampered). */
static int require_signature(gk_archive *ar, const gk_open_options *opts) {
  int first = GK_OK;
  char *msg = NULL;
  for (size_t k = 0; k < opts->ntrusted_keys; k++) {
    int rc = gk_archive_verify_signature(ar, opts->trusted_keys + 32 * k);
    if (rc == GK_OK) {
      free(msg);
      return GK_OK;
    }
    if (k == 0) {
      first = rc;
      msg = ar->msg;
      ar->msg = NULL;
    }
  }
  free(ar->msg);
  ar->msg = msg;
  return first;
}

static int check_options(const gk_open_options *opts, const char *fn) {
  if (opts && opts->ntrusted_keys && !opts->trusted_keys)
    return gk__set_last_error(GK_EINVAL,
                              "%s: opts->trusted_keys is NULL but "
                              "ntrusted_keys is %zu",
                              fn, opts->ntrusted_keys);
  return GK_OK;
}

/* After a plain open: the signature check, turning its failure into the
 * open's (the handle is closed, the message goes to gk_last_error). */
static int finish_ex(int rc, gk_archive *ar, const gk_open_options *opts,
                     gk_archive **out) {
  if (rc != GK_OK || !opts) return rc;
  /* A signature vouches for the images' own SHA-256, not for the stored
   * bytes: reading under one checks what it signed. */
  ar->check_images = (opts->flags & GK_OPEN_CHECK_IMAGES) || opts->ntrusted_keys;
  if (opts->ntrusted_keys == 0) return rc;
  rc = require_signature(ar, opts);
  if (rc == GK_OK) return GK_OK;
  gk__set_last_error(rc, "%s", ar->msg ? ar->msg : gk_strerror(rc));
  gk_archive_close(ar);
  *out = NULL;
  return rc;
}

GK_API int gk_archive_open_ex(const char *path, const gk_open_options *opts,
                              gk_archive **out) {
  if (out) *out = NULL;
  int rc = check_options(opts, "gk_archive_open_ex");
  if (rc != GK_OK) return rc;
  rc = gk_archive_open(path, out);
  return finish_ex(rc, rc == GK_OK ? *out : NULL, opts, out);
}

GK_API int gk_archive_open_memory_ex(const void *bytes, size_t size,
                                     const gk_open_options *opts,
                                     gk_archive **out) {
  if (out) *out = NULL;
  int rc = check_options(opts, "gk_archive_open_memory_ex");
  if (rc != GK_OK) return rc;
  rc = gk_archive_open_memory(bytes, size, out);
  return finish_ex(rc, rc == GK_OK ? *out : NULL, opts, out);
}
