/*
 * launch.h - a REFERENCE evaluator of count expressions, for tests only.
 * libgk has the one evaluator programs use (gk.h, "Launching GPU kernels";
 * loader/launch.c compiles each expression to a postfix program once);
 * this one is written apart from it, by recursive descent over the text,
 * so that tests can hold libgk's results against a second reading of
 * docs/kernels.md's grammar: integers, names, + - * /, parentheses, 64-bit,
 * '/' rounding UP, overflow and division by a number <= 0 (or of a
 * negative one) errors. Nothing here allocates or keeps global state.
 */
#ifndef GK_TEST_LAUNCH_H
#define GK_TEST_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

/* Evaluates expr with names[i] = values[i] (n of them). 0 and *out, or -1
 * with err naming the expression and the fault. */
int ref_count(const char *expr, const char *const *names, const int64_t *values, int n,
              int64_t *out, char *err, size_t err_size);

#endif /* GK_TEST_LAUNCH_H */
