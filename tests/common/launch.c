/*
 * launch.c - the reference evaluator of count expressions (launch.h).
 */
#include "launch.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
  const char *expr, *p;
  const char *const *names;
  const int64_t *values;
  int n;
  char *err;
  size_t err_size;
  int failed;
} parser;

static int64_t perr(parser *s, const char *why) {
  if (!s->failed && s->err && s->err_size)
    snprintf(s->err, s->err_size, "count expression '%s': %s at offset %d", s->expr, why,
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
  while (isalnum((unsigned char)*s->p) || *s->p == '_' || *s->p == '.') s->p++;
  size_t len = (size_t)(s->p - start);
  for (int i = 0; i < s->n; i++)
    if (strlen(s->names[i]) == len && memcmp(s->names[i], start, len) == 0) return s->values[i];
  s->p = start;
  char why[96];
  snprintf(why, sizeof why, "unknown name '%.*s'", (int)(len > 40 ? 40 : len), start);
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
    if (s->failed) return 0;
    if (op == '*') {
      if (__builtin_mul_overflow(v, r, &w)) return perr(s, "overflows 64 bits");
      v = w;
    } else {
      if (r <= 0 || v < 0) return perr(s, "division by a number <= 0 or of a negative one");
      v = v / r + (v % r != 0);
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
    if (s->failed) return 0;
    if (op == '+' ? __builtin_add_overflow(v, r, &w) : __builtin_sub_overflow(v, r, &w))
      return perr(s, "overflows 64 bits");
    v = w;
  }
}

int ref_count(const char *expr, const char *const *names, const int64_t *values, int n,
              int64_t *out, char *err, size_t err_size) {
  parser s = {expr, expr, names, values, n, err, err_size, 0};
  int64_t v = sum(&s);
  skip(&s);
  if (!s.failed && *s.p) perr(&s, "unexpected character");
  if (s.failed) return -1;
  *out = v;
  return 0;
}
