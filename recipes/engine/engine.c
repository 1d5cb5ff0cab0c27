/*
 * engine.c - runs the Lua side of `gk build` the way lua.c runs a script:
 * a fresh state with only the libraries recipes need, every call through
 * lua_pcall with a message handler, and the driver (engine/build.lua)
 * loaded from the copy embedded in the binary.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "gkrecipes.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "engine.h"
#include "gkcache.h"

/* A trimmed linit.c: no io, os, package, debug or coroutine. Recipes are
 * declarations; all they touch outside Lua goes through `gk`. */
static void open_libs(lua_State *L) {
  static const luaL_Reg libs[] = {
    {LUA_GNAME, luaopen_base},        {LUA_STRLIBNAME, luaopen_string},
    {LUA_TABLIBNAME, luaopen_table},  {LUA_MATHLIBNAME, luaopen_math},
    {LUA_UTF8LIBNAME, luaopen_utf8},  {NULL, NULL}};
  for (const luaL_Reg *l = libs; l->func; l++) {
    luaL_requiref(L, l->name, l->func, 1);
    lua_pop(L, 1);
  }
  /* The base library reads files through these; the engine loads text with
   * load(..., "t") only. */
  lua_pushnil(L);
  lua_setglobal(L, "dofile");
  lua_pushnil(L);
  lua_setglobal(L, "loadfile");
}

/* Message handler. A user error (a table with a `message` string, raised by
 * the engine for a bad recipe or a failed build) passes through as it is:
 * the user needs "recipes/x.lua:5: unknown target ...", not a Lua stack.
 * Anything else is a bug in the engine or a toolchain module and gets a
 * traceback. */
static int msgh(lua_State *L) {
  if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "message");
    int user = lua_type(L, -1) == LUA_TSTRING;
    lua_pop(L, 1);
    if (user) return 1;
  }
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* gk.embedded(name) -> source, chunkname | nil: an embedded Lua file such as
 * "toolchains/cc". gk.embedded() -> list of all embedded names. */
static int l_embedded(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    lua_newtable(L);
    for (int i = 0; gkr__embedded[i].name; i++) {
      lua_pushstring(L, gkr__embedded[i].name);
      lua_rawseti(L, -2, i + 1);
    }
    return 1;
  }
  const char *name = luaL_checkstring(L, 1);
  for (int i = 0; gkr__embedded[i].name; i++) {
    if (strcmp(gkr__embedded[i].name, name) != 0) continue;
    lua_pushlstring(L, (const char *)gkr__embedded[i].data, gkr__embedded[i].size);
    lua_pushfstring(L, "@[gk]/%s.lua", name);
    return 2;
  }
  return 0;
}

static void push_list(lua_State *L, const char *name, const char *const *v, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; v && i < n; i++) {
    lua_pushstring(L, v[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, name);
}

/* --shard, --remote-cache, --container and its lists (nil when unset). */
static void push_pipeline_options(lua_State *L, const gkr_options *o) {
  lua_pushstring(L, o->shard);
  lua_setfield(L, -2, "shard");
  lua_pushstring(L, o->remote_cache);
  lua_setfield(L, -2, "remote_cache");
  lua_pushboolean(L, o->remote_readonly);
  lua_setfield(L, -2, "remote_readonly");
  lua_pushboolean(L, o->container);
  lua_setfield(L, -2, "container");
  push_list(L, "container_images", o->container_images, o->ncontainer_images);
  push_list(L, "container_mounts", o->container_mounts, o->ncontainer_mounts);
}

/* The options as the Lua table engine/build.lua's main() takes. */
static void push_options(lua_State *L, const gkr_options *o, const char *cache) {
  lua_createtable(L, 0, 6);
  lua_pushstring(L, o->recipes_dir);
  lua_setfield(L, -2, "recipes");
  lua_pushstring(L, o->out_dir);
  lua_setfield(L, -2, "out");
  lua_pushstring(L, cache);
  lua_setfield(L, -2, "cache");
  lua_pushinteger(L, o->jobs);
  lua_setfield(L, -2, "jobs");
  lua_pushboolean(L, o->strict);
  lua_setfield(L, -2, "strict");
  lua_createtable(L, (int)o->nbackends, 0);
  for (size_t i = 0; o->backends && i < o->nbackends; i++) {
    lua_pushstring(L, o->backends[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "backends");
  lua_createtable(L, (int)o->nkernels, 0);
  for (size_t i = 0; o->kernels && i < o->nkernels; i++) {
    lua_pushstring(L, o->kernels[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "kernels");
  lua_createtable(L, (int)o->ntargets, 0);
  for (size_t i = 0; o->targets && i < o->ntargets; i++) {
    lua_pushstring(L, o->targets[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "targets");
  push_pipeline_options(L, o);
  /* Read here, not by the Lua side through gk.getenv: the fast path keeps
   * the variables a build read, and timings must not make it miss. */
  const char *trace = getenv("GK_BUILD_TRACE");
  lua_pushboolean(L, trace && *trace);
  lua_setfield(L, -2, "trace");
}

static char *error_summary(const char *msg) {
  /* A message may quote bytes from a recipe that are not UTF-8, which JSON
   * cannot carry: those become '?'. */
  char *clean = NULL;
  json_t *probe = json_string(msg);
  json_decref(probe);
  if (!probe) {
    if (!(clean = strdup(msg))) return NULL;
    for (char *p = clean; *p; p++)
      if ((unsigned char)*p >= 0x80) *p = '?';
    msg = clean;
  }
  json_t *j = json_pack("{s:b, s:s}", "ok", 0, "error", msg);
  free(clean);
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  return text;
}

/* gk.check_image(path, backend, target, format, entry_json, launch_json,
 * toolchain): true, or nil and why (gkr_options.check_image; absent when
 * it is NULL). */
static int l_check_image(lua_State *L) {
  gkr_check_fn fn = *(gkr_check_fn *)lua_touserdata(L, lua_upvalueindex(1));
  const char *path = luaL_checkstring(L, 1);
  const char *b = luaL_checkstring(L, 2), *t = luaL_checkstring(L, 3);
  gkr_image_row row = {b, t, luaL_checkstring(L, 4), luaL_checkstring(L, 5),
                       luaL_checkstring(L, 6), luaL_checkstring(L, 7)};
  char why[512] = "";
  FILE *fp = fopen(path, "rb");
  long n = -1;
  void *bytes = NULL;
  if (fp && fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0 &&
      (bytes = malloc(n ? (size_t)n : 1)) && fread(bytes, 1, (size_t)n, fp) == (size_t)n) {
    int rc = fn(bytes, (size_t)n, &row, why, sizeof why);
    free(bytes);
    fclose(fp);
    if (rc == 0) {
      lua_pushboolean(L, 1);
      return 1;
    }
    lua_pushnil(L);
    lua_pushstring(L, why);
    return 2;
  }
  free(bytes);
  if (fp) fclose(fp);
  lua_pushnil(L);
  lua_pushfstring(L, "cannot read image '%s'", path);
  return 2;
}

/* Protected part of gkr_build: everything that may raise. Stack in: the
 * options table; out: status, summary text. */
static int run_build(lua_State *L) {
  luaL_checkstack(L, 8, NULL);
  open_libs(L);
  gkr__trace_set(L, lua_touserdata(L, lua_upvalueindex(2)));
  gkr__open_gk(L, lua_touserdata(L, lua_upvalueindex(1)));
  lua_pushcfunction(L, l_embedded);
  lua_setfield(L, -2, "embedded");
  const gkr_options *o = lua_touserdata(L, lua_upvalueindex(3));
  if (o->check_image) {
    gkr_check_fn *fn = lua_newuserdatauv(L, sizeof *fn, 0);
    *fn = o->check_image;
    lua_pushcclosure(L, l_check_image, 1);
    lua_setfield(L, -2, "check_image");
  }
  lua_setglobal(L, "gk");

  lua_pushcfunction(L, l_embedded);
  lua_pushstring(L, "engine/build");
  lua_call(L, 1, 2);
  size_t len;
  const char *src = lua_tolstring(L, -2, &len);
  if (!src) return luaL_error(L, "the engine is missing from this gk binary");
  if (luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t") != LUA_OK) return lua_error(L);
  lua_call(L, 0, 1); /* the module table */
  lua_getfield(L, -1, "main");
  lua_pushvalue(L, 1);
  lua_call(L, 1, 2);
  return 2;
}

int gkr_build(const gkr_options *opts, char **summary) {
  if (summary) *summary = NULL;
  FILE *log = opts->log ? opts->log : stderr;
  char cache[4096];
  if (opts->cache_dir) {
    snprintf(cache, sizeof cache, "%s", opts->cache_dir);
  } else if (gkc_default_dir(cache, sizeof cache) != 0) {
    const char *m = "no cache folder: set HOME or GK_CACHE_DIR, or pass --cache DIR";
    fprintf(log, "gk build: %s\n", m);
    if (summary) *summary = error_summary(m);
    return GKR_FAILED;
  }

  /* A no-op build whose last run's record still holds is done here, before
   * any Lua runs (fast.c). */
  gkr__trace *trace = gkr__trace_new(opts, cache);
  if (gkr__fast_try(trace, log, summary)) {
    gkr__trace_free(trace);
    return GKR_OK;
  }

  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(log, "gk build: out of memory\n");
    gkr__trace_free(trace);
    return GKR_FAILED;
  }
  lua_pushlightuserdata(L, (void *)opts);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &gkr__options_key);
  lua_pushcfunction(L, msgh);
  lua_pushlightuserdata(L, log);
  lua_pushlightuserdata(L, trace);
  lua_pushlightuserdata(L, (void *)opts);
  lua_pushcclosure(L, run_build, 3);
  push_options(L, opts, cache);
  int status = GKR_FAILED;
  if (lua_pcall(L, 1, 2, 1) != LUA_OK) {
    /* A user error is a table with a message (and maybe a status);
     * anything else already carries a traceback. */
    const char *msg;
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "status");
      if (lua_isinteger(L, -1)) status = (int)lua_tointeger(L, -1);
      lua_pop(L, 1);
      lua_getfield(L, -1, "message");
      msg = lua_tostring(L, -1);
    } else {
      msg = lua_tostring(L, -1);
      fprintf(log, "gk build: internal error (please report it):\n");
    }
    if (!msg) msg = "unknown error";
    fprintf(log, "gk build: %s\n", msg);
    if (summary) *summary = error_summary(msg);
  } else {
    status = (int)lua_tointeger(L, -2);
    const char *text = lua_tostring(L, -1);
    if (summary && text) *summary = strdup(text);
  }
  fflush(log);
  lua_close(L);
  gkr__trace_free(trace);
  return status;
}
