/*
 * wgsl.c - WGSL images: shader text for hosts that compile it themselves
 * (WebGPU in a browser, Dawn, wgpu). libgk does not talk to WebGPU: a
 * "wgsl" device stands for such a host, is never detected automatically,
 * and loading a module selects, verifies and copies the text, which
 * gk_module_symbol(m, entry) returns (NUL-terminated, owned by the module).
 *
 * Target names: "webgpu" is core WebGPU. A later image that needs an
 * optional feature would be "webgpu+f16" and run only on a device whose
 * arch lists it ("wgsl:webgpu+f16"): the rule below already compares the
 * feature lists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

/* "webgpu" then "+feature" parts (lower-case letters, digits, '_', '-'). */
int gk__wgsl_arch_ok(const char *a, char *why, size_t why_size) {
  if (strncmp(a, "webgpu", 6) == 0) {
    const char *p = a + 6;
    while (*p == '+') {
      const char *f = ++p;
      while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-') p++;
      if (p == f) break;
    }
    if (*p == '\0') return 1;
  }
  gk__say(why, why_size, "wgsl arch '%s' is not like webgpu or webgpu+f16", a);
  return 0;
}

/* Is feature list `need` ("+a+b", may be "") contained in `have`? */
static int features_in(const char *need, const char *have) {
  while (*need == '+') {
    const char *f = need + 1, *e = strchr(f, '+');
    size_t n = e ? (size_t)(e - f) : strlen(f);
    int found = 0;
    for (const char *h = strchr(have, '+'); h && !found; h = strchr(h + 1, '+'))
      found = strncmp(h + 1, f, n) == 0 && (h[1 + n] == '\0' || h[1 + n] == '+');
    if (!found) return 0;
    need = f + n;
  }
  return 1;
}

int gk__wgsl_valid(const gk_device *dev, char *why, size_t why_size) {
  return gk__wgsl_arch_ok(dev->arch, why, why_size);
}

/* An image runs on a host that has every feature it needs; the one that
 * needs the most features the host has is the best. */
int gk__wgsl_fits(const gk_device *dev, const gk_image_info *row, unsigned flags,
                  long *score, char *why, size_t why_size) {
  (void)flags;
  if (strcmp(row->format, "wgsl") != 0 || !gk__wgsl_arch_ok(row->target, NULL, 0)) {
    gk__say(why, why_size, "not a WGSL image for a webgpu target ('%s', '%s')", row->format,
        row->target);
    return 0;
  }
  if (!features_in(row->target + 6, dev->arch + 6)) {
    gk__say(why, why_size, "needs %s, host has %s", row->target, dev->arch);
    return 0;
  }
  long n = 0;
  for (const char *p = row->target; (p = strchr(p, '+')); p++) n++;
  *score = n;
  gk__say(why, why_size, "%s runs on %s", row->target, dev->arch);
  return 1;
}

int gk__wgsl_detect(gk_device *out, char *why, size_t why_size) {
  (void)why, (void)why_size;
  memset(out, 0, sizeof *out);
  out->backend = GK_BACKEND_WGSL;
  snprintf(out->arch, sizeof out->arch, "webgpu");
  snprintf(out->name, sizeof out->name, "a WebGPU host (libgk hands out WGSL text)");
  return GK_OK;
}

/* WGSL is UTF-8 text: no NUL byte, no malformed or overlong sequence. */
int gk__wgsl_check(const void *bytes, size_t size, char *why, size_t why_size) {
  const unsigned char *s = bytes;
  for (size_t i = 0; i < size;) {
    unsigned c = s[i];
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (c == 0) {
      gk__say(why, why_size, "the WGSL text has a NUL byte at offset %zu", i);
      return GK_EFORMAT;
    }
    if (n == 0 || n > size - i || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4)) {
      gk__say(why, why_size, "the WGSL text is not UTF-8 at offset %zu", i);
      return GK_EFORMAT;
    }
    for (size_t k = 1; k < n; k++)
      if ((s[i + k] & 0xc0) != 0x80) {
        gk__say(why, why_size, "the WGSL text is not UTF-8 at offset %zu", i);
        return GK_EFORMAT;
      }
    if ((n == 3 && c == 0xe0 && s[i + 1] < 0xa0) || (n == 4 && c == 0xf0 && s[i + 1] < 0x90)) {
      gk__say(why, why_size, "the WGSL text has an overlong UTF-8 sequence at offset %zu", i);
      return GK_EFORMAT;
    }
    i += n;
  }
  return GK_OK;
}

/* ---- modules: the text ---------------------------------------------------- */

static int is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Does the text declare `fn NAME(` after an @compute attribute? A scan of
 * tokens, not a parse: enough to refuse a name the shader does not have. */
static int declares_entry(const char *text, const char *name) {
  size_t n = strlen(name);
  if (n == 0) return 0;
  for (const char *p = strstr(text, "@compute"); p; p = strstr(p + 1, "@compute")) {
    const char *f = strstr(p, "fn ");
    if (!f) return 0;
    f += 3;
    while (*f == ' ') f++;
    if (strncmp(f, name, n) == 0 && !is_ident(f[n])) return 1;
  }
  return 0;
}

static int wgsl_load(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
                     void *bytes, size_t size, void **state) {
  (void)dev;
  char what[256];
  char *text = realloc(bytes, size + 1); /* bytes is ours either way */
  if (!text) {
    free(bytes);
    gk__row_describe(row, what, sizeof what);
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", what);
  }
  text[size] = '\0';
  *state = text;
  return GK_OK;
}

static void *wgsl_symbol(void *state, const char *name) {
  return declares_entry(state, name) ? state : NULL;
}

static int wgsl_kernel_info(void *state, const char *name, gk_kernel_info *out) {
  if (!declares_entry(state, name)) return GK_ENOSYMBOL;
  memset(out, 0, sizeof *out);
  out->object = (uint64_t)(uintptr_t)state;
  return GK_OK;
}

static void wgsl_unload(void *state) { free(state); }

const gk__gpu_ops gk__wgsl_ops = {GK_BACKEND_WGSL, wgsl_load, wgsl_symbol, wgsl_kernel_info,
                                  wgsl_unload, NULL, NULL};
