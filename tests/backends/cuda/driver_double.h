/*
 * driver_double.h - a TEST DOUBLE of the few libcuda entry points libgk
 * calls, installed through gk_driver_set_resolver. There is no NVIDIA GPU
 * and no driver on the machines that run the tests; this stands in for one,
 * and it is nothing more: it runs no kernel.
 *
 * What it does check, as a driver would refuse it: the bytes libgk hands to
 * cuLibraryLoadData / cuModuleLoadDataEx must be a cubin (ELF, EM_CUDA,
 * ET_EXEC) whose SM (e_flags, either layout) runs on the capability the
 * double reports (same major, minor not above), else CUDA_ERROR_NO_BINARY_
 * FOR_GPU; or NUL-terminated PTX whose ".target sm_XY" is not above the
 * device and whose toolkit ("release X.Y" in its header) is not newer than
 * the double's driver version, else CUDA_ERROR_INVALID_PTX /
 * CUDA_ERROR_UNSUPPORTED_PTX_VERSION. Kernels are found by name in the
 * image (".text.NAME" in a cubin, ".entry NAME" in PTX); each kernel of an
 * image is a function of its own.
 *
 * Shared memory as the driver API documents it: every function has
 * `static_shared` bytes of static shared memory and may launch with up to
 * 48 KB - static of dynamic shared memory, until cuFuncSetAttribute(
 * MAX_DYNAMIC_SHARED_SIZE_BYTES) raises that, which it refuses past the
 * device's opt-in limit (`optin`, attribute 97) minus static; a launch
 * asking for more dynamic shared memory than its function allows fails
 * with CUDA_ERROR_INVALID_VALUE.
 *
 * One double per process (the driver API has no user pointer): cud_install
 * sets it, and libgk's resolver asks it for every entry point.
 */
#ifndef CUDA_DRIVER_DOUBLE_H
#define CUDA_DRIVER_DOUBLE_H

#include <stddef.h>

typedef struct cud {
  /* What the double is: */
  int major, minor;   /* compute capability of every device */
  int count;          /* devices */
  int driver_version; /* 13000 */
  const char *name;   /* cuDeviceGetName */
  int sms;            /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
  int optin;          /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  int static_shared;  /* every function's CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES */
  int init_result;    /* what cuInit returns */
  /* Which ways of finding entry points it offers: */
  int gpa2, gpa1; /* cuGetProcAddress_v2 / cuGetProcAddress */
  int by_name;    /* every entry point by exported name too */
  int library;    /* the 12.0 library API (else modules only) */
  const char *hide; /* one entry point it lacks, NULL for none */
  /* Failures to force (0: behave): */
  int load_result;       /* returned by the load call, after its checks */
  const char *jit_log;   /* written to the JIT error log on a forced failure */
  int get_kernel_result; /* returned by cuLibraryGetKernel/cuModuleGetFunction */
  int launch_result;     /* returned by cuLaunchKernel, after its checks */
  int set_attr_result;   /* returned by cuFuncSetAttribute, after its checks */

  /* What it saw: */
  int inits, loads, unloads, retains, releases, pushes, pops, lookups;
  int loaded_ptx;         /* the last load was PTX */
  unsigned loaded_sm;     /* the last load's SM (cubin) or .target (PTX) */
  int used_library;       /* the last load went through cuLibraryLoadData */
  char refused[256];      /* why the double refused the last load, "" if not */
  int asked_version[64];  /* cuGetProcAddress's version, per asked[] name */
  char asked[64][40];
  int nasked;
  char by_name_asked[64][40]; /* names the resolver was asked for */
  int nby_name;
  /* The last cuLaunchKernel: its function (an index into the double's
   * handles), geometry, stream, and the first 8 bytes behind each of the
   * first `launch_nparams` kernelParams (set launch_nparams before). */
  int launches, launch_nparams;
  int launch_fn, launch_ctx_depth;
  unsigned grid[3], block[3], shared;
  void *stream;
  unsigned char params[16][8];
  /* Every cuFuncSetAttribute call, in order (the first 16). */
  struct {
    void *fn;
    int attrib, value;
  } set_attr[16];
  int nset_attr;
} cud;

/* Sensible defaults: one sm_86 device with 46 SMs and 99 KB of opt-in
 * shared memory, 123 bytes of static shared memory per function, driver
 * 13.0, cuGetProcAddress_v2, the library API, nothing forced. */
void cud_defaults(cud *d);
/* Makes d the double libgk talks to (gk_driver_set_resolver for cuda).
 * d must outlive its use; cud_remove() restores dlopen. */
void cud_install(cud *d);
void cud_remove(void);
/* The version libgk asked cuGetProcAddress for `name`; -1 if never. */
int cud_asked_version(const cud *d, const char *name);

#endif
