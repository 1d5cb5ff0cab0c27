/*
 * ktest.c - the shared part of the kernel-set tests (ktest.h).
 */
#define _DEFAULT_SOURCE /* clock_gettime, CLOCK_THREAD_CPUTIME_ID */

#include "ktest.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *const ktest_levels[KTEST_NLEVELS] = {"x86-64", "x86-64-v2",
                                                 "x86-64-v3", "x86-64-v4"};

/* The case being run, for the fault handler (a test may keep a global). */
static char running[200] = "setup";

static void on_fault(int sig) {
  static const char head[] = "FAIL: memory fault in ";
  static const char tail[] = " (read or wrote past the end of a tensor?)\n";
  (void)sig;
  /* Only async-signal-safe calls here. */
  if (write(STDOUT_FILENO, head, sizeof head - 1) < 0 ||
      write(STDOUT_FILENO, running, strlen(running)) < 0 ||
      write(STDOUT_FILENO, tail, sizeof tail - 1) < 0)
    _exit(1);
  _exit(1);
}

void ktest_running(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(running, sizeof running, fmt, ap);
  va_end(ap);
}

double ktest_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ktest_open(ktest *t, int argc, char **argv) {
  memset(t, 0, sizeof *t);
  t->host_level = -1;
  if (argc != 2) {
    fprintf(stderr, "usage: %s ARCHIVE\n", argc > 0 ? argv[0] : "test");
    return 2;
  }
  /* Line-buffered, so that what was printed survives a fault (_exit). */
  setvbuf(stdout, NULL, _IOLBF, 0);
  int rc = gk_archive_open(argv[1], &t->ar);
  if (rc != GK_OK) {
    printf("FAIL: cannot open archive '%s': %s: %s\n", argv[1], gk_strerror(rc),
           gk_last_error());
    return 1;
  }
  char why[256] = "";
  rc = gk_device_detect_backend(GK_BACKEND_CPU, &t->host, why, sizeof why);
  if (rc == GK_OK)
    for (int l = 0; l < KTEST_NLEVELS; l++)
      if (strcmp(t->host.arch, ktest_levels[l]) == 0)
        t->host_level = l;
  if (t->host_level < 0) {
    printf("FAIL: cannot tell this CPU's x86-64 level: %s %s\n",
           rc == GK_OK ? t->host.arch : gk_strerror(rc), why);
    ktest_close(t);
    return 1;
  }
  printf("cpu: %s (%s)\n", t->host.arch, t->host.name);
  for (int l = t->host_level + 1; l < KTEST_NLEVELS; l++)
    printf("SKIP: %s images: this CPU is %s\n", ktest_levels[l], t->host.arch);
  signal(SIGSEGV, on_fault);
  signal(SIGBUS, on_fault);
  return 0;
}

void ktest_close(ktest *t) {
  gk_archive_close(t->ar);
  t->ar = NULL;
}

void *ktest_load(ktest *t, int level, const char *kernel, const char *variant,
                 gk_module **mod) {
  char spec[32], why[256] = "";
  gk_device dev;
  *mod = NULL;
  snprintf(spec, sizeof spec, "cpu:%s", ktest_levels[level]);
  int rc = gk_device_parse(spec, &dev, why, sizeof why);
  if (rc != GK_OK) {
    printf("FAIL: gk_device_parse(\"%s\"): %s: %s\n", spec, gk_strerror(rc), why);
    t->failures++;
    return NULL;
  }
  rc = gk_module_load(t->ar, &dev, kernel, variant, mod);
  if (rc != GK_OK) {
    printf("FAIL: loading %s '%s' for %s: %s: %s\n", kernel, variant, spec,
           gk_strerror(rc), gk_archive_errmsg(t->ar));
    t->failures++;
    return NULL;
  }
  const gk_image_info *info = gk_module_info(*mod);
  if (strcmp(info->kernel, kernel) != 0 || strcmp(info->backend, "cpu") != 0 ||
      strcmp(info->variant, variant) != 0 ||
      strcmp(info->target, ktest_levels[level]) != 0) {
    printf("FAIL: %s '%s' for %s: libgk chose %s %s %s '%s'\n", kernel, variant,
           spec, info->kernel, info->backend, info->target, info->variant);
  } else {
    void *fn = gk_module_symbol(*mod, kernel);
    if (fn)
      return fn;
    printf("FAIL: %s '%s' %s: no symbol '%s' in the image\n", kernel, variant,
           ktest_levels[level], kernel);
  }
  gk_module_unload(*mod);
  *mod = NULL;
  t->failures++;
  return NULL;
}
