/*
 * engine.h - internals of the recipe engine shared by its C files. Not API.
 */
#ifndef GKR_ENGINE_H
#define GKR_ENGINE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <lua.h>

/* A Lua file compiled into the binary by cmake/embed.cmake: "engine/build",
 * "toolchains/cc". The table ends with a zeroed row. */
typedef struct gkr__embedded_file {
  const char *name;
  const unsigned char *data;
  size_t size;
} gkr__embedded_file;
extern const gkr__embedded_file gkr__embedded[];

/* The metatable of gk.cache_open's handles (a gkc_cache ** userdata). */
#define GKR__CACHE_MT "gk.cache"

/* The registry key of the build's gkr_options (a light userdata, set by
 * gkr_build): cache:set_remote takes the remote's credentials and keys from
 * there, so that they never pass through Lua. */
extern const char gkr__options_key;

/* Opens the `gk` table of primitives (lgk.c, lproc.c, ljson.c) and leaves it
 * on the stack. `log` is where gk.eprint writes. */
int gkr__open_gk(lua_State *L, FILE *log);

/* Each adds its functions to the table at the top of the stack. */
void gkr__proc_register(lua_State *L);
void gkr__json_register(lua_State *L);

/* Raises a Lua error "what 'subject': strerror(errno)"-style from C:
 * pushes nil and the message and returns 2, the Lua convention for
 * recoverable failures (io.open style). */
int gkr__fail_errno(lua_State *L, const char *what, const char *subject);

/* Forks and execs argv in cwd (NULL: here) with stdin from /dev/null and
 * stdout, stderr on out, err (lproc.c). Returns the pid, or -1 with errno
 * set (a failed exec included, the child then already reaped). */
pid_t gkr__start(char **argv, const char *cwd, int out, int err);
/* A child's wait status as one number: its exit code, or 128 + signal. */
int gkr__exit_code(int status);

/* ---- the fast path of a no-op build (fast.c) -----------------------------
 * The trace: what a build looked at, recorded by the primitives as they run
 * (every function accepts t == NULL: no fast path for this build). */
typedef struct gkr__trace gkr__trace;
struct gkr_options;
/* A trace for a build with these options and cache folder, or NULL when the
 * fast path is off (--container, GK_BUILD_INDEX=0, GK_BUILD_FAST=0). */
gkr__trace *gkr__trace_new(const struct gkr_options *o, const char *cache_dir);
void gkr__trace_free(gkr__trace *t);
/* 1 when the last build's record still holds: its log is written to `log`,
 * *summary (may be NULL) gets its --json summary, and the build is done. */
int gkr__fast_try(gkr__trace *t, FILE *log, char **summary);
/* The trace of the build running in L (registry), set by engine.c. */
void gkr__trace_set(lua_State *L, gkr__trace *t);
gkr__trace *gkr__trace_get(lua_State *L);
/* Adds gk.fast_save to the table at the top of the stack. */
void gkr__fast_register(lua_State *L);

/* Observations. `st` NULL: the call failed with errno `err`. A folder seen
 * by stat counts as "a folder" only; one that was listed (or a file read)
 * keeps its whole stamp. */
void gkr__trace_stat(gkr__trace *t, const char *path, const struct stat *st, int err);
void gkr__trace_file(gkr__trace *t, const char *path, const struct stat *st, int err);
void gkr__trace_realpath(gkr__trace *t, const char *path, const char *real);
void gkr__trace_env(gkr__trace *t, const char *name, const char *value);
/* Text the build printed on its log, replayed by the fast path. */
void gkr__trace_log(gkr__trace *t, const char *text, size_t n);
/* Something no record can check happened (a compile, a write): nothing is
 * kept for this build. `why` is a static string. */
void gkr__trace_off(gkr__trace *t, const char *why);
/* A command the fast path re-runs to compare its output (git status): its
 * start, and its end (the output file is then read and hashed; reading it is
 * no observation: gkr__trace_exempt). */
void gkr__trace_spawned(gkr__trace *t, pid_t pid, char **argv, const char *cwd, int quiet,
                        const char *output);
void gkr__trace_waited(gkr__trace *t, pid_t pid, int code);
int gkr__trace_exempt(gkr__trace *t, const char *path);

#endif
