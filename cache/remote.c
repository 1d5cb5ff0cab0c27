/*
 * remote.c - HTTP client of the remote cache (remote.h), through libcurl,
 * and the few bytes of protobuf that make our action-cache entries valid
 * REAPI ActionResult messages, so that a stock bazel-remote (which checks
 * what is PUT under /ac/) serves a CI fleet as well as a WebDAV server.
 *
 * A remote cache is an optimization: nothing here may fail a build. Every
 * request has short timeouts (connect, and a stall limit rather than a total
 * one, so a large image on a slow link still goes through while a server
 * that accepted the connection and went quiet is given up quickly). The
 * first failure is reported once and turns the remote off, so a dead server
 * costs one timeout per build, not one per job.
 */
#define _POSIX_C_SOURCE 200809L
#include "remote.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"

/* Seconds; $GK_REMOTE_CACHE_TIMEOUT overrides the connect and stall limits. */
#define CONNECT_TIMEOUT 2
#define STALL_TIMEOUT 3
#define TOTAL_TIMEOUT 300
/* Nothing we store is this big; a server sending more is wrong. */
#define MAX_ENTRY ((size_t)1 << 30)

struct gkc__remote {
  CURL *curl;
  char *base;    /* without a trailing '/' */
  char *shown;   /* base with any user:password replaced, for messages */
  FILE *log;
  int get_on, put_on;
  char warned[8][16]; /* tags already warned about by gkc__remote_warn_bad */
  long timeout;
};

/* Messages never show credentials: a URL's user:password part becomes
 * three stars. */
static char *redact(const char *url) {
  const char *p = strstr(url, "://");
  const char *host = p ? p + 3 : url;
  const char *end = host + strcspn(host, "/");
  const char *at = NULL;
  for (const char *q = host; q < end; q++)
    if (*q == '@') at = q;
  size_t n = strlen(url) + 4;
  char *s = malloc(n);
  if (!s) return NULL;
  if (!at) snprintf(s, n, "%s", url);
  else snprintf(s, n, "%.*s***%s", (int)(host - url), url, at);
  return s;
}

gkc__remote *gkc__remote_open(const char *url, int readonly, FILE *log, char *err,
                              size_t errsize) {
  if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
    snprintf(err, errsize, "remote cache '%s' is not an http:// or https:// URL; give the "
             "base URL of a bazel-remote style cache (GET/PUT /ac/ and /cas/)", url);
    return NULL;
  }
  static int global_done;
  if (!global_done) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
      snprintf(err, errsize, "cannot initialize libcurl for the remote cache");
      return NULL;
    }
    global_done = 1;
  }
  gkc__remote *r = calloc(1, sizeof *r);
  size_t n = strlen(url);
  while (n > 0 && url[n - 1] == '/') n--;
  if (r) r->base = strndup(url, n);
  if (r && r->base) r->shown = redact(r->base);
  if (r && r->shown) r->curl = curl_easy_init();
  if (!r || !r->curl) {
    gkc__remote_close(r);
    snprintf(err, errsize, "out of memory opening the remote cache");
    return NULL;
  }
  r->log = log ? log : stderr;
  r->get_on = 1;
  r->put_on = !readonly;
  const char *t = getenv("GK_REMOTE_CACHE_TIMEOUT");
  long tv = t && *t ? strtol(t, NULL, 10) : 0;
  r->timeout = tv > 0 && tv < 3600 ? tv : 0;
  return r;
}

void gkc__remote_close(gkc__remote *r) {
  if (!r) return;
  if (r->curl) curl_easy_cleanup(r->curl);
  free(r->base);
  free(r->shown);
  free(r);
}

int gkc__remote_can_get(const gkc__remote *r) { return r && r->get_on; }
int gkc__remote_can_put(const gkc__remote *r) { return r && r->put_on; }

static void warn_off(gkc__remote *r, int all, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Warns and turns the remote (or its uploads) off for the rest of the run. */
static void warn_off(gkc__remote *r, int all, const char *fmt, ...) {
  if (!r->get_on && !r->put_on) return;
  if (!all && !r->put_on) return;
  va_list ap;
  fprintf(r->log, "gk build: warning: remote cache '%s': ", r->shown);
  va_start(ap, fmt);
  vfprintf(r->log, fmt, ap);
  va_end(ap);
  fprintf(r->log, all ? "; going on with the local cache only\n"
                      : "; going on without uploading to it\n");
  fflush(r->log);
  r->put_on = 0;
  if (all) r->get_on = 0;
}

void gkc__remote_warn_bad(gkc__remote *r, const char *what, const char *fmt, ...) {
  size_t i = 0;
  for (; i < 8 && r->warned[i][0]; i++)
    if (strcmp(r->warned[i], what) == 0) return;
  if (i < 8) snprintf(r->warned[i], sizeof r->warned[i], "%s", what);
  va_list ap;
  fprintf(r->log, "gk build: warning: remote cache '%s': ", r->shown);
  va_start(ap, fmt);
  vfprintf(r->log, fmt, ap);
  va_end(ap);
  fprintf(r->log, "; ignoring that entry\n");
  fflush(r->log);
}

typedef struct membuf {
  unsigned char *p;
  size_t len, cap, off;
  int too_big;
} membuf;

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud) {
  membuf *b = ud;
  size_t n = size * nmemb;
  if (b->len + n > MAX_ENTRY) {
    b->too_big = 1;
    return 0;
  }
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + n) cap *= 2;
    unsigned char *q = realloc(b->p, cap);
    if (!q) return 0;
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
  return n;
}

static size_t on_read(char *dest, size_t size, size_t nmemb, void *ud) {
  membuf *b = ud;
  size_t n = size * nmemb;
  if (n > b->len - b->off) n = b->len - b->off;
  memcpy(dest, b->p + b->off, n);
  b->off += n;
  return n;
}

/* One request on the shared handle (kept-alive connections). Returns the
 * HTTP status, or -1 with *why set for a transport failure. */
static long request(gkc__remote *r, const char *kind, const char *hex, membuf *up,
                    membuf *down, char *why, size_t whysize) {
  char url[4096];
  snprintf(url, sizeof url, "%s/%s/%s", r->base, kind, hex);
  CURL *c = r->curl;
  curl_easy_reset(c);
  long stall = r->timeout ? r->timeout : STALL_TIMEOUT;
  long connect = r->timeout ? r->timeout : CONNECT_TIMEOUT;
  char errbuf[CURL_ERROR_SIZE] = "";
  struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, connect);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)TOTAL_TIMEOUT);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "gk-build");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, down);
  if (up) {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, up);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)up->len);
  }
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(hdrs);
  if (rc != CURLE_OK) {
    snprintf(why, whysize, "%s", down && down->too_big ? "the answer is too large"
                                 : *errbuf ? errbuf : curl_easy_strerror(rc));
    return -1;
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

int gkc__remote_get(gkc__remote *r, const char *kind, const char *hex,
                    unsigned char **data, size_t *len) {
  *data = NULL;
  *len = 0;
  if (!r || !r->get_on) return 0;
  membuf down = {0};
  char why[CURL_ERROR_SIZE + 64];
  long st = request(r, kind, hex, NULL, &down, why, sizeof why);
  if (st == 200) {
    *data = down.p ? down.p : malloc(1);
    *len = down.len;
    return *data ? 1 : 0;
  }
  free(down.p);
  if (st == 404) return 0;
  if (st < 0) warn_off(r, 1, "GET /%s/ failed: %s", kind, why);
  else warn_off(r, 1, "GET /%s/%.12s... answered HTTP %ld", kind, hex, st);
  return 0;
}

int gkc__remote_put(gkc__remote *r, const char *kind, const char *hex,
                    const void *data, size_t len) {
  if (!r || !r->put_on) return -1;
  membuf up = {(unsigned char *)data, len, len, 0, 0}, down = {0};
  char why[CURL_ERROR_SIZE + 64];
  long st = request(r, kind, hex, &up, &down, why, sizeof why);
  free(down.p);
  if (st >= 200 && st < 300) return 0;
  /* A dead server is dead for downloads too; a refusal (read-only cache,
   * no permission) only stops the uploads. */
  if (st < 0) warn_off(r, 1, "PUT /%s/ failed: %s", kind, why);
  else warn_off(r, st >= 500, "PUT /%s/%.12s... answered HTTP %ld", kind, hex, st);
  return -1;
}

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

/* ---- the protocol -------------------------------------------------------- */

#define DEPS_FORMAT "gk-remote-deps"

static int is_hex64(const char *s) {
  size_t i = 0;
  for (; s[i]; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return i == 64;
}

static int sha_is(const unsigned char *data, size_t len, const char *hex) {
  unsigned char sha[32];
  char got[65];
  crypto_hash_sha256(sha, data, len);
  sodium_bin2hex(got, sizeof got, sha, 32);
  return strcmp(got, hex) == 0;
}

/* Writes bytes to a fresh file in the cache's tmp folder. */
static int write_temp(gkc_cache *c, const unsigned char *data, size_t len, char *path,
                      size_t size) {
  if (gkc_temp_path(c, ".remote", path, size) != 0) return -1;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t n = write(fd, data + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    off += (size_t)n;
  }
  if (close(fd) != 0 || off != len) {
    unlink(path);
    return -1;
  }
  return 0;
}

int gkc__remote_lookup(gkc_cache *c, gkc__remote *r, const char *key, const char *base,
                       gkc_result *out) {
  unsigned char *ac = NULL, *dj = NULL, *img = NULL;
  size_t acn, djn, imgn;
  json_t *doc = NULL, *jdeps = NULL;
  const char **paths = NULL;
  int hit = 0;
  if (!gkc__remote_can_get(r) || !gkc__remote_get(r, "ac", key, &ac, &acn)) return 0;

  gkc__output o[4];
  const gkc__output *image = NULL, *deps = NULL;
  int n = gkc__ac_decode(ac, acn, o, 4);
  for (int i = 0; i < n; i++) {
    if (strcmp(o[i].path, "image") == 0) image = &o[i];
    if (strcmp(o[i].path, "deps.json") == 0) deps = &o[i];
  }
  if (!image || !deps || !is_hex64(image->hash) || !is_hex64(deps->hash)) {
    gkc__remote_warn_bad(r, "ac", "/ac/%.12s... is not an action result of gk build", key);
    goto lookup_out;
  }
  if (!gkc__remote_get(r, "cas", deps->hash, &dj, &djn)) goto lookup_out;
  if (djn != deps->size || !sha_is(dj, djn, deps->hash)) {
    gkc__remote_warn_bad(r, "cas", "/cas/%.12s... does not hash to its name", deps->hash);
    goto lookup_out;
  }
  doc = json_loadb((const char *)dj, djn, 0, NULL);
  json_t *list = json_object_get(doc, "deps");
  const char *fmt = json_string_value(json_object_get(doc, "format"));
  if (!json_is_array(list) || !fmt || strcmp(fmt, DEPS_FORMAT) != 0) {
    gkc__remote_warn_bad(r, "deps", "/cas/%.12s... is not a dependency list of gk build",
                         deps->hash);
    goto lookup_out;
  }
  size_t nd = json_array_size(list);
  paths = calloc(nd ? nd : 1, sizeof *paths);
  if (!paths) goto lookup_out;
  for (size_t i = 0; i < nd; i++) {
    json_t *d = json_array_get(list, i);
    const char *p = json_string_value(json_array_get(d, 0));
    const char *h = json_string_value(json_array_get(d, 1));
    /* Another machine's headers may differ from ours: a plain miss. */
    if (!p || !h || !gkc__dep_matches(c, base, p, h)) goto lookup_out;
    paths[i] = p;
  }
  if (!gkc__remote_get(r, "cas", image->hash, &img, &imgn)) goto lookup_out;
  if (imgn != image->size || !sha_is(img, imgn, image->hash)) {
    gkc__remote_warn_bad(r, "cas", "/cas/%.12s... does not hash to its name", image->hash);
    goto lookup_out;
  }
  char tmp[4096];
  gkc_result res;
  if (write_temp(c, img, imgn, tmp, sizeof tmp) != 0) goto lookup_out;
  if (gkc__hash_deps(c, base, paths, nd, &jdeps) != 0) {
    unlink(tmp);
    goto lookup_out;
  }
  /* A local record too, so the next build needs no network. */
  json_t *j = jdeps;
  jdeps = NULL;
  if (gkc__put(c, key, tmp, j, &res) != 0) {
    unlink(tmp);
    goto lookup_out;
  }
  *out = res;
  out->remote = 1;
  hit = 1;
lookup_out:
  json_decref(jdeps);
  json_decref(doc);
  free(paths);
  free(ac);
  free(dj);
  free(img);
  return hit;
}

/* Reads a whole file (an object of the store). */
static unsigned char *read_all(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  unsigned char *buf = NULL;
  if (fstat(fd, &st) == 0 && (buf = malloc(st.st_size ? (size_t)st.st_size : 1))) {
    size_t off = 0;
    while (off < (size_t)st.st_size) {
      ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += (size_t)n;
    }
    if (off != (size_t)st.st_size) {
      free(buf);
      buf = NULL;
    }
    *len = off;
  }
  close(fd);
  return buf;
}

void gkc__remote_store(gkc_cache *c, gkc__remote *r, const char *key, const gkc_result *res,
                       json_t *jdeps) {
  if (!gkc__remote_can_put(r)) return;
  char opath[4096];
  size_t ilen = 0;
  unsigned char *img = gkc_object_path(c, res->sha256, opath, sizeof opath) == 0
                         ? read_all(opath, &ilen) : NULL;
  json_t *plain = json_array(), *d;
  size_t i;
  json_array_foreach(jdeps, i, d)
    json_array_append_new(plain, json_pack("[OO]", json_array_get(d, 0), json_array_get(d, 1)));
  json_t *doc = json_pack("{s:s, s:i, s:o}", "format", DEPS_FORMAT, "version", 1, "deps", plain);
  char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  if (img && text && ilen == res->size) {
    unsigned char sha[32];
    gkc__output outs[2];
    memset(outs, 0, sizeof outs);
    snprintf(outs[0].path, sizeof outs[0].path, "image");
    memcpy(outs[0].hash, res->sha256, 65);
    outs[0].size = res->size;
    snprintf(outs[1].path, sizeof outs[1].path, "deps.json");
    crypto_hash_sha256(sha, (const unsigned char *)text, strlen(text));
    sodium_bin2hex(outs[1].hash, sizeof outs[1].hash, sha, 32);
    outs[1].size = strlen(text);
    unsigned char *ac = NULL;
    size_t acn = 0;
    /* Blobs first: an action entry never points at a missing blob. */
    if (gkc__remote_put(r, "cas", res->sha256, img, ilen) == 0 &&
        gkc__remote_put(r, "cas", outs[1].hash, text, outs[1].size) == 0 &&
        gkc__ac_encode(outs, 2, &ac, &acn) == 0)
      gkc__remote_put(r, "ac", key, ac, acn);
    free(ac);
  }
  free(text);
  free(img);
}
