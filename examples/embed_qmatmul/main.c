/*
 * embed_qmatmul - a downstream program that carries its kernels inside its
 * own binary: the fat archive is linked in (gk embed, or gk_embed_archive()
 * in CMake), opened in place with gk_archive_open_memory, and the best
 * qmatmul image for this machine is loaded and run, then checked against a
 * plain C computation of the same product (docs/weights.md).
 *
 * Prints one line saying what ran and how far it was off; exits 0 when the
 * results match, 1 otherwise.
 */
#include <gk.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Defined by the generated source (gk embed --symbol kernels_gkfat). */
extern const unsigned char kernels_gkfat[];
extern const size_t kernels_gkfat_size;

enum { BITS = 4, M = 3, N = 8, K = 64, BLOCK = 32, BLOCK_BYTES = 4 + 4 * BITS };

/* Scales and offsets chosen exact in binary16 (and so in float): with small
 * integer inputs every product and sum below is exact, and the kernel's
 * result must equal the reference to the last bit whatever its order of
 * additions. */
static const struct {
  uint16_t bits;
  float value;
} scales[] = {{0x3400, 0.25f}, {0x3800, 0.5f}, {0x3c00, 1.0f}},
  offsets[] = {{0xbc00, -1.0f}, {0x3800, 0.5f}, {0x0000, 0.0f}, {0xc000, -2.0f}};

int main(void) {
  unsigned char w[N * (K / BLOCK) * BLOCK_BYTES];
  float wf[N][K], x[M * K], y[M * N], ref[M * N];
  gk_archive *ar = NULL;
  gk_module *mod = NULL;
  int rc = 1;

  /* W: row j, block b gets scale (j+b)%3 and offset (j+2b)%4; code t of a
   * block is (7*t + j) % 16, packed BITS bits each, low bits first. */
  memset(w, 0, sizeof w);
  for (int j = 0; j < N; j++)
    for (int b = 0; b < K / BLOCK; b++) {
      unsigned char *blk = w + ((size_t)j * (K / BLOCK) + b) * BLOCK_BYTES;
      int s = (j + b) % 3, o = (j + 2 * b) % 4;
      blk[0] = scales[s].bits & 0xff;
      blk[1] = scales[s].bits >> 8;
      blk[2] = offsets[o].bits & 0xff;
      blk[3] = offsets[o].bits >> 8;
      for (int t = 0; t < BLOCK; t++) {
        int q = (7 * t + j) % (1 << BITS);
        blk[4 + t * BITS / 8] |= (unsigned char)(q << (t * BITS % 8));
        wf[j][b * BLOCK + t] = scales[s].value * (float)q + offsets[o].value;
      }
    }
  for (int i = 0; i < M * K; i++) x[i] = (float)((i * 5) % 7 - 3);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0;
      for (int t = 0; t < K; t++) acc += x[i * K + t] * wf[j][t];
      ref[i * N + j] = acc;
    }

  if (gk_archive_open_memory(kernels_gkfat, kernels_gkfat_size, &ar) != GK_OK) {
    fprintf(stderr, "embed_qmatmul: cannot open the embedded archive: %s\n", gk_last_error());
    return 1;
  }
  if (gk_module_load(ar, NULL, "qmatmul", "bits=4", &mod) != GK_OK) {
    fprintf(stderr, "embed_qmatmul: %s\n", gk_archive_errmsg(ar));
    goto out;
  }
  gk_qmatmul_fn qmatmul = (gk_qmatmul_fn)gk_module_symbol(mod, "qmatmul");
  if (!qmatmul) {
    fprintf(stderr, "embed_qmatmul: the image has no 'qmatmul' symbol\n");
    goto out;
  }
  qmatmul(x, w, y, M, N, K);

  double worst = 0;
  for (int i = 0; i < M * N; i++)
    if (fabs((double)y[i] - ref[i]) > worst) worst = fabs((double)y[i] - ref[i]);
  const gk_image_info *im = gk_module_info(mod);
  char dev[160];
  gk_device_format(gk_module_device(mod), dev, sizeof dev);
  printf("qmatmul %s: %s %s image on %s, from %zu embedded bytes: %dx%d results, "
         "max |error| %g: %s\n",
         im->variant, im->backend, im->target, dev, kernels_gkfat_size, M, N, worst,
         worst == 0 ? "match" : "MISMATCH");
  rc = worst == 0 ? 0 : 1;
out:
  gk_module_unload(mod);
  gk_archive_close(ar);
  return rc;
}
