/*
 * hsa_double.c - TEST DOUBLE of libhsa-runtime64 (see hsa_double.h). The
 * entry points have the HSA prototypes as loader/rocm_hsa.h declares them
 * (tests/backends/rocm/test_hsa_abi.c checks those against the real <hsa/hsa.h>).
 */
#include "hsa_double.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amd_elf.h"
#include "gk.h"
#include "rocm_hsa.h"

enum {
  ST_OK = 0,
  ST_BREAK = 0x1,
  ST_ERROR = 0x1000,
  ST_INVALID_ARGUMENT = 0x1001,
  ST_INVALID_AGENT = 0x1004,
  ST_NOT_INITIALIZED = 0x100B,
  ST_INCOMPATIBLE_ARGUMENTS = 0x100D,
  ST_INVALID_EXECUTABLE = 0x1011,
  ST_FROZEN_EXECUTABLE = 0x1012,
  ST_INVALID_SYMBOL_NAME = 0x1013
};

static hd_config cfg;
static hd_log log_;

/* The processors this double knows (AMDGPUUsage EF_AMDGPU_MACH), written
 * independently of libgk's table, and the generic target covering each. */
static const struct {
  const char *name;
  unsigned mach;
  const char *generic;
} procs[] = {
    {"gfx900", 0x2c, "gfx9-generic"},     {"gfx906", 0x2f, "gfx9-generic"},
    {"gfx908", 0x30, NULL},               {"gfx90a", 0x3f, NULL},
    {"gfx940", 0x40, "gfx9-4-generic"},   {"gfx942", 0x4c, "gfx9-4-generic"},
    {"gfx1010", 0x33, "gfx10-1-generic"}, {"gfx1030", 0x36, "gfx10-3-generic"},
    {"gfx1031", 0x37, "gfx10-3-generic"}, {"gfx1100", 0x41, "gfx11-generic"},
    {"gfx1101", 0x46, "gfx11-generic"},   {"gfx1102", 0x47, "gfx11-generic"},
    {"gfx1103", 0x44, "gfx11-generic"},   {"gfx1150", 0x43, "gfx11-generic"},
    {"gfx1200", 0x48, "gfx12-generic"},   {"gfx1201", 0x4e, "gfx12-generic"},
    {"gfx9-generic", 0x51, NULL},         {"gfx9-4-generic", 0x5f, NULL},
    {"gfx10-1-generic", 0x52, NULL},      {"gfx10-3-generic", 0x53, NULL},
    {"gfx11-generic", 0x54, NULL},        {"gfx12-generic", 0x59, NULL},
};

static int proc_index(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
    if (strlen(procs[i].name) == len && strncmp(procs[i].name, name, len) == 0)
      return (int)i;
  return -1;
}

typedef struct reader {
  const unsigned char *p;
  size_t n;
} reader;

typedef struct exe {
  const reader *co; /* the loaded code object (the reader outlives it: libgk's promise) */
  int agent, frozen;
} exe;

typedef struct symbol {
  uint64_t object;
  uint32_t group, priv, kernarg;
} symbol;

static symbol symbols[64];
static int nsymbols;

uint64_t hd_kernel_object(uint64_t value) { return 0x7e5700000000ull + value; }

static int agent_of(gk__hsa_agent a) {
  int i = (int)(a.handle - 0x100);
  return a.handle >= 0x100 && i < cfg.nagents ? i : -1;
}

static gk__hsa_status hd_init(void) {
  log_.init_calls++;
  if (cfg.init_status) return cfg.init_status;
  log_.live_inits++;
  return ST_OK;
}

static gk__hsa_status hd_shut_down(void) {
  if (log_.live_inits <= 0) return ST_NOT_INITIALIZED;
  log_.live_inits--;
  return ST_OK;
}

static gk__hsa_status hd_status_string(gk__hsa_status s, const char **text) {
  switch (s) {
  case ST_OK: *text = "HSA_STATUS_SUCCESS: (test double)"; break;
  case 0x1008: *text = "HSA_STATUS_ERROR_OUT_OF_RESOURCES: (test double)"; break;
  case ST_INCOMPATIBLE_ARGUMENTS:
    *text = "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: (test double)";
    break;
  case ST_INVALID_EXECUTABLE: *text = "HSA_STATUS_ERROR_INVALID_EXECUTABLE: (test double)"; break;
  default: *text = "HSA_STATUS_ERROR: (test double)"; break;
  }
  return ST_OK;
}

static gk__hsa_status hd_iterate_agents(gk__hsa_agent_cb cb, void *data) {
  if (log_.live_inits <= 0) return ST_NOT_INITIALIZED;
  for (int i = 0; i < cfg.nagents; i++) {
    gk__hsa_status s = cb((gk__hsa_agent){0x100 + (uint64_t)i}, data);
    if (s != ST_OK) return s;
  }
  return ST_OK;
}

static gk__hsa_status hd_agent_get_info(gk__hsa_agent a, unsigned attr, void *value) {
  int i = agent_of(a);
  if (i < 0) return ST_INVALID_AGENT;
  const hd_agent *ag = &cfg.agents[i];
  switch (attr) {
  case GK__HSA_AGENT_INFO_DEVICE: *(unsigned *)value = ag->gpu ? 1u : 0u; return ST_OK;
  case GK__HSA_AGENT_INFO_QUEUE_MAX_SIZE: *(uint32_t *)value = ag->gpu ? 4096u : 0u; return ST_OK;
  case GK__HSA_AGENT_INFO_NAME: {
    const char *p = strstr(ag->isa, "gfx");
    memset(value, 0, GK__HSA_NAME_SIZE);
    memcpy(value, p ? p : "cpu", p ? strcspn(p, ":") : 3);
    return ST_OK;
  }
  case GK__HSA_AMD_AGENT_INFO_PRODUCT_NAME:
    memset(value, 0, GK__HSA_NAME_SIZE);
    memcpy(value, ag->product, strlen(ag->product) < 63 ? strlen(ag->product) : 63);
    return ST_OK;
  default: return ST_INVALID_ARGUMENT;
  }
}

static gk__hsa_status hd_agent_iterate_isas(gk__hsa_agent a, gk__hsa_isa_cb cb, void *data) {
  int i = agent_of(a);
  if (i < 0) return ST_INVALID_AGENT;
  return cb((gk__hsa_isa){0x200 + (uint64_t)i}, data);
}

static gk__hsa_status hd_isa_get_info_alt(gk__hsa_isa isa, unsigned attr, void *value) {
  int i = (int)(isa.handle - 0x200);
  if (isa.handle < 0x200 || i >= cfg.nagents) return ST_INVALID_ARGUMENT;
  const char *name = cfg.agents[i].isa;
  /* As ROCr: the length counts the terminating NUL, which NAME writes. */
  if (attr == GK__HSA_ISA_INFO_NAME_LENGTH) {
    *(uint32_t *)value = (uint32_t)strlen(name) + 1;
    return ST_OK;
  }
  if (attr == GK__HSA_ISA_INFO_NAME) {
    memcpy(value, name, strlen(name) + 1);
    return ST_OK;
  }
  return ST_INVALID_ARGUMENT;
}

static gk__hsa_status hd_reader_create(const void *p, size_t n, gk__hsa_code_object_reader *out) {
  if (log_.live_inits <= 0) return ST_NOT_INITIALIZED;
  if (!p || !n || !out) return ST_INVALID_ARGUMENT;
  reader *r = malloc(sizeof *r);
  if (!r) return ST_ERROR;
  r->p = p;
  r->n = n;
  log_.readers++;
  log_.readers_live++;
  out->handle = (uint64_t)(uintptr_t)r;
  return ST_OK;
}

static gk__hsa_status hd_reader_destroy(gk__hsa_code_object_reader r) {
  if (!r.handle) return ST_INVALID_ARGUMENT;
  free((reader *)(uintptr_t)r.handle);
  log_.readers_live--;
  return ST_OK;
}

static gk__hsa_status hd_executable_create_alt(unsigned profile, unsigned rounding,
                                               const char *options, gk__hsa_executable *out) {
  (void)options;
  if (log_.live_inits <= 0) return ST_NOT_INITIALIZED;
  if (profile != GK__HSA_PROFILE_FULL && profile != 0) return ST_INVALID_ARGUMENT;
  if (rounding > 2) return ST_INVALID_ARGUMENT;
  exe *e = calloc(1, sizeof *e);
  if (!e) return ST_ERROR;
  e->agent = -1;
  log_.executables++;
  log_.executables_live++;
  out->handle = (uint64_t)(uintptr_t)e;
  return ST_OK;
}

/* ROCr's check of a code object for an agent, done from the bytes. */
static int compatible(const reader *r, int agent, char *why, size_t n) {
  unsigned machine, osabi, abiv;
  uint32_t flags;
  const char *isa = strstr(cfg.agents[agent].isa, "gfx");
  if (!ae_header(r->p, r->n, &machine, &osabi, &abiv, &flags) || machine != 224 ||
      osabi != 64) {
    snprintf(why, n, "not an AMDGPU HSA ELF");
    return 0;
  }
  log_.co_machine = machine;
  log_.co_flags = flags;
  log_.co_size = r->n;
  log_.co_abiversion = abiv;
  int pi = isa ? proc_index(isa, strcspn(isa, ":")) : -1;
  if (pi < 0) {
    snprintf(why, n, "the double does not know agent ISA %s", cfg.agents[agent].isa);
    return 0;
  }
  unsigned mach = flags & 0xff;
  unsigned generic = abiv == AE_V6 ? flags >> 24 : 0;
  int gi = procs[pi].generic ? proc_index(procs[pi].generic, strlen(procs[pi].generic)) : -1;
  if (mach != procs[pi].mach && !(generic && gi >= 0 && mach == procs[gi].mach)) {
    snprintf(why, n, "e_flags machine 0x%x is not %s's 0x%x%s", mach, procs[pi].name,
             procs[pi].mach, generic ? " nor its generic target's" : "");
    return 0;
  }
  if (abiv >= AE_V4) {
    const char *fx = strstr(isa, ":xnack"), *fs = strstr(isa, ":sramecc");
    unsigned xn = (flags >> 8) & 3, sr = (flags >> 10) & 3;
    /* 2 = off, 3 = on must equal the agent's; 0, 1 run anywhere. */
    if (xn >= 2 && (!fx || (fx[6] == '+') != (xn == 3))) {
      snprintf(why, n, "xnack %s does not match agent %s", xn == 3 ? "on" : "off", isa);
      return 0;
    }
    if (sr >= 2 && (!fs || (fs[8] == '+') != (sr == 3))) {
      snprintf(why, n, "sramecc %s does not match agent %s", sr == 3 ? "on" : "off", isa);
      return 0;
    }
  }
  return 1;
}

static gk__hsa_status hd_load(gk__hsa_executable ex, gk__hsa_agent a, gk__hsa_code_object_reader rd,
                              const char *options, gk__hsa_loaded_code_object *loaded) {
  (void)options, (void)loaded;
  exe *e = (exe *)(uintptr_t)ex.handle;
  const reader *r = (const reader *)(uintptr_t)rd.handle;
  int i = agent_of(a);
  log_.loads++;
  log_.refused[0] = '\0';
  if (!e || !r) return ST_INVALID_ARGUMENT;
  if (i < 0) return ST_INVALID_AGENT;
  if (e->frozen) return ST_FROZEN_EXECUTABLE;
  snprintf(log_.agent_isa, sizeof log_.agent_isa, "%s", cfg.agents[i].isa);
  if (cfg.load_status) {
    snprintf(log_.refused, sizeof log_.refused, "configured to fail");
    return cfg.load_status;
  }
  if (!compatible(r, i, log_.refused, sizeof log_.refused)) return ST_INCOMPATIBLE_ARGUMENTS;
  e->co = r;
  e->agent = i;
  return ST_OK;
}

static gk__hsa_status hd_freeze(gk__hsa_executable ex, const char *options) {
  (void)options;
  exe *e = (exe *)(uintptr_t)ex.handle;
  if (!e) return ST_INVALID_EXECUTABLE;
  e->frozen = 1;
  log_.freezes++;
  return ST_OK;
}

static gk__hsa_status hd_executable_destroy(gk__hsa_executable ex) {
  if (!ex.handle) return ST_INVALID_EXECUTABLE;
  free((exe *)(uintptr_t)ex.handle);
  log_.executables_live--;
  return ST_OK;
}

static gk__hsa_status hd_get_symbol(gk__hsa_executable ex, const char *name,
                                    const gk__hsa_agent *a, gk__hsa_executable_symbol *out) {
  exe *e = (exe *)(uintptr_t)ex.handle;
  log_.symbol_queries++;
  if (!e || !e->frozen || !e->co) return ST_INVALID_EXECUTABLE;
  if (!a || agent_of(*a) != e->agent) return ST_INVALID_AGENT;
  uint64_t value;
  symbol s;
  if (!ae_kernel(e->co->p, e->co->n, name, &value, &s.group, &s.priv, &s.kernarg))
    return ST_INVALID_SYMBOL_NAME;
  s.object = hd_kernel_object(value);
  if (nsymbols == (int)(sizeof symbols / sizeof symbols[0])) nsymbols = 0;
  symbols[nsymbols] = s;
  out->handle = (uint64_t)(uintptr_t)&symbols[nsymbols++];
  return ST_OK;
}

static gk__hsa_status hd_symbol_get_info(gk__hsa_executable_symbol sym, unsigned attr, void *value) {
  const symbol *s = (const symbol *)(uintptr_t)sym.handle;
  if (!s) return ST_INVALID_ARGUMENT;
  switch (attr) {
  case GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: *(uint64_t *)value = s->object; return ST_OK;
  case GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: *(uint32_t *)value = s->kernarg; return ST_OK;
  case GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT: *(uint32_t *)value = 8; return ST_OK;
  case GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: *(uint32_t *)value = s->group; return ST_OK;
  case GK__HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: *(uint32_t *)value = s->priv; return ST_OK;
  default: return ST_INVALID_ARGUMENT;
  }
}

/* ---- launches ------------------------------------------------------------ */

/* Regions, + the agent's index: its kernarg region, a fine-grained global
 * one that is not for kernargs, its group region (LDS). */
#define KERNARG_REGION 0x300u
#define FINE_REGION 0x400u
#define GROUP_REGION 0x500u

static uint32_t group_size(void) { return cfg.group_size ? cfg.group_size : 65536; }

typedef struct alloc {
  unsigned char *p;
  size_t n;
} alloc;
static alloc allocs[16];

typedef struct dq {
  gk__hsa_queue q; /* first: the hsa_queue_t * libgk gets */
  int agent;
  uint64_t write, read;
} dq;

static gk__hsa_status hd_iterate_regions(gk__hsa_agent a, gk__hsa_region_cb cb, void *data) {
  int i = agent_of(a);
  if (i < 0) return ST_INVALID_AGENT;
  if (!cfg.agents[i].gpu) return ST_OK;
  /* The group region and a fine-grained one first, which are not for
   * kernargs, then the one. */
  static const uint64_t order[] = {GROUP_REGION, FINE_REGION, KERNARG_REGION};
  for (int k = 0; k < 3; k++) {
    gk__hsa_status s = cb((gk__hsa_region){order[k] + (uint64_t)i}, data);
    if (s != ST_OK) return s;
  }
  return ST_OK;
}

static gk__hsa_status hd_region_get_info(gk__hsa_region r, unsigned attr, void *value) {
  uint64_t base = r.handle & ~0xffull;
  if ((base != KERNARG_REGION && base != FINE_REGION && base != GROUP_REGION) ||
      r.handle - base >= (uint64_t)cfg.nagents)
    return ST_INVALID_ARGUMENT;
  if (attr == GK__HSA_REGION_INFO_SEGMENT) {
    *(unsigned *)value =
        base == GROUP_REGION ? GK__HSA_REGION_SEGMENT_GROUP : GK__HSA_REGION_SEGMENT_GLOBAL;
    return ST_OK;
  }
  if (attr == GK__HSA_REGION_INFO_SIZE && base == GROUP_REGION) {
    *(size_t *)value = group_size();
    return ST_OK;
  }
  if (attr == GK__HSA_REGION_INFO_GLOBAL_FLAGS && base != GROUP_REGION) {
    /* hsa_region_global_flag_t: KERNARG 1, FINE_GRAINED 2 */
    *(uint32_t *)value = base == KERNARG_REGION ? GK__HSA_REGION_GLOBAL_FLAG_KERNARG | 2u : 2u;
    return ST_OK;
  }
  return ST_INVALID_ARGUMENT;
}

static gk__hsa_status hd_memory_allocate(gk__hsa_region r, size_t n, void **ptr) {
  if (log_.live_inits <= 0) return ST_NOT_INITIALIZED;
  if (r.handle < KERNARG_REGION || r.handle >= FINE_REGION + (uint64_t)cfg.nagents || !n || !ptr)
    return ST_INVALID_ARGUMENT;
  for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
    if (!allocs[i].p) {
      if (!(allocs[i].p = aligned_alloc(64, (n + 63) & ~(size_t)63))) return 0x1008;
      allocs[i].n = n;
      /* Garbage, so that a byte libgk forgets to write shows. */
      memset(allocs[i].p, 0xa5, n);
      if (r.handle < FINE_REGION) log_.kernarg_allocs_live++;
      *ptr = allocs[i].p;
      return ST_OK;
    }
  return 0x1008;
}

static gk__hsa_status hd_memory_free(void *p) {
  for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
    if (p && allocs[i].p == p) {
      free(p);
      allocs[i].p = NULL;
      log_.kernarg_allocs_live--;
      return ST_OK;
    }
  return ST_INVALID_ARGUMENT;
}

static gk__hsa_status hd_queue_create_fn(gk__hsa_agent a, uint32_t size, uint32_t type,
                                         gk__hsa_queue_cb cb, void *data, uint32_t priv,
                                         uint32_t group, gk__hsa_queue **out) {
  (void)cb, (void)data, (void)priv, (void)group;
  int i = agent_of(a);
  if (log_.live_inits <= 0) return ST_NOT_INITIALIZED;
  if (i < 0 || !cfg.agents[i].gpu) return ST_INVALID_AGENT;
  if (!out || size == 0 || (size & (size - 1)) || size > 4096 || type > 1)
    return ST_INVALID_ARGUMENT;
  dq *d = calloc(1, sizeof *d);
  void *ring = aligned_alloc(64, (size_t)size * 64);
  if (!d || !ring) {
    free(d), free(ring);
    return 0x1008;
  }
  /* Every slot starts INVALID (type 1), as ROCr's do. */
  memset(ring, 0, (size_t)size * 64);
  for (uint32_t k = 0; k < size; k++) ((unsigned char *)ring)[64 * k] = 1;
  d->q.type = type;
  d->q.base_address = ring;
  d->q.doorbell_signal.handle = (uint64_t)(uintptr_t)d;
  d->q.size = size;
  d->q.id = 0xd0b1;
  d->agent = i;
  log_.queues_live++;
  *out = &d->q;
  return ST_OK;
}

static gk__hsa_status hd_queue_destroy_fn(gk__hsa_queue *q) {
  if (!q) return ST_INVALID_ARGUMENT;
  free(q->base_address);
  free(q);
  log_.queues_live--;
  return ST_OK;
}

static uint64_t hd_load_read_index(const gk__hsa_queue *q) {
  return __atomic_load_n(&((const dq *)q)->read, __ATOMIC_ACQUIRE);
}

static uint64_t hd_add_write_index(const gk__hsa_queue *q, uint64_t v) {
  return __atomic_fetch_add(&((dq *)q)->write, v, __ATOMIC_RELEASE);
}

/* The newest symbol with that kernel object: objects are descriptor
 * addresses, which code objects loaded one after another may share. */
static const symbol *symbol_of(uint64_t object) {
  const int n = (int)(sizeof symbols / sizeof symbols[0]);
  for (int k = 1; k <= n; k++) {
    const symbol *s = &symbols[((nsymbols - k) % n + n) % n];
    if (s->object && s->object == object) return s;
  }
  return NULL;
}

/* One packet, checked and recorded as a packet processor would take it. */
static int take(dq *d, const gk__hsa_dispatch_packet *p) {
  uint32_t first = __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
  if ((first & 0xff) != GK__HSA_PACKET_TYPE_KERNEL_DISPATCH) {
    snprintf(log_.bad_packet, sizeof log_.bad_packet,
             "packet %llu: header type %u, not a kernel dispatch (not published?)",
             (unsigned long long)d->read, first & 0xff);
    return 0;
  }
  const symbol *s = symbol_of(p->kernel_object);
  if (!s) {
    snprintf(log_.bad_packet, sizeof log_.bad_packet, "packet %llu: unknown kernel object 0x%llx",
             (unsigned long long)d->read, (unsigned long long)p->kernel_object);
    return 0;
  }
  const unsigned char *ka = p->kernarg_address;
  int inside = 0;
  for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
    if (allocs[i].p && ka >= allocs[i].p && ka + s->kernarg <= allocs[i].p + allocs[i].n)
      inside = 1;
  if (!inside || ((uintptr_t)ka & 7) || s->kernarg > sizeof log_.kernarg) {
    snprintf(log_.bad_packet, sizeof log_.bad_packet,
             "packet %llu: kernarg address %p is not %u bytes of kernarg memory aligned to 8",
             (unsigned long long)d->read, (const void *)ka, s->kernarg);
    return 0;
  }
  if (p->group_segment_size > group_size()) {
    snprintf(log_.bad_packet, sizeof log_.bad_packet,
             "packet %llu: a group segment of %u bytes; agent %d has %u",
             (unsigned long long)d->read, p->group_segment_size, d->agent, group_size());
    return 0;
  }
  memcpy(log_.packet, p, 64);
  memset(log_.kernarg, 0, sizeof log_.kernarg);
  memcpy(log_.kernarg, ka, s->kernarg);
  log_.kernarg_size = s->kernarg;
  log_.queue = d;
  log_.dispatches++;
  return 1;
}

static void hd_signal_store(gk__hsa_signal sig, int64_t value) {
  dq *d = (dq *)(uintptr_t)sig.handle;
  log_.doorbell = (uint64_t)value;
  /* The doorbell of one of the double's queues: take what is published. */
  while (d->read <= (uint64_t)value && d->read < d->write) {
    unsigned char *slot = (unsigned char *)d->q.base_address + 64 * (d->read & (d->q.size - 1));
    if (!take(d, (const gk__hsa_dispatch_packet *)slot)) return;
    __atomic_store_n((uint16_t *)slot, (uint16_t)1, __ATOMIC_RELEASE); /* INVALID */
    __atomic_store_n(&d->read, d->read + 1, __ATOMIC_RELEASE);
  }
}

void *hd_queue_create(uint32_t size) {
  gk__hsa_queue *q = NULL;
  return hd_queue_create_fn((gk__hsa_agent){0x100}, size, GK__HSA_QUEUE_TYPE_MULTI, NULL, NULL,
                            UINT32_MAX, UINT32_MAX, &q) == ST_OK ? q : NULL;
}

void hd_queue_destroy(void *q) { hd_queue_destroy_fn(q); }

static const struct {
  const char *name;
  void *fn;
} table[] = {
    {"hsa_init", (void *)hd_init},
    {"hsa_shut_down", (void *)hd_shut_down},
    {"hsa_status_string", (void *)hd_status_string},
    {"hsa_iterate_agents", (void *)hd_iterate_agents},
    {"hsa_agent_get_info", (void *)hd_agent_get_info},
    {"hsa_agent_iterate_isas", (void *)hd_agent_iterate_isas},
    {"hsa_isa_get_info_alt", (void *)hd_isa_get_info_alt},
    {"hsa_code_object_reader_create_from_memory", (void *)hd_reader_create},
    {"hsa_code_object_reader_destroy", (void *)hd_reader_destroy},
    {"hsa_executable_create_alt", (void *)hd_executable_create_alt},
    {"hsa_executable_load_agent_code_object", (void *)hd_load},
    {"hsa_executable_freeze", (void *)hd_freeze},
    {"hsa_executable_destroy", (void *)hd_executable_destroy},
    {"hsa_executable_get_symbol_by_name", (void *)hd_get_symbol},
    {"hsa_executable_symbol_get_info", (void *)hd_symbol_get_info},
    {"hsa_agent_iterate_regions", (void *)hd_iterate_regions},
    {"hsa_region_get_info", (void *)hd_region_get_info},
    {"hsa_memory_allocate", (void *)hd_memory_allocate},
    {"hsa_memory_free", (void *)hd_memory_free},
    {"hsa_queue_create", (void *)hd_queue_create_fn},
    {"hsa_queue_destroy", (void *)hd_queue_destroy_fn},
    {"hsa_queue_load_read_index_scacquire", (void *)hd_load_read_index},
    {"hsa_queue_add_write_index_screlease", (void *)hd_add_write_index},
    {"hsa_signal_store_screlease", (void *)hd_signal_store},
};

static void *resolve(void *ctx, const char *name) {
  (void)ctx;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].name, name) == 0) return table[i].fn;
  return NULL;
}

void hd_install(const hd_config *c) {
  cfg = *c;
  memset(&log_, 0, sizeof log_);
  gk_driver_set_resolver(GK_BACKEND_ROCM, resolve, NULL);
}

void hd_remove(void) { gk_driver_set_resolver(GK_BACKEND_ROCM, NULL, NULL); }

const hd_log *hd_get_log(void) { return &log_; }
