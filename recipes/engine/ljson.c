/*
 * ljson.c - JSON for the recipe engine, through jansson (no JSON is written
 * by hand anywhere in gk).
 *
 *   gk.json_object(t [, order]) -> t   marks t as a JSON object; keys listed in
 *                                      `order` come first, in that order, the
 *                                      rest sorted
 *   gk.json_encode(v [, indent [, lossy]]) -> text | nil, message
 *                                      lossy: bytes of a string that is not
 *                                      UTF-8 become '?' instead of an error
 *   gk.json_decode(text) -> v | nil, message
 *   gk.null                            JSON null
 *
 * Lua tables are ambiguous: an unmarked table with keys 1..n, or an empty
 * one, is an array; an unmarked table with string keys is an object with
 * sorted keys. Sorted keys make the output independent of hash order, so the
 * same build writes the same manifest bytes.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "engine.h"

/* Registry key of the null sentinel. */
static const char NULL_KEY = 'n';

#define MAX_DEPTH 64
/* gk.json_encode's third argument: replace bytes that are not UTF-8. */
#define LOSSY_ARG 3

static int l_object(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_newtable(L);
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "__json_object");
  if (lua_istable(L, 2)) {
    lua_pushvalue(L, 2);
    lua_setfield(L, -2, "__json_order");
  }
  lua_setmetatable(L, 1);
  lua_settop(L, 1);
  return 1;
}

static int is_null(lua_State *L, int idx) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &NULL_KEY);
  int r = lua_rawequal(L, idx, -1);
  lua_pop(L, 1);
  return r;
}

static json_t *encode(lua_State *L, int idx, int depth);

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Adds field k of the table at idx to obj (nil fields are left out). */
static void add_field(lua_State *L, json_t *obj, int idx, const char *k, int depth) {
  lua_getfield(L, idx, k);
  if (!lua_isnil(L, -1)) json_object_set_new(obj, k, encode(L, lua_gettop(L), depth + 1));
  lua_pop(L, 1);
}

static json_t *encode_object(lua_State *L, int idx, int depth) {
  json_t *obj = json_object();
  /* Ordered keys first, from the mark's order list. */
  if (lua_getmetatable(L, idx)) {
    if (lua_getfield(L, -1, "__json_order") == LUA_TTABLE) {
      lua_Integer n = luaL_len(L, -1);
      for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, -1, i);
        const char *k = lua_tostring(L, -1);
        if (k && !json_object_get(obj, k)) add_field(L, obj, idx, k, depth);
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 2);
  }
  /* Then the remaining keys, sorted. */
  size_t n = 0, cap = 16;
  const char **keys = malloc(cap * sizeof *keys);
  lua_pushnil(L);
  while (keys && lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      free(keys);
      json_decref(obj);
      luaL_error(L, "cannot encode a table with a %s key as a JSON object",
                 luaL_typename(L, -1));
    }
    const char *k = lua_tostring(L, -1);
    if (json_object_get(obj, k)) continue;
    if (n == cap) {
      const char **nk = realloc(keys, (cap *= 2) * sizeof *keys);
      if (!nk) break;
      keys = nk;
    }
    keys[n++] = k; /* the table keeps the string alive */
  }
  if (!keys) luaL_error(L, "out of memory encoding JSON");
  qsort(keys, n, sizeof *keys, cmp_str);
  for (size_t i = 0; i < n; i++) add_field(L, obj, idx, keys[i], depth);
  free(keys);
  return obj;
}

static json_t *encode(lua_State *L, int idx, int depth) {
  if (depth > MAX_DEPTH) luaL_error(L, "cannot encode JSON nested deeper than %d", MAX_DEPTH);
  switch (lua_type(L, idx)) {
  case LUA_TNIL:
    return json_null();
  case LUA_TBOOLEAN:
    return json_boolean(lua_toboolean(L, idx));
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) return json_integer((json_int_t)lua_tointeger(L, idx));
    return json_real(lua_tonumber(L, idx));
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    json_t *j = json_stringn(s, len);
    if (!j && lua_toboolean(L, LOSSY_ARG)) {
      /* Messages and paths for a person: show what can be shown. */
      luaL_Buffer b;
      char *p = luaL_buffinitsize(L, &b, len);
      for (size_t i = 0; i < len; i++) p[i] = (unsigned char)s[i] >= 0x80 ? '?' : s[i];
      luaL_pushresultsize(&b, len);
      j = json_stringn(lua_tostring(L, -1), len);
      lua_pop(L, 1);
    }
    if (!j) luaL_error(L, "cannot encode a string that is not UTF-8 as JSON");
    return j;
  }
  case LUA_TTABLE: {
    int marked = 0;
    if (lua_getmetatable(L, idx)) {
      lua_getfield(L, -1, "__json_object");
      marked = lua_toboolean(L, -1);
      lua_pop(L, 2);
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    int array = !marked;
    if (array) { /* every key must be 1..n */
      lua_pushnil(L);
      while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > n) {
          array = 0;
          lua_pop(L, 1);
          break;
        }
      }
    }
    if (!array) return encode_object(L, idx, depth);
    json_t *arr = json_array();
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, i);
      json_array_append_new(arr, encode(L, lua_gettop(L), depth + 1));
      lua_pop(L, 1);
    }
    return arr;
  }
  default:
    if (is_null(L, idx)) return json_null();
    return luaL_error(L, "cannot encode a %s value as JSON", luaL_typename(L, idx)), NULL;
  }
}

static int l_encode(lua_State *L) {
  luaL_checkany(L, 1);
  lua_settop(L, LOSSY_ARG); /* encode() reads the lossy flag at a fixed slot */
  lua_Integer indent = luaL_optinteger(L, 2, 0);
  json_t *j = encode(L, 1, 0);
  size_t flags = JSON_ENCODE_ANY | (indent > 0 ? JSON_INDENT((int)indent) : JSON_COMPACT);
  char *text = json_dumps(j, flags);
  json_decref(j);
  if (!text) {
    lua_pushnil(L);
    lua_pushstring(L, "cannot encode JSON");
    return 2;
  }
  lua_pushstring(L, text);
  free(text);
  return 1;
}

static void decode(lua_State *L, json_t *j) {
  luaL_checkstack(L, 4, "JSON nested too deep");
  switch (json_typeof(j)) {
  case JSON_OBJECT: {
    lua_newtable(L);
    int t = lua_gettop(L);
    lua_newtable(L); /* key order, so re-encoding keeps it */
    int order = lua_gettop(L);
    const char *k;
    json_t *v;
    lua_Integer i = 0;
    json_object_foreach(j, k, v) {
      decode(L, v);
      lua_setfield(L, t, k);
      lua_pushstring(L, k);
      lua_rawseti(L, order, ++i);
    }
    lua_pushcfunction(L, l_object);
    lua_pushvalue(L, t);
    lua_pushvalue(L, order);
    lua_call(L, 2, 0);
    lua_settop(L, t);
    break;
  }
  case JSON_ARRAY: {
    lua_createtable(L, (int)json_array_size(j), 0);
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v) {
      decode(L, v);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    break;
  }
  case JSON_STRING:
    lua_pushlstring(L, json_string_value(j), json_string_length(j));
    break;
  case JSON_INTEGER:
    lua_pushinteger(L, (lua_Integer)json_integer_value(j));
    break;
  case JSON_REAL:
    lua_pushnumber(L, json_real_value(j));
    break;
  case JSON_TRUE:
  case JSON_FALSE:
    lua_pushboolean(L, json_is_true(j));
    break;
  case JSON_NULL:
    lua_rawgetp(L, LUA_REGISTRYINDEX, &NULL_KEY);
    break;
  }
}

static int l_decode(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  json_error_t e;
  json_t *j = json_loadb(text, len, JSON_DECODE_ANY, &e);
  if (!j) {
    lua_pushnil(L);
    lua_pushfstring(L, "line %d: %s", e.line, e.text);
    return 2;
  }
  decode(L, j);
  json_decref(j);
  return 1;
}

void gkr__json_register(lua_State *L) {
  lua_newuserdatauv(L, 0, 0); /* a unique value for null */
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &NULL_KEY);
  lua_setfield(L, -2, "null");
  static const luaL_Reg fns[] = {{"json_object", l_object},
                                 {"json_encode", l_encode},
                                 {"json_decode", l_decode},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
