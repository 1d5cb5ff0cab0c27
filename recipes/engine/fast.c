/*
 * fast.c - the fast path of a no-op `gk build`: checked by stat, without Lua.
 *
 * A no-op build of the whole matrix still loads every recipe, keys every job,
 * opens the build index and checks the output folder: tens of milliseconds.
 * Yet its outcome is a function of what it looked at - the files it read or
 * hashed (their stamps), the folders it listed, the paths it found missing,
 * the real paths it resolved, the environment variables it read, the output
 * of the commands it ran for information (git status) - and of gk itself and
 * its options. The primitives record those observations while a build runs
 * (the trace). A build that compiled, wrote and downloaded nothing, and whose
 * observations had all settled (unchanged for 2 s, the index's rule), keeps
 * them in a record. The next build with the same options checks the record
 * first: every stamp still held, every folder still a folder, every missing
 * path still missing, the same variables, the same command output, every
 * cache object still present. Then it prints what the last build printed and
 * stops; anything else runs the whole build, which decides as before and
 * keeps a new record. The record decides nothing the build would not: it may
 * be deleted at any time.
 *
 * What no stat can check taints the trace and nothing is kept: a compile,
 * gk.run, a write, a path that could not be read, an unsettled stamp.
 *
 * The record is DIR/v1/index/XX/SHA.json, SHA of "gk build fast " and the
 * output folder (an index entry for gk cache gc and verify):
 *   { "format": "gk-build-fast", "version": 1, "key": KEY,
 *     "checks": one check per line, tab-separated:
 *         F path size inode mtime_ns ctime_ns   the path still has this stamp
 *         D path                                a folder
 *         A path                                missing
 *         R path realpath                       resolves to this
 *         O sha256 size                         a cache object, present
 *       sorted, each line front-coded: "N\t" and what follows the first N
 *       bytes it shares with the line before (paths share long prefixes),
 *     "env": { NAME: value | null }, "commands": [{ "argv": [...], "cwd",
 *     "quiet", "code", "sha256" of its output }], "log": what the build
 *     printed, "summary": its --json summary }
 * The checks are lines in one string because jansson reads one string of
 * 150 KB in a fraction of the time it takes for the same data as 10,000
 * values. KEY hashes the options, the current folder and gk's binary.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "engine.h"
#include "gk_compiler.h" /* GK__PRINTF */
#include "gk_err.h"
#include "gkcache.h"
#include "gkrecipes.h"

#define FAST_FORMAT "gk-build-fast"
#define SETTLED_NS 2000000000LL
#define MAX_COMMANDS 4

typedef struct buf {
  char *p;
  size_t len, cap;
} buf;

struct gkr__trace {
  char key[65];
  char *record;      /* DIR/v1/index/XX/SHA.json */
  char *cache_dir;   /* absolute */
  const char *off;   /* why nothing is kept; NULL: still may be */
  char off_text[PATH_MAX + 64];
  buf checks;        /* lines, duplicates included until saved */
  buf log;
  json_t *env;       /* NAME -> value | null, as first read */
  json_t *commands;  /* finished re-runnable commands */
  json_t *running;   /* "pid" -> { argv, cwd, quiet, output } */
  json_t *exempt;    /* output files of those commands -> true */
  int tracing;       /* GK_BUILD_TRACE: say what the fast path did */
};

static const char TRACE_KEY = 't';

static int64_t now_ns(int clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int buf_add(buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 0;
}

static int buf_printf(buf *b, const char *fmt, ...) GK__PRINTF(2, 3);

static int buf_printf(buf *b, const char *fmt, ...) {
  char small[PATH_MAX * 2 + 128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof small) return -1;
  return buf_add(b, small, (size_t)n);
}

/* Lua's join (engine/util.lua): rel against dir unless absolute. */
static char *join(const char *dir, const char *rel) {
  char *s = NULL;
  if (rel[0] == '/') return strdup(rel);
  size_t n = strlen(dir);
  if (asprintf(&s, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", rel) < 0) return NULL;
  return s;
}

static void hex_sha256(char hex[65], const void *data, size_t n) {
  unsigned char h[32];
  crypto_hash_sha256(h, data, n);
  sodium_bin2hex(hex, 65, h, sizeof h);
}

/* ---- the trace ------------------------------------------------------------ */

void gkr__trace_free(gkr__trace *t) {
  if (!t) return;
  free(t->record);
  free(t->cache_dir);
  free(t->checks.p);
  free(t->log.p);
  json_decref(t->env);
  json_decref(t->commands);
  json_decref(t->running);
  json_decref(t->exempt);
  free(t);
}

/* The key: everything besides the observations that a build's outcome
 * depends on. -j is left out (it changes nothing a no-op build prints). */
static int make_key(gkr__trace *t, const gkr_options *o, const char *cwd) {
  struct stat exe;
  if (stat("/proc/self/exe", &exe) != 0) return -1;
  buf k = {0};
  int rc = buf_printf(&k, "gk-build-fast 1\nexe %lld:%lld:%lld:%lld\n", (long long)exe.st_size,
                      (long long)exe.st_ino,
                      (long long)exe.st_mtim.tv_sec * 1000000000LL + exe.st_mtim.tv_nsec,
                      (long long)exe.st_ctim.tv_sec * 1000000000LL + exe.st_ctim.tv_nsec);
  /* Length-prefixed, so that no two option lists give one text. The remote
   * without its password: no credential is part of a key. */
  char *remote = o->remote_cache ? gkc_redact_url(o->remote_cache) : NULL;
  if (o->remote_cache && !remote) return -1;
  const char *one[] = {"cwd", cwd, "recipes", o->recipes_dir, "out", o->out_dir,
                       "cache", t->cache_dir, "shard", o->shard, "remote", remote};
  for (size_t i = 0; rc == 0 && i < sizeof one / sizeof *one; i += 2)
    rc = one[i + 1] ? buf_printf(&k, "%s %zu:%s\n", one[i], strlen(one[i + 1]), one[i + 1])
                    : buf_printf(&k, "%s -\n", one[i]);
  for (size_t i = 0; rc == 0 && o->backends && i < o->nbackends; i++)
    rc = buf_printf(&k, "backend %zu:%s\n", strlen(o->backends[i]), o->backends[i]);
  for (size_t i = 0; rc == 0 && o->kernels && i < o->nkernels; i++)
    rc = buf_printf(&k, "kernel %zu:%s\n", strlen(o->kernels[i]), o->kernels[i]);
  for (size_t i = 0; rc == 0 && o->targets && i < o->ntargets; i++)
    rc = buf_printf(&k, "targets %zu:%s\n", strlen(o->targets[i]), o->targets[i]);
  if (rc == 0) rc = buf_printf(&k, "strict %d readonly %d\n", !!o->strict, !!o->remote_readonly);
  if (rc == 0) hex_sha256(t->key, k.p, k.len);
  free(k.p);
  free(remote);
  return rc;
}

gkr__trace *gkr__trace_new(const gkr_options *o, const char *cache_dir) {
  const char *idx = getenv("GK_BUILD_INDEX"), *fast = getenv("GK_BUILD_FAST");
  if (o->container || (idx && strcmp(idx, "0") == 0) || (fast && strcmp(fast, "0") == 0))
    return NULL;
  if (sodium_init() < 0) return NULL;
  char cwd[PATH_MAX], real[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return NULL;
  gkr__trace *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  const char *tr = getenv("GK_BUILD_TRACE");
  t->tracing = tr && *tr;
  t->cache_dir = join(cwd, cache_dir);
  /* The build index's name for the output folder (engine/build.lua). */
  char *out = realpath(o->out_dir, real) ? strdup(real) : join(cwd, o->out_dir);
  char *name = NULL;
  char hex[65];
  if (out && asprintf(&name, "gk build fast %s", out) >= 0) {
    hex_sha256(hex, name, strlen(name));
    if (t->cache_dir &&
        asprintf(&t->record, "%s/v1/index/%.2s/%s.json", t->cache_dir, hex, hex) < 0)
      t->record = NULL;
  }
  free(out);
  free(name);
  t->env = json_object();
  t->commands = json_array();
  t->running = json_object();
  t->exempt = json_object();
  if (!t->cache_dir || !t->record || !t->env || !t->commands || !t->running || !t->exempt ||
      make_key(t, o, cwd) != 0) {
    gkr__trace_free(t);
    return NULL;
  }
  return t;
}

void gkr__trace_set(lua_State *L, gkr__trace *t) {
  lua_pushlightuserdata(L, t);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &TRACE_KEY);
}

gkr__trace *gkr__trace_get(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &TRACE_KEY);
  gkr__trace *t = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return t;
}

void gkr__trace_off(gkr__trace *t, const char *why) {
  if (t && !t->off) t->off = why;
}

/* A path the line format can carry. */
static int line_safe(gkr__trace *t, const char *s) {
  if (strpbrk(s, "\t\n")) {
    gkr__trace_off(t, "a path holds a tab or a newline");
    return 0;
  }
  return 1;
}

static void add_line(gkr__trace *t, int rc) {
  if (rc != 0) gkr__trace_off(t, "out of memory keeping the trace");
}

/* Turned off by a file that changed less than 2 s before it was seen. */
static void unsettled(gkr__trace *t, const char *path) {
  if (t->off) return;
  snprintf(t->off_text, sizeof t->off_text, "'%s' changed less than 2 s before it was read", path);
  t->off = t->off_text;
}

static void trace_stamp(gkr__trace *t, const char *path, const struct stat *st) {
  int64_t m = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
  int64_t c = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
  int64_t settled = now_ns(CLOCK_REALTIME) - SETTLED_NS;
  if (!(m < settled && c < settled)) {
    unsettled(t, path);
    return;
  }
  add_line(t, buf_printf(&t->checks, "F\t%s\t%lld\t%lld\t%lld\t%lld\n", path,
                         (long long)st->st_size, (long long)st->st_ino, (long long)m,
                         (long long)c));
}

static void trace_missing(gkr__trace *t, const char *path, int err) {
  if (err == ENOENT || err == ENOTDIR)
    add_line(t, buf_printf(&t->checks, "A\t%s\n", path));
  else
    gkr__trace_off(t, "a path could not be read");
}

void gkr__trace_stat(gkr__trace *t, const char *path, const struct stat *st, int err) {
  if (!t || t->off || !line_safe(t, path)) return;
  if (!st) trace_missing(t, path, err);
  else if (S_ISDIR(st->st_mode)) add_line(t, buf_printf(&t->checks, "D\t%s\n", path));
  else trace_stamp(t, path, st);
}

void gkr__trace_file(gkr__trace *t, const char *path, const struct stat *st, int err) {
  if (!t || t->off || !line_safe(t, path)) return;
  if (!st) trace_missing(t, path, err);
  else trace_stamp(t, path, st);
}

void gkr__trace_realpath(gkr__trace *t, const char *path, const char *real) {
  if (!t || t->off || !line_safe(t, path)) return;
  if (!real) gkr__trace_off(t, "a path could not be resolved");
  else if (line_safe(t, real)) add_line(t, buf_printf(&t->checks, "R\t%s\t%s\n", path, real));
}

void gkr__trace_env(gkr__trace *t, const char *name, const char *value) {
  if (!t || t->off || json_object_get(t->env, name)) return;
  json_t *v = value ? json_string(value) : json_null();
  if (!v || json_object_set_new(t->env, name, v) != 0)
    gkr__trace_off(t, "an environment variable is not UTF-8");
}

void gkr__trace_log(gkr__trace *t, const char *text, size_t n) {
  if (t && !t->off) add_line(t, buf_add(&t->log, text, n));
}

void gkr__trace_spawned(gkr__trace *t, pid_t pid, char **argv, const char *cwd, int quiet,
                        const char *output) {
  if (!t || t->off) return;
  char id[32];
  snprintf(id, sizeof id, "%ld", (long)pid);
  json_t *a = json_array();
  size_t n = 0;
  /* json_string refuses what is not UTF-8: then the count tells. */
  for (; a && argv[n]; n++) json_array_append_new(a, json_string(argv[n]));
  json_t *c = json_pack("{s:o, s:s?, s:b, s:s}", "argv", a, "cwd", cwd, "quiet", quiet,
                        "output", output ? output : "/dev/null");
  if (!c || n == 0 || json_array_size(json_object_get(c, "argv")) != n ||
      json_object_size(t->running) + json_array_size(t->commands) >= MAX_COMMANDS ||
      json_object_set_new(t->running, id, c) != 0)
    gkr__trace_off(t, "a command it ran cannot be run again");
}

void gkr__trace_waited(gkr__trace *t, pid_t pid, int code) {
  if (!t) return;
  char id[32];
  snprintf(id, sizeof id, "%ld", (long)pid);
  json_t *c = json_object_get(t->running, id);
  if (!c || t->off) return;
  json_incref(c);
  json_object_del(t->running, id);
  const char *output = json_string_value(json_object_get(c, "output"));
  /* The output as the build will read it: the command has finished. */
  FILE *f = fopen(output, "rb");
  crypto_hash_sha256_state h;
  crypto_hash_sha256_init(&h);
  unsigned char chunk[8192], sha[32];
  size_t n;
  while (f && (n = fread(chunk, 1, sizeof chunk, f)) > 0) crypto_hash_sha256_update(&h, chunk, n);
  int bad = !f || ferror(f);
  if (f) fclose(f);
  crypto_hash_sha256_final(&h, sha);
  char hex[65];
  sodium_bin2hex(hex, sizeof hex, sha, sizeof sha);
  json_object_set_new(c, "code", json_integer(code));
  json_object_set_new(c, "sha256", json_string(hex));
  json_object_set_new(t->exempt, output, json_true());
  json_object_del(c, "output");
  if (bad || json_array_append_new(t->commands, c) != 0)
    gkr__trace_off(t, "the output of a command it ran could not be read");
}

int gkr__trace_exempt(gkr__trace *t, const char *path) {
  return t && json_object_get(t->exempt, path) != NULL;
}

/* ---- keeping the record (gk.fast_save, at the end of a build) -------------- */

static int add_memo(void *ctx, const char *path, const char *sha256, const int64_t st[4],
                    int settled) {
  (void)sha256;
  gkr__trace *t = ctx;
  if (!settled) {
    unsettled(t, path);
    return 1;
  }
  if (!line_safe(t, path)) return 1;
  add_line(t, buf_printf(&t->checks, "F\t%s\t%lld\t%lld\t%lld\t%lld\n", path, (long long)st[0],
                         (long long)st[1], (long long)st[2], (long long)st[3]));
  return t->off != NULL;
}

static int cmp_line(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The check lines sorted, without duplicates (a file seen many times),
 * front-coded. */
static json_t *unique_lines(buf *b) {
  size_t n = 0;
  for (size_t i = 0; i < b->len; i++) n += b->p[i] == '\n';
  char **v = malloc((n + 1) * sizeof *v);
  if (!v) return NULL;
  size_t k = 0;
  for (char *p = b->p, *e; p && (e = strchr(p, '\n')); p = e + 1) {
    *e = '\0';
    v[k++] = p;
  }
  qsort(v, k, sizeof *v, cmp_line);
  buf out = {0};
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < k; i++) {
    if (i > 0 && strcmp(v[i], v[i - 1]) == 0) continue;
    size_t same = 0;
    while (i > 0 && v[i][same] && v[i][same] == v[i - 1][same]) same++;
    rc = buf_printf(&out, "%zu\t", same) || buf_add(&out, v[i] + same, strlen(v[i] + same)) ||
         buf_add(&out, "\n", 1);
  }
  free(v);
  b->len = 0;
  json_t *s = rc == 0 ? json_stringn_nocheck(out.p ? out.p : "", out.len) : NULL;
  free(out.p);
  return s;
}

/* Writes the record as the cache writes its files (gkc_write_file), unless
 * the file already says the same: 0, or -1 with the cache's sentence in
 * *err. */
static int write_record(gkc_cache *c, const char *path, const char *text, gk_err *err) {
  size_t len = strlen(text), olen;
  char *old = gkc_read_file(path, (size_t)64 << 20, &olen);
  int same = old && olen == len && memcmp(old, text, len) == 0;
  free(old);
  if (same) return 0;
  return gkc_write_file(c, path, text, len) == 0 ? 0 : gk_err_set(err, "%s", gkc_errmsg(c));
}

/* gk.fast_save(cache, { {sha256, size}, ... }, summary) -> true | nil, why.
 * Called last by a build that compiled, wrote and downloaded nothing: keeps
 * its trace, the files its cache handle checked and the objects its jobs
 * use, for the next build's gkr__fast_try. */
static int l_fast_save(lua_State *L) {
  gkc_cache **cp = luaL_checkudata(L, 1, GKR__CACHE_MT);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *summary = luaL_checkstring(L, 3);
  gkr__trace *t = gkr__trace_get(L);
  if (!t || !*cp) {
    lua_pushnil(L);
    lua_pushstring(L, "the fast path is off for this build");
    return 2;
  }
  gkc_files_each(*cp, add_memo, t);
  lua_Integer n = luaL_len(L, 2);
  for (lua_Integer i = 1; i <= n && !t->off; i++) {
    lua_geti(L, 2, i);
    lua_geti(L, -1, 1);
    lua_geti(L, -2, 2);
    const char *sha = lua_tostring(L, -2);
    if (!sha || !lua_isinteger(L, -1) || strlen(sha) != 64 || !line_safe(t, sha))
      return luaL_error(L, "gk.fast_save: objects[%d] must be { sha256, size }", (int)i);
    add_line(t, buf_printf(&t->checks, "O\t%s\t%lld\n", sha, (long long)lua_tointeger(L, -1)));
    lua_pop(L, 3);
  }
  if (json_object_size(t->running) > 0) gkr__trace_off(t, "a command it ran was not waited for");
  if (t->off) {
    lua_pushnil(L);
    lua_pushstring(L, t->off);
    return 2;
  }
  json_t *doc = json_pack("{s:s, s:i, s:s, s:o, s:O, s:O, s:s%, s:s}", "format", FAST_FORMAT,
                          "version", 1, "key", t->key, "checks", unique_lines(&t->checks),
                          "env", t->env, "commands", t->commands, "log",
                          t->log.p ? t->log.p : "", t->log.len, "summary", summary);
  char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  gk_err err;
  int rc = text ? write_record(*cp, t->record, text, &err) : gk_err_set(&err, "out of memory");
  free(text);
  if (rc != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "record '%s': %s", t->record, err.msg);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

void gkr__fast_register(lua_State *L) {
  lua_pushcfunction(L, l_fast_save);
  lua_setfield(L, -2, "fast_save");
}

/* ---- checking it (before any Lua runs) ----------------------------------- */

typedef struct command {
  pid_t pid;
  int fd; /* its output, a pipe */
} command;

/* Starts a recorded command the way gk.spawn ran it, its output (and
 * stderr, unless quiet) into a pipe. */
static int start_command(json_t *c, command *run) {
  json_t *a = json_object_get(c, "argv");
  size_t n = json_array_size(a);
  if (n == 0 || n > 64) return -1;
  char *argv[65];
  for (size_t i = 0; i < n; i++)
    if (!(argv[i] = (char *)json_string_value(json_array_get(a, i)))) return -1;
  argv[n] = NULL;
  int p[2];
  if (gkr__cloexec_pipe(p) != 0) return -1;
  int err = json_is_true(json_object_get(c, "quiet")) ? open("/dev/null", O_WRONLY | O_CLOEXEC)
                                                      : p[1];
  run->pid = err < 0 ? -1 : gkr__start(argv, json_string_value(json_object_get(c, "cwd")), p[1], err);
  if (err >= 0 && err != p[1]) close(err);
  close(p[1]);
  if (run->pid < 0) {
    close(p[0]);
    return -1;
  }
  run->fd = p[0];
  return 0;
}

/* Reads a started command to its end; 1 when its output and exit code are
 * what the record says. */
static int finish_command(json_t *c, command *run) {
  crypto_hash_sha256_state h;
  crypto_hash_sha256_init(&h);
  unsigned char chunk[8192], sha[32];
  ssize_t n;
  while ((n = read(run->fd, chunk, sizeof chunk)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    crypto_hash_sha256_update(&h, chunk, (size_t)n);
  }
  close(run->fd);
  int st;
  while (waitpid(run->pid, &st, 0) < 0 && errno == EINTR) {}
  run->pid = -1;
  crypto_hash_sha256_final(&h, sha);
  char hex[65];
  sodium_bin2hex(hex, sizeof hex, sha, sizeof sha);
  const char *want = json_string_value(json_object_get(c, "sha256"));
  return n == 0 && want && strcmp(hex, want) == 0 &&
         json_integer_value(json_object_get(c, "code")) == gkr__exit_code(st);
}

static void stop_command(command *run) {
  if (run->pid <= 0) return;
  kill(run->pid, SIGKILL);
  close(run->fd);
  while (waitpid(run->pid, NULL, 0) < 0 && errno == EINTR) {}
  run->pid = -1;
}

/* stat() through an open folder: sorted paths come folder by folder, and
 * the kernel then walks one name instead of the whole path. Gives stat's
 * answer, errno included. */
typedef struct dirstat {
  char dir[PATH_MAX];
  int fd, err; /* fd of dir, or -1 with the errno opening it gave */
} dirstat;

static int stat_in(dirstat *d, const char *path, struct stat *st) {
  const char *slash = strrchr(path, '/');
  if (!slash || !slash[1]) return stat(path, st);
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  if (n >= sizeof d->dir) return stat(path, st);
  if (d->fd == -2 || strncmp(d->dir, path, n) != 0 || d->dir[n] != '\0') {
    if (d->fd >= 0) close(d->fd);
    memcpy(d->dir, path, n);
    d->dir[n] = '\0';
    d->fd = open(d->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    d->err = errno;
  }
  if (d->fd < 0) return errno = d->err, -1;
  return fstatat(d->fd, slash + 1, st, 0);
}

static int64_t field(char **p) {
  char *s = *p, *end;
  long long v = strtoll(s, &end, 10);
  *p = *end == '\t' ? end + 1 : end;
  return end == s ? INT64_MIN : (int64_t)v;
}

/* One check line (NUL-terminated, without its newline). 1 when it holds. */
static int check_line(char *line, dirstat *ds, gkc_cache **cache, const char *cache_dir) {
  char kind = line[0];
  if (!kind || line[1] != '\t') return 0;
  char *path = line + 2, *rest = strchr(path, '\t');
  if (rest) *rest++ = '\0';
  struct stat st;
  switch (kind) {
  case 'F': {
    if (!rest || stat_in(ds, path, &st) != 0) return 0;
    int64_t size = field(&rest), ino = field(&rest), m = field(&rest), c = field(&rest);
    return size == (int64_t)st.st_size && ino == (int64_t)st.st_ino &&
           m == (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec &&
           c == (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
  }
  case 'D':
    return stat_in(ds, path, &st) == 0 && S_ISDIR(st.st_mode);
  case 'A':
    return stat_in(ds, path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
  case 'R': {
    char real[PATH_MAX];
    return rest && realpath(path, real) && strcmp(real, rest) == 0;
  }
  case 'O': {
    if (!rest) return 0;
    if (!*cache && gkc_open(cache_dir, cache, NULL) != 0) return 0;
    int64_t size = field(&rest);
    return size >= 0 && gkc_object_used(*cache, path, (uint64_t)size) == 1;
  }
  default:
    return 0;
  }
}

/* Checks the record against the world: 0 when it holds, else -1 with why
 * not in *err (for GK_BUILD_TRACE). *nchecks counts the checks made; ms[0]
 * and ms[1] get when the checks and the commands were done (ms since the
 * monotonic clock's origin). */
static int check(gkr__trace *t, json_t *doc, size_t *nchecks, double ms[2], gk_err *err) {
  json_t *fmt = json_object_get(doc, "format"), *env = json_object_get(doc, "env");
  json_t *cmds = json_object_get(doc, "commands");
  const char *key = json_string_value(json_object_get(doc, "key"));
  const char *checks = json_string_value(json_object_get(doc, "checks"));
  if (!json_is_string(fmt) || strcmp(json_string_value(fmt), FAST_FORMAT) != 0 ||
      json_integer_value(json_object_get(doc, "version")) != 1 || !json_is_object(env) ||
      !json_is_array(cmds) || json_array_size(cmds) > MAX_COMMANDS || !checks ||
      !json_is_string(json_object_get(doc, "log")) ||
      !json_is_string(json_object_get(doc, "summary")))
    return gk_err_set(err, "the record is damaged");
  if (!key || strcmp(key, t->key) != 0)
    return gk_err_set(err, "other options, folder or gk binary");
  const char *name;
  json_t *v;
  json_object_foreach(env, name, v) {
    const char *now = getenv(name);
    if (json_is_null(v) ? now != NULL : !now || strcmp(now, json_string_value(v) ? json_string_value(v) : "") != 0)
      return gk_err_set(err, "an environment variable changed");
  }
  /* The commands (git status) run while the files are checked. */
  command run[MAX_COMMANDS];
  size_t ncmd = json_array_size(cmds), started = 0;
  const char *why = NULL;
  for (; started < ncmd; started++)
    if (start_command(json_array_get(cmds, started), &run[started]) != 0) {
      why = "a command could not be run again";
      break;
    }
  gkc_cache *cache = NULL;
  dirstat ds = {.fd = -2};
  /* prev: the last line in full; line: a copy check_line may cut up. */
  char prev[PATH_MAX * 2 + 128], line[sizeof prev];
  size_t plen = 0;
  for (const char *p = checks, *e; !why && (e = strchr(p, '\n')); p = e + 1) {
    char *tab;
    unsigned long same = strtoul(p, &tab, 10);
    size_t n = (size_t)(e - tab) - 1;
    if (*tab != '\t' || same > plen || same + n >= sizeof prev) {
      why = "the record is damaged";
      break;
    }
    memcpy(prev + same, tab + 1, n);
    plen = same + n;
    prev[plen] = '\0';
    memcpy(line, prev, plen + 1);
    ++*nchecks;
    if (!check_line(line, &ds, &cache, t->cache_dir)) why = "a file, folder or cache object changed";
  }
  if (ds.fd >= 0) close(ds.fd);
  gkc_close(cache);
  ms[0] = (double)now_ns(CLOCK_MONOTONIC) * 1e-6;
  for (size_t i = 0; i < started; i++) {
    if (why) stop_command(&run[i]);
    else if (!finish_command(json_array_get(cmds, i), &run[i]))
      why = "the output of a command changed (git status)";
  }
  for (size_t i = 0; i < started; i++) stop_command(&run[i]);
  ms[1] = (double)now_ns(CLOCK_MONOTONIC) * 1e-6;
  return why ? gk_err_set(err, "%s", why) : 0;
}

int gkr__fast_try(gkr__trace *t, FILE *log, char **summary) {
  if (!t) return 0;
  int64_t t0 = now_ns(CLOCK_MONOTONIC);
  size_t len, nchecks = 0;
  char *text = gkc_read_file(t->record, (size_t)64 << 20, &len);
  json_t *doc = text ? json_loadb(text, len, 0, NULL) : NULL;
  free(text);
  double loaded = (double)(now_ns(CLOCK_MONOTONIC) - t0) * 1e-6, ms[2] = {0, 0};
  gk_err miss;
  const char *why = !text ? "no record yet" : !doc ? "the record is damaged"
                    : check(t, doc, &nchecks, ms, &miss) != 0 ? miss.msg : NULL;
  char *sum = NULL;
  if (!why) {
    /* The last build's summary, but for how long this one took. */
    json_t *s = json_loads(json_string_value(json_object_get(doc, "summary")), 0, NULL);
    if (s && json_object_get(s, "seconds"))
      json_object_set_new(s, "seconds", json_real((double)(now_ns(CLOCK_MONOTONIC) - t0) * 1e-9));
    if (!s || !(sum = json_dumps(s, JSON_COMPACT))) why = "the record is damaged";
    json_decref(s);
  }
  if (t->tracing) {
    double t0ms = (double)t0 * 1e-6;
    fprintf(log, "gk build: trace: fast path %s: record read %.2f ms, %zu checks done %.2f ms, "
            "commands done %.2f ms, total %.2f ms\n", why ? "missed" : "hit", loaded, nchecks,
            ms[0] ? ms[0] - t0ms : 0, ms[1] ? ms[1] - t0ms : 0,
            (double)(now_ns(CLOCK_MONOTONIC) - t0) * 1e-6);
  }
  if (why) {
    if (t->tracing) fprintf(log, "gk build: trace: fast path: %s; building\n", why);
    json_decref(doc);
    free(sum);
    return 0;
  }
  const char *logtext = json_string_value(json_object_get(doc, "log"));
  fwrite(logtext, 1, json_string_length(json_object_get(doc, "log")), log);
  fflush(log);
  json_decref(doc);
  if (summary) *summary = sum;
  else free(sum);
  return 1;
}
