/*
 * launch.c - a GPU row's `launch` JSON (docs/kernels.md, "Launching on
 * GPUs"), parsed once into a gk_launch and evaluated for each call: the
 * one evaluator of the count-expression grammar. gk build checks every
 * recipe's launch with it, the loader launches with it, and the tests and
 * benchmarks that drive real GPUs use it through gk.h.
 *
 * The launch text comes from an archive, an untrusted file. JSON is read
 * with jansson (the CLI's JSON library already; a hand-written reader
 * would be a second parser of untrusted text to fuzz and keep). Every
 * count expression is compiled at parse time into a short postfix program
 * whose names are resolved to parameter slots, so a launch that parsed
 * can only fail at run time on the values of the call: overflow, division
 * by a number <= 0 (or of a negative one), a device property the device
 * does not report. Lengths, nesting and the program's size are bounded.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

#define EXPR_MAX_LEN 255  /* bytes of one count expression */
#define EXPR_MAX_DEPTH 32 /* nested parentheses */
#define EXPR_MAX_OPS 128  /* postfix operations (and stack slots) */
#define NAME_MAX_LEN 31

enum { OP_K, OP_PARAM, OP_DEV, OP_ADD, OP_SUB, OP_MUL, OP_DIV };

/* The device properties an expression may name (gk.h), in the order of
 * dev_value(). */
static const char *const DEV_NAMES[] = {"dev.compute_units", "dev.max_threads"};

typedef struct op {
  uint8_t op, idx;
  int64_t k;
} op;

typedef struct expr {
  int n;
  op ops[EXPR_MAX_OPS];
  char text[EXPR_MAX_LEN + 1];
} expr;

/* How a parameter reaches the kernel. */
enum { P_CUDA, P_BUFFER, P_U32, P_I32, P_F32 };

typedef struct param {
  char name[NAME_MAX_LEN + 1];
  gk_arg_type type;
  uint8_t kind;
  uint32_t offset; /* scalars of buffer backends: offset in the block */
} param;

struct gk_launch {
  gk_backend backend;
  char what[200]; /* "launch of 'qmatmul' (qmatmul bits=4 cuda sm_86)" */
  uint32_t block[3];
  expr grid[3];
  uint32_t shared;
  int nparams, nbuffers;
  param p[GK_LAUNCH_MAX_PARAMS];
  uint32_t scalar_size;
};

static const char *type_name(gk_arg_type t) {
  switch (t) {
  case GK_ARG_PTR: return "ptr";
  case GK_ARG_I64: return "i64";
  case GK_ARG_I32: return "i32";
  case GK_ARG_F32: return "f32";
  }
  return "an unknown type";
}

/* ---- count expressions: compiled by recursive descent, run as postfix --- */

typedef struct cc {
  const char *s, *p;
  const gk_launch *L;
  expr *e;
  int depth;
  char why[160];
} cc;

static int cfail(cc *c, const char *fmt, ...) GK__PRINTF(2, 3);
static int cfail(cc *c, const char *fmt, ...) {
  if (!c->why[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static void skip(cc *c) {
  while (*c->p == ' ' || *c->p == '\t') c->p++;
}

static int emit(cc *c, int o, int idx, int64_t k) {
  if (c->e->n >= EXPR_MAX_OPS) return cfail(c, "more than %d operations", EXPR_MAX_OPS);
  c->e->ops[c->e->n++] = (op){(uint8_t)o, (uint8_t)idx, k};
  return 0;
}

static int is_alpha(int ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_'; }
static int is_digit(int ch) { return ch >= '0' && ch <= '9'; }

static int sum(cc *c);

static int factor(cc *c) {
  skip(c);
  const char *start = c->p;
  if (*c->p == '(') {
    if (++c->depth > EXPR_MAX_DEPTH)
      return cfail(c, "parentheses nested deeper than %d", EXPR_MAX_DEPTH);
    c->p++;
    if (sum(c) != 0) return -1;
    skip(c);
    if (*c->p != ')') return cfail(c, "missing ')' at offset %d", (int)(c->p - c->s));
    c->p++;
    c->depth--;
    return 0;
  }
  if (is_digit(*c->p)) {
    int64_t v = 0;
    while (is_digit(*c->p)) {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *c->p - '0', &v))
        return cfail(c, "number past 64 bits at offset %d", (int)(start - c->s));
      c->p++;
    }
    return emit(c, OP_K, 0, v);
  }
  if (!is_alpha(*c->p))
    return cfail(c, *c->p ? "expected a number, a name or '(' at offset %d"
                          : "unexpected end at offset %d",
                 (int)(c->p - c->s));
  while (is_alpha(*c->p) || is_digit(*c->p)) c->p++;
  if (c->p - start == 3 && memcmp(start, "dev", 3) == 0 && *c->p == '.') {
    c->p++;
    while (is_alpha(*c->p) || is_digit(*c->p)) c->p++;
  }
  size_t len = (size_t)(c->p - start);
  for (size_t i = 0; i < sizeof DEV_NAMES / sizeof DEV_NAMES[0]; i++)
    if (strlen(DEV_NAMES[i]) == len && memcmp(DEV_NAMES[i], start, len) == 0)
      return emit(c, OP_DEV, (int)i, 0);
  for (int i = 0; i < c->L->nparams; i++) {
    const param *q = &c->L->p[i];
    if (strlen(q->name) != len || memcmp(q->name, start, len) != 0) continue;
    if (q->type != GK_ARG_I64 && q->type != GK_ARG_I32)
      return cfail(c, "'%s' is %s, not an integer", q->name, type_name(q->type));
    return emit(c, OP_PARAM, i, 0);
  }
  return cfail(c, "unknown name '%.*s' (not an integer parameter, nor dev.compute_units or "
               "dev.max_threads)", (int)(len > 40 ? 40 : len), start);
}

static int product(cc *c) {
  if (factor(c) != 0) return -1;
  for (;;) {
    skip(c);
    char o = *c->p;
    if (o != '*' && o != '/') return 0;
    c->p++;
    if (factor(c) != 0 || emit(c, o == '*' ? OP_MUL : OP_DIV, 0, 0) != 0) return -1;
  }
}

static int sum(cc *c) {
  if (product(c) != 0) return -1;
  for (;;) {
    skip(c);
    char o = *c->p;
    if (o != '+' && o != '-') return 0;
    c->p++;
    if (product(c) != 0 || emit(c, o == '+' ? OP_ADD : OP_SUB, 0, 0) != 0) return -1;
  }
}

/* Compiles `text` against L's parameters. 0, or -1 with why. */
static int compile(const gk_launch *L, const char *text, expr *e, char *why, size_t why_size) {
  memset(e, 0, sizeof *e);
  size_t n = strlen(text);
  if (n > EXPR_MAX_LEN) {
    snprintf(why, why_size, "count expression of %zu bytes (at most %d)", n, EXPR_MAX_LEN);
    return -1;
  }
  memcpy(e->text, text, n + 1);
  cc c = {.s = e->text, .p = e->text, .L = L, .e = e};
  if (sum(&c) == 0) {
    skip(&c);
    if (*c.p) cfail(&c, "unexpected character at offset %d", (int)(c.p - c.s));
  }
  if (c.why[0]) {
    snprintf(why, why_size, "count expression '%s': %s", e->text, c.why);
    return -1;
  }
  return 0;
}

/* Runs e. 0, or -1 with why. The stack never outgrows the program. */
static int run(const gk_launch *L, const expr *e, const int64_t *ints,
               const gk_device_limits *lim, int64_t *out, char *why, size_t why_size) {
  int64_t st[EXPR_MAX_OPS];
  int sp = 0;
  for (int i = 0; i < e->n; i++) {
    const op *o = &e->ops[i];
    int64_t a, b, r = 0;
    switch (o->op) {
    case OP_K: st[sp++] = o->k; continue;
    case OP_PARAM: st[sp++] = ints[o->idx]; continue;
    case OP_DEV:
      r = o->idx == 0 ? lim->compute_units : lim->max_threads;
      if (r <= 0) {
        snprintf(why, why_size, "count expression '%s': the device does not report %s",
                 e->text, DEV_NAMES[o->idx]);
        return -1;
      }
      st[sp++] = r;
      continue;
    }
    b = st[--sp];
    a = st[--sp];
    int bad = 0;
    switch (o->op) {
    case OP_ADD: bad = __builtin_add_overflow(a, b, &r); break;
    case OP_SUB: bad = __builtin_sub_overflow(a, b, &r); break;
    case OP_MUL: bad = __builtin_mul_overflow(a, b, &r); break;
    default:
      if (b <= 0 || a < 0) {
        snprintf(why, why_size, "count expression '%s': division of %lld by %lld (the "
                 "divisor must be > 0, the dividend >= 0)", e->text, (long long)a, (long long)b);
        return -1;
      }
      r = a / b + (a % b != 0); /* rounds up, without the overflow of a + b - 1 */
    }
    if (bad) {
      snprintf(why, why_size, "count expression '%s' overflows 64 bits", e->text);
      return -1;
    }
    st[sp++] = r;
  }
  (void)L;
  *out = st[0];
  return 0;
}

/* ---- parsing the JSON ---------------------------------------------------- */

static int bad(const gk_launch *L, const char *fmt, ...) GK__PRINTF(2, 3);
static int bad(const gk_launch *L, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return gk__set_last_error(GK_ECORRUPT, "%s: %s", L->what, msg);
}

static int name_ok(const char *s, size_t len) {
  if (len == 0 || len > NAME_MAX_LEN || !is_alpha((unsigned char)s[0])) return 0;
  for (size_t i = 1; i < len; i++)
    if (!is_alpha((unsigned char)s[i]) && !is_digit((unsigned char)s[i])) return 0;
  return 1;
}

static int add_param(gk_launch *L, const char *name, size_t len, gk_arg_type t, int kind,
                     uint32_t offset) {
  if (L->nparams >= GK_LAUNCH_MAX_PARAMS)
    return bad(L, "more than %d parameters", GK_LAUNCH_MAX_PARAMS);
  if (!name_ok(name, len))
    return bad(L, "parameter name '%.*s' is not an identifier of at most %d characters",
               (int)(len > 40 ? 40 : len), name, NAME_MAX_LEN);
  for (int i = 0; i < L->nparams; i++)
    if (strlen(L->p[i].name) == len && memcmp(L->p[i].name, name, len) == 0)
      return bad(L, "parameter '%.*s' is declared twice", (int)len, name);
  param *p = &L->p[L->nparams++];
  memcpy(p->name, name, len);
  p->name[len] = '\0';
  p->type = t;
  p->kind = (uint8_t)kind;
  p->offset = offset;
  return GK_OK;
}

/* Three integers in 1..max: block, local_size, workgroup_size. */
static int read_block(gk_launch *L, json_t *o, const char *key, uint32_t max) {
  json_t *b = json_object_get(o, key);
  if (json_array_size(b) != 3) return bad(L, "'%s' must be an array of 3 numbers", key);
  uint64_t total = 1;
  for (int d = 0; d < 3; d++) {
    json_t *v = json_array_get(b, (size_t)d);
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max)
      return bad(L, "%s[%d] must be a number in 1..%u", key, d, max);
    L->block[d] = (uint32_t)json_integer_value(v);
    total *= L->block[d];
  }
  if (total > max) return bad(L, "'%s' has %llu threads; at most %u", key,
                              (unsigned long long)total, max);
  return GK_OK;
}

/* Three counts: numbers >= 0 or expressions (compiled once the parameters
 * are known). */
static int read_counts(gk_launch *L, json_t *o, const char *key) {
  json_t *g = json_object_get(o, key);
  if (json_array_size(g) != 3) return bad(L, "'%s' must be an array of 3 counts", key);
  for (int d = 0; d < 3; d++) {
    json_t *v = json_array_get(g, (size_t)d);
    char text[32], why[400];
    const char *t;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
      snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
      t = text;
    } else if (json_is_string(v)) {
      t = json_string_value(v);
      if (strlen(t) != json_string_length(v)) return bad(L, "%s[%d] holds a NUL byte", key, d);
    } else {
      return bad(L, "%s[%d] must be a count >= 0 or a count expression", key, d);
    }
    if (compile(L, t, &L->grid[d], why, sizeof why) != 0) return bad(L, "%s[%d]: %s", key, d, why);
  }
  return GK_OK;
}

/* The most shared memory (static + dynamic) any GPU of the backend gives
 * one block: CUDA's opt-in limit of sm_90 and sm_100, 227 KB (sm_80 163
 * KB, sm_86/89/120 99 KB, sm_75 64 KB); AMD's LDS of gfx1250, 320 KB (64
 * KB on most, 160 on gfx950). A `shared` above it can never launch, so the
 * parse refuses it, and gk build with it; what one device allows is
 * checked when a module is loaded on it. */
#define SHARED_MAX_CUDA 232448
#define SHARED_MAX_ROCM 327680

/* cuda, rocm: params ["x:ptr", "m:i64", ...]. */
static int read_cuda(gk_launch *L, json_t *o) {
  int rc;
  if ((rc = read_block(L, o, "block", 1024)) != GK_OK) return rc;
  json_t *s = json_object_get(o, "shared"), *ps = json_object_get(o, "params");
  int cuda = L->backend == GK_BACKEND_CUDA;
  json_int_t max = cuda ? SHARED_MAX_CUDA : SHARED_MAX_ROCM;
  if (!json_is_integer(s) || json_integer_value(s) < 0)
    return bad(L, "'shared' must be a number of bytes");
  if (json_integer_value(s) > max)
    return bad(L, "'shared' is %lld bytes, more than any %s GPU gives one block (%lld, %s); "
               "make it smaller", (long long)json_integer_value(s), cuda ? "NVIDIA" : "AMD",
               (long long)max, cuda ? "sm_90 and sm_100 opted in" : "gfx1250's LDS");
  L->shared = (uint32_t)json_integer_value(s);
  if (!json_is_array(ps)) return bad(L, "'params' must be an array of \"name:type\"");
  static const struct { const char *n; gk_arg_type t; } types[] = {
      {"ptr", GK_ARG_PTR}, {"i64", GK_ARG_I64}, {"i32", GK_ARG_I32}, {"f32", GK_ARG_F32}};
  for (size_t i = 0; i < json_array_size(ps); i++) {
    const char *p = json_string_value(json_array_get(ps, i));
    const char *colon = p ? strchr(p, ':') : NULL;
    int t = -1;
    for (int k = 0; colon && k < 4; k++)
      if (strcmp(colon + 1, types[k].n) == 0) t = k;
    if (t < 0)
      return bad(L, "params[%zu] '%.60s' is not NAME:TYPE with TYPE ptr, i64, i32 or f32", i,
                 p ? p : "(not a string)");
    if ((rc = add_param(L, p, (size_t)(colon - p), types[t].t, P_CUDA, 0)) != GK_OK) return rc;
  }
  return read_counts(L, o, "grid");
}

/* vulkan, wgsl, metal: buffers, then the scalars' block. `skip_field` and
 * `skip_value` name the entry of the buffer list that is the block itself
 * (wgsl: type "uniform"; metal: access "bytes"). */
static int read_buffers(gk_launch *L, json_t *o, const char *list, const char *skip_field,
                        const char *skip_value, const char *scalars) {
  int rc;
  json_t *bs = json_object_get(o, list), *ss = json_object_get(o, scalars);
  if (!json_is_array(bs)) return bad(L, "'%s' must be an array of objects", list);
  for (size_t i = 0; i < json_array_size(bs); i++) {
    json_t *b = json_array_get(bs, i);
    const char *name = json_string_value(json_object_get(b, "name"));
    if (!json_is_object(b) || !name) return bad(L, "%s[%zu] must be an object with a name", list, i);
    const char *sv = skip_field ? json_string_value(json_object_get(b, skip_field)) : NULL;
    if (sv && strcmp(sv, skip_value) == 0) continue;
    if ((rc = add_param(L, name, strlen(name), GK_ARG_PTR, P_BUFFER, 0)) != GK_OK) return rc;
    L->nbuffers++;
  }
  if (ss && !json_is_array(ss)) return bad(L, "'%s' must be an array of objects", scalars);
  uint64_t used = 0; /* 4-byte words of the block */
  for (size_t i = 0; i < json_array_size(ss); i++) {
    json_t *s = json_array_get(ss, i), *off = json_object_get(s, "offset");
    const char *name = json_string_value(json_object_get(s, "name"));
    const char *type = json_string_value(json_object_get(s, "type"));
    if (!json_is_object(s) || !name || !type || !json_is_integer(off))
      return bad(L, "%s[%zu] must be an object with name, offset and type", scalars, i);
    json_int_t at = json_integer_value(off);
    if (at < 0 || at % 4 || at + 4 > GK_LAUNCH_MAX_SCALAR_BYTES)
      return bad(L, "%s[%zu] '%s': offset %lld is not a multiple of 4 below %d", scalars, i,
                 name, (long long)at, GK_LAUNCH_MAX_SCALAR_BYTES);
    if (used >> (at / 4) & 1) return bad(L, "%s[%zu] '%s' overlaps another at offset %lld",
                                         scalars, i, name, (long long)at);
    used |= 1ull << (at / 4);
    int kind;
    gk_arg_type t;
    if (strcmp(type, "u32") == 0) kind = P_U32, t = GK_ARG_I64;
    else if (strcmp(type, "i32") == 0) kind = P_I32, t = GK_ARG_I32;
    else if (strcmp(type, "f32") == 0) kind = P_F32, t = GK_ARG_F32;
    else return bad(L, "%s[%zu] '%s': type '%.20s' is not u32, i32 or f32", scalars, i, name, type);
    if ((rc = add_param(L, name, strlen(name), t, kind, (uint32_t)at)) != GK_OK) return rc;
    if ((uint32_t)at + 4 > L->scalar_size) L->scalar_size = (uint32_t)at + 4;
  }
  return GK_OK;
}

static int read_launch(gk_launch *L, json_t *o) {
  int rc;
  switch (L->backend) {
  case GK_BACKEND_CUDA:
  case GK_BACKEND_ROCM: return read_cuda(L, o);
  case GK_BACKEND_VULKAN:
    if ((rc = read_block(L, o, "local_size", 1024)) != GK_OK ||
        (rc = read_buffers(L, o, "bindings", NULL, NULL, "push_constants")) != GK_OK)
      return rc;
    return read_counts(L, o, "groups");
  case GK_BACKEND_WGSL:
    if ((rc = read_block(L, o, "workgroup_size", 1024)) != GK_OK ||
        (rc = read_buffers(L, o, "bindings", "type", "uniform", "params")) != GK_OK)
      return rc;
    return read_counts(L, o, "groups");
  case GK_BACKEND_METAL:
    if ((rc = read_block(L, o, "threads_per_threadgroup", 1024)) != GK_OK ||
        (rc = read_buffers(L, o, "buffers", "access", "bytes", "params")) != GK_OK)
      return rc;
    return read_counts(L, o, "groups");
  default: return bad(L, "the %s backend has no launch", gk_backend_name(L->backend));
  }
}

GK_API int gk_launch_parse(const gk_image_info *row, const char *entry, gk_launch **out) {
  if (out) *out = NULL;
  if (!row || !out || !row->backend || !row->launch)
    return gk__set_last_error(GK_EINVAL, "gk_launch_parse: %s is NULL",
                              !row ? "row" : !out ? "out" : !row->backend ? "row->backend"
                                                                          : "row->launch");
  gk_backend b = gk_backend_from_name(row->backend);
  if (b == GK_BACKEND_NONE || b == GK_BACKEND_CPU)
    return gk__set_last_error(GK_EINVAL, "gk_launch_parse: %s rows have no launch%s",
                              row->backend, b == GK_BACKEND_CPU ? " (call the function)" : "");
  gk_launch *L = calloc(1, sizeof *L);
  if (!L) return gk__set_last_error(GK_ENOMEM, "out of memory parsing a launch");
  L->backend = b;
  snprintf(L->what, sizeof L->what, "launch of '%.60s' (%.60s%s%.40s %s %.40s)",
           entry ? entry : row->kernel ? row->kernel : "?", row->kernel ? row->kernel : "?",
           row->variant && *row->variant ? " " : "", row->variant ? row->variant : "",
           row->backend, row->target ? row->target : "");
  json_error_t jerr;
  json_t *root = json_loads(row->launch, JSON_REJECT_DUPLICATES, &jerr);
  int rc;
  if (!json_is_object(root)) {
    rc = root ? bad(L, "the launch is not a JSON object")
              : bad(L, "the launch is not JSON: %s (at byte %d)", jerr.text, jerr.position);
  } else {
    json_t *o = root, *per = entry ? json_object_get(root, entry) : NULL;
    if (json_is_object(per)) o = per;
    rc = read_launch(L, o);
  }
  json_decref(root);
  if (rc != GK_OK) {
    free(L);
    return rc;
  }
  gk__clear_last_error();
  *out = L;
  return GK_OK;
}

GK_API void gk_launch_free(gk_launch *L) { free(L); }

GK_API size_t gk_launch_nparams(const gk_launch *L) { return L ? (size_t)L->nparams : 0; }

GK_API int gk_launch_param(const gk_launch *L, size_t i, const char **name, gk_arg_type *type) {
  if (!L) return GK_EINVAL;
  if (i >= (size_t)L->nparams) return GK_ERANGE;
  if (name) *name = L->p[i].name;
  if (type) *type = L->p[i].type;
  return GK_OK;
}

/* ---- limits and evaluation ------------------------------------------------ */

GK_API int gk_device_limits_known(const gk_device *dev, gk_device_limits *out) {
  if (!dev || !out) return GK_EINVAL;
  gk_device_limits l = {0, 1024, {2147483647u, 2147483647u, 2147483647u}};
  switch (dev->backend) {
  case GK_BACKEND_CUDA: l.max_groups[1] = l.max_groups[2] = 65535; break;
  case GK_BACKEND_ROCM:
  case GK_BACKEND_METAL: break;
  case GK_BACKEND_VULKAN: /* the minimums the specification guarantees */
    l.max_threads = 128;
    l.max_groups[0] = l.max_groups[1] = l.max_groups[2] = 65535;
    break;
  case GK_BACKEND_WGSL: /* WebGPU's default limits */
    l.max_threads = 256;
    l.max_groups[0] = l.max_groups[1] = l.max_groups[2] = 65535;
    break;
  default: return GK_EINVAL;
  }
  *out = l;
  return GK_OK;
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}

static int signature(const gk_launch *L, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < L->nparams && n < size; i++)
    n += (size_t)snprintf(buf + n, size - n, "%s%s:%s", i ? ", " : "", L->p[i].name,
                          type_name(L->p[i].type));
  return 0;
}

GK_API int gk_launch_eval(const gk_launch *L, const gk_device_limits *lim, const gk_arg *args,
                          size_t nargs, gk_launch_dims *out) {
  if (!L || !out || (nargs && !args))
    return gk__set_last_error(GK_EINVAL, "gk_launch_eval: %s is NULL",
                              !L ? "the launch" : !out ? "out" : "args");
  gk_device_limits known;
  if (!lim) {
    gk_device d = {.backend = L->backend};
    gk_device_limits_known(&d, &known);
    lim = &known;
  }
  if (nargs != (size_t)L->nparams) {
    char sig[600];
    signature(L, sig, sizeof sig);
    return gk__set_last_error(GK_EINVAL, "%s: %zu values given for its %d parameters (%s)",
                              L->what, nargs, L->nparams, sig);
  }
  gk_launch_dims d;
  memset(&d, 0, sizeof d);
  int64_t ints[GK_LAUNCH_MAX_PARAMS] = {0};
  for (int i = 0; i < L->nparams; i++) {
    const param *p = &L->p[i];
    const gk_arg *a = &args[i];
    if (a->type != p->type)
      return gk__set_last_error(GK_EINVAL, "%s: parameter %d '%s' is %s; the value given is %s",
                                L->what, i, p->name, type_name(p->type), type_name(a->type));
    if (p->type == GK_ARG_I64) ints[i] = a->v.i64;
    if (p->type == GK_ARG_I32) ints[i] = a->v.i32;
    switch (p->kind) {
    case P_U32:
      if (a->v.i64 < 0 || a->v.i64 > (int64_t)UINT32_MAX)
        return gk__set_last_error(GK_EINVAL, "%s: parameter %d '%s' is passed as u32; %lld "
                                  "does not fit", L->what, i, p->name, (long long)a->v.i64);
      put32(d.scalars + p->offset, (uint32_t)a->v.i64);
      break;
    case P_I32: put32(d.scalars + p->offset, (uint32_t)a->v.i32); break;
    case P_F32: {
      uint32_t bits;
      memcpy(&bits, &a->v.f32, 4);
      put32(d.scalars + p->offset, bits);
      break;
    }
    }
  }
  uint64_t threads = (uint64_t)L->block[0] * L->block[1] * L->block[2];
  if (lim->max_threads > 0 && threads > (uint64_t)lim->max_threads)
    return gk__set_last_error(GK_EINVAL, "%s: blocks of %llu threads; the device runs at most %lld",
                              L->what, (unsigned long long)threads, (long long)lim->max_threads);
  for (int k = 0; k < 3; k++) {
    int64_t v;
    char why[400];
    if (run(L, &L->grid[k], ints, lim, &v, why, sizeof why) != 0)
      return gk__set_last_error(GK_EINVAL, "%s: grid[%d]: %s", L->what, k, why);
    uint64_t max = lim->max_groups[k] ? lim->max_groups[k] : 1;
    /* An AQL packet counts its grid in work-items, in 32 bits. */
    if (L->backend == GK_BACKEND_ROCM && max > UINT32_MAX / L->block[k])
      max = UINT32_MAX / L->block[k];
    d.grid[k] = v < 1 ? 1 : (uint64_t)v > max ? (uint32_t)max : (uint32_t)v;
    d.block[k] = L->block[k];
  }
  d.shared = L->shared;
  d.nbuffers = (uint32_t)L->nbuffers;
  d.scalar_size = L->scalar_size;
  gk__clear_last_error();
  *out = d;
  return GK_OK;
}

/* ---- for the backends ----------------------------------------------------- */

gk_backend gk__launch_backend(const gk_launch *L) { return L->backend; }
const char *gk__launch_what(const gk_launch *L) { return L->what; }
uint32_t gk__launch_shared(const gk_launch *L) { return L->shared; }

int gk__launch_args_from_scalars(const gk_launch *L, const void *bytes, size_t size,
                                 gk_arg *args) {
  const unsigned char *b = bytes;
  if (size != L->scalar_size || (size && !bytes))
    return gk__set_last_error(GK_EINVAL, "%s: %zu bytes of scalars given; the row's block is %u",
                              L->what, size, L->scalar_size);
  for (int i = 0; i < L->nparams; i++) {
    const param *p = &L->p[i];
    uint32_t w = 0;
    if (p->kind != P_BUFFER && p->kind != P_CUDA)
      w = b[p->offset] | (uint32_t)b[p->offset + 1] << 8 | (uint32_t)b[p->offset + 2] << 16 |
          (uint32_t)b[p->offset + 3] << 24;
    switch (p->kind) {
    case P_U32: args[i] = gk_arg_i64(w); break;
    case P_I32: args[i] = gk_arg_i32((int32_t)w); break;
    case P_F32: {
      float f;
      memcpy(&f, &w, 4);
      args[i] = gk_arg_f32(f);
      break;
    }
    default: args[i] = gk_arg_ptr(0);
    }
  }
  return GK_OK;
}
