/*
 * paged.c - gk_paged_check: the paged KV cache's validity rule on the
 * host (gk.h; docs/kernels.md, "paged_attention").
 *
 * Why in libgk: the kernels meet a bad block table by writing NaN rows
 * (paged_attention) or nothing (kv_append), which says that something is
 * wrong but not what. A serving loop that links libgk to load the kernels
 * can ask here, before or after a launch, which sequence and which table
 * entry are at fault, with the same rule the kernels apply
 * (kernelsrc/common/gk_paged.h; the loader shares no code with kernelsrc/,
 * so the rule is written again here, and tests/kernels/test_paged.c checks
 * that both agree on every case it runs). It touches no archive and no
 * device.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "gk_internal.h"

static int paged_fail(int64_t *bad_seq, int64_t s, char *msg, size_t msg_size,
                      const char *fmt, ...) {
  if (bad_seq) *bad_seq = s;
  if (msg && msg_size) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_size, fmt, ap);
    va_end(ap);
  }
  return GK_EINVAL;
}

GK_API int gk_paged_check(const int32_t *block_table, const int32_t *seq_lens,
                          int64_t n_seqs, int64_t max_pages, int64_t n_pages,
                          int64_t page, int64_t min_len, int64_t *bad_seq,
                          char *msg, size_t msg_size) {
  if (bad_seq) *bad_seq = -1;
  if (msg && msg_size) msg[0] = '\0';
  if (n_seqs < 0 || max_pages < 0 || n_pages < 0 || page <= 0 || min_len < 0)
    return paged_fail(bad_seq, -1, msg, msg_size,
                      "gk_paged_check: bad arguments: n_seqs %" PRId64 ", max_pages %" PRId64
                      ", n_pages %" PRId64 ", page %" PRId64 ", min_len %" PRId64
                      " (page must be positive, the others not negative)",
                      n_seqs, max_pages, n_pages, page, min_len);
  if (n_seqs > 0 && (!block_table || !seq_lens))
    return paged_fail(bad_seq, -1, msg, msg_size, "gk_paged_check: %s is NULL",
                      !block_table ? "block_table" : "seq_lens");
  for (int64_t s = 0; s < n_seqs; s++) {
    const int64_t len = seq_lens[s];
    if (len < 0)
      return paged_fail(bad_seq, s, msg, msg_size,
                        "sequence %" PRId64 ": seq_lens[%" PRId64 "] = %" PRId64
                        " is negative",
                        s, s, len);
    if (len < min_len)
      return paged_fail(bad_seq, s, msg, msg_size,
                        "sequence %" PRId64 ": seq_lens[%" PRId64 "] = %" PRId64
                        " is shorter than the %" PRId64
                        " new rows (kv_append's sq must be counted in seq_lens)",
                        s, s, len, min_len);
    const int64_t used = len / page + (len % page != 0);
    if (used > max_pages)
      return paged_fail(bad_seq, s, msg, msg_size,
                        "sequence %" PRId64 ": seq_lens[%" PRId64 "] = %" PRId64
                        " needs %" PRId64 " pages of %" PRId64
                        " tokens, past the table's max_pages = %" PRId64,
                        s, s, len, used, page, max_pages);
    const int32_t *row = block_table + s * max_pages;
    for (int64_t j = 0; j < used; j++)
      if (row[j] < 0 || row[j] >= n_pages)
        return paged_fail(bad_seq, s, msg, msg_size,
                          "sequence %" PRId64 ": block_table[%" PRId64 "][%" PRId64
                          "] = %" PRId32 " (its page %" PRId64 ", tokens %" PRId64
                          " .. %" PRId64 ") is not a page of the pool of %" PRId64 " pages",
                          s, s, j, row[j], j, j * page,
                          (j + 1) * page < len ? (j + 1) * page - 1 : len - 1,
                          n_pages);
  }
  return GK_OK;
}
