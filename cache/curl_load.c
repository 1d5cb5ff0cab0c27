/*
 * curl_load.c - the libcurl functions remote.c calls, resolved from
 * libcurl.so.4 with dlopen the first time one is called.
 *
 * Why: linking libcurl makes every `gk` start map and relocate some thirty
 * libraries (TLS, Kerberos, LDAP, ...) and run their constructors, about
 * 20 ms of CPU before main - more than a no-op build of the whole matrix
 * does. Only a build with --remote-cache needs curl, so only it pays.
 * If libcurl cannot be loaded, curl_global_init fails and remote.c reports
 * that it cannot initialize libcurl (Debian: apt-get install libcurl4).
 */
#define CURL_DISABLE_TYPECHECK /* the real functions, not curl.h's checking macros */
#include <curl/curl.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>

static struct {
  int tried;
  void *lib;
  CURLcode (*global_init)(long);
  CURL *(*easy_init)(void);
  CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
  CURLcode (*easy_perform)(CURL *);
  void (*easy_cleanup)(CURL *);
  void (*easy_reset)(CURL *);
  CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
  const char *(*easy_strerror)(CURLcode);
  struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
  void (*slist_free_all)(struct curl_slist *);
} api;

/* Loads libcurl once (only the thread that builds calls it). 1 when
 * every function was found. */
static int load(void) {
  if (api.tried) return api.lib != NULL;
  api.tried = 1;
  void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  struct { void **fn; const char *name; } syms[] = {
      {(void **)&api.global_init, "curl_global_init"},
      {(void **)&api.easy_init, "curl_easy_init"},
      {(void **)&api.easy_setopt, "curl_easy_setopt"},
      {(void **)&api.easy_perform, "curl_easy_perform"},
      {(void **)&api.easy_cleanup, "curl_easy_cleanup"},
      {(void **)&api.easy_reset, "curl_easy_reset"},
      {(void **)&api.easy_getinfo, "curl_easy_getinfo"},
      {(void **)&api.easy_strerror, "curl_easy_strerror"},
      {(void **)&api.slist_append, "curl_slist_append"},
      {(void **)&api.slist_free_all, "curl_slist_free_all"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    if (!(*syms[i].fn = dlsym(lib, syms[i].name))) {
      dlclose(lib);
      return 0;
    }
  }
  api.lib = lib;
  return 1;
}

CURLcode curl_global_init(long flags) {
  return load() ? api.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void) { return load() ? api.easy_init() : NULL; }

/* The option's number says the type of its one argument (curl.h's
 * CURLOPTTYPE_* ranges); it is read as that type and passed on. */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...) {
  if (!load()) return CURLE_FAILED_INIT;
  va_list ap;
  va_start(ap, opt);
  CURLcode rc;
  if (opt < CURLOPTTYPE_OBJECTPOINT)
    rc = api.easy_setopt(h, opt, va_arg(ap, long));
  else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
    rc = api.easy_setopt(h, opt, va_arg(ap, void *));
  else if (opt < CURLOPTTYPE_OFF_T)
    rc = api.easy_setopt(h, opt, va_arg(ap, void (*)(void)));
  else if (opt < CURLOPTTYPE_BLOB)
    rc = api.easy_setopt(h, opt, va_arg(ap, curl_off_t));
  else
    rc = api.easy_setopt(h, opt, va_arg(ap, void *));
  va_end(ap);
  return rc;
}

CURLcode curl_easy_perform(CURL *h) { return load() ? api.easy_perform(h) : CURLE_FAILED_INIT; }

void curl_easy_cleanup(CURL *h) {
  if (load()) api.easy_cleanup(h);
}

void curl_easy_reset(CURL *h) {
  if (load()) api.easy_reset(h);
}

/* Every CURLINFO takes one pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...) {
  if (!load()) return CURLE_FAILED_INIT;
  va_list ap;
  va_start(ap, info);
  CURLcode rc = api.easy_getinfo(h, info, va_arg(ap, void *));
  va_end(ap);
  return rc;
}

const char *curl_easy_strerror(CURLcode code) {
  return load() ? api.easy_strerror(code) : "libcurl could not be loaded";
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s) {
  return load() ? api.slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list) {
  if (load()) api.slist_free_all(list);
}
