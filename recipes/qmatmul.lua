-- qmatmul.lua - quantized matrix-vector product (docs/weights.md): y = W x
-- with W stored as `bits`-bit codes in blocks of 32 (kernelsrc/common/gk_quant.h).
kernel "qmatmul" {
  params = { bits = { 1, 2, 4, 8 } },
  cpu {
    source  = "../kernelsrc/cpu/qmatmul.c",
    entry   = { "qmatmul" },
    targets = { "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" },
  },
}
