/*
 * fuzz_launch.c - fuzz target for libgk's launch evaluator (gk.h,
 * "Launching GPU kernels"): the launch JSON of an index row, read from an
 * untrusted archive, parsed for every backend that launches (JSON shapes,
 * count expressions: overflow, division by zero, unknown names, nesting,
 * length) and evaluated with argument values and device limits taken from
 * the input.
 *
 * An input is "BACKEND\n" + the launch text + "\0" + bytes that become the
 * call's values (8 per parameter, then the limits); without the "\0" it is
 * all launch text. The seeds in tests/fuzz/corpus/launch are the recipes'
 * real launch rows (tests/fuzz/make_seeds.sh).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t take(const uint8_t **p, const uint8_t *end) {
  uint64_t v = 0;
  for (int i = 0; i < 8 && *p < end; i++, (*p)++) v |= (uint64_t)**p << (8 * i);
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const backends[] = {"cuda", "rocm", "vulkan", "wgsl", "metal", "cpu"};
  const uint8_t *nl = memchr(data, '\n', size);
  if (!nl || nl - data > 8) return 0;
  char backend[9];
  memcpy(backend, data, (size_t)(nl - data));
  backend[nl - data] = '\0';
  const uint8_t *text = nl + 1, *end = data + size;
  const uint8_t *nul = memchr(text, 0, (size_t)(end - text));
  size_t tlen = nul ? (size_t)(nul - text) : (size_t)(end - text);
  char *json = malloc(tlen + 1);
  if (!json) return 0;
  memcpy(json, text, tlen);
  json[tlen] = '\0';
  const uint8_t *vals = nul ? nul + 1 : end;
  for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
    if (strcmp(backend, backends[b]) != 0 && strcmp(backend, "any") != 0) continue;
    gk_image_info row = {.kernel = "k", .backend = backends[b], .target = "t", .variant = "",
                         .launch = json};
    for (int e = 0; e < 2; e++) {
      gk_launch *L = NULL;
      if (gk_launch_parse(&row, e ? "k" : NULL, &L) != GK_OK) continue;
      const uint8_t *p = vals;
      gk_arg args[GK_LAUNCH_MAX_PARAMS];
      size_t n = gk_launch_nparams(L);
      for (size_t i = 0; i < n; i++) {
        const char *name;
        gk_arg_type t;
        gk_launch_param(L, i, &name, &t);
        uint64_t v = take(&p, end);
        args[i] = t == GK_ARG_PTR   ? gk_arg_ptr(v)
                  : t == GK_ARG_I64 ? gk_arg_i64((int64_t)v)
                  : t == GK_ARG_I32 ? gk_arg_i32((int32_t)v)
                                    : gk_arg_f32((float)(int32_t)v);
      }
      gk_device_limits lim = {(int64_t)(take(&p, end) & 0xffff), (int64_t)(take(&p, end) & 0xffff),
                              {(uint32_t)take(&p, end), (uint32_t)take(&p, end),
                               (uint32_t)take(&p, end)}};
      gk_launch_dims d;
      gk_launch_eval(L, &lim, args, n, &d);
      gk_launch_eval(L, NULL, args, n, &d);
      gk_launch_eval(L, NULL, args, n ? n - 1 : 1, &d); /* a count that does not fit */
      gk_launch_free(L);
    }
  }
  free(json);
  return 0;
}
