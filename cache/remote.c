/*
 * remote.c - HTTP client of the remote cache (remote.h), through libcurl,
 * and the protocol on top of it: what a lookup fetches and checks, what a
 * store uploads. The entries' encoding and signatures are remote_ac.c's.
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

#include <ctype.h>
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
  /* Credentials: sent, never shown. secrets[] are the strings no message
   * may contain (header values, the URL's password): scrub() blanks them
   * out of anything libcurl says before it is printed. */
  struct curl_slist *headers; /* "Expect:" and the caller's headers */
  char *netrc, *ca_file, *client_cert, *client_key;
  char **secrets;
  size_t nsecrets;
  /* Signing and trust (remote.h, "Signed entries"). */
  int sign;
  unsigned char sk[crypto_sign_SECRETKEYBYTES];
  unsigned char (*trusted)[32];
  size_t ntrusted;
  int trust_warned;
};

/* Messages never show credentials: a URL's user:password part becomes
 * three stars. */
char *gkc_redact_url(const char *url) {
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

int gkc_check_header(const char *h, gk_err *err) {
  /* RFC 9110: a token, a colon, a value on one line. Only the name is ever
   * quoted back: the value is a credential. */
  size_t n = 0;
  while (h[n] && (isalnum((unsigned char)h[n]) || strchr("!#$%&'*+-.^_`|~", h[n]))) n++;
  const char *why = NULL;
  if (n == 0 || h[n] != ':')
    why = n == 0 ? "it does not start with a header name" : "the name is not followed by ':'";
  else {
    const char *v = h + n + 1;
    while (*v == ' ' || *v == '\t') v++;
    if (!*v) why = "it has no value";
    for (const char *q = v; !why && *q; q++)
      if ((unsigned char)*q < 0x20 && *q != '\t') why = "its value has a line break or a control character";
      else if (*q == 0x7f) why = "its value has a control character";
  }
  if (!why) return 0;
  return gk_err_set(err, "remote cache header '%.*s...' is not 'Name: value' (%s); e.g. "
                    "'Authorization: Bearer TOKEN'", (int)(n < 64 ? n : 64), h, why);
}

/* Replaces every secret in text (NUL-terminated, size bytes) by "***". */
static void scrub(const gkc__remote *r, char *text, size_t size) {
  for (size_t i = 0; i < r->nsecrets; i++) {
    size_t sl = strlen(r->secrets[i]);
    char *p;
    while (sl && (p = strstr(text, r->secrets[i]))) {
      size_t rest = strlen(p + sl);
      if ((size_t)(p - text) + 3 + rest >= size) rest = size - (size_t)(p - text) - 4;
      memmove(p + 3, p + sl, rest);
      memcpy(p, "***", 3);
      p[3 + rest] = '\0';
    }
  }
}

static int add_secret(gkc__remote *r, const char *s, size_t n) {
  while (n && (*s == ' ' || *s == '\t')) s++, n--;
  if (n == 0) return 0;
  char **v = realloc(r->secrets, (r->nsecrets + 1) * sizeof *v);
  if (!v) return -1;
  r->secrets = v;
  if (!(v[r->nsecrets] = strndup(s, n))) return -1;
  r->nsecrets++;
  return 0;
}

static char *dup_opt(const char *s, int *oom) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *oom = 1;
  return d;
}

/* Copies o's credentials and keys into r. 0, or -1 with err set. */
static int take_options(gkc__remote *r, const gkc_remote_options *o, gk_err *err) {
  int oom = 0;
  r->headers = curl_slist_append(NULL, "Expect:");
  for (size_t i = 0; r->headers && i < o->nheaders; i++) {
    if (gkc_check_header(o->headers[i], err) != 0) return -1;
    struct curl_slist *l = curl_slist_append(r->headers, o->headers[i]);
    if (!l || add_secret(r, strchr(o->headers[i], ':') + 1, strlen(strchr(o->headers[i], ':') + 1)))
      oom = 1;
    if (l) r->headers = l;
  }
  if (!r->headers) oom = 1;
  /* The URL's own password (user:password@host), kept out of messages too. */
  const char *host = strstr(r->base, "://") + 3;
  const char *end = host + strcspn(host, "/"), *at = NULL, *colon = NULL;
  for (const char *q = host; q < end; q++)
    if (*q == '@') at = q;
  for (const char *q = host; at && q < at; q++)
    if (*q == ':' && !colon) colon = q;
  if (colon && add_secret(r, colon + 1, (size_t)(at - colon - 1))) oom = 1;
  r->netrc = dup_opt(o->netrc, &oom);
  r->ca_file = dup_opt(o->ca_file, &oom);
  r->client_cert = dup_opt(o->client_cert, &oom);
  r->client_key = dup_opt(o->client_key, &oom);
  if (o->sign_seed) {
    unsigned char pk[crypto_sign_PUBLICKEYBYTES];
    crypto_sign_seed_keypair(pk, r->sk, o->sign_seed);
    r->sign = 1;
  }
  if (o->ntrusted) {
    r->trusted = malloc(o->ntrusted * sizeof *r->trusted);
    if (r->trusted) {
      memcpy(r->trusted, o->trusted, o->ntrusted * sizeof *r->trusted);
      r->ntrusted = o->ntrusted;
    } else {
      oom = 1;
    }
  }
  return oom ? gk_err_set(err, "out of memory opening the remote cache") : 0;
}

gkc__remote *gkc__remote_open(const char *url, const gkc_remote_options *o, FILE *log,
                              gk_err *err) {
  if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
    char *shown = gkc_redact_url(url);
    gk_err_set(err, "remote cache '%s' is not an http:// or https:// URL; give the "
               "base URL of a bazel-remote style cache (GET/PUT /ac/ and /cas/)",
               shown ? shown : "?");
    free(shown);
    return NULL;
  }
  static int global_done;
  if (!global_done) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
      gk_err_set(err, "cannot initialize libcurl for the remote cache");
      return NULL;
    }
    global_done = 1;
  }
  if (sodium_init() < 0) {
    gk_err_set(err, "cannot initialize libsodium for the remote cache");
    return NULL;
  }
  gkc__remote *r = calloc(1, sizeof *r);
  size_t n = strlen(url);
  while (n > 0 && url[n - 1] == '/') n--;
  if (r) r->base = strndup(url, n);
  if (r && r->base) r->shown = gkc_redact_url(r->base);
  if (r && r->shown) r->curl = curl_easy_init();
  if (!r || !r->curl) {
    gkc__remote_close(r);
    gk_err_set(err, "out of memory opening the remote cache");
    return NULL;
  }
  if (take_options(r, o, err) != 0) {
    gkc__remote_close(r);
    return NULL;
  }
  r->log = log ? log : stderr;
  r->get_on = 1;
  r->put_on = !o->readonly;
  const char *t = getenv("GK_REMOTE_CACHE_TIMEOUT");
  long tv = t && *t ? strtol(t, NULL, 10) : 0;
  r->timeout = tv > 0 && tv < 3600 ? tv : 0;
  return r;
}

void gkc__remote_close(gkc__remote *r) {
  if (!r) return;
  if (r->curl) curl_easy_cleanup(r->curl);
  if (r->headers) curl_slist_free_all(r->headers);
  for (size_t i = 0; i < r->nsecrets; i++) {
    sodium_memzero(r->secrets[i], strlen(r->secrets[i]));
    free(r->secrets[i]);
  }
  free(r->secrets);
  sodium_memzero(r->sk, sizeof r->sk);
  free(r->netrc);
  free(r->ca_file);
  free(r->client_cert);
  free(r->client_key);
  free(r->trusted);
  free(r->base);
  free(r->shown);
  free(r);
}

int gkc__remote_can_get(const gkc__remote *r) { return r && r->get_on; }
int gkc__remote_can_put(const gkc__remote *r) { return r && r->put_on; }

static void warn_off(gkc__remote *r, int all, const char *fmt, ...)
    GK__PRINTF(3, 4);

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
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, connect);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)TOTAL_TIMEOUT);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->headers);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "gk-build");
  /* Credentials: a login from the netrc file when the URL has none; the
   * caller's headers above. Redirects are not followed, so neither goes to
   * another host. TLS is verified whatever the environment says. */
  curl_easy_setopt(c, CURLOPT_NETRC, (long)CURL_NETRC_OPTIONAL);
  if (r->netrc) curl_easy_setopt(c, CURLOPT_NETRC_FILE, r->netrc);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  if (r->ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, r->ca_file);
  if (r->client_cert) curl_easy_setopt(c, CURLOPT_SSLCERT, r->client_cert);
  if (r->client_key) curl_easy_setopt(c, CURLOPT_SSLKEY, r->client_key);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, down);
  if (up) {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, up);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)up->len);
  }
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    snprintf(why, whysize, "%s", down && down->too_big ? "the answer is too large"
                                 : *errbuf ? errbuf : curl_easy_strerror(rc));
    if (rc == CURLE_PEER_FAILED_VERIFICATION && strlen(why) + 80 < whysize)
      strcat(why, " (a private CA is given with --remote-cache-ca; TLS is always verified)");
    scrub(r, why, whysize);
    return -1;
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

/* What a 401 or 403 means to the user. */
static const char *refusal(long st) {
  return st == 401 || st == 403
           ? " (credentials missing or refused: see --remote-cache-header, "
             "--remote-cache-netrc, --remote-cache-client-cert)"
           : "";
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
  else warn_off(r, 1, "GET /%s/%.12s... answered HTTP %ld%s", kind, hex, st, refusal(st));
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
  else warn_off(r, st >= 500, "PUT /%s/%.12s... answered HTTP %ld%s", kind, hex, st, refusal(st));
  return -1;
}

/* ---- the protocol -------------------------------------------------------- */

#define DEPS_FORMAT "gk-remote-deps"

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
  gk_err why;
  if (r->ntrusted && gkc__ac_check(ac, acn, key, r->trusted, r->ntrusted, &why)) {
    /* One warning for the whole build: a cache full of unsigned entries
     * (trust just turned on) would otherwise print one per job. */
    if (!r->trust_warned) {
      fprintf(r->log, "gk build: warning: remote cache '%s': refusing /ac/%.12s...: %s; "
              "entries not signed by a trusted key are compiled here (not warned again)\n",
              r->shown, key, why.msg);
      fflush(r->log);
      r->trust_warned = 1;
    }
    free(ac);
    return 0;
  }

  gkc__output o[4];
  const gkc__output *image = NULL, *deps = NULL;
  int n = gkc__ac_decode(ac, acn, o, 4);
  for (int i = 0; i < n; i++) {
    if (strcmp(o[i].path, "image") == 0) image = &o[i];
    if (strcmp(o[i].path, "deps.json") == 0) deps = &o[i];
  }
  if (!image || !deps || !gkc__is_hex64(image->hash) || !gkc__is_hex64(deps->hash)) {
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
        (r->sign ? gkc__ac_encode_signed(outs, 2, key, r->sk, &ac, &acn)
                 : gkc__ac_encode(outs, 2, &ac, &acn)) == 0)
      gkc__remote_put(r, "ac", key, ac, acn);
    free(ac);
  }
  free(text);
  free(img);
}
