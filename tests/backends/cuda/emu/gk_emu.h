/*
 * gk_emu.h - just enough of a GPU, on the CPU, to run the kernel bodies of
 * kernelsrc/cuda/NAME.cuh as they are: what gk_gpu.cuh takes from CUDA or HIP
 * (threadIdx, __syncthreads, __shared__, group shuffles, shared-memory
 * atomics, float4, uint4), defined for host C++ when GK_GPU_EMULATE is set.
 *
 * This is a test instrument, not a backend: no GPU exists on the machines
 * that run the tests, so the bodies' logic (tiling, online softmax,
 * reductions, radix select, barriers) is checked here against the scalar
 * references, thread by thread, in one OS thread (emu.cpp: every GPU thread
 * of a block is a fiber; barriers and shuffles switch fibers). It does not
 * check timing, memory coalescing or the compiler's code for a GPU.
 *
 * Blocks run one after another, so a __shared__ variable is a function
 * static, shared by the block's threads and reused by the next block (its
 * contents are undefined at block start, as on a GPU). Barriers are strict:
 * a __syncthreads not reached by every thread of the block, or a shuffle not
 * reached by every thread of its group, stops the test with the place
 * ("deadlock"), where hardware would hang or misbehave.
 */
#ifndef GK_EMU_H
#define GK_EMU_H

#include <math.h>
#include <stdint.h>
#include <string.h>

struct gk_emu_dim3 {
  unsigned x, y, z;
};
/* The running fiber's coordinates; the scheduler sets them at every switch. */
extern gk_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
/* The SMs of the emulated GPU, as %nsmid reads them on NVIDIA (gk_gpu.cuh's
 * gk_sm_count: a heuristic's input, never a bound): 2 unless a test sets
 * it, so that the small grids of the tests find it as busy as a real
 * launch finds a real GPU. */
extern int gk_emu_sms;
/* Nonzero: a launch runs its blocks last first (y, then x, counting down).
 * Blocks share the function-static __shared__ objects one after another,
 * so a block that reads shared memory it did not write finds what the
 * block before it left: in grid order that is often right by chance (the
 * same x, rounded), last first it is what another launch left. */
extern int gk_emu_reverse;

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(n)
#define GK_KERNEL
#define GK_DEV static inline
#define GK_DEV_NOINLINE static
#ifndef GK_WARP_SIZE
#define GK_WARP_SIZE 32
#endif

struct float4 {
  float x, y, z, w;
};
struct uint4 {
  unsigned x, y, z, w;
};

/* A body broke a precondition that the real instruction would not check
 * (an operand byte of gk_dp4a_us<ABits> of 2^ABits or more): said once a
 * launch, with the value, and the launch fails. */
void gk_emu_fault(const char *what, unsigned long long value);

void gk_emu_syncthreads(void);
#define __syncthreads() gk_emu_syncthreads()
/* __syncthreads_or: a barrier that returns nonzero when pred is nonzero in
 * any thread of the block. */
int gk_emu_syncthreads_or(int pred);
#define __syncthreads_or(pred) gk_emu_syncthreads_or(pred)
/* A named barrier (PTX bar.sync id, count; bar.red.or with a predicate;
 * bar.arrive): the first `count` threads to arrive at barrier `id` (1 ..
 * 15; 0 is __syncthreads') complete it, the others of the block are not
 * waited for; those that arrived by gk_emu_bar_sync or gk_emu_bar_or wait
 * until then, those of gk_emu_bar_arrive go on at once (a producer's
 * signal to consumers that wait). Strict as __syncthreads: arrivals with
 * another count than the barrier's current one fail the launch, and a
 * barrier that never fills is a deadlock. gk_emu_bar_or returns nonzero
 * when pred was nonzero in any of them. */
void gk_emu_bar_sync(int id, int count);
/* The order in which the scheduler looks for a thread to run: the lowest
 * thread that can run first (0, the default), or the highest (1): the
 * first threads, or the last, run as far ahead of the others as the
 * barriers let them; or in turn (GK_EMU_CYCLIC): each thread runs until it
 * waits, then the next one in thread order, so that threads that wait at
 * barriers of their own (warpgroups with named barriers) take turns, one
 * phase each, and each meets what the others did in between. */
#define GK_EMU_CYCLIC 2
void gk_emu_order(int order);
void gk_emu_bar_arrive(int id, int count);
int gk_emu_bar_or(int id, int count, int pred);

/* cp.async as sm_80's (gk_gpu.cuh's gk_cp_async16): the bytes of src
 * (zeros for NULL) are read at issue and written to dst as late as the PTX
 * ISA allows, when this thread's gk_emu_cp_async_wait(n) leaves at most n
 * of its committed groups in flight (or when the thread ends), so a read
 * of a stage before its wait sees the stage's old bytes. Copies not yet
 * committed are not waited for, as on the GPU. An address not aligned to
 * the copy's size, where the GPU would fault, fails the launch (as does an
 * ldmatrix row not 16-byte aligned). */
void gk_emu_cp_async(void *dst, const void *src, unsigned bytes);
/* __syncwarp (gk_gpu.cuh's gk_group_sync): the group's lanes meet. A lane
 * that reads what another lane's cp.async copied, after its own wait but
 * with no meeting, runs before that lane's wait and reads old bytes. */
void gk_emu_group_sync(void);
void gk_emu_cp_async_commit(void);
void gk_emu_cp_async_wait(int n);

/* wgmma as sm_90a's (kernelsrc/cuda/gk_wgmma.cuh's twins): an instruction,
 * its operation `run` with a copy of the `bytes` bytes at op (at most
 * GK_EMU_WGMMA_BYTES: the addresses of its registers, its descriptors), is
 * issued into this thread's open group; gk_emu_wgmma_commit closes the
 * group, and the instruction runs when this thread's gk_emu_wgmma_wait(n)
 * leaves at most n of its committed groups in flight, the latest the PTX
 * ISA allows. It reads A and B (registers and shared memory) and writes D
 * only then, so a body that reads D, or writes A's registers or the shared
 * memory a wgmma reads, before the wait that covers that wgmma computes
 * with the wrong numbers, as it may on a GPU. An instruction still in
 * flight when its thread ends fails the launch (its registers are gone). */
#define GK_EMU_WGMMA_BYTES 64
typedef void (*gk_emu_wgmma_fn)(const void *op);
void gk_emu_wgmma(gk_emu_wgmma_fn run, const void *op, unsigned bytes);
void gk_emu_wgmma_commit(void);
void gk_emu_wgmma_wait(int n);

/* mbarriers and the TMA's copies (kernelsrc/cuda/gk_tma.cuh's twins): an
 * mbarrier at bar (its 8 bytes of shared memory unused; the state is the
 * emulator's, anew each block) completes a phase when `count` arrivals
 * have come and the bytes they announced (gk_emu_mbar_arrive_expect_tx)
 * have landed. A copy (gk_emu_tma: `bytes` bytes of `data`, read at
 * issue, for dst) lands when a thread waits for the phase it counts
 * against, after every arrival came: the latest the PTX ISA allows, so a
 * stage read before its wait holds its old bytes. gk_emu_mbar_wait
 * returns once the phase of parity `parity` has completed, and waits
 * (a deadlock if it never does) until then. More bytes than announced, an
 * arrival past the count, an mbarrier used before its init, or copies
 * still in flight when the block ends fail the launch. */
void gk_emu_mbar_init(void *bar, unsigned count);
void gk_emu_mbar_arrive_expect_tx(void *bar, unsigned bytes);
void gk_emu_mbar_wait(void *bar, unsigned parity);
void gk_emu_tma(void *dst, const void *data, unsigned bytes, void *bar);

/* The async proxy (what wgmma reads shared memory through): the bytes a
 * thread's cp.async wrote reach it once that thread has run
 * fence.proxy.async (gk_emu_fence_proxy_async) after they landed. A
 * wgmma's twin that reads bytes a cp.async landed and its thread has not
 * fenced since (gk_emu_async_read, called by the twins while
 * gk_emu_unfenced is nonzero) fails the launch, naming the thread: on a
 * GPU it may read the stage's old bytes. (Plain stores are not tracked.) */
extern unsigned long gk_emu_unfenced; /* 16-byte pieces landed, not fenced */
void gk_emu_fence_proxy_async(void);
void gk_emu_async_read(const void *p, unsigned bytes);

/* The group's lanes meet and each publishes n (1 .. GK_EMU_MEET_WORDS)
 * 64-bit words: returns the group's table, lane L's words at
 * [L * GK_EMU_MEET_WORDS], which the lane may read until its next
 * shuffle or meeting (the tables of consecutive meetings alternate). One
 * meeting switches the group's fibers once; a shuffle is a meeting of one
 * word, so a twin that needs 32 words of other lanes (an mma's operands)
 * meets once where 32 shuffles would switch the fibers 32 times
 * (gk_gpu.cuh's gk_lanes). */
#define GK_EMU_MEET_WORDS 8
const uint64_t *gk_emu_meet(const uint64_t *w, int n);

/* Shared-memory banks under ldmatrix (gk_gpu.cuh's twin calls it with the
 * table of its meeting, each lane's row address as its word 0): the group's
 * 32 row addresses make 4 matrices of 8 rows of 16 bytes, and the hardware
 * reads a matrix in one pass when its 8 rows lie in distinct groups of 4
 * banks ((address / 16) mod 8; rows at the same address are one read); a
 * row not 16-byte aligned fails the launch. gk_emu_ldmatrix_stats gives the
 * matrices read since the last call and the passes beyond one each they
 * took (bank conflicts), and starts counting again. */
void gk_emu_ldmatrix_banks(const uint64_t *rows);
void gk_emu_ldmatrix_stats(unsigned long long *matrices, unsigned long long *extra);

/* Exchanges 64 bits among the group: every lane publishes v, then reads the
 * value of lane `src` (absolute lane in the group). */
uint64_t gk_emu_exchange(uint64_t v, int src);

template <typename T>
static inline T gk_emu_shfl(T v, int src) {
  static_assert(sizeof(T) <= 8, "shuffle of a type wider than 64 bits");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof v);
  b = gk_emu_exchange(b, src);
  T r;
  memcpy(&r, &b, sizeof r);
  return r;
}
#define GK_SHFL_XOR(v, lane_mask) \
  gk_emu_shfl((v), (int)((threadIdx.x % GK_GROUP) ^ (unsigned)(lane_mask)))
#define GK_SHFL(v, src_lane) gk_emu_shfl((v), (int)(src_lane))

/* One OS thread runs every fiber, and a fiber is switched only at a
 * barrier or shuffle: these read-modify-writes are atomic as they are. */
static inline unsigned atomicAdd(unsigned *p, unsigned v) {
  unsigned o = *p;
  *p = o + v;
  return o;
}
static inline float atomicAdd(float *p, float v) {
  float o = *p;
  *p = o + v;
  return o;
}
static inline unsigned atomicCAS(unsigned *p, unsigned cmp, unsigned v) {
  unsigned o = *p;
  if (o == cmp) *p = v;
  return o;
}
static inline unsigned atomicExch(unsigned *p, unsigned v) {
  unsigned o = *p;
  *p = v;
  return o;
}
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) {
  unsigned long long o = *p;
  if (v < o) *p = v;
  return o;
}

/* Launches `body` on a grid of blocks, each of block.x threads (y, z must
 * be 1). Returns 0, or -1 after printing "emulator: ..." on a deadlock or
 * a misaligned cp.async or ldmatrix address. */
typedef void (*gk_emu_body)(void *ctx);
int gk_emu_launch(gk_emu_dim3 grid, gk_emu_dim3 block, gk_emu_body body, void *ctx);

#endif /* GK_EMU_H */
