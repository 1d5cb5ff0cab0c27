/*
 * emu.cpp - the scheduler behind gk_emu.h: each GPU thread of a block is a
 * fiber (Boost.Context's fiber, on a stack of its own) run round-robin on
 * one OS thread. Boost.Context switches in a few instructions, where
 * ucontext's swapcontext makes a system call (the signal mask) at every
 * switch: the attention checks, which switch fibers at every shuffle of
 * the mma twins, spent 90% of their time there (perf). A
 * fiber runs until it reaches a barrier (__syncthreads: every thread of the
 * block; a named barrier: its count of threads; a shuffle: every thread of
 * its group of 32), then the next one
 * runs. When every live fiber waits and no barrier can open, the kernel is
 * wrong (a barrier inside divergent code, or a thread that returned before
 * a barrier others wait at): the launch stops and says where.
 *
 * Deterministic: fibers run in thread order (or its reverse,
 * gk_emu_order), the first that can run first, so a failure replays
 * exactly. For exploring other interleavings by hand, GK_EMU_PERM names
 * an order of a block's warpgroups (blocks of 384: "120" scans warpgroup
 * 1, then 2, then 0), which then replaces both orders for such blocks.
 */
#define GK_GPU_EMULATE 1
#include "gk_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/context/fiber.hpp>

namespace ctx = boost::context;

/* AddressSanitizer follows the switches between stacks when told of them
 * (sanitizer/common_interface_defs.h); without it, a no-op. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define ASAN_START(save, bottom, size) __sanitizer_start_switch_fiber(save, bottom, size)
#define ASAN_FINISH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define ASAN_START(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define ASAN_FINISH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif

gk_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
int gk_emu_sms = 2;
int gk_emu_reverse;
unsigned long gk_emu_unfenced;

namespace {

enum wait_kind {
  RUNNING,
  AT_BLOCK_BARRIER,
  AT_NAMED_BARRIER,
  AT_GROUP_BARRIER,
  AT_MBARRIER,
  DONE
};

/* A cp.async in flight: its bytes, where they go, and the number of the
 * thread's commit group it belongs to. */
struct async_copy {
  char *dst;
  unsigned char bytes[16];
  unsigned n, group;
};

/* A wgmma in flight (gk_emu_wgmma): its operation, and its commit group. */
struct async_mma {
  gk_emu_wgmma_fn run;
  alignas(16) unsigned char op[GK_EMU_WGMMA_BYTES]; /* read as the twin's struct */
  unsigned group;
};

struct fiber {
  ctx::fiber self;  /* the fiber while it is suspended (empty while it runs) */
  ctx::fiber sched; /* while it runs: the scheduler, to switch back to */
  char *stack;
  wait_kind wait;
  unsigned gen; /* the barrier generation it waits to see pass */
  int bar;      /* AT_NAMED_BARRIER: which */
  uintptr_t mbar; /* AT_MBARRIER: which (gen: the parity it waits for) */
  std::vector<async_copy> copies; /* in flight, in issue order */
  unsigned committed;             /* groups committed so far */
  std::vector<async_mma> mmas;    /* wgmma in flight, in issue order */
  unsigned mma_committed;         /* their groups committed so far */
  std::vector<uintptr_t> unfenced; /* 16-byte pieces its copies landed since its last fence */
};

/* 256 KB each: the bodies keep small arrays on the stack. */
const size_t STACK = 256 * 1024;
const int GROUP = 32;
const int NAMED = 16; /* named barriers a block: bar.sync's 0 .. 15 */

/* A named barrier: the threads it waits for while some have arrived, and
 * the __syncthreads_or-like vote of each generation. */
struct named_barrier {
  unsigned gen, arrived, count;
  int vote[2];
};

/* A TMA copy (gk_emu_tma): where its bytes go, and the bytes, read at
 * issue. */
struct tma_copy {
  char *dst;
  std::vector<unsigned char> bytes;
};
/* An mbarrier (gk_emu_mbar_init): its arrivals a phase and those still
 * to come, the bytes announced and not landed, its phases completed, and
 * the TMA copies counted against the current phase, not landed. */
struct mbarrier {
  unsigned count, pending;
  long long tx;
  unsigned phase;
  std::vector<tma_copy> copies;
};

/* Boost.Context's stack allocator concept, over the stack a fiber already
 * has (allocated once per launch, reused by every block). */
struct own_stack {
  char *base;
  ctx::stack_context allocate() {
    ctx::stack_context sc;
    sc.size = STACK;
    sc.sp = base + STACK;
    return sc;
  }
  void deallocate(ctx::stack_context &) {}
};

struct block_state {
  std::vector<fiber> fibers;
  int cur;
  unsigned block_gen, block_arrived;
  int vote[2]; /* __syncthreads_or of generation g, in vote[g & 1] */
  named_barrier named[NAMED];
  bool released; /* a barrier opened since the scheduler last looked */
  std::vector<unsigned> group_gen, group_arrived;
  /* gk_emu_meet's tables, GK_EMU_MEET_WORDS a thread: a group's meeting
   * of generation g (its group barriers so far) writes meet[g & 1]. */
  std::vector<uint64_t> meet[2];
  /* Each 16-byte piece of shared memory a cp.async landed in and its
   * thread has not fenced for the async proxy since: which thread. */
  std::unordered_map<uintptr_t, int> unfenced;
  std::unordered_map<uintptr_t, mbarrier> mbars; /* by address, anew each block */
  gk_emu_body body;
  void *ctx;
  bool failed;
  void *asan_fake;           /* the scheduler's fake stack while a fiber runs */
  const void *sched_bottom;  /* the scheduler's stack, as ASan learns it */
  size_t sched_size;
};

block_state *S;
bool order_last_first, order_cyclic; /* gk_emu_order */
const char *order_perm = getenv("GK_EMU_PERM"); /* warpgroups' order, by hand */

void resume_point(void) {
  /* Back in a fiber: its coordinates are current again. */
  threadIdx.x = (unsigned)S->cur;
  threadIdx.y = threadIdx.z = 0;
}

void yield_to_scheduler(void) {
  fiber &f = S->fibers[S->cur];
  void *fake = NULL;
  ASAN_START(&fake, S->sched_bottom, S->sched_size);
  f.sched = std::move(f.sched).resume();
  ASAN_FINISH(fake, &S->sched_bottom, &S->sched_size);
  resume_point();
}

/* Writes the copies of fiber f in groups below `below`, in issue order. */
void land_copies(fiber &f, unsigned below) {
  size_t kept = 0;
  for (size_t i = 0; i < f.copies.size(); i++) {
    async_copy &c = f.copies[i];
    if (c.group < below) {
      memcpy(c.dst, c.bytes, c.n);
      const uintptr_t piece = (uintptr_t)c.dst / 16; /* c.n <= 16, aligned to it */
      S->unfenced[piece] = S->cur;
      f.unfenced.push_back(piece);
      gk_emu_unfenced = S->unfenced.size();
    } else
      f.copies[kept++] = c;
  }
  f.copies.resize(kept);
}

/* A fiber's body: the kernel, then its copies land; it returns to the
 * scheduler for good (this stack is done with). */
ctx::fiber fiber_main(ctx::fiber &&sched) {
  S->fibers[S->cur].sched = std::move(sched);
  ASAN_FINISH(NULL, &S->sched_bottom, &S->sched_size);
  S->body(S->ctx);
  fiber &f = S->fibers[S->cur];
  land_copies(f, ~0u); /* a kernel's copies complete */
  if (!f.mmas.empty()) { /* D's registers are gone: no wait covered them */
    if (!S->failed)
      fprintf(stdout, "emulator: thread %d of block (%u, %u, %u) ended with %zu wgmma in flight "
              "(no wgmma.wait_group after them)\n", S->cur, blockIdx.x, blockIdx.y, blockIdx.z,
              f.mmas.size());
    S->failed = true;
    f.mmas.clear();
  }
  f.wait = DONE;
  ASAN_START(NULL, S->sched_bottom, S->sched_size);
  return std::move(f.sched);
}

const char *kind_name(wait_kind w) {
  switch (w) {
  case AT_BLOCK_BARRIER: return "__syncthreads";
  case AT_NAMED_BARRIER: return "a named barrier (bar.sync)";
  case AT_GROUP_BARRIER: return "a group shuffle";
  case AT_MBARRIER: return "an mbarrier's phase";
  case DONE: return "returned";
  default: return "running";
  }
}

}  // namespace

void gk_emu_syncthreads(void) {
  fiber &f = S->fibers[S->cur];
  unsigned n = (unsigned)S->fibers.size();
  if (++S->block_arrived == n) {
    S->block_arrived = 0;
    /* Every thread is here: none has voted in the next generation yet,
     * and this one's votes are read before the one after it ends. */
    S->vote[(S->block_gen + 1) & 1] = 0;
    S->block_gen++;
    S->released = true;
    return;
  }
  f.wait = AT_BLOCK_BARRIER;
  f.gen = S->block_gen;
  yield_to_scheduler();
}

int gk_emu_syncthreads_or(int pred) {
  const unsigned g = S->block_gen;
  if (pred) S->vote[g & 1] = 1;
  gk_emu_syncthreads();
  return S->vote[g & 1];
}

/* Counts the running fiber in at named barrier id; true when it waits. */
static bool bar_count_in(int id, int count) {
  if (id < 1 || id >= NAMED || count <= 0 || count % GROUP != 0 ||
      count > (int)S->fibers.size()) {
    if (!S->failed)
      fprintf(stdout, "emulator: named barrier %d, count %d, in block (%u, %u, %u) thread %d: "
              "the id must be 1 .. %d and the count a multiple of %d up to the block's %zu "
              "threads\n", id, count, blockIdx.x, blockIdx.y, blockIdx.z, S->cur, NAMED - 1,
              GROUP, S->fibers.size());
    S->failed = true;
    return false;
  }
  named_barrier &b = S->named[id];
  if (b.arrived == 0) {
    b.count = (unsigned)count;
  } else if (b.count != (unsigned)count) {
    if (!S->failed)
      fprintf(stdout, "emulator: named barrier %d, count %d, in block (%u, %u, %u) thread %d "
              "while %u threads wait at it for %u\n", id, count, blockIdx.x, blockIdx.y,
              blockIdx.z, S->cur, b.arrived, b.count);
    S->failed = true;
  }
  if (++b.arrived == b.count) {
    b.arrived = 0;
    b.vote[(b.gen + 1) & 1] = 0;
    b.gen++;
    S->released = true;
    return false;
  }
  return true;
}

void gk_emu_bar_sync(int id, int count) {
  if (!bar_count_in(id, count)) return;
  fiber &f = S->fibers[S->cur];
  f.wait = AT_NAMED_BARRIER;
  f.bar = id;
  f.gen = S->named[id].gen;
  yield_to_scheduler();
}

/* An arrival that completes the barrier gives way at once, so that the
 * threads it releases may run before the arriving one goes on (a
 * producer's signal is read before its later copies land). */
void gk_emu_bar_arrive(int id, int count) {
  const unsigned gen = id >= 1 && id < NAMED ? S->named[id].gen : 0;
  (void)bar_count_in(id, count);
  if (id >= 1 && id < NAMED && S->named[id].gen != gen) {
    S->fibers[S->cur].wait = RUNNING;
    yield_to_scheduler();
  }
}

void gk_emu_order(int order) {
  order_last_first = order == 1;
  order_cyclic = order == GK_EMU_CYCLIC;
}

int gk_emu_bar_or(int id, int count, int pred) {
  const unsigned g = id >= 1 && id < NAMED ? S->named[id].gen : 0;
  if (pred && id >= 1 && id < NAMED) S->named[id].vote[g & 1] = 1;
  gk_emu_bar_sync(id, count);
  return id >= 1 && id < NAMED ? S->named[id].vote[g & 1] : 0;
}

/* An address the hardware would fault on (a misaligned cp.async or
 * ldmatrix row): said once a launch, which then fails. */
static void misaligned(const char *what, const void *p, unsigned align) {
  if (!S->failed)
    fprintf(stdout, "emulator: %s at %p, not %u-byte aligned, in block (%u, %u, %u) thread %d\n",
            what, p, align, blockIdx.x, blockIdx.y, blockIdx.z, S->cur);
  S->failed = true;
}

void gk_emu_fault(const char *what, unsigned long long value) {
  if (!S) { /* a body's function called on the host, outside a launch */
    fprintf(stdout, "emulator: %s (0x%llx) outside a launch\n", what, value);
    abort();
  }
  if (!S->failed)
    fprintf(stdout, "emulator: %s (0x%llx) in block (%u, %u, %u) thread %d\n", what, value,
            blockIdx.x, blockIdx.y, blockIdx.z, S->cur);
  S->failed = true;
}

/* The mbarrier at bar, or NULL (the launch failed) where none was
 * initialized there in this block. */
static mbarrier *mbar_of(const void *bar, const char *what) {
  auto it = S->mbars.find((uintptr_t)bar);
  if (it != S->mbars.end()) return &it->second;
  if (!S->failed)
    fprintf(stdout, "emulator: %s at %p, no mbarrier initialized there, in block (%u, %u, %u) "
            "thread %d\n", what, bar, blockIdx.x, blockIdx.y, blockIdx.z, S->cur);
  S->failed = true;
  return NULL;
}

/* Completes m's phase where every arrival has come: its copies land, and
 * the phase ends once the bytes announced have. True if it did. */
static bool mbar_complete(mbarrier &m) {
  if (m.pending != 0) return false;
  for (tma_copy &c : m.copies) {
    memcpy(c.dst, c.bytes.data(), c.bytes.size());
    m.tx -= (long long)c.bytes.size();
  }
  m.copies.clear();
  if (m.tx < 0) {
    if (!S->failed)
      fprintf(stdout, "emulator: an mbarrier phase in block (%u, %u, %u) got %lld bytes more "
              "than its arrivals announced (expect_tx)\n", blockIdx.x, blockIdx.y, blockIdx.z,
              -m.tx);
    S->failed = true;
    m.tx = 0;
  }
  if (m.tx != 0) return false; /* announced bytes that no copy brings: a deadlock */
  m.phase++;
  m.pending = m.count;
  S->released = true;
  return true;
}

void gk_emu_mbar_init(void *bar, unsigned count) {
  auto it = S->mbars.find((uintptr_t)bar);
  if (it != S->mbars.end() && !it->second.copies.empty()) {
    if (!S->failed)
      fprintf(stdout, "emulator: mbarrier at %p initialized again with copies in flight, in "
              "block (%u, %u, %u) thread %d\n", bar, blockIdx.x, blockIdx.y, blockIdx.z, S->cur);
    S->failed = true;
  }
  S->mbars[(uintptr_t)bar] = mbarrier{count, count, 0, 0, {}};
}

void gk_emu_mbar_arrive_expect_tx(void *bar, unsigned bytes) {
  mbarrier *m = mbar_of(bar, "mbarrier.arrive.expect_tx");
  if (!m) return;
  if (m->pending == 0) {
    if (!S->failed)
      fprintf(stdout, "emulator: an arrival past the count (%u) of the mbarrier at %p, in block "
              "(%u, %u, %u) thread %d\n", m->count, bar, blockIdx.x, blockIdx.y, blockIdx.z,
              S->cur);
    S->failed = true;
    return;
  }
  m->tx += bytes;
  m->pending--;
}

void gk_emu_tma(void *dst, const void *data, unsigned bytes, void *bar) {
  mbarrier *m = mbar_of(bar, "a TMA copy's mbarrier");
  if (!m) return;
  tma_copy c;
  c.dst = (char *)dst;
  c.bytes.assign((const unsigned char *)data, (const unsigned char *)data + bytes);
  m->copies.push_back(std::move(c));
}

void gk_emu_mbar_wait(void *bar, unsigned parity) {
  mbarrier *m = mbar_of(bar, "mbarrier.try_wait");
  if (!m) return;
  if ((m->phase & 1u) != (parity & 1u)) return; /* that phase has completed */
  if (mbar_complete(*m)) return;
  fiber &f = S->fibers[S->cur];
  f.wait = AT_MBARRIER;
  f.mbar = (uintptr_t)bar;
  f.gen = parity & 1u;
  yield_to_scheduler();
}

void gk_emu_cp_async(void *dst, const void *src, unsigned bytes) {
  fiber &f = S->fibers[S->cur];
  if ((uintptr_t)dst % bytes) misaligned("cp.async destination", dst, bytes);
  if (src && (uintptr_t)src % bytes) misaligned("cp.async source", src, bytes);
  async_copy c;
  c.dst = (char *)dst;
  c.n = bytes;
  c.group = f.committed;
  if (src)
    memcpy(c.bytes, src, bytes);
  else
    memset(c.bytes, 0, bytes);
  f.copies.push_back(c);
}

void gk_emu_fence_proxy_async(void) {
  fiber &f = S->fibers[S->cur];
  for (uintptr_t piece : f.unfenced) {
    auto it = S->unfenced.find(piece);
    if (it != S->unfenced.end() && it->second == S->cur) S->unfenced.erase(it);
  }
  f.unfenced.clear();
  gk_emu_unfenced = S->unfenced.size();
}

void gk_emu_async_read(const void *p, unsigned bytes) {
  const uintptr_t a = (uintptr_t)p;
  for (uintptr_t piece = a / 16; piece <= (a + bytes - 1) / 16; piece++) {
    auto it = S->unfenced.find(piece);
    if (it == S->unfenced.end()) continue;
    if (!S->failed)
      fprintf(stdout, "emulator: a wgmma of thread %d in block (%u, %u, %u) reads shared memory "
              "at %p that a cp.async of thread %d wrote, not fenced for the async proxy since "
              "(fence.proxy.async after the copy lands, before the barrier)\n", S->cur,
              blockIdx.x, blockIdx.y, blockIdx.z, (void *)(piece * 16), it->second);
    S->failed = true;
    return;
  }
}

void gk_emu_cp_async_commit(void) { S->fibers[S->cur].committed++; }

void gk_emu_cp_async_wait(int n) {
  fiber &f = S->fibers[S->cur];
  land_copies(f, f.committed > (unsigned)n ? f.committed - (unsigned)n : 0u);
}

void gk_emu_wgmma(gk_emu_wgmma_fn run, const void *op, unsigned bytes) {
  fiber &f = S->fibers[S->cur];
  if (bytes > GK_EMU_WGMMA_BYTES) gk_emu_fault("wgmma operands over GK_EMU_WGMMA_BYTES", bytes);
  async_mma m;
  m.run = run;
  memcpy(m.op, op, bytes < GK_EMU_WGMMA_BYTES ? bytes : GK_EMU_WGMMA_BYTES);
  m.group = f.mma_committed;
  f.mmas.push_back(m);
}

void gk_emu_wgmma_commit(void) { S->fibers[S->cur].mma_committed++; }

/* Runs the wgmma of the groups the wait covers, in issue order. They are
 * taken off the list first: an operation switches fibers (its twin's
 * shuffles), and runs in every lane of the warp at the same wait. */
void gk_emu_wgmma_wait(int n) {
  fiber &f = S->fibers[S->cur];
  const unsigned below = f.mma_committed > (unsigned)n ? f.mma_committed - (unsigned)n : 0u;
  std::vector<async_mma> due;
  size_t kept = 0;
  for (size_t i = 0; i < f.mmas.size(); i++) {
    if (f.mmas[i].group < below)
      due.push_back(f.mmas[i]);
    else
      f.mmas[kept++] = f.mmas[i];
  }
  f.mmas.resize(kept);
  for (const async_mma &m : due) m.run(m.op);
}

static void group_barrier(void) {
  int g = S->cur / GROUP;
  fiber &f = S->fibers[S->cur];
  if (++S->group_arrived[g] == (unsigned)GROUP) {
    S->group_arrived[g] = 0;
    S->group_gen[g]++;
    S->released = true;
    return;
  }
  f.wait = AT_GROUP_BARRIER;
  f.gen = S->group_gen[g];
  yield_to_scheduler();
}

void gk_emu_group_sync(void) { group_barrier(); }

/* A lane at its group's k-th barrier finds group_gen == k (the k before
 * it completed, and it cannot complete without this lane), so every lane of
 * a meeting writes the same table. A lane writes that table again only at
 * meeting k + 2, after barrier k + 1 completed: every lane of the group has
 * reached barrier k + 1, so none still reads the table of meeting k. */
const uint64_t *gk_emu_meet(const uint64_t *w, int n) {
  const int me = S->cur, g = me / GROUP, W = GK_EMU_MEET_WORDS;
  if (n < 1 || n > W) {
    fprintf(stdout, "emulator: gk_emu_meet of %d words (1 .. %d)\n", n, W);
    abort();
  }
  uint64_t *t = S->meet[S->group_gen[g] & 1].data();
  memcpy(t + (size_t)me * W, w, (size_t)n * sizeof *w);
  group_barrier(); /* every lane has published */
  return t + (size_t)g * GROUP * W;
}

uint64_t gk_emu_exchange(uint64_t v, int src) {
  return gk_emu_meet(&v, 1)[(src & (GROUP - 1)) * GK_EMU_MEET_WORDS];
}

static unsigned long long ldsm_matrices, ldsm_extra;

void gk_emu_ldmatrix_banks(const uint64_t *rows) {
  const int me = S->cur, base = me / GROUP * GROUP;
  const void *row = (const void *)(uintptr_t)rows[(me - base) * GK_EMU_MEET_WORDS];
  if ((uintptr_t)row % 16) misaligned("ldmatrix row", row, 16);
  if (me == base)
    for (int m = 0; m < 4; m++) {
      uintptr_t r[8];
      for (int i = 0; i < 8; i++) r[i] = (uintptr_t)rows[(8 * m + i) * GK_EMU_MEET_WORDS];
      int n[8] = {0}, passes = 0; /* distinct rows in each bank group */
      for (int i = 0; i < 8; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++) seen = seen || r[j] == r[i];
        if (seen) continue;
        const int q = (int)(r[i] / 16 % 8);
        if (++n[q] > passes) passes = n[q];
      }
      ldsm_matrices++;
      ldsm_extra += (unsigned long long)(passes - 1);
    }
}

void gk_emu_ldmatrix_stats(unsigned long long *matrices, unsigned long long *extra) {
  *matrices = ldsm_matrices, *extra = ldsm_extra;
  ldsm_matrices = ldsm_extra = 0;
}

static bool runnable(const fiber &f, int i) {
  switch (f.wait) {
  case RUNNING: return true;
  case AT_BLOCK_BARRIER: return S->block_gen != f.gen;
  case AT_NAMED_BARRIER: return S->named[f.bar].gen != f.gen;
  case AT_GROUP_BARRIER: return S->group_gen[i / GROUP] != f.gen;
  case AT_MBARRIER: {
    mbarrier &m = S->mbars[f.mbar];
    return (m.phase & 1u) != f.gen || mbar_complete(m);
  }
  default: return false;
  }
}

/* Runs fiber i until it waits or ends. */
static void run_fiber(block_state &st, size_t i) {
  fiber &f = st.fibers[i];
  f.wait = RUNNING;
  st.cur = (int)i;
  threadIdx.x = (unsigned)i;
  threadIdx.y = threadIdx.z = 0;
  ASAN_START(&st.asan_fake, f.stack, STACK);
  f.self = std::move(f.self).resume();
  ASAN_FINISH(st.asan_fake, NULL, NULL);
}

/* A fresh fiber f on its stack (the last block's fibers have finished). */
static void make_fiber(fiber &f) {
  f.self = ctx::fiber(std::allocator_arg, own_stack{f.stack}, fiber_main);
  f.wait = RUNNING;
  f.copies.clear();
  f.committed = 0;
  f.mmas.clear();
  f.mma_committed = 0;
  f.unfenced.clear();
}

static int run_block(block_state &st) {
  size_t n = st.fibers.size();
  for (size_t i = 0; i < n; i++) make_fiber(st.fibers[i]);
  st.block_gen = st.block_arrived = 0;
  st.vote[0] = st.vote[1] = 0;
  for (named_barrier &b : st.named) b = named_barrier{0, 0, 0, {0, 0}};
  for (size_t g = 0; g < st.group_gen.size(); g++) st.group_gen[g] = st.group_arrived[g] = 0;
  st.released = false;
  st.unfenced.clear(); /* a block's shared memory starts anew */
  st.mbars.clear();
  gk_emu_unfenced = 0;
  /* GK_EMU_PERM, where it is an order of this block's warpgroups. */
  bool perm = order_perm && strlen(order_perm) * 128 == n;
  for (size_t w = 0; perm && w < n / 128; w++)
    perm = order_perm[w] >= '0' && (size_t)(order_perm[w] - '0') < n / 128 &&
           strchr(order_perm, order_perm[w]) == &order_perm[w]; /* each once */
  for (;;) {
    bool ran = false, live = false;
    for (size_t k = 0; k < n; k++) {
      size_t i = order_last_first ? n - 1 - k : k;
      if (perm) i = (size_t)(order_perm[k / 128] - '0') * 128 + k % 128;
      fiber &f = st.fibers[i];
      if (f.wait == DONE) continue;
      live = true;
      if (!runnable(f, (int)i)) continue;
      run_fiber(st, i);
      ran = true;
      /* The first thread (in the scan's order) that can run runs next:
       * where a barrier opened, the scan starts again. So the first
       * threads run as far ahead as they can before later ones catch up:
       * a consumer that reads shared memory without waiting for its
       * producer (a later warp) reads it before the producer has written
       * it, and in the other order a producer that does not wait for its
       * consumers overwrites what they have yet to read. */
      if (st.released) {
        st.released = false;
        if (order_cyclic) continue; /* the next thread in turn */
        k = (size_t)-1;
        live = false;
      }
    }
    if (!live) {
      /* TMA copies still in flight: the block's shared memory is gone. */
      for (auto &m : st.mbars)
        if (!m.second.copies.empty()) {
          fprintf(stdout, "emulator: block (%u, %u, %u) ended with %zu TMA copies in flight "
                  "(their mbarrier phase never waited for)\n", blockIdx.x, blockIdx.y,
                  blockIdx.z, m.second.copies.size());
          return -1;
        }
      /* A named barrier left part-filled: arrivals that no wait matched
       * (bar.arrive more often than the waits), which on a GPU would
       * complete a later use of the barrier too early. */
      for (int id = 1; id < NAMED; id++)
        if (st.named[id].arrived) {
          fprintf(stdout, "emulator: block (%u, %u, %u) ended with %u threads arrived at named "
                  "barrier %d (count %u)\n", blockIdx.x, blockIdx.y, blockIdx.z,
                  st.named[id].arrived, id, st.named[id].count);
          return -1;
        }
      return 0;
    }
    if (!ran) {
      fprintf(stdout, "emulator: deadlock in block (%u, %u, %u):", blockIdx.x, blockIdx.y,
              blockIdx.z);
      for (size_t i = 0; i < n; i++)
        if (i == 0 || st.fibers[i].wait != st.fibers[i - 1].wait)
          fprintf(stdout, " thread %zu %s;", i, kind_name(st.fibers[i].wait));
      fprintf(stdout, " a barrier not reached by every thread it waits for\n");
      return -1;
    }
  }
}

int gk_emu_launch(gk_emu_dim3 grid, gk_emu_dim3 block, gk_emu_body body, void *ctx) {
  if (block.x == 0 || block.x % GROUP != 0 || block.y != 1 || block.z != 1) {
    fprintf(stdout, "emulator: block (%u, %u, %u) is not a multiple of %d threads in x\n",
            block.x, block.y, block.z, GROUP);
    return -1;
  }
  block_state st;
  st.fibers.resize(block.x);
  for (fiber &f : st.fibers) {
    f.stack = (char *)malloc(STACK);
    if (!f.stack) {
      fprintf(stdout, "emulator: out of memory\n");
      abort();
    }
  }
  st.group_gen.resize(block.x / GROUP);
  st.group_arrived.resize(block.x / GROUP);
  st.meet[0].resize((size_t)block.x * GK_EMU_MEET_WORDS);
  st.meet[1].resize((size_t)block.x * GK_EMU_MEET_WORDS);
  st.body = body;
  st.ctx = ctx;
  st.failed = false;
  st.asan_fake = NULL;
  st.sched_bottom = NULL;
  st.sched_size = 0;
  S = &st;
  gridDim = grid;
  blockDim = block;
  int rc = 0;
  for (unsigned z = 0; z < grid.z && rc == 0; z++)
    for (unsigned y = 0; y < grid.y && rc == 0; y++)
      for (unsigned x = 0; x < grid.x && rc == 0; x++) {
        blockIdx.x = gk_emu_reverse ? grid.x - 1 - x : x;
        blockIdx.y = gk_emu_reverse ? grid.y - 1 - y : y;
        blockIdx.z = gk_emu_reverse ? grid.z - 1 - z : z;
        rc = run_block(st);
        if (st.failed) rc = -1;
      }
  /* A fiber a deadlock left suspended is kept as it is, with its stack,
   * for the rest of the process: Boost.Context would unwind it by throwing
   * on its stack, a switch the sanitizers are not told of. Reachable from
   * `parked`, so no leak. */
  static std::vector<std::pair<ctx::fiber, char *>> *parked;
  for (fiber &f : st.fibers) {
    if (f.self) {
      if (!parked) parked = new std::vector<std::pair<ctx::fiber, char *>>;
      parked->emplace_back(std::move(f.self), f.stack);
    } else {
      free(f.stack);
    }
  }
  S = nullptr;
  return rc;
}
