/*
 * hsa_double.h - a TEST DOUBLE for the HSA runtime (libhsa-runtime64), for
 * the ROCm driver path on machines without an AMD GPU. It is installed with
 * gk_driver_set_resolver(GK_BACKEND_ROCM, ...), so libgk never dlopen()s the
 * real runtime while it is in place.
 *
 * It plays a machine with the agents a test describes and does what ROCr's
 * loader does with a code object, no more: it refuses one that is not an
 * AMDGPU HSA ELF for the agent's processor (or a generic target covering
 * it) with the agent's xnack/sramecc settings, and answers symbol queries
 * from the code object's own symbol table and kernel descriptors. It keeps
 * a log of what libgk asked, so tests can check the calls balance.
 *
 * Launches: it has one kernarg region per GPU agent (hsa_memory_allocate
 * gives host memory and remembers it) and one group region (the LDS, of
 * `group_size` bytes), creates queues of 64-byte packet slots, and when a
 * doorbell is rung it takes every packet up to the doorbell's value as a
 * packet processor would: it checks the header (a kernel dispatch,
 * published), that the kernel object is one it handed out, the kernarg
 * address lies in kernarg memory, aligned as the descriptor asks, and the
 * group segment fits the agent's LDS; it records the packet and the
 * kernarg segment's bytes, then marks the slot INVALID and advances the
 * read index. No kernel runs.
 */
#ifndef GK_TEST_HSA_DOUBLE_H
#define GK_TEST_HSA_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct hd_agent {
  int gpu;             /* 0: a CPU agent, which libgk must skip */
  const char *isa;     /* "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" */
  const char *product; /* product name, e.g. "AMD Instinct MI210"; may be "" */
} hd_agent;

typedef struct hd_config {
  unsigned init_status; /* what hsa_init returns (0: success) */
  hd_agent agents[4];
  int nagents;
  unsigned load_status; /* nonzero: hsa_executable_load_agent_code_object
                           returns this instead of checking */
  uint32_t group_size;  /* every GPU agent's group region (LDS) in bytes;
                           0: 65536, what most AMD GPUs have */
} hd_config;

typedef struct hd_log {
  int init_calls, live_inits; /* live: hsa_init minus hsa_shut_down */
  int readers, readers_live;
  int executables, executables_live;
  int loads, freezes, symbol_queries;
  /* The last code object offered for loading, and the agent. */
  size_t co_size;
  uint32_t co_flags;
  unsigned co_machine;
  char agent_isa[80];
  unsigned co_abiversion;
  char refused[256]; /* why the double refused the last load, "" if not */
  /* Launches */
  int kernarg_allocs_live, queues_live, dispatches;
  unsigned char packet[64];    /* the last dispatch packet taken, as written */
  unsigned char kernarg[1024]; /* its kernarg segment, kernarg_size bytes */
  uint32_t kernarg_size;       /* the kernel descriptor's */
  uint64_t doorbell;           /* the last value the doorbell was rung with */
  const void *queue;           /* the queue of the last packet */
  char bad_packet[256];        /* why the double refused a packet, "" if not */
} hd_log;

/* Installs the double (copying cfg) and clears the log. */
void hd_install(const hd_config *cfg);
/* Restores dlopen for ROCm. */
void hd_remove(void);
const hd_log *hd_get_log(void);
/* The kernel object the double hands out for a descriptor at `value`. */
uint64_t hd_kernel_object(uint64_t value);
/* A queue of the first GPU agent, as hsa_queue_create makes (what a caller
 * passes as gk_launch_options.stream), and its destruction. */
void *hd_queue_create(uint32_t size);
void hd_queue_destroy(void *queue);

#endif
