/*
 * lproc.c - processes for the recipe engine: gk.spawn / gk.wait (several
 * compilers at once, reaped as they finish) and gk.run (one command, output
 * captured, for toolchain probes). Children are started by spawn.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "engine.h"

/* Registry key of the table pid -> true of children started by gk.spawn. */
static const char CHILDREN = 'c';

/* Reads the argv table at index idx into a NULL-terminated array whose
 * strings stay owned by the Lua table (which the caller keeps on the stack). */
static char **get_argv(lua_State *L, int idx) {
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer n = luaL_len(L, idx);
  luaL_argcheck(L, n >= 1, idx, "argv must have at least one element");
  char **argv = lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + 1), 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "argv[%d] must be a string, got %s", (int)i, luaL_typename(L, -1));
    argv[i - 1] = (char *)lua_tostring(L, -1);
    lua_pop(L, 1); /* the string stays alive: the table holds it */
  }
  argv[n] = NULL;
  return argv;
}

static const char *opt_string(lua_State *L, int idx, const char *field) {
  if (lua_isnoneornil(L, idx)) return NULL;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_getfield(L, idx, field);
  const char *s = lua_tostring(L, -1);
  lua_pop(L, 1); /* options table keeps the string alive */
  return s;
}

/* Exit status as one integer: the exit code, or 128 + signal number, plus a
 * readable form for messages. */
static void push_status(lua_State *L, int st) {
  if (WIFEXITED(st)) {
    lua_pushinteger(L, WEXITSTATUS(st));
    lua_pushfstring(L, "exit %d", WEXITSTATUS(st));
  } else if (WIFSIGNALED(st)) {
    lua_pushinteger(L, 128 + WTERMSIG(st));
    lua_pushfstring(L, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  } else {
    lua_pushinteger(L, 255);
    lua_pushstring(L, "stopped");
  }
}

static int opt_bool(lua_State *L, int idx, const char *field) {
  if (!lua_istable(L, idx)) return 0;
  lua_getfield(L, idx, field);
  int b = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return b;
}

/* gk.spawn(argv, {cwd = DIR, output = FILE, quiet = bool, rerun = bool})
 * -> pid | nil, message. The command's stdout and stderr both go to FILE
 * (truncated); with quiet, stderr goes to /dev/null. rerun: the command
 * only informs the build (git status), and the fast path may run it again
 * and compare its output rather than give up (fast.c). */
static int l_spawn(lua_State *L) {
  lua_settop(L, 2); /* argv's array goes above the arguments */
  const char *cwd = opt_string(L, 2, "cwd");
  const char *output = opt_string(L, 2, "output");
  int quiet = opt_bool(L, 2, "quiet"), rerun = opt_bool(L, 2, "rerun");
  char **argv = get_argv(L, 1);
  int fd = output ? open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)
                  : open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return gkr__fail_errno(L, "cannot create", output ? output : "/dev/null");
  int err = quiet ? open("/dev/null", O_WRONLY | O_CLOEXEC) : fd;
  pid_t pid = err < 0 ? -1 : gkr__start(argv, cwd, fd, err);
  int e = errno;
  close(fd);
  if (err >= 0 && err != fd) close(err);
  gkr__trace *t = gkr__trace_get(L);
  if (!rerun) gkr__trace_off(t, "it ran a compiler");
  else if (pid >= 0) gkr__trace_spawned(t, pid, argv, cwd, quiet, output);
  else gkr__trace_off(t, "a command it ran could not be started");
  if (pid < 0) {
    errno = e;
    return gkr__fail_errno(L, cwd && e == ENOENT && access(cwd, F_OK) != 0
                                  ? "cannot enter folder" : "cannot run",
                           cwd && e == ENOENT && access(cwd, F_OK) != 0 ? cwd : argv[0]);
  }
  lua_rawgetp(L, LUA_REGISTRYINDEX, &CHILDREN);
  lua_pushboolean(L, 1);
  lua_rawseti(L, -2, pid);
  lua_pop(L, 1);
  lua_pushinteger(L, pid);
  return 1;
}

/* gk.wait([pid]) -> pid, code, description: waits for child pid, or for any
 * child started by gk.spawn. nil, message when none is running. */
static int l_wait(lua_State *L) {
  if (lua_isinteger(L, 1)) {
    pid_t want = (pid_t)lua_tointeger(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &CHILDREN);
    if (lua_rawgeti(L, -1, want) == LUA_TNIL) {
      lua_pushnil(L);
      lua_pushfstring(L, "process %d is not running", (int)want);
      return 2;
    }
    lua_pop(L, 1);
    int st;
    while (waitpid(want, &st, 0) < 0)
      if (errno != EINTR) return gkr__fail_errno(L, "cannot wait for", "a process");
    lua_pushnil(L);
    lua_rawseti(L, -2, want);
    gkr__trace_waited(gkr__trace_get(L), want, gkr__exit_code(st));
    lua_pushinteger(L, want);
    push_status(L, st);
    return 3;
  }
  lua_rawgetp(L, LUA_REGISTRYINDEX, &CHILDREN);
  lua_pushnil(L);
  if (!lua_next(L, -2)) {
    lua_pushnil(L);
    lua_pushstring(L, "no child process is running");
    return 2;
  }
  lua_pop(L, 2);
  for (;;) {
    int st;
    pid_t pid = waitpid(-1, &st, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) return gkr__fail_errno(L, "cannot wait for", "a compiler");
    if (lua_rawgeti(L, -1, pid) == LUA_TNIL) { /* not ours: ignore */
      lua_pop(L, 1);
      continue;
    }
    lua_pop(L, 1);
    lua_pushnil(L);
    lua_rawseti(L, -2, pid);
    gkr__trace_waited(gkr__trace_get(L), pid, gkr__exit_code(st));
    lua_pushinteger(L, pid);
    push_status(L, st);
    return 3;
  }
}

/* gk.run(argv, {cwd = DIR}) -> code, stdout, stderr | nil, message.
 * Runs to completion, capturing both streams. */
static int l_run(lua_State *L) {
  lua_settop(L, 2);
  const char *cwd = opt_string(L, 2, "cwd");
  char **argv = get_argv(L, 1);
  /* Its output is not kept: a build that ran one cannot be checked later. */
  gkr__trace_off(gkr__trace_get(L), "it ran a command (gk.run)");
  int po[2], pe[2];
  if (gkr__cloexec_pipe(po) != 0) return gkr__fail_errno(L, "cannot run", argv[0]);
  if (gkr__cloexec_pipe(pe) != 0) {
    close(po[0]), close(po[1]);
    return gkr__fail_errno(L, "cannot run", argv[0]);
  }
  pid_t pid = gkr__start(argv, cwd, po[1], pe[1]);
  int e = errno;
  close(po[1]);
  close(pe[1]);
  if (pid < 0) {
    close(po[0]), close(pe[0]);
    errno = e;
    return gkr__fail_errno(L, "cannot run", argv[0]);
  }
  /* Both streams are read as they come (a full pipe would block the child),
   * so each collects its chunks in a table until the end. */
  lua_newtable(L); /* chunks of stdout */
  int t_out = lua_gettop(L);
  lua_newtable(L); /* chunks of stderr */
  int t_err = lua_gettop(L);
  int nout = 0, nerr = 0;
  struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[8192];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
        continue;
      }
      lua_pushlstring(L, buf, (size_t)n);
      lua_rawseti(L, i == 0 ? t_out : t_err, i == 0 ? ++nout : ++nerr);
    }
  }
  for (int i = 0; i < 2; i++)
    if (fds[i].fd >= 0) close(fds[i].fd);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  push_status(L, st);
  lua_pop(L, 1); /* the description: callers compare codes */
  for (int t = 0; t < 2; t++) {
    int tbl = t == 0 ? t_out : t_err, n = t == 0 ? nout : nerr;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, tbl, i);
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
  }
  return 3; /* code, stdout, stderr */
}

void gkr__proc_register(lua_State *L) {
  lua_newtable(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &CHILDREN);
  static const luaL_Reg fns[] = {
    {"spawn", l_spawn}, {"wait", l_wait}, {"run", l_run}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
