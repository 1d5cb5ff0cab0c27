/* pack_internal.h - shared by the packager's files; not installed. */
#ifndef GK_PACK_INTERNAL_H
#define GK_PACK_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>

/* Formats a message into the caller's err buffer (NULL or 0: ignored). */
static inline void gkp__seterr(char *err, size_t size, const char *fmt, ...) {
  va_list ap;
  if (!err || !size) return;
  va_start(ap, fmt);
  vsnprintf(err, size, fmt, ap);
  va_end(ap);
}

#endif
