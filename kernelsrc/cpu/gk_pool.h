/*
 * gk_pool.h - a persistent thread pool living inside one CPU image, so that
 * a kernel call uses every core without a thread creation per call (that
 * costs tens of microseconds; an m = 1 qmatmul takes about 800).
 *
 * The image stays a plain shared object: the pool is static data of the
 * image, its workers are created on the first call that is worth splitting
 * (never at load time), and a destructor stops and joins them when the
 * image is unloaded (dlclose runs it before the code is unmapped, so no
 * worker is ever left running in freed code). A fork()ed child starts with
 * no workers and creates its own on demand.
 *
 * A call is a range of `total` items (output columns) cut into pieces that
 * the caller and the workers take from one atomic ticket (generation << 32
 * | items left), large pieces first and smaller ones towards the end
 * (guided scheduling), so a core that is busy with something else simply
 * takes fewer pieces. The caller works too and never waits for a worker to
 * wake up, only for pieces a worker has already taken. Results do not
 * depend on who computes which piece: items must be independent.
 *
 * Workers spin on the generation for GK_POOL_SPIN_NS after a call (the
 * next call of a decode step usually comes within that), then sleep on a
 * futex. Several callers at once are fine: the one that gets the pool uses
 * it, the others run their call on their own thread.
 *
 * Environment, read when the workers are created:
 *   GK_NUM_THREADS   threads per call, caller included (default: the CPUs
 *                    this process may run on, sched_getaffinity); 1 = none.
 *   GK_PARALLEL_MIN  calls with less work than this (the caller's unit,
 *                    multiply-adds for qmatmul) run on the calling thread;
 *                    default GK_POOL_MIN_WORK.
 *
 * Linux only (futex, sched_getaffinity), like the loader's memfd images.
 */
#ifndef GK_POOL_H
#define GK_POOL_H

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GK_POOL_MAX 64
#define GK_POOL_SPIN_NS 100000 /* 100 us */
#define GK_POOL_MIN_WORK (1 << 18)

/* Computes items [i0, i1) of the call whose argument is `arg`. */
typedef void (*gk_pool_fn)(void *arg, int64_t i0, int64_t i1);

typedef struct gk_pool {
  pthread_mutex_t init; /* creating or destroying the workers */
  pthread_mutex_t call; /* the caller that owns the workers */
  _Atomic int started;  /* workers created (or creation given up) */
  int nthreads;         /* per call, caller included */
  int nworkers;
  int64_t min_work;
  pthread_t tid[GK_POOL_MAX];
  /* The call: written by its caller before the ticket is published, read by
   * a worker only after it took a piece (so the call cannot have ended). */
  _Atomic(gk_pool_fn) fn;
  _Atomic(void *) arg;
  _Atomic uint32_t grain; /* smallest piece */
  _Atomic uint64_t ticket;
  _Atomic uint32_t gen;    /* futex word of sleeping workers */
  _Atomic uint32_t left;   /* items not finished yet; futex of the caller */
  _Atomic uint32_t sleepers, caller_waiting;
  _Atomic int stop;
} gk_pool;

#define GK_POOL_INIT \
  { .init = PTHREAD_MUTEX_INITIALIZER, .call = PTHREAD_MUTEX_INITIALIZER }

static inline void gk__futex_wait(_Atomic uint32_t *w, uint32_t expect) {
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, expect, NULL, NULL, 0);
}

static inline void gk__futex_wake(_Atomic uint32_t *w, int count) {
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

static inline int64_t gk__now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline void gk__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Spins until *w != v or GK_POOL_SPIN_NS pass; returns the last value. The
 * clock is read every 64 pauses only: a pause is tens of cycles. */
static inline uint32_t gk__spin_while(_Atomic uint32_t *w, uint32_t v) {
  const int64_t until = gk__now_ns() + GK_POOL_SPIN_NS;
  for (;;) {
    for (int i = 0; i < 64; i++) {
      const uint32_t x = atomic_load_explicit(w, memory_order_acquire);
      if (x != v)
        return x;
      gk__cpu_relax();
    }
    if (gk__now_ns() > until)
      return v;
  }
}

/* Takes and computes pieces of call `g` until none is left. Any thread may
 * run this at any time: a stale generation takes nothing. */
static void gk__pool_take(gk_pool *p, uint32_t g) {
  for (;;) {
    uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    if ((uint32_t)(t >> 32) != g || (uint32_t)t == 0)
      return;
    const uint32_t left = (uint32_t)t;
    /* The grain is read before the piece is taken; if the call changed in
     * between, the compare-exchange below fails (generations never repeat
     * within a call's lifetime), so a stale value is never used. */
    /* A quarter of a fair share of what is left: a thread that the OS
     * deschedules while holding a piece makes the caller wait for it, so
     * no piece is large (the first is 1/8 of the call on 2 threads). */
    uint32_t size = left / (4u * (uint32_t)p->nthreads);
    const uint32_t grain = atomic_load_explicit(&p->grain, memory_order_relaxed);
    size = size < grain ? grain : size;
    size = size > left ? left : size;
    if (!atomic_compare_exchange_weak_explicit(&p->ticket, &t, t - size,
                                               memory_order_acq_rel,
                                               memory_order_acquire))
      continue;
    gk_pool_fn fn = atomic_load_explicit(&p->fn, memory_order_relaxed);
    void *arg = atomic_load_explicit(&p->arg, memory_order_relaxed);
    fn(arg, (int64_t)(left - size), (int64_t)left);
    /* seq_cst pairs with the caller's store of caller_waiting: either it
     * sees left == 0 or this thread sees it waiting. */
    if (atomic_fetch_sub(&p->left, size) == size && atomic_load(&p->caller_waiting))
      gk__futex_wake(&p->left, 1);
  }
}

static void *gk__pool_worker(void *arg) {
  gk_pool *p = arg;
  uint32_t seen = atomic_load(&p->gen);
  for (;;) {
    uint32_t g = gk__spin_while(&p->gen, seen);
    if (g == seen) {
      atomic_fetch_add(&p->sleepers, 1);
      /* Re-read after announcing the sleep (seq_cst, paired with the
       * caller's increment of gen then read of sleepers). */
      if (atomic_load(&p->gen) == seen && !atomic_load(&p->stop))
        gk__futex_wait(&p->gen, seen);
      atomic_fetch_sub(&p->sleepers, 1);
      g = atomic_load(&p->gen);
    }
    if (atomic_load(&p->stop))
      return NULL;
    if (g != seen) {
      seen = g;
      gk__pool_take(p, g);
    }
  }
}

/* Positive integer from the environment, or `dflt`. */
static int64_t gk__env_int(const char *name, int64_t dflt, int64_t lo, int64_t hi) {
  const char *s = getenv(name);
  if (!s || !*s)
    return dflt;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (*end || v < lo || v > hi)
    return dflt; /* a kernel has no channel to complain on: ignore it */
  return (int64_t)v;
}

static void gk__pool_start(gk_pool *p) {
  pthread_mutex_lock(&p->init);
  if (atomic_load(&p->started)) {
    pthread_mutex_unlock(&p->init);
    return;
  }
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  cpus = cpus < 1 ? 1 : cpus > GK_POOL_MAX ? GK_POOL_MAX : cpus;
  p->nthreads = (int)gk__env_int("GK_NUM_THREADS", cpus, 1, GK_POOL_MAX);
  p->min_work = gk__env_int("GK_PARALLEL_MIN", GK_POOL_MIN_WORK, 0, INT64_MAX);
  atomic_store(&p->stop, 0);
  /* Workers get no signals: those belong to the application's threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  p->nworkers = 0;
  for (int i = 0; i < p->nthreads - 1; i++) {
    if (pthread_create(&p->tid[i], NULL, gk__pool_worker, p) != 0)
      break; /* fewer threads still computes everything */
    p->nworkers++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  p->nthreads = p->nworkers + 1;
  atomic_store(&p->started, 1);
  pthread_mutex_unlock(&p->init);
}

/* Stops and joins the workers (image unload). No call may be running. */
static void gk__pool_stop(gk_pool *p) {
  pthread_mutex_lock(&p->init);
  if (atomic_load(&p->started) && p->nworkers > 0) {
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->gen, 1);
    gk__futex_wake(&p->gen, INT_MAX);
    for (int i = 0; i < p->nworkers; i++)
      pthread_join(p->tid[i], NULL);
    p->nworkers = 0;
  }
  atomic_store(&p->started, 0);
  pthread_mutex_unlock(&p->init);
}

/* In a fork()ed child only the forking thread exists: forget the workers
 * (their memory is the parent's copy) and unlock what a parent thread held
 * at the fork. */
static void gk__pool_forget(gk_pool *p) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  p->init = fresh;
  p->call = fresh;
  p->nworkers = 0;
  atomic_store(&p->started, 0);
  atomic_store(&p->sleepers, 0);
  atomic_store(&p->caller_waiting, 0);
}

/*
 * Runs fn over items [0, total) on the pool's threads, or all on this
 * thread when `work` is below GK_PARALLEL_MIN, the pool has one thread, or
 * another caller is using it. `grain` is the smallest piece worth taking.
 */
static void gk_pool_run(gk_pool *p, gk_pool_fn fn, void *arg, int64_t total,
                        int64_t work, int64_t grain) {
  if (total <= 0)
    return;
  if (!atomic_load_explicit(&p->started, memory_order_acquire))
    gk__pool_start(p);
  if (p->nthreads < 2 || work < p->min_work || total < 2 || total > INT32_MAX ||
      pthread_mutex_trylock(&p->call) != 0) {
    fn(arg, 0, total);
    return;
  }
  grain = grain < 1 ? 1 : grain > total ? total : grain;
  const uint32_t g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
  atomic_store_explicit(&p->fn, fn, memory_order_relaxed);
  atomic_store_explicit(&p->arg, arg, memory_order_relaxed);
  atomic_store_explicit(&p->grain, (uint32_t)grain, memory_order_relaxed);
  atomic_store_explicit(&p->left, (uint32_t)total, memory_order_relaxed);
  atomic_store_explicit(&p->ticket, (uint64_t)g << 32 | (uint32_t)total,
                        memory_order_release);
  atomic_store(&p->gen, g);
  if (atomic_load(&p->sleepers))
    gk__futex_wake(&p->gen, INT_MAX);
  gk__pool_take(p, g);
  /* Only pieces a worker is computing remain: spin for them, then sleep. */
  uint32_t l = atomic_load_explicit(&p->left, memory_order_acquire);
  while (l != 0) {
    const uint32_t x = gk__spin_while(&p->left, l);
    if (x == l)
      break; /* no progress for a whole spin: sleep below */
    l = x;
  }
  while ((l = atomic_load(&p->left)) != 0) {
    atomic_store(&p->caller_waiting, 1);
    if ((l = atomic_load(&p->left)) == 0)
      break;
    gk__futex_wait(&p->left, l);
  }
  atomic_store(&p->caller_waiting, 0);
  atomic_thread_fence(memory_order_acquire);
  pthread_mutex_unlock(&p->call);
}

/*
 * One pool per image: GK_POOL_DEFINE(name) defines the pool, its fork
 * handler and the destructor that joins its workers at dlclose.
 */
#define GK_POOL_DEFINE(name)                                                \
  static gk_pool name = GK_POOL_INIT;                                       \
  static void name##_atfork_child(void) { gk__pool_forget(&name); }         \
  __attribute__((constructor)) static void name##_ctor(void) {              \
    pthread_atfork(NULL, NULL, name##_atfork_child);                         \
  }                                                                         \
  __attribute__((destructor)) static void name##_dtor(void) {               \
    gk__pool_stop(&name);                                                   \
  }

#endif /* GK_POOL_H */
