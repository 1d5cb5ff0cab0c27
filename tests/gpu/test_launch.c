/*
 * test_launch.c - tests/common/launch.c, the evaluator of GPU rows' launch
 * JSON that tests/gpu and bench/gpu.c launch the real images with: count
 * expressions (precedence, round-up division, overflow, every error),
 * parsing (docs/kernels.md's example, per-entry objects, bad shapes) and
 * binding (kernelParams in signature order and type, grid clamps, values
 * missing, extra or of the wrong kind).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "launch.h"

static const char *const example =
    "{\"block\": [256, 1, 1], \"grid\": [\"n / 8\", \"m / 4\", 1], \"shared\": 0,"
    " \"params\": [\"x:ptr\", \"w:ptr\", \"y:ptr\", \"m:i64\", \"n:i64\", \"k:i64\"]}";

static int64_t eval_ok(const char *expr, const launch_args *a) {
  int64_t v = -12345;
  char err[256] = "";
  int rc = launch_eval(expr, a, &v, err, sizeof err);
  if (rc != 0) fail_msg("'%s': %s", expr, err);
  return v;
}

/* The error text of a failing expression (asserts that it fails). */
static const char *eval_err(const char *expr, const launch_args *a) {
  static char err[256];
  int64_t v = 0;
  err[0] = 0;
  assert_int_equal(launch_eval(expr, a, &v, err, sizeof err), -1);
  assert_non_null(strstr(err, expr)); /* the message quotes the expression */
  return err;
}

static void expressions(void **state) {
  (void)state;
  launch_args a = {0};
  launch_int(&a, "n", 37);
  launch_int(&a, "m", 1);
  launch_int(&a, "head_dim", 128);
  launch_int(&a, "n_tokens", 5);
  launch_f32(&a, "scale", 0.5f);
  assert_int_equal(eval_ok("7", &a), 7);
  assert_int_equal(eval_ok("n", &a), 37);
  assert_int_equal(eval_ok("n / 8", &a), 5);   /* rounds up */
  assert_int_equal(eval_ok("32 / 8", &a), 4);  /* exact */
  assert_int_equal(eval_ok("0 / 8", &a), 0);
  assert_int_equal(eval_ok("m / 4", &a), 1);
  assert_int_equal(eval_ok("2 + 3 * 4", &a), 14);
  assert_int_equal(eval_ok("(2 + 3) * 4", &a), 20);
  assert_int_equal(eval_ok("20 - 5 - 3", &a), 12);     /* left to right */
  assert_int_equal(eval_ok("100 / 7 / 2", &a), 8);     /* ceil(ceil(100/7)/2) */
  assert_int_equal(eval_ok("n - 40", &a), -3);
  assert_int_equal(eval_ok("  n_tokens*(head_dim/2)/256 ", &a), 2); /* rope's grid: ceil(320/256) */
  assert_int_equal(eval_ok("9223372036854775807 / 2", &a), 4611686018427387904LL);
  assert_int_equal(eval_ok("9223372036854775807 - 1 + 1", &a), INT64_MAX);

  assert_non_null(strstr(eval_err("n /", &a), "unexpected end"));
  assert_non_null(strstr(eval_err("", &a), "unexpected end"));
  assert_non_null(strstr(eval_err("(n + 1", &a), "missing ')'"));
  assert_non_null(strstr(eval_err("n 8", &a), "unexpected character"));
  assert_non_null(strstr(eval_err("n $ 8", &a), "unexpected character"));
  assert_non_null(strstr(eval_err("-n", &a), "expected a number"));
  assert_non_null(strstr(eval_err("rows / 2", &a), "unknown name 'rows'"));
  assert_non_null(strstr(eval_err("scale * 2", &a), "unknown name 'scale'")); /* not an integer */
  assert_non_null(strstr(eval_err("n / 0", &a), "division"));
  assert_non_null(strstr(eval_err("n / (m - 2)", &a), "division"));
  assert_non_null(strstr(eval_err("(m - 2) / 4", &a), "division"));
  assert_non_null(strstr(eval_err("9223372036854775807 + 1", &a), "overflows"));
  assert_non_null(strstr(eval_err("0 - 9223372036854775807 - 2", &a), "overflows"));
  assert_non_null(strstr(eval_err("4294967296 * 4294967296", &a), "overflows"));
  assert_non_null(strstr(eval_err("99999999999999999999", &a), "64 bits"));
}

/* A valid launch up to its params, for the bad parameter lists below. */
#define L32 "{\"block\": [32, 1, 1], \"grid\": [1, 1, 1], \"shared\": 0, "

static void parse(void **state) {
  (void)state;
  launch_info L;
  char err[256];
  assert_int_equal(launch_parse(example, NULL, &L, err, sizeof err), 0);
  assert_int_equal(L.block[0], 256);
  assert_int_equal(L.block[1], 1);
  assert_string_equal(L.grid[0], "n / 8");
  assert_string_equal(L.grid[2], "1");
  assert_int_equal(L.shared, 0);
  assert_int_equal(L.nparams, 6);
  assert_string_equal(L.name[5], "k");
  assert_int_equal(L.type[0], LAUNCH_PTR);
  assert_int_equal(L.type[5], LAUNCH_I64);
  /* An entry the object has no key for takes the row's launch. */
  assert_int_equal(launch_parse(example, "qmatmul", &L, err, sizeof err), 0);
  assert_string_equal(L.grid[1], "m / 4");

  /* Entries that launch differently: one object per entry. */
  const char *per = "{\"qmatmul\": {\"block\": [256,1,1], \"grid\": [\"n / 8\",\"m / 4\",1],"
                    " \"shared\": 0, \"params\": [\"x:ptr\"]},"
                    " \"qmatmul_q8x\": {\"block\": [128,1,1], \"grid\": [\"n\",1,1],"
                    " \"shared\": 4096, \"params\": [\"x:ptr\", \"top_k:i32\", \"t:f32\"]}}";
  assert_int_equal(launch_parse(per, "qmatmul_q8x", &L, err, sizeof err), 0);
  assert_int_equal(L.block[0], 128);
  assert_int_equal(L.shared, 4096);
  assert_int_equal(L.type[1], LAUNCH_I32);
  assert_int_equal(L.type[2], LAUNCH_F32);

  static const struct {
    const char *json, *why;
  } bad[] = {
      {"not json", "not a JSON object"},
      {"[1, 2]", "not a JSON object"},
      {"{}", "block and grid"},
      {"{\"block\": [256, 1], \"grid\": [1, 1, 1], \"shared\": 0, \"params\": []}",
       "block and grid"},
      {"{\"block\": [0, 1, 1], \"grid\": [1, 1, 1], \"shared\": 0, \"params\": []}", "block[0]"},
      {"{\"block\": [2048, 1, 1], \"grid\": [1, 1, 1], \"shared\": 0, \"params\": []}", "block[0]"},
      {"{\"block\": [32, 1, 1], \"grid\": [1, -1, 1], \"shared\": 0, \"params\": []}", "grid[1]"},
      {"{\"block\": [32, 1, 1], \"grid\": [1, 1, 1.5], \"shared\": 0, \"params\": []}", "grid[2]"},
      {"{\"block\": [32, 1, 1], \"grid\": [1, 1, 1], \"params\": []}", "shared"},
      {"{\"block\": [32, 1, 1], \"grid\": [1, 1, 1], \"shared\": 0}", "params"},
      {L32 "\"params\": [\"x\"]}", "NAME:TYPE"},
      {L32 "\"params\": [\"x:f64\"]}", "NAME:TYPE"},
      {L32 "\"params\": [\":ptr\"]}", "NAME:TYPE"},
      {L32 "\"params\": [3]}", "NAME:TYPE"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    assert_int_equal(launch_parse(bad[i].json, NULL, &L, err, sizeof err), -1);
    if (!strstr(err, bad[i].why))
      fail_msg("'%s': message '%s' lacks '%s'", bad[i].json, err, bad[i].why);
  }
}

static void bind(void **state) {
  (void)state;
  launch_info L;
  char err[256];
  unsigned grid[3];
  assert_int_equal(launch_parse(example, NULL, &L, err, sizeof err), 0);

  /* Values in any order land in signature order, with their types. */
  launch_args a = {0};
  launch_int(&a, "k", 4096);
  launch_int(&a, "n", 1000);
  launch_int(&a, "m", 17);
  launch_ptr(&a, "y", 0x3000);
  launch_ptr(&a, "w", 0x2000);
  launch_ptr(&a, "x", 0x1000);
  assert_int_equal(launch_bind(&L, &a, grid, err, sizeof err), 0);
  assert_int_equal(grid[0], 125);
  assert_int_equal(grid[1], 5);
  assert_int_equal(grid[2], 1);
  assert_int_equal(*(uint64_t *)a.params[0], 0x1000);
  assert_int_equal(*(uint64_t *)a.params[2], 0x3000);
  assert_int_equal(*(int64_t *)a.params[3], 17);
  assert_int_equal(*(int64_t *)a.params[5], 4096);

  /* Clamps: x to 2^31 - 1, y to 65535, an empty call to 1. */
  launch_args big = {0};
  launch_ptr(&big, "x", 0), launch_ptr(&big, "w", 0), launch_ptr(&big, "y", 0);
  launch_int(&big, "m", 4000000), launch_int(&big, "n", 1LL << 40), launch_int(&big, "k", 32);
  assert_int_equal(launch_bind(&L, &big, grid, err, sizeof err), 0);
  assert_int_equal(grid[0], 2147483647u);
  assert_int_equal(grid[1], 65535);
  launch_args empty = {0};
  launch_ptr(&empty, "x", 0), launch_ptr(&empty, "w", 0), launch_ptr(&empty, "y", 0);
  launch_int(&empty, "m", 0), launch_int(&empty, "n", 0), launch_int(&empty, "k", 32);
  assert_int_equal(launch_bind(&L, &empty, grid, err, sizeof err), 0);
  assert_int_equal(grid[0], 1);
  assert_int_equal(grid[1], 1);

  /* A value missing, one too many, one of the wrong kind. */
  launch_args miss = {0};
  launch_ptr(&miss, "x", 0), launch_ptr(&miss, "w", 0), launch_ptr(&miss, "y", 0);
  launch_int(&miss, "m", 1), launch_int(&miss, "n", 1);
  assert_int_equal(launch_bind(&L, &miss, grid, err, sizeof err), -1);
  assert_non_null(strstr(err, "no value for parameter 5 'k:i64'"));
  launch_int(&miss, "k", 32);
  launch_int(&miss, "rows", 3);
  assert_int_equal(launch_bind(&L, &miss, grid, err, sizeof err), -1);
  assert_non_null(strstr(err, "'rows' is not a parameter"));
  launch_args kind = {0};
  launch_int(&kind, "x", 0), launch_ptr(&kind, "w", 0), launch_ptr(&kind, "y", 0);
  launch_int(&kind, "m", 1), launch_int(&kind, "n", 1), launch_int(&kind, "k", 32);
  assert_int_equal(launch_bind(&L, &kind, grid, err, sizeof err), -1);
  assert_non_null(strstr(err, "'x' is ptr"));

  /* i32 and f32 parameters (sample's), and an i32 out of range. */
  const char *sample = "{\"block\": [256, 1, 1], \"grid\": [\"rows\", 1, 1], \"shared\": 0,"
                       " \"params\": [\"logits:ptr\", \"u:ptr\", \"out:ptr\", \"rows:i64\","
                       " \"n:i64\", \"temperature:f32\", \"top_k:i32\", \"top_p:f32\"]}";
  assert_int_equal(launch_parse(sample, NULL, &L, err, sizeof err), 0);
  launch_args s = {0};
  launch_ptr(&s, "logits", 8), launch_ptr(&s, "u", 16), launch_ptr(&s, "out", 24);
  launch_int(&s, "rows", 6), launch_int(&s, "n", 1000);
  launch_f32(&s, "temperature", 0.75f), launch_int(&s, "top_k", -3), launch_f32(&s, "top_p", 0.9f);
  assert_int_equal(launch_bind(&L, &s, grid, err, sizeof err), 0);
  assert_int_equal(grid[0], 6);
  assert_true(*(float *)s.params[5] == 0.75f);
  assert_int_equal(*(int32_t *)s.params[6], -3);
  assert_true(*(float *)s.params[7] == 0.9f);
  s.arg[6].v.i = 1LL << 31;
  assert_int_equal(launch_bind(&L, &s, grid, err, sizeof err), -1);
  assert_non_null(strstr(err, "'top_k' is i32"));

  /* A bad grid expression names the axis. */
  assert_int_equal(launch_parse("{\"block\": [32, 1, 1], \"grid\": [1, \"rows +\", 1],"
                                " \"shared\": 0, \"params\": [\"rows:i64\"]}",
                                NULL, &L, err, sizeof err), 0);
  launch_args r = {0};
  launch_int(&r, "rows", 3);
  assert_int_equal(launch_bind(&L, &r, grid, err, sizeof err), -1);
  assert_non_null(strstr(err, "grid[1]: count expression 'rows +': unexpected end"));

  /* More values than a launch can have. */
  launch_args many = {0};
  for (int i = 0; i <= LAUNCH_MAX_PARAMS; i++) launch_int(&many, "v", i);
  assert_int_equal(launch_bind(&L, &many, grid, err, sizeof err), -1);
  assert_non_null(strstr(err, "values for at most"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(expressions),
      cmocka_unit_test(parse),
      cmocka_unit_test(bind),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
