/*
 * index.c - the index of an open archive (docs/archive.md, "Reading"):
 * rows read lazily - a selection's run of one variant found by a binary
 * search on the rowid, or the whole table - each checked and copied, and
 * the calls that list them (gk_archive_count, gk_archive_image).
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "gk_internal.h"

/* ---- rows ---------------------------------------------------------------- */

int gk__info_copy(gk_image_info *dst, const gk_image_info *src, char **block) {
  const char *const from[] = {src->kernel,  src->backend,  src->target,
                              src->variant, src->format,   src->entry,
                              src->launch,  src->toolchain};
  const char **const to[] = {&dst->kernel,  &dst->backend,  &dst->target,
                             &dst->variant, &dst->format,   &dst->entry,
                             &dst->launch,  &dst->toolchain};
  size_t len[8], total = 0;
  for (int i = 0; i < 8; i++) total += (len[i] = strlen(from[i])) + 1;
  char *p = malloc(total);
  if (!p) return GK_ENOMEM;
  *dst = *src; /* numbers and hash; the pointers are replaced below */
  *block = p;
  for (int i = 0; i < 8; i++) {
    memcpy(p, from[i], len[i] + 1);
    *to[i] = p;
    p += len[i] + 1;
  }
  return GK_OK;
}

const char *gk__row_describe(const gk_image_info *row, char *buf, size_t size) {
  snprintf(buf, size, "'%s'%s%s %s %s", row->kernel, *row->variant ? " " : "",
           row->variant, row->backend, row->target);
  return buf;
}

int gk__entries_parse(const char *json, gk__entries *e) {
  /* The index's entry column: a JSON array of identifiers, as gk build
   * writes it ('["qmatmul"]'). Anything else is refused, not guessed at. */
  const char *p = json;
  int n = 0;
  e->n = -1;
  memset(e->shared, 0, sizeof e->shared);
  if (!p) return -1;
  while (isspace((unsigned char)*p)) p++;
  if (*p++ != '[') return -1;
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    if (*p == ']' && n == 0) break;
    if (*p++ != '"') return -1;
    size_t len = 0;
    while (isalnum((unsigned char)p[len]) || p[len] == '_') len++;
    if (len == 0 || len >= GK__NAME_MAX || p[len] != '"' || n >= GK__ENTRY_MAX) return -1;
    memcpy(e->name[n], p, len);
    e->name[n++][len] = '\0';
    p += len + 1;
    while (isspace((unsigned char)*p)) p++;
    if (*p == ']') break;
    if (*p++ != ',') return -1;
  }
  p++;
  while (isspace((unsigned char)*p)) p++;
  return e->n = *p == '\0' ? n : -1;
}

/* Text of column `col`, refused unless it is TEXT without NUL bytes:
 * everything downstream compares these as C strings. */
static const char *row_text(sqlite3_stmt *st, int col) {
  if (sqlite3_column_type(st, col) != SQLITE_TEXT) return NULL;
  const char *s = (const char *)sqlite3_column_text(st, col);
  if (!s || strlen(s) != (size_t)sqlite3_column_bytes(st, col)) return NULL;
  return s;
}

int gk__row_cmp(const gk_image_info *a, const gk_image_info *b) {
  int c = strcmp(a->kernel, b->kernel);
  if (!c) c = strcmp(a->backend, b->backend);
  if (!c) c = strcmp(a->variant, b->variant);
  if (!c) c = strcmp(a->target, b->target);
  return c;
}

/* The image table's own columns, as both ways of reading rows select them
 * first (IMG_* are their places). */
#define IMAGE_COLS                                                             \
  "i.rowid, i.kernel, i.backend, i.target, i.variant, i.spec, i.blob,"       \
  " i.raw_size, i.sha256"
enum { IMG_ROWID, IMG_KERNEL, IMG_BACKEND, IMG_TARGET, IMG_VARIANT, IMG_SPEC, IMG_BLOB,
       IMG_RAW, IMG_SHA, IMG_NCOLS };

/* The whole index: every row with its spec's text, and whether its spec and
 * blob rows are there and the blob's size and hash are the row's. LEFT
 * JOIN keeps a row whose spec or blob is missing (an inner join would drop
 * it from the index without a word); NOT INDEXED keeps the image table the
 * outer loop, read by rowid, whatever indexes a file brings (format 3 took
 * names from an index entry and hashes from the row: one damaged entry
 * paired a name with another row's hash). */
#define WHOLE_SELECT                                                           \
  "SELECT " IMAGE_COLS ", s.format, s.entry, s.launch, s.toolchain,"          \
  " s.id IS NULL, b.id IS NULL,"                                               \
  " b.sha256 IS i.sha256 AND b.raw_size IS i.raw_size"                         \
  " FROM image AS i NOT INDEXED"                                               \
  " LEFT JOIN spec AS s ON s.id = i.spec LEFT JOIN blob AS b ON b.id = i.blob"
enum { WHOLE_SPEC = IMG_NCOLS, WHOLE_NOSPEC = IMG_NCOLS + 4, WHOLE_NOBLOB, WHOLE_SAME };

/* A selection's rows: the image table alone, from a rowid on, with the
 * largest rowid when ?2 is 1 (one statement for the search and the run:
 * preparing the joins costs a selection as much as twenty probes; CASE
 * runs the subquery only for the probe that asks, which saved 5% of a
 * selection's instructions). The spec's text comes from SPEC_SELECT; the
 * blob is checked against the row when read. */
#define RUN_SELECT                                                             \
  "SELECT " IMAGE_COLS ", CASE WHEN ?2 THEN (SELECT max(rowid) FROM image) END" \
  " FROM image AS i WHERE i.rowid >= ?1"
#define SPEC_SELECT "SELECT format, entry, launch, toolchain FROM spec WHERE id = ?1"

/* One image row, checked and copied: its names and numbers from `st`
 * (IMG_*), its spec's text from `sp` at column sc (NULL: the spec row is
 * missing). Text must be TEXT without NUL bytes (everything downstream
 * compares it as C strings), raw_size a non-negative integer, sha256 32
 * bytes. `n` names the row in messages. */
static int row_from(gk_archive *ar, sqlite3_stmt *st, sqlite3_stmt *sp, int sc,
                    const gk_image_info *same_spec, sqlite3_int64 n, gk__row *r) {
  static const char *const names[] = {"kernel",  "backend",  "target",
                                      "variant", "format",   "entry",
                                      "launch",  "toolchain"};
  gk_image_info info;
  char what[256];
  memset(&info, 0, sizeof info);
  const char **const field[] = {&info.kernel,  &info.backend,  &info.target,
                                &info.variant, &info.format,   &info.entry,
                                &info.launch,  &info.toolchain};
  /* The row's own names first: the messages below can then name it. */
  for (int c = 0; c < 4; c++)
    if (!(*field[c] = row_text(st, IMG_KERNEL + c)))
      return gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: image row %lld has a bad '%s'",
                      ar->name, (long long)n, names[c]);
  if (sqlite3_column_type(st, IMG_BLOB) != SQLITE_INTEGER)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: image row %lld has a bad 'blob'",
                    ar->name, (long long)n);
  int nospec = !sp && !same_spec;
  nospec |= sp == st && sqlite3_column_int(st, WHOLE_NOSPEC);
  int noblob = sp == st && sqlite3_column_int(st, WHOLE_NOBLOB);
  if (nospec || noblob) {
    info.format = info.entry = info.launch = info.toolchain = "";
    gk__row_describe(&info, what, sizeof what);
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: image %s (row %lld) names a %s row "
                    "that is not there",
                    ar->name, what, (long long)n, nospec ? "spec" : "blob");
  }
  if (same_spec) {
    info.format = same_spec->format, info.entry = same_spec->entry;
    info.launch = same_spec->launch, info.toolchain = same_spec->toolchain;
  }
  for (int c = 4; c < 8 && !same_spec; c++)
    if (!(*field[c] = row_text(sp, sc + c - 4)))
      return gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: image row %lld has a bad '%s'",
                      ar->name, (long long)n, names[c]);
  sqlite3_int64 raw = sqlite3_column_int64(st, IMG_RAW);
  if (sqlite3_column_type(st, IMG_RAW) != SQLITE_INTEGER || raw < 0)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: image row %lld has a bad 'raw_size'",
                    ar->name, (long long)n);
  if (sqlite3_column_type(st, IMG_SHA) != SQLITE_BLOB ||
      sqlite3_column_bytes(st, IMG_SHA) != 32)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: image row %lld has a bad 'sha256'",
                    ar->name, (long long)n);
  /* The row's hash and size are its blob's: a blob number damaged into
   * another's would otherwise hand out that image under this row's name.
   * (A selection's rows are checked so when read: gk_archive_read.) */
  if (sp == st && !sqlite3_column_int(st, WHOLE_SAME)) {
    gk__row_describe(&info, what, sizeof what);
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: image %s (row %lld) names blob %lld, "
                    "whose size or sha256 is another image's",
                    ar->name, what, (long long)n,
                    (long long)sqlite3_column_int64(st, IMG_BLOB));
  }
  info.raw_size = (uint64_t)raw;
  memcpy(info.sha256, sqlite3_column_blob(st, IMG_SHA), 32);
  /* packed_size is storage, which selection and loading never need: it
   * is looked up when gk_archive_image is asked, keeping opens short. */
  r->packed_known = 0;
  r->pos = (size_t)(n - 1);
  r->blob = sqlite3_column_int64(st, IMG_BLOB);
  if (gk__info_copy(&r->info, &info, &r->strings) != GK_OK)
    return gk__fail(ar, GK_ENOMEM, "archive '%s': out of memory reading the index",
                    ar->name);
  return GK_OK;
}

/* Grows *v (of *cap rows) to hold n + 1. */
static int rows_room(gk_archive *ar, gk__row **v, size_t *cap, size_t n) {
  if (n < *cap) return GK_OK;
  size_t ncap = *cap ? *cap * 2 : 16;
  gk__row *p = ncap <= SIZE_MAX / sizeof *p ? realloc(*v, ncap * sizeof *p) : NULL;
  if (!p)
    return gk__fail(ar, GK_ENOMEM, "archive '%s': out of memory reading the index",
                    ar->name);
  *v = p;
  *cap = ncap;
  return GK_OK;
}

/* Selection relies on the rows being sorted and each name being unique,
 * and a selection made from part of the index names its row by rowid: so
 * the table must hold rows 1..n in index order, as gk pack writes them. A
 * damaged file can break any of that (a flipped bit in "causal=0" makes two
 * rows one name, which would hand out another variant's image under a
 * valid hash); each is corruption. */
static int index_order(gk_archive *ar, const gk__row *prev, const gk__row *r,
                       sqlite3_int64 rowid, size_t n) {
  char what[256];
  if (rowid != (sqlite3_int64)n)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: index row %zu has rowid %lld "
                    "(gk pack numbers them 1, 2, ...)",
                    ar->name, n, (long long)rowid);
  int c = prev ? gk__row_cmp(&prev->info, &r->info) : -1;
  if (c >= 0) gk__row_describe(&r->info, what, sizeof what);
  if (c == 0)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: image %s appears twice in the index",
                    ar->name, what);
  if (c > 0)
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: image %s is out of order in the index",
                    ar->name, what);
  return GK_OK;
}

int gk__index_whole(gk_archive *ar) {
  if (ar->whole) return GK_OK;
  sqlite3_stmt *st = NULL;
  size_t cap = 0;
  /* In rowid order, the image table as the outer loop (WHOLE_SELECT):
   * index_order() checks the order. */
  int rc = sqlite3_prepare_v2(ar->db, WHOLE_SELECT, -1, &st, NULL);
  if (rc != SQLITE_OK) return gk__sql_fail(ar, rc, "read the index");
  int status = GK_OK;
  while (status == GK_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    size_t n = ar->nrows + 1;
    if ((status = rows_room(ar, &ar->rows, &cap, ar->nrows))) break;
    gk__row *r = &ar->rows[ar->nrows];
    if ((status = row_from(ar, st, st, WHOLE_SPEC, NULL, (sqlite3_int64)n, r))) break;
    ar->nrows++;
    status = index_order(ar, n > 1 ? r - 1 : NULL, r, sqlite3_column_int64(st, 0), n);
  }
  if (status == GK_OK && rc != SQLITE_DONE) status = gk__sql_fail(ar, rc, "read the index");
  sqlite3_finalize(st);
  if (status != GK_OK) { /* nothing half-read stays */
    for (size_t i = 0; i < ar->nrows; i++) free(ar->rows[i].strings);
    free(ar->rows);
    ar->rows = NULL;
    ar->nrows = 0;
    ar->broken = 1;
    return status;
  }
  ar->whole = 1;
  return GK_OK;
}

/* Where row `rowid`'s (kernel, backend, variant) sorts against the one
 * asked for: < 0, 0, > 0; GK__NO_ROW when there is no such row or its names
 * are unreadable (the whole index then judges). Only the names are looked
 * at: the row's other columns are not this probe's to judge. *count gets
 * the largest rowid. */
#define GK__NO_ROW INT_MIN
static int probe(gk_archive *ar, sqlite3_int64 rowid, const char *kernel,
                 const char *backend, const char *variant, sqlite3_int64 *count,
                 int *status) {
  sqlite3_stmt *st = ar->row_stmt;
  sqlite3_bind_int64(st, 1, rowid);
  sqlite3_bind_int(st, 2, count != NULL);
  int rc = sqlite3_step(st), c = GK__NO_ROW;
  if (rc == SQLITE_ROW) {
    const char *k = row_text(st, IMG_KERNEL), *b = row_text(st, IMG_BACKEND),
               *v = row_text(st, IMG_VARIANT);
    if (count) *count = sqlite3_column_int64(st, IMG_NCOLS);
    if (k && b && v && sqlite3_column_int64(st, IMG_ROWID) == rowid) {
      c = strcmp(k, kernel);
      if (!c) c = strcmp(b, backend);
      if (!c) c = strcmp(v, variant);
      c = c < 0 ? -1 : c > 0;
    }
  } else if (rc != SQLITE_DONE && gk__sql_status(rc) != GK_ECORRUPT) {
    *status = gk__sql_fail(ar, rc, "read the index");
  }
  sqlite3_reset(st);
  return c;
}

/* Reads row `id` of a selection's run (the current row of ar->row_stmt)
 * with its spec into a new entry of ar->some. *prev_spec is the spec id of
 * the run's row before it (the last entry; -1 for none): a row naming the
 * same spec takes that row's text (a run's rows share one or two specs,
 * and looking each up again cost a selection a third of its steps). */
static int some_row(gk_archive *ar, sqlite3_int64 id, sqlite3_int64 *prev_spec) {
  int status = rows_room(ar, &ar->some, &ar->somecap, ar->nsome);
  if (status) return status;
  sqlite3_stmt *st = ar->row_stmt, *sp = ar->spec_stmt;
  const sqlite3_int64 spec = sqlite3_column_int64(st, IMG_SPEC);
  if (*prev_spec >= 0 && sqlite3_column_type(st, IMG_SPEC) == SQLITE_INTEGER &&
      spec == *prev_spec) {
    status = row_from(ar, st, NULL, 0, &ar->some[ar->nsome - 1].info, id,
                      &ar->some[ar->nsome]);
  } else {
    sqlite3_bind_int64(sp, 1, spec);
    int rc = sqlite3_step(sp);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE && gk__sql_status(rc) != GK_ECORRUPT)
      status = gk__sql_fail(ar, rc, "read the index");
    else
      status = row_from(ar, st, rc == SQLITE_ROW ? sp : NULL, 0, NULL, id,
                        &ar->some[ar->nsome]);
    sqlite3_reset(sp);
    *prev_spec = sqlite3_column_type(st, IMG_SPEC) == SQLITE_INTEGER ? spec : -1;
  }
  if (status == GK_OK) ar->nsome++;
  return status;
}

/* Row r is one of (kernel, backend, variant). */
static int of_variant(const gk__row *r, const char *kernel, const char *backend,
                      const char *variant) {
  return strcmp(r->info.variant, variant) == 0 && strcmp(r->info.kernel, kernel) == 0 &&
         strcmp(r->info.backend, backend) == 0;
}

int gk__index_some(gk_archive *ar, const char *kernel, const char *backend,
                   const char *variant, gk__row **first, size_t *n, int *suspect) {
  *first = NULL;
  *n = 0;
  *suspect = 0;
  /* gk pack writes the rows with rowid 1..count in index order, so the
   * rows of (kernel, backend, variant) are one run of rowids, found by a
   * binary search on the rowid (the table's own b-tree: no second index to
   * keep in step with it, and ~10 probes for 500 rows). What the search
   * relies on is checked where it is used: the row before the run must
   * sort below it; the run is read in one pass from its first row on, each
   * row whole with its spec, carrying the names asked for with strictly
   * increasing targets, up to a row that sorts above it or the end.
   * Anything else - a row missing, unreadable or out of place - is not an
   * answer: the whole index, which checks every row, says what is wrong.
   * What cannot show this way - a row whose variant alone was damaged into
   * another name - makes that image missing from this selection, never
   * another image under its name. */
  int rc = SQLITE_OK;
  if (!ar->row_stmt)
    rc = sqlite3_prepare_v3(ar->db, RUN_SELECT, -1, SQLITE_PREPARE_PERSISTENT,
                            &ar->row_stmt, NULL);
  if (rc == SQLITE_OK && !ar->spec_stmt)
    rc = sqlite3_prepare_v3(ar->db, SPEC_SELECT, -1, SQLITE_PREPARE_PERSISTENT,
                            &ar->spec_stmt, NULL);
  if (rc != SQLITE_OK) return gk__sql_fail(ar, rc, "read the index");

  /* Asked before: the rows are already here, checked, as one slice (a
   * slice is kept whole or not at all, so its first row is the first with
   * these names), and they lie end to end with other slices. */
  for (size_t j = 0; j < ar->nsome; j++)
    if (of_variant(&ar->some[j], kernel, backend, variant)) {
      size_t k = j + 1;
      while (k < ar->nsome && ar->some[k].pos == ar->some[j].pos + (k - j) &&
             of_variant(&ar->some[k], kernel, backend, variant))
        k++;
      *first = ar->some + j;
      *n = k - j;
      return GK_OK;
    }

  int status = GK_OK, bad = 0;
  sqlite3_int64 count = 0;
  int c = probe(ar, 1, kernel, backend, variant, &count, &status);
  if (status != GK_OK) return status;
  /* The first rowid whose names sort at or above the ones asked for. */
  sqlite3_int64 lo = 1, hi = count + 1;
  if (c == GK__NO_ROW) bad = count > 0; /* an empty index has no row 1 */
  else if (c >= 0) hi = 1;
  else lo = 2;
  while (!bad && lo < hi) {
    sqlite3_int64 mid = lo + (hi - lo) / 2;
    c = probe(ar, mid, kernel, backend, variant, NULL, &status);
    if (status != GK_OK) return status;
    if (c == GK__NO_ROW) bad = 1;
    else if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  /* The row before the run sorts below it (the search saw only some). */
  if (!bad && lo > 1 && probe(ar, lo - 1, kernel, backend, variant, NULL, &status) >= 0)
    bad = 1;
  if (status != GK_OK) return status;
  size_t start = ar->nsome;
  sqlite3_int64 prev_spec = -1;
  sqlite3_stmt *st = ar->row_stmt;
  sqlite3_bind_int64(st, 1, lo);
  sqlite3_bind_int(st, 2, 0);
  for (sqlite3_int64 id = lo; !bad && status == GK_OK; id++) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
      bad = id <= count; /* rows end before the largest rowid: one is missing */
      break;
    }
    if (rc != SQLITE_ROW) {
      if (gk__sql_status(rc) == GK_ECORRUPT) bad = 1;
      else status = gk__sql_fail(ar, rc, "read the index");
      break;
    }
    /* Names first: the row past the run is another variant's, whose other
     * columns this selection does not judge. */
    const char *k = row_text(st, IMG_KERNEL), *b = row_text(st, IMG_BACKEND),
               *v = row_text(st, IMG_VARIANT);
    if (sqlite3_column_int64(st, IMG_ROWID) != id || !k || !b || !v) {
      bad = 1;
      break;
    }
    int cmp = strcmp(k, kernel);
    if (!cmp) cmp = strcmp(b, backend);
    if (!cmp) cmp = strcmp(v, variant);
    if (cmp) { /* past the run: it must sort above it */
      bad = cmp < 0;
      break;
    }
    if ((status = some_row(ar, id, &prev_spec)) != GK_OK) {
      if (status == GK_ECORRUPT) bad = 1, status = GK_OK;
      break;
    }
    gk__row *r = &ar->some[ar->nsome - 1];
    bad = ar->nsome - start > 1 && gk__row_cmp(&r[-1].info, &r->info) >= 0;
  }
  sqlite3_reset(st);
  if (status != GK_OK || bad) {
    while (ar->nsome > start) free(ar->some[--ar->nsome].strings);
    if (status != GK_OK && status != GK_ECORRUPT) return status;
    /* Not an answer: the whole index, read without shortcuts, is the
     * judge of what is wrong. */
    free(ar->msg);
    ar->msg = NULL;
    *suspect = 1;
    return GK_OK;
  }
  *first = ar->nsome > start ? ar->some + start : NULL;
  *n = ar->nsome - start;
  return GK_OK;
}

gk__row *gk__index_row(gk_archive *ar, size_t i, int *status) {
  *status = GK_OK;
  if (!ar->whole)
    for (size_t k = 0; k < ar->nsome; k++)
      if (ar->some[k].pos == i) return &ar->some[k];
  if ((*status = gk__index_whole(ar))) return NULL;
  if (i < ar->nrows) return &ar->rows[i];
  *status = gk__fail(ar, GK_ERANGE, "archive '%s' has %zu images; there is no image %zu",
                     ar->name, ar->nrows, i);
  return NULL;
}

/* ---- the index ----------------------------------------------------------- */

int gk__blob_stmts(gk_archive *ar) {
  int rc = SQLITE_OK;
  if (!ar->blob_stmt)
    rc = sqlite3_prepare_v3(ar->db,
                            "SELECT id, raw_size, codec, base, data, data_sha256, sha256 "
                            "FROM blob WHERE id = ?1",
                            -1, SQLITE_PREPARE_PERSISTENT, &ar->blob_stmt, NULL);
  return rc == SQLITE_OK ? GK_OK : gk__sql_fail(ar, rc, "read the blob table");
}

GK_API int gk_archive_count(gk_archive *ar, size_t *count) {
  if (!ar) return GK_EINVAL;
  if (!count) return gk__fail(ar, GK_EINVAL, "gk_archive_count: count is NULL");
  free(ar->msg);
  ar->msg = NULL;
  int rc = gk__index_whole(ar);
  *count = ar->nrows;
  return rc;
}

GK_API int gk_archive_image(gk_archive *ar, size_t i, gk_image_info *out) {
  if (!ar) return GK_EINVAL;
  if (!out) return gk__fail(ar, GK_EINVAL, "gk_archive_image: out is NULL");
  free(ar->msg);
  ar->msg = NULL;
  int rc;
  gk__row *r = gk__index_row(ar, i, &rc);
  if (!r) return rc;
  if (!r->packed_known) {
    /* length() of a blob reads the record header, not the blob. A missing
     * blob reads as 0 here and is reported when the image is read: the
     * index is still worth listing. */
    if (!ar->size_stmt &&
        sqlite3_prepare_v3(ar->db, "SELECT length(data) FROM blob WHERE id = ?1",
                           -1, SQLITE_PREPARE_PERSISTENT, &ar->size_stmt,
                           NULL) != SQLITE_OK)
      return gk__sql_fail(ar, sqlite3_errcode(ar->db), "read the blob table");
    sqlite3_bind_int64(ar->size_stmt, 1, r->blob);
    sqlite3_int64 packed = sqlite3_step(ar->size_stmt) == SQLITE_ROW
                               ? sqlite3_column_int64(ar->size_stmt, 0) : 0;
    sqlite3_reset(ar->size_stmt);
    r->info.packed_size = packed > 0 ? (uint64_t)packed : 0;
    r->packed_known = 1;
  }
  *out = r->info;
  return GK_OK;
}
