/*
 * gk_internal.h - what the loader's files share with each other. Not API:
 * nothing here is exported from libgk.so (every name is gk__-prefixed and
 * hidden). The unit tests link libgk.a and may use it to reach corners the
 * public API cannot (a synthetic CPU, a lower detected level).
 */
#ifndef GK_INTERNAL_H
#define GK_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "gk.h"

struct sqlite3;
struct sqlite3_stmt;

/* Largest image libgk will decompress (and largest packed blob it will
 * read). Sizes come from an untrusted file: this bounds every allocation
 * made on its word. */
#define GK__MAX_IMAGE ((uint64_t)1 << 30)

#if defined(__GNUC__)
#define GK__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GK__PRINTF(f, a)
#endif

/* ---- messages (status.c) ---------------------------------------------- */

/* A growable string for messages that list things. Allocation failure is
 * sticky and silent: the text is then cut short, never wrong. */
typedef struct gk__sb {
  char *p;
  size_t len, cap;
  int oom;
} gk__sb;

void gk__sb_printf(gk__sb *sb, const char *fmt, ...) GK__PRINTF(2, 3);
/* The text so far; "" when empty or allocation failed early. */
const char *gk__sb_str(const gk__sb *sb);
void gk__sb_free(gk__sb *sb);

/* Replaces *msg (malloc'ed, may be NULL) with the formatted text and returns
 * `status`. When memory runs out the message becomes NULL (read as ""): the
 * status still says what kind of failure it was. */
int gk__vsetmsg(char **msg, int status, const char *fmt, va_list ap);

/* Sets this thread's gk_last_error() text; returns `status`. */
int gk__set_last_error(int status, const char *fmt, ...) GK__PRINTF(2, 3);
void gk__clear_last_error(void);

/* strerror(e) into buf, thread-safely; returns buf. */
const char *gk__errno_text(int e, char *buf, size_t size);

/* Bounded copy that always terminates (when size > 0). */
void gk__strlcpy(char *dst, const char *src, size_t size);

/* ---- x86-64 levels (cpu.c) --------------------------------------------- */

/* Levels are 1..4 for "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4";
 * 0 means unknown. */
#define GK__X86_LEVEL_MAX 4

/* The CPUID words and XCR0 that decide the level; a plain value so tests
 * can describe CPUs this machine is not. Words of leaves the CPU does not
 * have are 0. */
typedef struct gk__x86_cpuid {
  uint32_t l1_ecx; /* leaf 1 ECX */
  uint32_t l7_ebx; /* leaf 7 subleaf 0 EBX */
  uint32_t e1_ecx; /* leaf 0x80000001 ECX */
  uint64_t xcr0;   /* XGETBV(0); 0 when OSXSAVE is clear */
} gk__x86_cpuid;

int gk__x86_level_of(const gk__x86_cpuid *c);
/* "x86-64-v3" -> 3; 0 for anything else (including NULL). */
int gk__x86_level_from_name(const char *name);
/* 3 -> "x86-64-v3"; NULL outside 1..4. */
const char *gk__x86_level_name(int level);
/* "x86-64, x86-64-v2, x86-64-v3, x86-64-v4" for messages. */
const char *gk__x86_level_list(void);

/* The CPU this process runs on. GK_OK or GK_ENODEVICE (with `why`). */
int gk__cpu_detect(gk_device *out, char *why, size_t why_size);

/* Test hook: caps the level gk__cpu_detect reports (0 removes the cap), to
 * play a lower CPU than the machine's. Process-wide; tests only. */
void gk__cpu_set_level_cap(int level);

/* ---- ELF checks (elf.c) ------------------------------------------------ */

/* Checks that `bytes` fit the row's backend, format and target (for cpu:
 * a 64-bit little-endian x86-64 shared object, target a known level).
 * GK_OK, or GK_EFORMAT with `why` saying what does not fit. */
int gk__elf_check(const void *bytes, size_t size, const gk_image_info *row,
                  char *why, size_t why_size);

/* ---- archives (archive.c) ---------------------------------------------- */

typedef struct gk__row {
  gk_image_info info;
  char *strings; /* one block holding every string of `info` */
} gk__row;

struct gk_archive {
  struct sqlite3 *db;
  struct sqlite3_stmt *blob_stmt; /* finds a blob by sha256; reused */
  char *name;                     /* path, or "<memory, N bytes>" */
  gk__row *rows;                  /* the index, read once at open */
  size_t nrows;
  char *msg; /* failure of the latest call; NULL = "" */
};

/* Sets the archive's message and returns `status`, so a failure reads
 * `return gk__fail(ar, GK_EIO, "cannot ... '%s'", ar->name)`. */
int gk__fail(gk_archive *ar, int status, const char *fmt, ...) GK__PRINTF(3, 4);

/* Copies every string of `src` into one new block (*block, to free) that
 * `dst`'s pointers then reference. GK_OK or GK_ENOMEM. */
int gk__info_copy(gk_image_info *dst, const gk_image_info *src, char **block);

/* Describes a row in messages: "'qmatmul' bits=4 cpu x86-64-v3". */
void gk__row_describe(const gk_image_info *row, char *buf, size_t size);

/* ---- GPU drivers (driver.c) ---------------------------------------- */

/* A backend's driver: a dlopen handle, or a test's resolver. */
typedef struct gk__driver {
  void *dl;
  gk_resolver_fn fn;
  void *ctx;
} gk__driver;

/* Opens the driver of `backend`: its installed resolver if a test set one,
 * else the first of `names` (NULL-terminated) that dlopen finds. GK_ENODEVICE
 * with a sentence in `why` when none loads. */
int gk__driver_open(gk_backend backend, const char *const *names,
                    gk__driver *out, char *why, size_t why_size);
/* An entry point by name; NULL when absent. */
void *gk__driver_sym(const gk__driver *d, const char *name);
void gk__driver_close(gk__driver *d);

/* ---- selection (select.c) ------------------------------------------- */

/* A backend's compatibility rule: 1 when `row` (of the device's backend)
 * runs on `dev`, with *score ranking the rows that do (higher is better);
 * 0 when not. Either way a short reason goes into why. */
typedef int (*gk__fits_fn)(const gk_device *dev, const gk_image_info *row,
                           unsigned flags, long *score, char *why,
                           size_t why_size);

#endif /* GK_INTERNAL_H */
