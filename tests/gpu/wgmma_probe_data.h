/*
 * wgmma_probe_data.h - the inputs of the wgmma probe (wgmma_probe.cuh), the
 * same on the GPU (test_wgmma_probe.c) and on the emulator (cuda.emu): A
 * (64 x 16) small integers, B (16 x n) quarters of small integers, each as
 * a float and as its binary16 bits, so that every product and sum of D = A B
 * is exact in f32 whatever order the tensor cores add in.
 */
#ifndef GK_WGMMA_PROBE_DATA_H
#define GK_WGMMA_PROBE_DATA_H

#include <stdint.h>

#include "../../kernelsrc/common/gk_quant.h"

static inline void wgmma_probe_data(int n, int t, float *a, uint16_t *ha, float *b,
                                    uint16_t *hb) {
  unsigned seed = 12345u + 7u * (unsigned)n + (unsigned)t;
  for (int i = 0; i < 64 * 16; i++) {
    seed = seed * 1103515245u + 12345u;
    a[i] = (float)((int)(seed >> 16) % 7 - 3);
    ha[i] = gk_q_f32_to_f16(a[i]);
  }
  for (int i = 0; i < 16 * n; i++) {
    seed = seed * 1103515245u + 12345u;
    b[i] = (float)((int)(seed >> 16) % 5 - 2) + (float)(i % 3) * 0.25f;
    hb[i] = gk_q_f32_to_f16(b[i]);
  }
}

#endif /* GK_WGMMA_PROBE_DATA_H */
