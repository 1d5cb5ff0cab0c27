/*
 * launch.c - the `launch` JSON of GPU rows, evaluated for one call
 * (launch.h).
 */
#include "launch.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && n) vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return -1;
}

static const char *const type_names[] = {"ptr", "i64", "i32", "f32"};

int launch_parse(const char *json, const char *entry, launch_info *out, char *err,
                 size_t err_size) {
  json_error_t jerr;
  json_t *root = json_loads(json ? json : "", 0, &jerr);
  if (!json_is_object(root)) {
    json_decref(root);
    return fail(err, err_size, "launch '%.60s' is not a JSON object%s%s", json ? json : "",
                root ? "" : ": ", root ? "" : jerr.text);
  }
  json_t *o = root, *per = entry ? json_object_get(root, entry) : NULL;
  if (json_is_object(per)) o = per;
  json_t *b = json_object_get(o, "block"), *g = json_object_get(o, "grid"),
         *s = json_object_get(o, "shared"), *ps = json_object_get(o, "params");
  int rc = -1;
  memset(out, 0, sizeof *out);
  if (json_array_size(b) != 3 || json_array_size(g) != 3) {
    fail(err, err_size, "launch '%.60s': block and grid must be arrays of 3", json);
    goto out;
  }
  for (int d = 0; d < 3; d++) {
    json_t *bd = json_array_get(b, d), *gd = json_array_get(g, d);
    json_int_t bv = json_integer_value(bd);
    if (!json_is_integer(bd) || bv < 1 || bv > 1024) {
      fail(err, err_size, "launch block[%d] must be a number in 1..1024", d);
      goto out;
    }
    out->block[d] = (unsigned)bv;
    if (json_is_integer(gd) && json_integer_value(gd) >= 0) {
      snprintf(out->grid[d], LAUNCH_MAX_EXPR, "%lld", (long long)json_integer_value(gd));
    } else if (json_is_string(gd) && strlen(json_string_value(gd)) < LAUNCH_MAX_EXPR) {
      strcpy(out->grid[d], json_string_value(gd));
    } else {
      fail(err, err_size, "launch grid[%d] must be a count >= 0 or an expression of at most "
           "%d characters", d, LAUNCH_MAX_EXPR - 1);
      goto out;
    }
  }
  if (!json_is_integer(s) || json_integer_value(s) < 0 || json_integer_value(s) > 0x7fffffff) {
    fail(err, err_size, "launch 'shared' must be a number of bytes");
    goto out;
  }
  out->shared = (unsigned)json_integer_value(s);
  if (!json_is_array(ps) || json_array_size(ps) > LAUNCH_MAX_PARAMS) {
    fail(err, err_size, "launch 'params' must be an array of at most %d", LAUNCH_MAX_PARAMS);
    goto out;
  }
  for (size_t i = 0; i < json_array_size(ps); i++) {
    const char *p = json_string_value(json_array_get(ps, i));
    const char *colon = p ? strchr(p, ':') : NULL;
    size_t len = colon ? (size_t)(colon - p) : 0;
    int t = -1;
    for (int k = 0; colon && k < 4; k++)
      if (strcmp(colon + 1, type_names[k]) == 0) t = k;
    if (len == 0 || len >= LAUNCH_MAX_NAME || t < 0) {
      fail(err, err_size, "launch params[%zu] '%s' is not NAME:TYPE with TYPE ptr, i64, i32 "
           "or f32", i, p ? p : "(not a string)");
      goto out;
    }
    memcpy(out->name[i], p, len);
    out->type[i] = (launch_type)t;
    out->nparams++;
  }
  rc = 0;
out:
  json_decref(root);
  return rc;
}

/* The slot of a new value, or -1 past the maximum (launch_bind reports it). */
static int add(launch_args *a, const char *name, launch_type kind) {
  const int i = a->n++;
  if (i >= LAUNCH_MAX_PARAMS) return -1;
  a->arg[i].name = name;
  a->arg[i].kind = kind;
  return i;
}
void launch_ptr(launch_args *a, const char *name, uint64_t device_ptr) {
  const int i = add(a, name, LAUNCH_PTR);
  if (i >= 0) a->arg[i].v.ptr = device_ptr;
}
void launch_int(launch_args *a, const char *name, int64_t value) {
  const int i = add(a, name, LAUNCH_I64);
  if (i >= 0) a->arg[i].v.i = value;
}
void launch_f32(launch_args *a, const char *name, float value) {
  const int i = add(a, name, LAUNCH_F32);
  if (i >= 0) a->arg[i].v.f = value;
}

/* ---- count expressions: a recursive descent, one function per level ---- */

typedef struct parser {
  const char *expr, *p;
  const launch_args *a;
  char *err;
  size_t err_size;
  int failed;
} parser;

static int64_t perr(parser *s, const char *why) {
  if (!s->failed)
    fail(s->err, s->err_size, "count expression '%s': %s at offset %d", s->expr, why,
         (int)(s->p - s->expr));
  s->failed = 1;
  return 0;
}

static void skip(parser *s) {
  while (*s->p == ' ' || *s->p == '\t') s->p++;
}

static int64_t sum(parser *s);

static int64_t factor(parser *s) {
  skip(s);
  if (*s->p == '(') {
    s->p++;
    int64_t v = sum(s);
    skip(s);
    if (*s->p != ')') return perr(s, "missing ')'");
    s->p++;
    return v;
  }
  if (isdigit((unsigned char)*s->p)) {
    errno = 0;
    char *end;
    long long v = strtoll(s->p, &end, 10);
    if (errno == ERANGE) return perr(s, "number past 64 bits");
    s->p = end;
    return v;
  }
  const char *start = s->p;
  if (!isalpha((unsigned char)*s->p) && *s->p != '_')
    return perr(s, *s->p ? "expected a number, a name or '('" : "unexpected end");
  while (isalnum((unsigned char)*s->p) || *s->p == '_') s->p++;
  size_t len = (size_t)(s->p - start);
  for (int i = 0; i < s->a->n && i < LAUNCH_MAX_PARAMS; i++)
    if (s->a->arg[i].kind == LAUNCH_I64 && strlen(s->a->arg[i].name) == len &&
        memcmp(s->a->arg[i].name, start, len) == 0)
      return s->a->arg[i].v.i;
  s->p = start;
  char why[LAUNCH_MAX_EXPR + 32];
  snprintf(why, sizeof why, "unknown name '%.*s'", (int)len, start);
  return perr(s, why);
}

static int64_t product(parser *s) {
  int64_t v = factor(s);
  for (;;) {
    skip(s);
    char op = *s->p;
    if (s->failed || (op != '*' && op != '/')) return v;
    s->p++;
    int64_t r = factor(s), w;
    if (op == '*') {
      if (__builtin_mul_overflow(v, r, &w)) return perr(s, "overflows 64 bits");
      v = w;
    } else {
      if (r <= 0 || v < 0) return perr(s, "division by a number <= 0 or of a negative one");
      v = v / r + (v % r != 0); /* rounds up, without the overflow of v + r - 1 */
    }
  }
}

static int64_t sum(parser *s) {
  int64_t v = product(s);
  for (;;) {
    skip(s);
    char op = *s->p;
    if (s->failed || (op != '+' && op != '-')) return v;
    s->p++;
    int64_t r = product(s), w;
    if (op == '+' ? __builtin_add_overflow(v, r, &w) : __builtin_sub_overflow(v, r, &w))
      return perr(s, "overflows 64 bits");
    v = w;
  }
}

int launch_eval(const char *expr, const launch_args *a, int64_t *out, char *err,
                size_t err_size) {
  parser s = {expr, expr, a, err, err_size, 0};
  int64_t v = sum(&s);
  skip(&s);
  if (!s.failed && *s.p) perr(&s, "unexpected character");
  if (s.failed) return -1;
  *out = v;
  return 0;
}

int launch_bind(const launch_info *L, launch_args *a, unsigned grid[3], char *err,
                size_t err_size) {
  if (a->n > LAUNCH_MAX_PARAMS)
    return fail(err, err_size, "%d values for at most %d parameters", a->n, LAUNCH_MAX_PARAMS);
  int used[LAUNCH_MAX_PARAMS] = {0};
  for (int i = 0; i < L->nparams; i++) {
    int j = 0;
    while (j < a->n && strcmp(a->arg[j].name, L->name[i]) != 0) j++;
    if (j == a->n)
      return fail(err, err_size, "no value for parameter %d '%s:%s' of the launch", i,
                  L->name[i], type_names[L->type[i]]);
    used[j] = 1;
    const launch_type want = L->type[i] == LAUNCH_I32 ? LAUNCH_I64 : L->type[i];
    if (a->arg[j].kind != want)
      return fail(err, err_size, "parameter '%s' is %s in the launch; the value given is not",
                  L->name[i], type_names[L->type[i]]);
    switch (L->type[i]) {
    case LAUNCH_PTR: a->slot[i].ptr = a->arg[j].v.ptr; break;
    case LAUNCH_I64: a->slot[i].i64 = a->arg[j].v.i; break;
    case LAUNCH_I32:
      if (a->arg[j].v.i < INT32_MIN || a->arg[j].v.i > INT32_MAX)
        return fail(err, err_size, "parameter '%s' is i32; %lld does not fit", L->name[i],
                    (long long)a->arg[j].v.i);
      a->slot[i].i32 = (int32_t)a->arg[j].v.i;
      break;
    case LAUNCH_F32: a->slot[i].f32 = a->arg[j].v.f; break;
    }
    a->params[i] = &a->slot[i];
  }
  for (int j = 0; j < a->n; j++)
    if (!used[j])
      return fail(err, err_size, "'%s' is not a parameter of the launch (its signature "
                  "differs from the caller's)", a->arg[j].name);
  for (int d = 0; d < 3; d++) {
    int64_t v;
    char e[256];
    if (launch_eval(L->grid[d], a, &v, e, sizeof e) != 0)
      return fail(err, err_size, "grid[%d]: %s", d, e);
    const int64_t max = d == 0 ? LAUNCH_GRID_MAX_X : LAUNCH_GRID_MAX_YZ;
    grid[d] = (unsigned)(v < 1 ? 1 : v > max ? max : v);
  }
  return 0;
}
