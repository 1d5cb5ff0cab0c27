/*
 * lgk.c - the `gk` table: the primitives C gives to the Lua side of the
 * engine (files, hashes, the cache, the clock, the terminal). Processes are
 * in lproc.c, JSON in ljson.c.
 *
 * Convention: a function that can fail for reasons outside the program (a
 * missing file) returns nil plus a message, like io.open, so that Lua
 * decides how to word it for the user; misuse (a wrong argument type) raises.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "engine.h"
#include "gk.h"
#include "gkcache.h"
#include "gkrecipes.h"

static const char LOG_KEY = 'l';
const char gkr__options_key = 'o';
#define CACHE_MT GKR__CACHE_MT

static int push_ok(lua_State *L) {
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- hashing ------------------------------------------------------------ */

static void push_hex(lua_State *L, const unsigned char sha[32]) {
  char hex[65];
  sodium_bin2hex(hex, sizeof hex, sha, 32);
  lua_pushstring(L, hex);
}

/* gk.sha256(s) -> hex */
static int l_sha256(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  unsigned char sha[32];
  crypto_hash_sha256(sha, (const unsigned char *)s, n);
  push_hex(L, sha);
  return 1;
}

/* Reads a whole file into a malloc'd buffer; *st gets its stamp from before
 * the read, for the fast path's trace. */
static char *slurp(const char *path, size_t *len, struct stat *st_out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0) goto fail;
  *st_out = st;
  if (S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    goto fail;
  }
  size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, n = 0;
  char *buf = malloc(cap);
  if (!buf) goto fail;
  for (;;) {
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        goto fail;
      }
      buf = nb;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      free(buf);
      errno = e;
      goto fail;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  *len = n;
  return buf;
fail:;
  int e = errno;
  close(fd);
  errno = e;
  return NULL;
}

/* The trace's view of a read: its stamp, or why it failed (errno). A
 * command's output the fast path re-runs is no observation. */
static void trace_read(lua_State *L, const char *path, const char *buf, const struct stat *st) {
  int e = errno;
  gkr__trace *t = gkr__trace_get(L);
  if (t && !gkr__trace_exempt(t, path)) gkr__trace_file(t, path, buf ? st : NULL, e);
  errno = e; /* for the caller's message */
}

/* gk.sha256_file(path) -> hex | nil, message */
static int l_sha256_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t n;
  struct stat st;
  char *buf = slurp(path, &n, &st);
  trace_read(L, path, buf, &st);
  if (!buf) return gkr__fail_errno(L, "cannot read", path);
  unsigned char sha[32];
  crypto_hash_sha256(sha, (const unsigned char *)buf, n);
  free(buf);
  push_hex(L, sha);
  return 1;
}

/* ---- files -------------------------------------------------------------- */

/* gk.read(path) -> text | nil, message */
static int l_read(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t n;
  struct stat st;
  char *buf = slurp(path, &n, &st);
  trace_read(L, path, buf, &st);
  if (!buf) return gkr__fail_errno(L, "cannot read", path);
  lua_pushlstring(L, buf, n);
  free(buf);
  return 1;
}

static int fsync_dir_of(const char *path) {
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/');
  int n = slash ? snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path)
                : snprintf(dir, sizeof dir, ".");
  if (n < 0 || (size_t)n >= sizeof dir) return -1;
  if (!*dir) strcpy(dir, "/");
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

/* gk.write_atomic(path, data [, sync]) -> true | nil, message
 * Writes beside path (path.tmp.PID.N, mode 0666 less umask) and renames over
 * it: a reader sees the old content or the new, never a part. With sync, the
 * data and the rename are flushed to disk. */
static int l_write_atomic(lua_State *L) {
  static unsigned long counter;
  const char *path = luaL_checkstring(L, 1);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  int sync = lua_toboolean(L, 3);
  gkr__trace_off(gkr__trace_get(L), "it wrote a file");
  char tmp[PATH_MAX];
  int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%lu", path, (long)getpid(), ++counter);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    errno = ENAMETOOLONG;
    return gkr__fail_errno(L, "cannot write", path);
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return gkr__fail_errno(L, "cannot write", tmp);
  for (size_t off = 0; off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) goto fail;
    off += (size_t)w;
  }
  if (sync && fsync(fd) != 0) goto fail;
  if (close(fd) != 0) {
    fd = -1;
    goto fail;
  }
  fd = -1;
  if (rename(tmp, path) != 0) goto fail;
  if (sync) fsync_dir_of(path); /* best effort: the data is already safe */
  return push_ok(L);
fail:;
  int e = errno;
  if (fd >= 0) close(fd);
  unlink(tmp);
  errno = e;
  return gkr__fail_errno(L, "cannot write", path);
}

/* gk.mkdir_p(path) -> true | nil, message */
static int l_mkdir_p(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  gkr__trace_off(gkr__trace_get(L), "it created a folder");
  char buf[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) {
    errno = n ? ENAMETOOLONG : ENOENT;
    return gkr__fail_errno(L, "cannot create folder", path);
  }
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return gkr__fail_errno(L, "cannot create folder", buf);
    buf[i] = c;
  }
  struct stat st;
  if (stat(path, &st) != 0) return gkr__fail_errno(L, "cannot create folder", path);
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return gkr__fail_errno(L, "cannot create folder", path);
  }
  return push_ok(L);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* gk.listdir(path) -> { names, sorted, without . and .. } | nil, message */
static int l_listdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  DIR *d = opendir(path);
  struct stat dst;
  /* The folder's stamp, taken before the listing: it moves when an entry
   * is added, removed or renamed. */
  int sok = d && fstat(dirfd(d), &dst) == 0, derr = errno;
  gkr__trace_file(gkr__trace_get(L), path, sok ? &dst : NULL, derr);
  errno = derr;
  if (!d) return gkr__fail_errno(L, "cannot read folder", path);
  size_t n = 0, cap = 32;
  char **names = malloc(cap * sizeof *names);
  struct dirent *e;
  while (names && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (n == cap) {
      char **nn = realloc(names, (cap *= 2) * sizeof *names);
      if (!nn) break;
      names = nn;
    }
    if (!(names[n] = strdup(e->d_name))) break;
    n++;
  }
  closedir(d);
  if (!names) return luaL_error(L, "out of memory listing '%s'", path);
  qsort(names, n, sizeof *names, cmp_str);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
    free(names[i]);
  }
  free(names);
  return 1;
}

/* gk.rename(from, to) -> true | nil, message */
static int l_rename(lua_State *L) {
  const char *from = luaL_checkstring(L, 1), *to = luaL_checkstring(L, 2);
  gkr__trace_off(gkr__trace_get(L), "it renamed a file");
  if (rename(from, to) != 0) return gkr__fail_errno(L, "cannot rename", from);
  return push_ok(L);
}

/* gk.remove(path) -> true | nil, message: a file, or an empty folder. */
static int l_remove(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (unlink(path) != 0 && !(errno == EISDIR && rmdir(path) == 0) &&
      !(errno == EPERM && rmdir(path) == 0))
    return gkr__fail_errno(L, "cannot remove", path);
  return push_ok(L);
}

/* gk.stat(path) -> { type = "file"|"dir"|"other", size, mtime, stamp, settled }
 * | nil, message. mtime in seconds with the nanoseconds as the fraction;
 * stamp "size:inode:mtime_ns:ctime_ns" changes whenever the file does;
 * settled is true when it has not changed for 2 s. Follows links.
 * The fast path (fast.c) keeps of a folder only that it is one: decide
 * nothing on a folder's stamp or mtime (gk.listdir keeps its stamp). */
static int l_stat(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat st;
  int rc = stat(path, &st), e = errno;
  gkr__trace_stat(gkr__trace_get(L), path, rc == 0 ? &st : NULL, e);
  errno = e;
  if (rc != 0) return gkr__fail_errno(L, "cannot read", path);
  lua_createtable(L, 0, 3);
  lua_pushstring(L, S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "dir" : "other");
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)st.st_size);
  lua_setfield(L, -2, "size");
  lua_pushnumber(L, (lua_Number)st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9);
  lua_setfield(L, -2, "mtime");
  /* Exact stamps, as strings of integers (nanoseconds do not fit a double). */
  lua_pushfstring(L, "%I:%I:%I:%I", (lua_Integer)st.st_size, (lua_Integer)st.st_ino,
                  (lua_Integer)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
                  (lua_Integer)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec);
  lua_setfield(L, -2, "stamp");
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  /* Settled: unchanged for 2 s, so a stamp taken now cannot miss a later
   * edit on a file system with coarse time stamps ("racy git"). */
  lua_pushboolean(L, now.tv_sec - st.st_mtim.tv_sec > 2 && now.tv_sec - st.st_ctim.tv_sec > 2);
  lua_setfield(L, -2, "settled");
  return 1;
}

/* gk.readable(path) -> true | nil, message: a regular file we may read. */
static int l_readable(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat st;
  int rc = stat(path, &st), e = errno;
  /* access() answers from the mode and owner, which move ctime. */
  gkr__trace_stat(gkr__trace_get(L), path, rc == 0 ? &st : NULL, e);
  errno = e;
  if (rc != 0) return gkr__fail_errno(L, "cannot read", path);
  if (S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    return gkr__fail_errno(L, "cannot read", path);
  }
  if (access(path, R_OK) != 0) return gkr__fail_errno(L, "cannot read", path);
  return push_ok(L);
}

/* gk.realpath(path) -> absolute path without links or dots | nil, message */
static int l_realpath(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char buf[PATH_MAX];
  const char *real = realpath(path, buf);
  int e = errno;
  gkr__trace_realpath(gkr__trace_get(L), path, real);
  errno = e;
  if (!real) return gkr__fail_errno(L, "cannot resolve", path);
  lua_pushstring(L, buf);
  return 1;
}

/* gk.which(name) -> path | nil: PATH lookup, as execvp would do it. A name
 * with a slash is checked as it is. */
static int l_which(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  struct stat st;
  gkr__trace *t = gkr__trace_get(L);
  gkr__trace_env(t, "PATH", getenv("PATH"));
  if (strchr(name, '/')) {
    int rc = stat(name, &st);
    gkr__trace_stat(t, name, rc == 0 ? &st : NULL, errno);
    if (rc == 0 && S_ISREG(st.st_mode) && access(name, X_OK) == 0) {
      lua_pushstring(L, name);
      return 1;
    }
    return 0;
  }
  const char *path = getenv("PATH");
  if (!path || !*name) return 0;
  for (const char *p = path;;) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char buf[PATH_MAX];
    int n = len ? snprintf(buf, sizeof buf, "%.*s/%s", (int)len, p, name)
                : snprintf(buf, sizeof buf, "./%s", name); /* empty entry: cwd */
    int rc = n > 0 && (size_t)n < sizeof buf ? stat(buf, &st) : -1;
    /* Each place tried is an observation: a compiler installed earlier on
     * PATH changes what a build finds. */
    if (n > 0 && (size_t)n < sizeof buf) gkr__trace_stat(t, buf, rc == 0 ? &st : NULL, errno);
    if (rc == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0) {
      lua_pushstring(L, buf);
      return 1;
    }
    if (!end) return 0;
    p = end + 1;
  }
}

/* gk.cwd() -> the current folder */
static int l_cwd(lua_State *L) {
  char buf[PATH_MAX];
  if (!getcwd(buf, sizeof buf)) return gkr__fail_errno(L, "cannot read", "current folder");
  lua_pushstring(L, buf);
  return 1;
}

/* ---- process and terminal ------------------------------------------------ */

static int l_getenv(lua_State *L) {
  const char *name = luaL_checkstring(L, 1), *v = getenv(name);
  gkr__trace_env(gkr__trace_get(L), name, v);
  lua_pushstring(L, v);
  return 1;
}

static int l_pid(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)getpid());
  return 1;
}

static int l_cpus(lua_State *L) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  lua_pushinteger(L, n > 0 ? n : 1);
  return 1;
}

/* gk.isatty(fd) -> boolean; fd 2 is the log when it is stderr. */
static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

/* gk.clock() -> seconds on a monotonic clock */
static int l_clock(lua_State *L) {
  struct timespec ts;
  /* gk.clock("cpu"): this process's CPU time, for GK_BUILD_TRACE on a
   * machine too busy for wall times to mean much. */
  const char *which = luaL_optstring(L, 1, "wall");
  clock_gettime(strcmp(which, "cpu") == 0 ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + ts.tv_nsec * 1e-9);
  return 1;
}

static FILE *get_log(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &LOG_KEY);
  FILE *f = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return f ? f : stderr;
}

/* gk.eprint(text [, "trace"]): writes text as it is to the log (stderr) and
 * flushes. The fast path prints it again for a build it answers, unless it
 * is a "trace" line (GK_BUILD_TRACE's timings). */
static int l_eprint(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  const char *kind = luaL_optstring(L, 2, "");
  if (strcmp(kind, "trace") != 0) gkr__trace_log(gkr__trace_get(L), s, n);
  FILE *f = get_log(L);
  fwrite(s, 1, n, f);
  fflush(f);
  return 0;
}

/* gk.log_width() -> the log terminal's width in columns, or nil. */
static int l_log_width(lua_State *L) {
  struct winsize ws;
  if (ioctl(fileno(get_log(L)), TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return 0;
  lua_pushinteger(L, ws.ws_col);
  return 1;
}

/* gk.log_isatty() -> whether the log is a terminal (progress overwrites). */
static int l_log_isatty(lua_State *L) {
  lua_pushboolean(L, isatty(fileno(get_log(L))));
  return 1;
}

/* gk.where(level) -> "chunk:line: " of the function `level` up the stack
 * (1 = the caller of where), "" when unknown: how the DSL points an error at
 * the recipe line that caused it. */
static int l_where(lua_State *L) {
  luaL_where(L, (int)luaL_optinteger(L, 1, 1));
  return 1;
}

/* ---- the cache ---------------------------------------------------------- */

static gkc_cache *check_cache(lua_State *L) {
  gkc_cache **c = luaL_checkudata(L, 1, CACHE_MT);
  if (!*c) luaL_error(L, "cache is closed");
  return *c;
}

static int cache_fail(lua_State *L, gkc_cache *c) {
  lua_pushnil(L);
  lua_pushstring(L, gkc_errmsg(c));
  return 2;
}

/* gk.cache_open(dir) -> cache | nil, message */
static int l_cache_open(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  gkc_cache **ud = lua_newuserdatauv(L, sizeof *ud, 0);
  *ud = NULL;
  luaL_setmetatable(L, CACHE_MT);
  gk_err err;
  if (gkc_open(dir, ud, &err) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  return 1;
}

static int cache_gc(lua_State *L) {
  gkc_cache **c = luaL_checkudata(L, 1, CACHE_MT);
  gkc_close(*c);
  *c = NULL;
  return 0;
}

/* cache:lookup(key, base) -> sha256, size, from_remote | false */
static int cache_lookup(lua_State *L) {
  gkc_cache *c = check_cache(L);
  gkc_result r;
  int rc = gkc_lookup(c, luaL_checkstring(L, 2), luaL_optstring(L, 3, NULL), &r);
  if (rc < 0) return luaL_error(L, "%s", gkc_errmsg(c));
  if (rc == 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (r.remote) gkr__trace_off(gkr__trace_get(L), "it downloaded from the remote cache");
  lua_pushstring(L, r.sha256);
  lua_pushinteger(L, (lua_Integer)r.size);
  lua_pushboolean(L, r.remote);
  return 3;
}

/* cache:set_remote(url, readonly) -> true | nil, message: a shared HTTP
 * cache behind this one (gkcache.h); warnings go to the build's log. The
 * credentials and keys come from the build's options in C (engine.h). */
static int cache_set_remote(lua_State *L) {
  gkc_cache *c = check_cache(L);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &LOG_KEY);
  FILE *log = lua_touserdata(L, -1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &gkr__options_key);
  const gkr_options *bo = lua_touserdata(L, -1);
  lua_pop(L, 2);
  gkc_remote_options o = {0};
  o.readonly = lua_toboolean(L, 3);
  if (bo) {
    o.headers = bo->remote_headers;
    o.nheaders = bo->nremote_headers;
    o.netrc = bo->remote_netrc;
    o.ca_file = bo->remote_ca;
    o.client_cert = bo->remote_client_cert;
    o.client_key = bo->remote_client_key;
    o.sign_seed = bo->remote_sign_seed;
    o.trusted = bo->remote_trusted;
    o.ntrusted = bo->nremote_trusted;
  }
  if (gkc_set_remote_ex(c, luaL_checkstring(L, 2), &o, log) != 0) return cache_fail(L, c);
  return push_ok(L);
}

/* cache:store(key, base, image, { deps }) -> sha256, size | nil, message */
static int cache_store(lua_State *L) {
  gkc_cache *c = check_cache(L);
  gkr__trace_off(gkr__trace_get(L), "it compiled");
  const char *key = luaL_checkstring(L, 2), *base = luaL_optstring(L, 3, NULL);
  const char *image = luaL_checkstring(L, 4);
  luaL_checktype(L, 5, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 5);
  const char **deps = lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + 1), 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 5, i);
    deps[i - 1] = lua_tostring(L, -1);
    if (!deps[i - 1]) return luaL_error(L, "deps[%d] must be a string", (int)i);
    lua_pop(L, 1); /* the deps table keeps it alive */
  }
  gkc_result r;
  if (gkc_store(c, key, base, image, deps, (size_t)n, &r) != 0) return cache_fail(L, c);
  lua_pushstring(L, r.sha256);
  lua_pushinteger(L, (lua_Integer)r.size);
  return 2;
}

/* cache:fetch(sha256, size, dest [, sync]) -> true | nil, message */
static int cache_fetch(lua_State *L) {
  gkc_cache *c = check_cache(L);
  gkr__trace_off(gkr__trace_get(L), "it wrote an image");
  gkc_result r;
  const char *sha = luaL_checkstring(L, 2);
  luaL_argcheck(L, strlen(sha) == GKC_HEX_LEN, 2, "not a SHA-256");
  memcpy(r.sha256, sha, 65);
  r.size = (uint64_t)luaL_checkinteger(L, 3);
  if (gkc_fetch(c, &r, luaL_checkstring(L, 4), lua_toboolean(L, 5)) != 0)
    return cache_fail(L, c);
  return push_ok(L);
}

/* cache:hash_file(path) -> hex | nil, message (memoized per build) */
static int cache_hash_file(lua_State *L) {
  gkc_cache *c = check_cache(L);
  char hex[65];
  if (gkc_hash_file(c, luaL_checkstring(L, 2), hex) != 0) return cache_fail(L, c);
  lua_pushstring(L, hex);
  return 1;
}

/* cache:temp(suffix) -> a fresh path in the cache's tmp folder */
static int cache_temp(lua_State *L) {
  gkc_cache *c = check_cache(L);
  char buf[PATH_MAX];
  if (gkc_temp_path(c, luaL_optstring(L, 2, NULL), buf, sizeof buf) != 0)
    return luaL_error(L, "%s", gkc_errmsg(c));
  lua_pushstring(L, buf);
  return 1;
}

/* cache:index_open(name) / cache:index_save() -> true | nil, message: direct
 * mode's index for the build named `name` (gkcache.h). */
static int cache_index_open(lua_State *L) {
  gkc_cache *c = check_cache(L);
  if (gkc_index_open(c, luaL_checkstring(L, 2)) != 0) return cache_fail(L, c);
  return push_ok(L);
}

static int cache_index_save(lua_State *L) {
  gkc_cache *c = check_cache(L);
  if (gkc_index_save(c) != 0) return cache_fail(L, c);
  return push_ok(L);
}

/* cache:index_get(name) -> string | nil; cache:index_set(name, value) ->
 * true | nil, message: notes kept in the index for the next build. */
static int cache_index_get(lua_State *L) {
  lua_pushstring(L, gkc_index_get(check_cache(L), luaL_checkstring(L, 2)));
  return 1;
}

static int cache_index_set(lua_State *L) {
  gkc_cache *c = check_cache(L);
  if (gkc_index_set(c, luaL_checkstring(L, 2), luaL_checkstring(L, 3)) != 0)
    return cache_fail(L, c);
  return push_ok(L);
}

/* cache:file_matches(path, sha256) -> boolean: an output still as written. */
static int cache_file_matches(lua_State *L) {
  gkc_cache *c = check_cache(L);
  lua_pushboolean(L, gkc_file_matches(c, luaL_checkstring(L, 2), luaL_checkstring(L, 3)));
  return 1;
}

/* cache:file_note(path, sha256) -> true | nil, message: the build wrote it. */
static int cache_file_note(lua_State *L) {
  gkc_cache *c = check_cache(L);
  if (gkc_file_note(c, luaL_checkstring(L, 2), luaL_checkstring(L, 3)) != 0)
    return cache_fail(L, c);
  return push_ok(L);
}

/* cache:object_path(sha256) -> the object's path in the store (it may not
 * exist): for a file a compile reads in place, such as a generated input. */
static int cache_object_path(lua_State *L) {
  gkc_cache *c = check_cache(L);
  const char *sha = luaL_checkstring(L, 2);
  luaL_argcheck(L, strlen(sha) == GKC_HEX_LEN, 2, "not a SHA-256");
  char buf[PATH_MAX];
  if (gkc_object_path(c, sha, buf, sizeof buf) != 0) return luaL_error(L, "cache path too long");
  lua_pushstring(L, buf);
  return 1;
}

static int cache_dir(lua_State *L) {
  lua_pushstring(L, gkc_dir(check_cache(L)));
  return 1;
}

/* ---- the table ---------------------------------------------------------- */

/* gk.launch_check(backend, json, entries) -> nil | message: the launch a
 * section declares, read by libgk's own parser (gk_launch_parse) for each
 * entry point, so that gk build refuses what a program's launch would. */
static int l_launch_check(lua_State *L) {
  const char *backend = luaL_checkstring(L, 1), *json = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 3);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 3, i);
    const char *entry = lua_tostring(L, -1);
    gk_image_info row = {.kernel = entry, .backend = backend, .target = "", .variant = "",
                         .launch = json};
    gk_launch *parsed;
    if (gk_launch_parse(&row, entry, &parsed) != GK_OK) {
      /* The text after libgk's "launch of '...' (...): ", which names the
       * entry point the recipe's line already shows. */
      const char *msg = gk_last_error(), *after = strstr(msg, "): ");
      lua_pushstring(L, after ? after + 3 : msg);
      return 1;
    }
    gk_launch_free(parsed);
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  return 1;
}

int gkr__open_gk(lua_State *L, FILE *log) {
  lua_pushlightuserdata(L, log);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &LOG_KEY);

  static const luaL_Reg cache_methods[] = {
    {"lookup", cache_lookup}, {"store", cache_store}, {"fetch", cache_fetch},
    {"hash_file", cache_hash_file}, {"temp", cache_temp}, {"dir", cache_dir},
    {"object_path", cache_object_path},
    {"set_remote", cache_set_remote},
    {"index_open", cache_index_open}, {"index_save", cache_index_save},
    {"index_get", cache_index_get}, {"index_set", cache_index_set},
    {"file_matches", cache_file_matches}, {"file_note", cache_file_note},
    {NULL, NULL}};
  luaL_newmetatable(L, CACHE_MT);
  luaL_newlib(L, cache_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, cache_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, cache_gc);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);

  static const luaL_Reg fns[] = {
    {"launch_check", l_launch_check},
    {"sha256", l_sha256}, {"sha256_file", l_sha256_file}, {"read", l_read},
    {"write_atomic", l_write_atomic}, {"mkdir_p", l_mkdir_p}, {"listdir", l_listdir},
    {"rename", l_rename}, {"remove", l_remove}, {"stat", l_stat},
    {"readable", l_readable}, {"realpath", l_realpath}, {"which", l_which},
    {"cwd", l_cwd}, {"getenv", l_getenv}, {"pid", l_pid}, {"cpus", l_cpus}, {"isatty", l_isatty},
    {"clock", l_clock}, {"eprint", l_eprint}, {"log_isatty", l_log_isatty},
    {"log_width", l_log_width},
    {"where", l_where}, {"cache_open", l_cache_open}, {NULL, NULL}};
  luaL_newlib(L, fns);
  gkr__proc_register(L);
  gkr__json_register(L);
  gkr__fast_register(L);
  return 1;
}
