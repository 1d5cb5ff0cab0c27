/*
 * remote_ac.c - the action-cache entries of the remote cache (remote.h): the
 * few bytes of protobuf that make them valid REAPI ActionResult messages, so
 * that a stock bazel-remote (which checks what is PUT under /ac/) serves a
 * CI fleet as well as a WebDAV server, and their Ed25519 signatures. Bytes
 * in, bytes out: no handle, no network, and no other file of the cache.
 */
#define _POSIX_C_SOURCE 200809L
#include "remote.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* ---- protobuf ----------------------------------------------------------- */

/* message Digest { string hash = 1; int64 size_bytes = 2; }
 * message OutputFile { string path = 1; Digest digest = 2; ... }
 * message ActionResult { repeated OutputFile output_files = 2; ... } */

static size_t put_varint(unsigned char *p, uint64_t v) {
  size_t n = 0;
  do {
    p[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  return n;
}

/* Writes the tag and length of a length-delimited field. */
static size_t put_len(unsigned char *p, unsigned field, size_t len) {
  size_t n = put_varint(p, (uint64_t)field << 3 | 2);
  return n + put_varint(p + n, len);
}

int gkc__ac_encode(const gkc__output *outs, size_t n, unsigned char **buf, size_t *len) {
  /* Each field is far below 128 bytes but the sizes: bound generously. */
  unsigned char *p = malloc(n * 256 + 16);
  if (!p) return -1;
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char digest[96], size_v[10];
    size_t hl = strlen(outs[i].hash), pl = strlen(outs[i].path);
    size_t sv = put_varint(size_v, outs[i].size);
    size_t dl = put_len(digest, 1, hl);
    memcpy(digest + dl, outs[i].hash, hl);
    dl += hl;
    digest[dl++] = 2 << 3 | 0; /* size_bytes, varint */
    memcpy(digest + dl, size_v, sv);
    dl += sv;
    unsigned char file[200];
    size_t fl = put_len(file, 1, pl);
    memcpy(file + fl, outs[i].path, pl);
    fl += pl;
    fl += put_len(file + fl, 2, dl);
    memcpy(file + fl, digest, dl);
    fl += dl;
    off += put_len(p + off, 2, fl);
    memcpy(p + off, file, fl);
    off += fl;
  }
  *buf = p;
  *len = off;
  return 0;
}

typedef struct reader {
  const unsigned char *p, *end;
} reader;

static int get_varint(reader *r, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) return -1;
    unsigned char b = *r->p++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

/* Reads one field: its number and wire type; for a length-delimited one
 * the bounds of its bytes in *sub, for a varint its value in *v. Skips the
 * others. */
static int get_field(reader *r, unsigned *field, unsigned *wt, reader *sub, uint64_t *v) {
  uint64_t tag;
  if (get_varint(r, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff) return -1;
  *field = (unsigned)(tag >> 3);
  *wt = (unsigned)(tag & 7);
  switch (*wt) {
  case 0: return get_varint(r, v);
  case 1: if (r->end - r->p < 8) return -1; r->p += 8; return 0;
  case 5: if (r->end - r->p < 4) return -1; r->p += 4; return 0;
  case 2: {
    uint64_t n;
    if (get_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return -1;
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return 0;
  }
  default: return -1; /* groups: not in these messages */
  }
}

static int copy_str(const reader *s, char *dst, size_t size) {
  size_t n = (size_t)(s->end - s->p);
  if (n >= size) return -1;
  memcpy(dst, s->p, n);
  dst[n] = '\0';
  return memchr(dst, '\0', n) ? -1 : 0;
}

static int decode_output(reader *r, gkc__output *o) {
  unsigned f, wt;
  reader sub;
  uint64_t v;
  memset(o, 0, sizeof *o);
  while (r->p < r->end) {
    if (get_field(r, &f, &wt, &sub, &v)) return -1;
    if (f == 1 && wt == 2) {
      if (copy_str(&sub, o->path, sizeof o->path)) return -1;
    } else if (f == 2 && wt == 2) {
      while (sub.p < sub.end) {
        unsigned g, gwt;
        reader s2;
        uint64_t gv;
        if (get_field(&sub, &g, &gwt, &s2, &gv)) return -1;
        if (g == 1 && gwt == 2 && copy_str(&s2, o->hash, sizeof o->hash)) return -1;
        if (g == 2 && gwt == 0) o->size = gv;
      }
    }
  }
  return 0;
}

int gkc__ac_decode(const unsigned char *buf, size_t len, gkc__output *outs, size_t max) {
  reader r = {buf, buf + len};
  int n = 0;
  while (r.p < r.end) {
    unsigned f, wt;
    reader sub;
    uint64_t v;
    if (get_field(&r, &f, &wt, &sub, &v)) return -1;
    if (f == 2 && wt == 2) {
      gkc__output o;
      if (decode_output(&sub, &o)) return -1;
      if ((size_t)n < max) outs[n++] = o;
    }
  }
  return n;
}

/* ---- signed entries (remote.h) ------------------------------------------- */

#define SIG_DOMAIN "gk-remote-ac-v1"

/* The bytes a signature covers: domain, key and the encoded outputs. */
static unsigned char *signed_bytes(const gkc__output *outs, size_t n, const char *key,
                                   size_t *len) {
  unsigned char *enc;
  size_t el;
  if (gkc__ac_encode(outs, n, &enc, &el) != 0) return NULL;
  size_t dl = sizeof SIG_DOMAIN, kl = strlen(key) + 1; /* both with their NUL */
  unsigned char *m = malloc(dl + kl + el);
  if (m) {
    memcpy(m, SIG_DOMAIN, dl);
    memcpy(m + dl, key, kl);
    memcpy(m + dl + kl, enc, el);
    *len = dl + kl + el;
  }
  free(enc);
  return m;
}

int gkc__ac_encode_signed(const gkc__output *outs, size_t n, const char *key,
                          const unsigned char sk[64], unsigned char **buf, size_t *len) {
  size_t ml, el;
  unsigned char *m = signed_bytes(outs, n, key, &ml), *enc = NULL;
  if (!m || gkc__ac_encode(outs, n, &enc, &el) != 0) {
    free(m);
    return -1;
  }
  unsigned char sig[crypto_sign_BYTES];
  crypto_sign_detached(sig, NULL, m, ml, sk);
  free(m);
  /* value = {1: public key, 2: signature}; Any = {1: type_url, 2: value};
   * ExecutedActionMetadata = {11: Any}; ActionResult field 9. Each part is
   * under 128 bytes but the last two: lengths are varints all the same. */
  unsigned char val[2 + 32 + 2 + 64], any[256], meta[300];
  size_t vl = put_len(val, 1, 32);
  memcpy(val + vl, sk + 32, 32); /* libsodium's secret key ends with the public one */
  vl += 32;
  vl += put_len(val + vl, 2, sizeof sig);
  memcpy(val + vl, sig, sizeof sig);
  vl += sizeof sig;
  size_t tl = strlen(GKC__SIG_TYPE);
  size_t al = put_len(any, 1, tl);
  memcpy(any + al, GKC__SIG_TYPE, tl);
  al += tl;
  al += put_len(any + al, 2, vl);
  memcpy(any + al, val, vl);
  al += vl;
  size_t ml2 = put_len(meta, 11, al);
  memcpy(meta + ml2, any, al);
  ml2 += al;
  unsigned char *out = realloc(enc, el + 8 + ml2);
  if (!out) {
    free(enc);
    return -1;
  }
  el += put_len(out + el, 9, ml2);
  memcpy(out + el, meta, ml2);
  *buf = out;
  *len = el + ml2;
  return 0;
}

/* Finds our Any in field 9: 1 with pk and sig, 0 when there is none, -1 for
 * one that is malformed. */
static int find_signature(const unsigned char *buf, size_t len, unsigned char pk[32],
                          unsigned char sig[64]) {
  reader r = {buf, buf + len};
  int found = 0;
  while (r.p < r.end) {
    unsigned f, wt;
    reader meta;
    uint64_t v;
    if (get_field(&r, &f, &wt, &meta, &v)) return -1;
    if (f != 9 || wt != 2) continue;
    while (meta.p < meta.end) {
      reader any;
      if (get_field(&meta, &f, &wt, &any, &v)) return -1;
      if (f != 11 || wt != 2) continue;
      reader type = {0}, val = {0}, x;
      while (any.p < any.end) {
        if (get_field(&any, &f, &wt, &x, &v)) return -1;
        if (f == 1 && wt == 2) type = x;
        if (f == 2 && wt == 2) val = x;
      }
      size_t tl = strlen(GKC__SIG_TYPE);
      if (!type.p || (size_t)(type.end - type.p) != tl || memcmp(type.p, GKC__SIG_TYPE, tl))
        continue;
      int have = 0;
      while (val.p && val.p < val.end) {
        if (get_field(&val, &f, &wt, &x, &v)) return -1;
        size_t xl = wt == 2 ? (size_t)(x.end - x.p) : 0;
        if (f == 1 && xl == 32) memcpy(pk, x.p, 32), have |= 1;
        if (f == 2 && xl == 64) memcpy(sig, x.p, 64), have |= 2;
      }
      if (have != 3 || found) return -1; /* incomplete, or two: refused */
      found = 1;
    }
  }
  return found;
}

int gkc__ac_check(const unsigned char *buf, size_t len, const char *key,
                  const unsigned char (*trusted)[32], size_t ntrusted, gk_err *why) {
  unsigned char pk[32], sig[64];
  int f = find_signature(buf, len, pk, sig);
  if (f <= 0) return gk_err_set(why, f == 0 ? "it is not signed" : "its signature is malformed");
  size_t i = 0;
  while (i < ntrusted && sodium_memcmp(trusted[i], pk, 32) != 0) i++;
  if (i == ntrusted) {
    char id[65];
    sodium_bin2hex(id, sizeof id, pk, 32);
    return gk_err_set(why, "it is signed by key %.16s, which is not trusted", id);
  }
  gkc__output o[8];
  int n = gkc__ac_decode(buf, len, o, 8);
  size_t ml = 0;
  unsigned char *m = n >= 0 && n < 8 ? signed_bytes(o, (size_t)n, key, &ml) : NULL;
  int ok = m && crypto_sign_verify_detached(sig, m, ml, pk) == 0;
  free(m);
  if (!ok)
    gk_err_set(why, "its signature does not match (the entry was changed, or "
               "copied from another job's key)");
  return ok ? 0 : -1;
}
