/*
 * gk_err.h - the build side's one error convention (cache/, packager/,
 * recipes/engine/): the loader's (gk.h, "Conventions"), in a form that also
 * serves functions without a handle.
 *
 * - A function that can fail returns a status: 0 on success (or a count, or
 *   1 for "found", as its comment says), -1 on failure.
 * - The detail is one sentence naming the file or the subject at fault,
 *   held in a gk_err: the handle's own where the function takes one
 *   (gkc_cache: gkc_errmsg), else the caller's, passed as the last argument
 *   `gk_err *err`. NULL there drops the detail; the status still says it
 *   failed. A function leaves the gk_err alone when it succeeds.
 * - The build side never prints its failures and never exits: the caller
 *   words them (the CLI: "gk pack: <sentence>") and picks the exit code.
 *   Progress and compiler output go to a log the caller gives.
 * - One exception, kept on purpose: gkr_build (recipes/engine/gkrecipes.h)
 *   is the whole of `gk build`; it reports on the build's log, as a
 *   compiler does (many failures per run, each with its recipe and line),
 *   and returns the command's exit status (GKR_*).
 * - At the Lua boundary (the gk.* functions the recipe engine hands to Lua)
 *   a gk_err becomes Lua's own convention: nil and the sentence, or a Lua
 *   error.
 *
 * Header only (static inline), so that including it adds no link edge
 * between the folders. Never installed; not API.
 */
#ifndef GK_ERR_H
#define GK_ERR_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gk_compiler.h"

/* Room for a sentence naming two long paths (a merge conflict). */
#define GK_ERR_SIZE 4096

typedef struct gk_err {
  char msg[GK_ERR_SIZE]; /* "" until a failure */
} gk_err;

/* The sentence; "" for NULL or no failure. */
static inline const char *gk_err_msg(const gk_err *e) { return e ? e->msg : ""; }

static inline void gk_err_clear(gk_err *e) {
  if (e) e->msg[0] = '\0';
}

/* Sets the sentence (NULL e: dropped). Returns -1, so that a failure reads
 * `return gk_err_set(err, "cannot read '%s': %s", path, strerror(errno));`. */
static inline int gk_err_setv(gk_err *e, const char *fmt, va_list ap) GK__PRINTF(2, 0);
static inline int gk_err_setv(gk_err *e, const char *fmt, va_list ap) {
  if (e) vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  return -1;
}

static inline int gk_err_set(gk_err *e, const char *fmt, ...) GK__PRINTF(2, 3);
static inline int gk_err_set(gk_err *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gk_err_setv(e, fmt, ap);
  va_end(ap);
  return -1;
}

/* Puts a formatted prefix before the sentence already held ("merging
 * 'a.gkfat': " + what failed inside). Returns -1. */
static inline int gk_err_prefix(gk_err *e, const char *fmt, ...) GK__PRINTF(2, 3);
static inline int gk_err_prefix(gk_err *e, const char *fmt, ...) {
  char head[GK_ERR_SIZE];
  va_list ap;
  if (!e) return -1;
  va_start(ap, fmt);
  int n = vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  if (n < 0) return -1;
  size_t h = (size_t)n < sizeof head ? (size_t)n : sizeof head - 1;
  size_t room = sizeof e->msg - 1 - h, tail = strlen(e->msg);
  if (tail > room) tail = room;
  memmove(e->msg + h, e->msg, tail);
  memcpy(e->msg, head, h);
  e->msg[h + tail] = '\0';
  return -1;
}

#endif /* GK_ERR_H */
