/*
 * wgsl.c - the WGSL backend, whole (its descriptor at the end). WGSL
 * images are shader text for hosts that compile it themselves (WebGPU in
 * a browser, Dawn, wgpu). libgk does not talk to WebGPU: a
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

static int valid(const gk_device *dev, char *why, size_t why_size) {
  return gk__wgsl_arch_ok(dev->arch, why, why_size);
}

/* An image runs on a host that has every feature it needs; the one that
 * needs the most features the host has is the best. */
static int fits(const gk_device *dev, const gk_image_info *row, unsigned flags,
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

/* The host libgk hands text to: always "wgsl:webgpu", and only when asked
 * for (gk_device_detect() never picks it: it is no device libgk drives). */
static int detect(gk_device *out, int asked, char *why, size_t why_size) {
  if (!asked) {
    gk__say(why, why_size, "a WGSL host is not detected; ask for it by name (\"wgsl\")");
    return GK_ENODEVICE;
  }
  memset(out, 0, sizeof *out);
  out->backend = GK_BACKEND_WGSL;
  snprintf(out->arch, sizeof out->arch, "webgpu");
  snprintf(out->name, sizeof out->name, "a WebGPU host (libgk hands out WGSL text)");
  return GK_OK;
}

/* ---- entry points: a scan of WGSL's tokens ------------------------------- */

/* WGSL has no strings and no preprocessor: its tokens are identifiers,
 * numbers and punctuation, between blankspace and comments (line comments,
 * and block comments that nest). That is all an entry-point scan needs; it
 * is not a parser, and a text it accepts may still fail to compile (Dawn's
 * test does that). Bytes above 0x7f count as identifier characters, so that
 * a Unicode identifier is never split into an ASCII name. */
typedef struct lexer {
  const char *s;
  size_t n, i;
} lexer;

static int is_ident(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c >= 0x80;
}

/* The next token's start and length; 0 at the end of the text. */
static size_t next_token(lexer *lx, const char **tok) {
  const char *s = lx->s;
  size_t n = lx->n, i = lx->i;
  for (;;) {
    while (i < n && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) i++;
    if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
      while (i < n && s[i] != '\n' && s[i] != '\r') i++;
    } else if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
      unsigned depth = 0;
      do {
        if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') depth++, i += 2;
        else if (i + 1 < n && s[i] == '*' && s[i + 1] == '/') depth--, i += 2;
        else i++;
      } while (depth && i < n);
    } else {
      break;
    }
  }
  *tok = s + i;
  size_t start = i;
  if (i < n) {
    if (is_ident((unsigned char)s[i]))
      while (i < n && is_ident((unsigned char)s[i])) i++;
    else
      i++;
  }
  lx->i = i;
  return i - start;
}

static int token_is(const char *tok, size_t len, const char *word) {
  return len == strlen(word) && memcmp(tok, word, len) == 0;
}

/* How `name` is declared in the text: 1 as an entry point (a function whose
 * attributes include @compute: "@compute @workgroup_size(64) fn NAME("), 2
 * as a function without @compute, 0 not as a function. A name in a comment,
 * or after `fn` in a call or an attribute's arguments, does not count. */
static int wgsl_declares(const char *text, size_t size, const char *name) {
  lexer lx = {text, size, 0};
  const char *t;
  size_t len;
  int compute = 0; /* the attributes seen since the last other token */
  while ((len = next_token(&lx, &t))) {
    if (token_is(t, len, "@")) {
      if (!(len = next_token(&lx, &t))) break;
      compute |= token_is(t, len, "compute");
      /* An attribute's arguments, "(64, 1, 1)", are skipped whole. */
      size_t at = lx.i;
      if ((len = next_token(&lx, &t)) && token_is(t, len, "(")) {
        unsigned depth = 1;
        while (depth && (len = next_token(&lx, &t)))
          depth += token_is(t, len, "(") ? 1 : token_is(t, len, ")") ? -1u : 0;
      } else {
        lx.i = at;
      }
      continue;
    }
    if (token_is(t, len, "fn")) {
      const char *f;
      size_t flen = next_token(&lx, &f);
      if (flen && token_is(f, flen, name) && (len = next_token(&lx, &t)) && token_is(t, len, "("))
        return compute ? 1 : 2;
    }
    compute = 0;
  }
  return 0;
}

/* WGSL is UTF-8 text: no NUL byte, no malformed or overlong sequence. Every
 * entry the row lists must be an entry point of the text: a misspelt name
 * would otherwise pack, verify and load, and fail only in the host. */
static int wgsl_check(const void *bytes, size_t size, const gk_image_info *row,
                      const gk__entries *e, char *why, size_t why_size) {
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
  for (int i = 0; i < e->n; i++) {
    const char *name = e->name[i];
    int how = wgsl_declares(bytes, size, name);
    if (how == 1) continue;
    if (how == 2)
      gk__say(why, why_size, "the WGSL text has no kernel '%s' (fn %s has no @compute attribute)",
              name, name);
    else
      gk__say(why, why_size, "the WGSL text has no kernel '%s' (no @compute fn %s)", name, name);
    return GK_EFORMAT;
  }
  return GK_OK;
}

/* ---- modules: the text ---------------------------------------------------- */

static int wgsl_load(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
                     const gk__entries *e, void *bytes, size_t size, void **state) {
  (void)dev;
  char *text = realloc(bytes, size + 1); /* bytes is ours either way */
  if (!text) {
    free(bytes);
    return gk__fail(ar, GK_ENOMEM, "out of memory loading image %s", GK__WHAT(row));
  }
  text[size] = '\0';
  *state = text;
  return GK_OK;
}

static void *wgsl_symbol(void *state, const char *name) {
  return wgsl_declares(state, strlen(state), name) == 1 ? state : NULL;
}

static int wgsl_kernel_info(void *state, const char *name, gk_kernel_info *out) {
  if (wgsl_declares(state, strlen(state), name) != 1) return GK_ENOSYMBOL;
  memset(out, 0, sizeof *out);
  out->object = (uint64_t)(uintptr_t)state;
  return GK_OK;
}

static void wgsl_unload(void *state) { free(state); }

/* The host launches: libgk gives it the text and the launch data. */
const gk__ops gk__wgsl_ops = {.load = wgsl_load, .symbol = wgsl_symbol,
                              .kernel_info = wgsl_kernel_info, .unload = wgsl_unload,
                              .launches = 1};

/* ---- the backend --------------------------------------------------------- */

static int spec_arch(char *arch, size_t size, const char *spec, char *why, size_t why_size) {
  return gk__wgsl_arch_ok(arch, why, why_size);
}

const gk__backend gk__wgsl_backend = {
    .id = GK_BACKEND_WGSL, .name = "wgsl", .detect = detect, .arch = spec_arch,
    .valid = valid, .fits = fits,
    .formats = {{"wgsl", wgsl_check}},
    .ops = &gk__wgsl_ops,
};
