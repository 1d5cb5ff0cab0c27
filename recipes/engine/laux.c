/*
 * laux.c - helpers of the gk.* functions (lgk.c, lproc.c), below both: how
 * a primitive reports a failure the world caused, the io.open way (nil and
 * a message), so that Lua decides how to word it for the user.
 */
#include <errno.h>
#include <string.h>

#include <lua.h>

#include "engine.h"

int gkr__fail_errno(lua_State *L, const char *what, const char *subject) {
  int e = errno;
  lua_pushnil(L);
  lua_pushfstring(L, "%s '%s': %s", what, subject, strerror(e));
  return 2;
}
