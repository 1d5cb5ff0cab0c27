/*
 * test_qpool.c ARCHIVE - the thread pool inside the CPU qmatmul images
 * (kernelsrc/cpu/gk_pool.h), through libgk's public API.
 *
 * For each code width, with the image libgk picks for this CPU:
 * - GK_NUM_THREADS=1 gives y computed on the caller's thread alone; with
 *   GK_NUM_THREADS=3 and GK_PARALLEL_MIN=0 every call is split, and y must
 *   be bit-identical (each column is computed by one thread with the same
 *   operations), for odd n, n below the thread count, m = 1 and m > 1;
 * - the image really runs 2 workers (counted in /proc/self/task) and
 *   gk_module_unload joins them (the count goes back);
 * - two application threads calling one image at once get the same y;
 * - a fork()ed child that calls the image gets the same y (its workers are
 *   created anew; the parent's do not exist in the child).
 * The environment is read when an image's pool starts (its first call), so
 * each setting is a fresh load.
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gk.h"
#include "qref.h"

typedef struct shape {
  int64_t m, n, k;
} shape;

/* n below, at and above the thread count (3), odd, several chunks of k. */
static const shape shapes[] = {{1, 1, 32},   {1, 2, 64},     {1, 3, 4096},
                               {1, 7, 4160}, {1, 1001, 256}, {2, 1, 64},
                               {3, 2, 96},   {5, 37, 512},   {4, 129, 1024}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static int tasks(void) {
  DIR *d = opendir("/proc/self/task");
  int count = 0;
  if (!d)
    return -1;
  for (struct dirent *e; (e = readdir(d));)
    count += e->d_name[0] != '.';
  closedir(d);
  return count;
}

typedef struct data {
  float *x[NSHAPES], *y[NSHAPES];
  unsigned char *w[NSHAPES];
} data;

static gk_qmatmul_fn load(gk_archive *ar, int bits, gk_module **mod) {
  char variant[16];
  snprintf(variant, sizeof variant, "bits=%d", bits);
  if (gk_module_load(ar, NULL, "qmatmul", variant, mod) != GK_OK) {
    printf("FAIL: loading qmatmul %s: %s\n", variant, gk_archive_errmsg(ar));
    return NULL;
  }
  gk_qmatmul_fn fn = (gk_qmatmul_fn)gk_module_symbol(*mod, "qmatmul");
  if (!fn)
    printf("FAIL: qmatmul %s: no symbol 'qmatmul'\n", variant);
  return fn;
}

/* Runs every shape; returns the number of shapes whose y differs from ref
 * (ref NULL: fills y and compares nothing). */
static int run_all(gk_qmatmul_fn fn, const data *d, float *const *out,
                   float *const *ref, const char *what, int verbose) {
  int bad = 0;
  for (size_t c = 0; c < NSHAPES; c++) {
    const shape s = shapes[c];
    fn(d->x[c], d->w[c], out[c], s.m, s.n, s.k);
    if (ref && memcmp(out[c], ref[c], (size_t)(s.m * s.n) * sizeof(float)) != 0) {
      if (verbose)
        printf("FAIL: %s m=%lld n=%lld k=%lld: y differs from the 1-thread y\n", what,
               (long long)s.m, (long long)s.n, (long long)s.k);
      bad++;
    }
  }
  return bad;
}

typedef struct racer {
  gk_qmatmul_fn fn;
  const data *d;
  float **ref;
  float *y[NSHAPES];
  int bad;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  for (int i = 0; i < 20; i++)
    r->bad += run_all(r->fn, r->d, r->y, r->ref, "", 0);
  return NULL;
}

static float **alloc_y(void) {
  float **y = calloc(NSHAPES, sizeof *y);
  for (size_t c = 0; y && c < NSHAPES; c++)
    y[c] = malloc((size_t)(shapes[c].m * shapes[c].n) * sizeof(float));
  return y;
}

static int check_width(gk_archive *ar, int bits) {
  data d;
  qref_rng r;
  qref_seed(&r, 77u + (unsigned)bits);
  for (size_t c = 0; c < NSHAPES; c++) {
    const shape s = shapes[c];
    d.x[c] = malloc((size_t)(s.m * s.k) * sizeof(float));
    d.w[c] = malloc(qref_w_bytes(bits, s.n, s.k));
    qref_fill_x(&r, d.x[c], (size_t)(s.m * s.k));
    qref_fill_w(&r, bits, s.n, s.k, d.w[c]);
  }
  float **one = alloc_y(), **many = alloc_y();
  int failures = 0;
  char what[64];
  gk_module *mod;
  gk_qmatmul_fn fn;

  setenv("GK_NUM_THREADS", "1", 1);
  if (!(fn = load(ar, bits, &mod)))
    return 1;
  const int before = tasks();
  run_all(fn, &d, one, NULL, "", 1);
  if (tasks() != before) {
    printf("FAIL: bits=%d GK_NUM_THREADS=1: the image started threads (%d -> %d tasks)\n",
           bits, before, tasks());
    failures++;
  }
  gk_module_unload(mod);

  setenv("GK_NUM_THREADS", "3", 1);
  setenv("GK_PARALLEL_MIN", "0", 1);
  if (!(fn = load(ar, bits, &mod)))
    return failures + 1;
  snprintf(what, sizeof what, "qmatmul bits=%d %s 3 threads", bits,
           gk_module_info(mod)->target);
  failures += run_all(fn, &d, many, one, what, 1);
  const int during = tasks();
  if (during != before + 2) {
    printf("FAIL: %s: %d tasks while loaded, expected %d (2 workers)\n", what, during,
           before + 2);
    failures++;
  }

  /* Two callers at once: one gets the pool, the other runs alone. */
  racer rc[2] = {{fn, &d, one, {0}, 0}, {fn, &d, one, {0}, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    for (size_t c = 0; c < NSHAPES; c++)
      rc[i].y[c] = malloc((size_t)(shapes[c].m * shapes[c].n) * sizeof(float));
    pthread_create(&t[i], NULL, race, &rc[i]);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    if (rc[i].bad) {
      printf("FAIL: %s: concurrent caller %d got a different y %d times\n", what, i,
             rc[i].bad);
      failures++;
    }
    for (size_t c = 0; c < NSHAPES; c++)
      free(rc[i].y[c]);
  }

  /* A child process inherits the image but not its workers. */
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0)
    _exit(run_all(fn, &d, many, one, what, 1) ? 1 : tasks() == 3 ? 0 : 2);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("FAIL: %s: in a fork()ed child: %s\n", what,
           !WIFEXITED(status)         ? "the child died"
           : WEXITSTATUS(status) == 2 ? "not 3 tasks (caller + 2 new workers)"
                                      : "y differs");
    failures++;
  }

  gk_module_unload(mod);
  if (tasks() != before) {
    printf("FAIL: %s: %d tasks after unloading, expected %d (workers not joined)\n",
           what, tasks(), before);
    failures++;
  }
  if (!failures)
    printf("ok: %s: %zu shapes bit-identical to 1 thread; 2 workers, joined at unload; "
           "concurrent callers and a fork()ed child agree\n",
           what, NSHAPES);
  unsetenv("GK_NUM_THREADS");
  unsetenv("GK_PARALLEL_MIN");
  for (size_t c = 0; c < NSHAPES; c++) {
    free(d.x[c]), free(d.w[c]), free(one[c]), free(many[c]);
  }
  free(one), free(many);
  return failures;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_qpool ARCHIVE\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  gk_archive *ar = NULL;
  if (gk_archive_open(argv[1], &ar) != GK_OK) {
    printf("FAIL: cannot open archive '%s': %s\n", argv[1], gk_last_error());
    return 1;
  }
  gk_device dev;
  if (gk_device_detect(&dev) != GK_OK || dev.backend != GK_BACKEND_CPU) {
    printf("SKIP: the device libgk picks here is not the cpu\n");
    gk_archive_close(ar);
    return 77;
  }
  int failures = 0;
  const int widths[] = {1, 2, 4, 8};
  for (int b = 0; b < 4; b++)
    failures += check_width(ar, widths[b]);
  gk_archive_close(ar);
  if (failures)
    printf("test_qpool: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
