/*
 * engine.h - internals of the recipe engine shared by its C files. Not API.
 */
#ifndef GKR_ENGINE_H
#define GKR_ENGINE_H

#include <stddef.h>
#include <stdio.h>

#include <lua.h>

/* A Lua file compiled into the binary by cmake/embed.cmake: "engine/build",
 * "toolchains/cc". The table ends with a zeroed row. */
typedef struct gkr__embedded_file {
  const char *name;
  const unsigned char *data;
  size_t size;
} gkr__embedded_file;
extern const gkr__embedded_file gkr__embedded[];

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

#endif
