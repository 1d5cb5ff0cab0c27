/*
 * launch.h - a GPU row's `launch` JSON (docs/kernels.md, "Launching on
 * GPUs") turned into one cuLaunchKernel call: block, grid from the count
 * expressions, dynamic shared bytes, and the kernelParams array, built from
 * values the caller names. Used by tests/gpu and bench/gpu.c, which launch
 * the real images on a real GPU.
 *
 * Count expressions: integers, the names of the call's integer parameters,
 * + - * /, parentheses; 64-bit, '/' rounds UP ("n / 8" blocks of 8 cover
 * n). Overflow, division by a non-positive number or of a negative one, and
 * anything else the grammar lacks are errors with a sentence that quotes
 * the expression. Nothing here allocates or keeps global state.
 */
#ifndef GK_TEST_LAUNCH_H
#define GK_TEST_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#define LAUNCH_MAX_PARAMS 16
#define LAUNCH_MAX_NAME 32
#define LAUNCH_MAX_EXPR 128

/* CUDA's grid limits; launch_bind clamps to them (every kernel loops over
 * what a smaller grid leaves). */
#define LAUNCH_GRID_MAX_X 2147483647LL
#define LAUNCH_GRID_MAX_YZ 65535LL

typedef enum launch_type { LAUNCH_PTR, LAUNCH_I64, LAUNCH_I32, LAUNCH_F32 } launch_type;

typedef struct launch_info {
  unsigned block[3];
  char grid[3][LAUNCH_MAX_EXPR]; /* a number is written as its digits */
  unsigned shared;               /* dynamic shared memory, bytes */
  int nparams;
  char name[LAUNCH_MAX_PARAMS][LAUNCH_MAX_NAME];
  launch_type type[LAUNCH_MAX_PARAMS];
} launch_info;

/*
 * The values of one call, by name, and after launch_bind the kernelParams
 * array (params[i] points at slot[i], parameter i of the signature, of its
 * declared type). Start from `launch_args a = {0};`. It holds pointers into
 * itself: do not copy it between launch_bind and the launch.
 */
typedef struct launch_args {
  int n;
  struct {
    const char *name; /* borrowed: must outlive the launch_args */
    launch_type kind; /* LAUNCH_PTR, LAUNCH_I64 (any integer) or LAUNCH_F32 */
    union {
      uint64_t ptr;
      int64_t i;
      float f;
    } v;
  } arg[LAUNCH_MAX_PARAMS];
  union {
    uint64_t ptr;
    int64_t i64;
    int32_t i32;
    float f32;
  } slot[LAUNCH_MAX_PARAMS];
  void *params[LAUNCH_MAX_PARAMS];
} launch_args;

/*
 * Parses a row's launch text for entry point `entry` (NULL: the row's only
 * launch). A launch object normally describes every entry of its row; one
 * that holds an object keyed by the entry's name (for rows whose entries
 * launch differently) gives that one. Returns 0, or -1 with `err` saying
 * what is wrong (invalid JSON, block not three numbers in 1..1024, a grid
 * that is not three counts, a parameter not "name:ptr|i64|i32|f32").
 */
int launch_parse(const char *json, const char *entry, launch_info *out, char *err,
                 size_t err_size);

/* Adds a named value (a device pointer, an integer of parameter type i64 or
 * i32, a float). More than LAUNCH_MAX_PARAMS are reported by launch_bind. */
void launch_ptr(launch_args *a, const char *name, uint64_t device_ptr);
void launch_int(launch_args *a, const char *name, int64_t value);
void launch_f32(launch_args *a, const char *name, float value);

/* Evaluates one count expression over the integer values of `a`. Returns 0
 * and *out, or -1 with `err` naming the expression and the fault. */
int launch_eval(const char *expr, const launch_args *a, int64_t *out, char *err,
                size_t err_size);

/*
 * Binds `a` to the parameters of `L` in signature order (every parameter
 * needs a value of its kind, an i32 one in range, and every value must be a
 * parameter: a row whose params differ from the caller's signature fails
 * here) and evaluates the grid: counts below 1 become 1 (an empty call
 * still launches one block, which finds nothing to do), counts past CUDA's
 * limits are clamped. Returns 0, or -1 with `err`.
 */
int launch_bind(const launch_info *L, launch_args *a, unsigned grid[3], char *err,
                size_t err_size);

#endif /* GK_TEST_LAUNCH_H */
