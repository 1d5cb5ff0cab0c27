/*
 * hopper_probe.h - the start the probes of tests/gpu share (test_wgmma_probe,
 * test_tma_probe): one sm_90a cubin, run on compute capability 9.0 only.
 */
#ifndef GK_HOPPER_PROBE_H
#define GK_HOPPER_PROBE_H

#include "cudrv.h"

/*
 * Parses "PROG CUBIN [--libcuda PATH]" (--help prints the usage and `what`),
 * opens the driver, checks for compute capability 9.0 and loads CUBIN (built
 * from tests/gpu/`source`). Returns 1 with gpu open and mod loaded, or 0
 * after saying why, *rc then the program's exit status: 0 (--help), 2 (bad
 * arguments), 77 (SKIP: no usable GPU, or not a Hopper one), 1 (FAIL: the
 * cubin unreadable or refused). The caller unloads mod and closes gpu.
 */
int hopper_probe_open(int argc, char **argv, const char *prog, const char *what,
                      const char *source, cudrv *gpu, cu_module *mod, int *rc);

#endif /* GK_HOPPER_PROBE_H */
