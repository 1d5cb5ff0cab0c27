/*
 * ktest.h - what the numeric tests of the kernel set share: open the test
 * archive, tell this CPU's x86-64 level, load one kernel image per level
 * through libgk's public API (checking that libgk chose exactly that
 * level's image), time a call, and name the running case when a kernel
 * faults.
 */
#ifndef KTEST_H
#define KTEST_H

#include <stddef.h>

#include "gk.h"
#include "gk_compiler.h" /* GK__PRINTF */

#define KTEST_NLEVELS 4
extern const char *const ktest_levels[KTEST_NLEVELS];

typedef struct ktest {
  gk_archive *ar;
  gk_device host;
  int host_level; /* index into ktest_levels of this CPU */
  int failures;
} ktest;

/*
 * Parses "PROG ARCHIVE", opens the archive, detects the CPU's level,
 * prints "cpu: LEVEL (NAME)" and a SKIP line for each level above it,
 * and installs a SIGSEGV/SIGBUS handler that names the running case.
 * Returns 0, or 2 (usage) / 1 (failure, printed).
 */
int ktest_open(ktest *t, int argc, char **argv);
void ktest_close(ktest *t);

/*
 * Loads `kernel`/`variant` for cpu:LEVEL and returns the address of its
 * entry point `kernel`, with the module in *mod (unload it when done).
 * On failure prints FAIL, counts it in t->failures and returns NULL.
 */
void *ktest_load(ktest *t, int level, const char *kernel, const char *variant,
                 gk_module **mod);

/* Names the case being run, for the fault handler (printf format). */
void ktest_running(const char *fmt, ...) GK__PRINTF(1, 2);

/* Seconds of CPU time this thread has used: timings of single-threaded
 * kernels that mean something on a busy (shared CI) machine too. */
double ktest_now(void);

#endif /* KTEST_H */
