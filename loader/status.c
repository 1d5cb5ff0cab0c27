/*
 * status.c - status texts and the messages that carry failure detail.
 *
 * The library never prints: every failure becomes a sentence stored where
 * the caller can ask for it, on the archive handle (gk_archive_errmsg) or,
 * for the opens that have no handle yet, in a thread-local buffer
 * (gk_last_error).
 */
#if defined(GK_HAVE_GNU_STRERROR_R) && !GK_HAVE_GNU_STRERROR_R
/* The POSIX strerror_r (macOS; GK_PORTABLE_ONLY on Linux), which returns an
 * int: glibc declares it only without _GNU_SOURCE. */
#undef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L
#elif !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* the GNU strerror_r, which returns its text */
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

GK_API const char *gk_strerror(int status) {
  /* One case per line of GK_STATUS_MAP: a new code cannot be forgotten. */
  switch (status) {
#define GK__STATUS_TEXT(name, value, msg)                                      \
  case value: return msg;
    GK_STATUS_MAP(GK__STATUS_TEXT)
#undef GK__STATUS_TEXT
  }
  return "unknown status";
}

void gk__strlcpy(char *dst, const char *src, size_t size) {
  if (size == 0) return;
  size_t n = strlen(src);
  if (n >= size) n = size - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

const char *gk__errno_text(int e, char *buf, size_t size) {
#if defined(GK_HAVE_GNU_STRERROR_R) && !GK_HAVE_GNU_STRERROR_R
  if (size && strerror_r(e, buf, size) != 0) snprintf(buf, size, "error %d", e);
#else
  /* GNU strerror_r may return a static string instead of filling buf. */
  const char *s = strerror_r(e, buf, size);
  if (s != buf) gk__strlcpy(buf, s, size);
#endif
  return buf;
}

void gk__sb_printf(gk__sb *sb, const char *fmt, ...) {
  if (sb->oom) return;
  for (;;) {
    size_t room = sb->cap - sb->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sb->p ? sb->p + sb->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      sb->oom = 1;
      return;
    }
    if ((size_t)n < room) {
      sb->len += (size_t)n;
      return;
    }
    /* Too small (or nothing allocated yet): grow to fit and print again. */
    size_t cap = sb->cap ? sb->cap : 128;
    while (cap - sb->len <= (size_t)n) {
      if (cap > SIZE_MAX / 2) {
        sb->oom = 1;
        return;
      }
      cap *= 2;
    }
    char *p = realloc(sb->p, cap);
    if (!p) {
      sb->oom = 1;
      return;
    }
    if (!sb->p) p[0] = '\0';
    sb->p = p;
    sb->cap = cap;
  }
}

const char *gk__sb_str(const gk__sb *sb) { return sb->p ? sb->p : ""; }

void gk__sb_free(gk__sb *sb) {
  free(sb->p);
  sb->p = NULL;
  sb->len = sb->cap = 0;
  sb->oom = 0;
}

int gk__vsetmsg(char **msg, int status, const char *fmt, va_list ap) {
  /* Format once to learn the length, then into an exact allocation. */
  va_list ap2;
  va_copy(ap2, ap);
  char *p = NULL;
  int n = vsnprintf(NULL, 0, fmt, ap);
  if (n >= 0 && (p = malloc((size_t)n + 1)) != NULL)
    vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  free(*msg);
  *msg = p;
  return status;
}

int gk__fail(gk_archive *ar, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gk__vsetmsg(&ar->msg, status, fmt, ap);
  va_end(ap);
  return status;
}

/* Open failures are short (a path and a reason): a fixed buffer per thread
 * avoids any allocation, and so any cleanup at thread exit. */
static _Thread_local char last_error[1024];

int gk__set_last_error(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}

void gk__clear_last_error(void) { last_error[0] = '\0'; }

GK_API const char *gk_last_error(void) { return last_error; }

void gk__say(char *why, size_t why_size, const char *fmt, ...) {
  if (!why || !why_size) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, why_size, fmt, ap);
  va_end(ap);
}
