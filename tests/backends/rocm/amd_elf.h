/*
 * amd_elf.h - AMD code objects for the ROCm tests, written and read by
 * hand from LLVM's AMDGPUUsage (not with libgk, whose checks they test).
 *
 * ae_make() writes a minimal but well-formed code object: an ELF header
 * (EM_AMDGPU, EI_OSABI 64 = HSA, EI_ABIVERSION, e_flags as given), a
 * .dynstr/.dynsym naming each kernel's descriptor "NAME.kd", and a .rodata
 * section holding the 64-byte kernel descriptors (group segment, private
 * segment and kernarg sizes at offsets 0, 4 and 8). hipcc's real output has
 * the same pieces, so ae_kernel() reads both.
 */
#ifndef GK_TEST_AMD_ELF_H
#define GK_TEST_AMD_ELF_H

#include <stddef.h>
#include <stdint.h>

/* EI_ABIVERSION for code object v3..v6 */
enum { AE_V3 = 1, AE_V4 = 2, AE_V5 = 3, AE_V6 = 4 };

/* The sizes ae_make writes into every kernel descriptor. */
enum { AE_GROUP = 1024, AE_PRIVATE = 16, AE_KERNARG = 48 };

/* A code object with e_flags `flags` and one descriptor per name in
 * `kernels` (NULL-terminated). malloc'ed; *size receives its size. */
unsigned char *ae_make(unsigned abiversion, uint32_t flags,
                       const char *const *kernels, size_t *size);

/* The header fields the loader checks. 0 when `p` is not a 64-byte+ ELF. */
int ae_header(const void *p, size_t size, unsigned *machine, unsigned *osabi,
              unsigned *abiversion, uint32_t *flags);

/* Finds symbol `name` (".dynsym" or ".symtab") and reads the kernel
 * descriptor it points to. 1 when found, with the descriptor's sizes. */
int ae_kernel(const void *p, size_t size, const char *name, uint64_t *value,
              uint32_t *group, uint32_t *priv, uint32_t *kernarg);

#endif
