/*
 * archive.c - opening a fat archive (docs/archive.md) and reading images.
 *
 * The archive is untrusted input. It is opened read-only with SQLite in
 * defensive mode and with schema code untrusted, identified by its
 * application_id before anything else is asked of it, and its index is
 * copied into memory once (it is small), so selection never queries. Image
 * bytes are read only on demand, and no size read from the file is believed
 * before it is checked against a cap, against the other copies of it (image
 * row, blob row, zstd frame header) and against what decompression yields.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_CLOEXEC */
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>
#include <zstd.h>

#include "gk_internal.h"

/* SQLite's primary result code as ours. */
static int sql_status(int rc) {
  switch (rc & 0xff) {
  case SQLITE_NOMEM: return GK_ENOMEM;
  case SQLITE_NOTADB: return GK_ENOTARCHIVE;
  case SQLITE_IOERR:
  case SQLITE_CANTOPEN: return GK_EIO;
  default: return GK_ECORRUPT;
  }
}

static int sql_fail(gk_archive *ar, int rc, const char *doing) {
  int status = sql_status(rc);
  return gk__fail(ar, status, "archive '%s'%s: cannot %s: %s", ar->name,
                  status == GK_ECORRUPT ? " is corrupt" : "", doing,
                  sqlite3_errmsg(ar->db));
}

int gk__sql_fail(gk_archive *ar, int rc, const char *doing) {
  return sql_fail(ar, rc, doing);
}

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

void gk__row_describe(const gk_image_info *row, char *buf, size_t size) {
  snprintf(buf, size, "'%s'%s%s %s %s", row->kernel, *row->variant ? " " : "",
           row->variant, row->backend, row->target);
}

/* ---- opening ------------------------------------------------------------- */

/* The columns of docs/archive.md the loader reads. Extra columns are
 * tolerated; a format change that matters bumps user_version instead. */
static const char *const image_cols[] = {"kernel", "backend",  "variant", "target",
                                         "spec",   "blob",     "raw_size", "sha256",
                                         NULL};
static const char *const spec_cols[] = {"id", "format", "entry", "launch", "toolchain",
                                        NULL};
static const char *const blob_cols[] = {"id",   "sha256",      "raw_size", "codec",
                                        "base", "data_sha256", "data",     NULL};

static int check_table(gk_archive *ar, const char *table,
                       const char *const *cols) {
  sqlite3_stmt *st = NULL;
  int rc, status = GK_OK;
  /* A view or virtual table could stand in for a table with the same
   * columns; only a real table is what the format describes. */
  rc = sqlite3_prepare_v2(ar->db,
                          "SELECT type, sql FROM sqlite_master "
                          "WHERE name = ?1 COLLATE NOCASE AND type IN "
                          "('table', 'view')",
                          -1, &st, NULL);
  if (rc != SQLITE_OK) return sql_fail(ar, rc, "read the schema");
  sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    status = gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: it has no table '%s'", ar->name,
                      table);
  } else if (rc != SQLITE_ROW) {
    status = sql_fail(ar, rc, "read the schema");
  } else {
    const char *type = (const char *)sqlite3_column_text(st, 0);
    const char *sql = (const char *)sqlite3_column_text(st, 1);
    if (!type || strcmp(type, "table") != 0 || !sql ||
        sqlite3_strnicmp(sql, "CREATE TABLE", 12) != 0)
      status =
          gk__fail(ar, GK_ECORRUPT,
                   "archive '%s' is corrupt: '%s' is not an ordinary table",
                   ar->name, table);
  }
  sqlite3_finalize(st);
  if (status != GK_OK) return status;

  rc = sqlite3_prepare_v2(ar->db, "SELECT name FROM pragma_table_info(?1)", -1,
                          &st, NULL);
  if (rc != SQLITE_OK) return sql_fail(ar, rc, "read the schema");
  sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  unsigned found = 0; /* bit i: cols[i] seen */
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    for (int i = 0; name && cols[i]; i++)
      if (sqlite3_stricmp(name, cols[i]) == 0) found |= 1u << i;
  }
  if (rc != SQLITE_DONE) status = sql_fail(ar, rc, "read the schema");
  sqlite3_finalize(st);
  for (int i = 0; status == GK_OK && cols[i]; i++)
    if (!(found & (1u << i)))
      status =
          gk__fail(ar, GK_ECORRUPT,
                   "archive '%s' is corrupt: table '%s' has no column '%s'",
                   ar->name, table, cols[i]);
  return status;
}

/* What check_table checks, without a statement: every column the loader
 * reads exists in a table (sqlite3_table_column_metadata refuses views),
 * answered from the schema SQLite parses anyway. 1 when all holds. */
static const struct {
  const char *name;
  const char *const *cols;
} tables[] = {{"image", image_cols}, {"spec", spec_cols}, {"blob", blob_cols}};

static int schema_quick_ok(gk_archive *ar) {
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (int i = 0; tables[t].cols[i]; i++)
      if (sqlite3_table_column_metadata(ar->db, "main", tables[t].name, tables[t].cols[i],
                                        NULL, NULL, NULL, NULL, NULL) != SQLITE_OK)
        return 0;
  return 1;
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
 * largest rowid (one statement for the search and the run: preparing the
 * joins costs a selection as much as twenty probes). The spec's text
 * comes from SPEC_SELECT; the blob is checked against the row when read. */
#define RUN_SELECT                                                             \
  "SELECT " IMAGE_COLS ", (SELECT max(rowid) FROM image)"                      \
  " FROM image AS i WHERE i.rowid >= ?1"
#define SPEC_SELECT "SELECT format, entry, launch, toolchain FROM spec WHERE id = ?1"

/* One image row, checked and copied: its names and numbers from `st`
 * (IMG_*), its spec's text from `sp` at column sc (NULL: the spec row is
 * missing). Text must be TEXT without NUL bytes (everything downstream
 * compares it as C strings), raw_size a non-negative integer, sha256 32
 * bytes. `n` names the row in messages. */
static int row_from(gk_archive *ar, sqlite3_stmt *st, sqlite3_stmt *sp, int sc,
                    sqlite3_int64 n, gk__row *r) {
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
  int nospec = !sp || (sp == st && sqlite3_column_int(st, WHOLE_NOSPEC));
  int noblob = sp == st && sqlite3_column_int(st, WHOLE_NOBLOB);
  if (nospec || noblob) {
    info.format = info.entry = info.launch = info.toolchain = "";
    gk__row_describe(&info, what, sizeof what);
    return gk__fail(ar, GK_ECORRUPT,
                    "archive '%s' is corrupt: image %s (row %lld) names a %s row "
                    "that is not there",
                    ar->name, what, (long long)n, nospec ? "spec" : "blob");
  }
  for (int c = 4; c < 8; c++)
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
  if (rc != SQLITE_OK) return sql_fail(ar, rc, "read the index");
  int status = GK_OK;
  while (status == GK_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    size_t n = ar->nrows + 1;
    if ((status = rows_room(ar, &ar->rows, &cap, ar->nrows))) break;
    gk__row *r = &ar->rows[ar->nrows];
    if ((status = row_from(ar, st, st, WHOLE_SPEC, (sqlite3_int64)n, r))) break;
    ar->nrows++;
    status = index_order(ar, n > 1 ? r - 1 : NULL, r, sqlite3_column_int64(st, 0), n);
  }
  if (status == GK_OK && rc != SQLITE_DONE) status = sql_fail(ar, rc, "read the index");
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
  } else if (rc != SQLITE_DONE && sql_status(rc) != GK_ECORRUPT) {
    *status = sql_fail(ar, rc, "read the index");
  }
  sqlite3_reset(st);
  return c;
}

/* Reads row `id` of a selection's run (the current row of ar->row_stmt)
 * with its spec into a new entry of ar->some. */
static int some_row(gk_archive *ar, sqlite3_int64 id) {
  int status = rows_room(ar, &ar->some, &ar->somecap, ar->nsome);
  if (status) return status;
  sqlite3_stmt *sp = ar->spec_stmt;
  sqlite3_bind_int64(sp, 1, sqlite3_column_int64(ar->row_stmt, IMG_SPEC));
  int rc = sqlite3_step(sp);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE && sql_status(rc) != GK_ECORRUPT)
    status = sql_fail(ar, rc, "read the index");
  else
    status = row_from(ar, ar->row_stmt, rc == SQLITE_ROW ? sp : NULL, 0, id,
                      &ar->some[ar->nsome]);
  sqlite3_reset(sp);
  if (status == GK_OK) ar->nsome++;
  return status;
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
  if (rc != SQLITE_OK) return sql_fail(ar, rc, "read the index");

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
  /* Asked before: the rows are already here, checked, as one slice. */
  for (size_t j = 0; !bad && j < ar->nsome; j++)
    if (ar->some[j].pos == (size_t)(lo - 1) && strcmp(ar->some[j].info.variant, variant) == 0 &&
        strcmp(ar->some[j].info.kernel, kernel) == 0 &&
        strcmp(ar->some[j].info.backend, backend) == 0) {
      /* Slices lie end to end in ar->some: this one ends where the rows
       * stop being consecutive or stop being this variant's. */
      size_t k = j + 1;
      while (k < ar->nsome && ar->some[k].pos == ar->some[j].pos + (k - j) &&
             strcmp(ar->some[k].info.variant, variant) == 0 &&
             strcmp(ar->some[k].info.kernel, kernel) == 0 &&
             strcmp(ar->some[k].info.backend, backend) == 0)
        k++;
      *first = ar->some + j;
      *n = k - j;
      return GK_OK;
    }
  /* The row before the run sorts below it (the search saw only some). */
  if (!bad && lo > 1 && probe(ar, lo - 1, kernel, backend, variant, NULL, &status) >= 0)
    bad = 1;
  if (status != GK_OK) return status;
  size_t start = ar->nsome;
  sqlite3_stmt *st = ar->row_stmt;
  sqlite3_bind_int64(st, 1, lo);
  for (sqlite3_int64 id = lo; !bad && status == GK_OK; id++) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
      bad = id <= count; /* rows end before the largest rowid: one is missing */
      break;
    }
    if (rc != SQLITE_ROW) {
      if (sql_status(rc) == GK_ECORRUPT) bad = 1;
      else status = sql_fail(ar, rc, "read the index");
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
    if ((status = some_row(ar, id)) != GK_OK) {
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

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The first 100 bytes of a SQLite file are its header (sqlite.org/fileformat):
 * application_id at offset 68 and user_version at 60, big-endian. Read from
 * the bytes, before SQLite interprets anything: a foreign database is turned
 * away without parsing its schema, and an open costs no statement for it. */
static int check_header(gk_archive *ar, const unsigned char *head) {
  uint32_t app = be32(head + 68);
  int v = (int)be32(head + 60);
  if (app != GK_ARCHIVE_APPLICATION_ID)
    return gk__fail(ar, GK_ENOTARCHIVE,
                    "'%s' is a SQLite database but not a gllm-kernels archive "
                    "(application_id 0x%08x, expected 0x%08x)",
                    ar->name, (unsigned)app, (unsigned)GK_ARCHIVE_APPLICATION_ID);
  if (v != GK_ARCHIVE_FORMAT)
    return gk__fail(
        ar, GK_EVERSION,
        "archive '%s' has format version %d; this libgk %d.%d.%d reads "
        "version %d%s",
        ar->name, v, GK_VERSION_MAJOR, GK_VERSION_MINOR, GK_VERSION_PATCH,
        GK_ARCHIVE_FORMAT,
        v > GK_ARCHIVE_FORMAT
            ? " (update libgk)"
            : " (an older gk pack wrote it: pack it again with this one)");
  return GK_OK;
}

/* Everything after the database is attached: settings and schema. The
 * index is read when something needs it (gk__index_some, gk__index_whole). */
static int check_and_load(gk_archive *ar) {
  int rc;
  /* The schema is data from the file: no triggers, views or functions with
   * side effects may run on its word, and the connection refuses writes to
   * sqlite_schema even if asked. */
  sqlite3_db_config(ar->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_db_config(ar->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
  sqlite3_db_config(ar->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
  sqlite3_db_config(ar->db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);

  /* check_table costs more than the quick check: it runs only when the
   * quick check fails, to say what is wrong. */
  if (!schema_quick_ok(ar))
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
      if ((rc = check_table(ar, tables[t].name, tables[t].cols))) return rc;
  return GK_OK;
}

/* Before SQLite sees a file, make sure it is one: SQLite treats an empty
 * file as an empty database, and its errors lose errno. */
static int probe_file(const char *path, unsigned char head[100]) {
  char ebuf[128];
  /* O_NONBLOCK: a FIFO must not hang the open; it is refused below. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return gk__set_last_error(GK_EIO, "cannot open archive '%s': %s", path,
                              gk__errno_text(errno, ebuf, sizeof ebuf));
  struct stat st;
  int e = fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (e || !S_ISREG(st.st_mode)) {
    close(fd);
    return e ? gk__set_last_error(GK_EIO, "cannot open archive '%s': %s", path,
                                  gk__errno_text(e, ebuf, sizeof ebuf))
             : gk__set_last_error(GK_ENOTARCHIVE,
                                  "'%s' is not a gllm-kernels archive (not a "
                                  "regular file)",
                                  path);
  }
  ssize_t n;
  do n = read(fd, head, 100);
  while (n < 0 && errno == EINTR);
  e = errno;
  close(fd);
  if (n < 0)
    return gk__set_last_error(GK_EIO, "cannot read archive '%s': %s", path,
                              gk__errno_text(e, ebuf, sizeof ebuf));
  if (n < 100 || memcmp(head, "SQLite format 3", 16) != 0)
    return gk__set_last_error(
        GK_ENOTARCHIVE, "'%s' is not a gllm-kernels archive (%s)", path,
        n == 0 ? "the file is empty"
        : n >= 16 && memcmp(head, "SQLite format 3", 16) == 0
            ? "a SQLite header cut short"
            : "not a SQLite database");
  return GK_OK;
}

/* "file:" URI for a path, every byte outside the unreserved set escaped, so
 * '?', '#', '%' and non-ASCII names mean themselves. An absolute path gets
 * an empty authority ("file:///a/b"), so "//x" cannot name a host. */
static char *path_uri(const char *path) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(path);
  if (n > (SIZE_MAX - 32) / 3) return NULL;
  char *u = malloc(3 * n + 32), *p = u;
  if (!u) return NULL;
  p += sprintf(p, path[0] == '/' ? "file://" : "file:");
  for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
    if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
        (*s >= '0' && *s <= '9') || strchr("-._~/", *s)) {
      *p++ = (char)*s;
    } else {
      *p++ = '%';
      *p++ = hex[*s >> 4];
      *p++ = hex[*s & 15];
    }
  }
  strcpy(p, "?immutable=1");
  return u;
}

/* Ends an open: on failure the message moves to this thread's last error
 * and the half-built archive is freed. */
static int finish_open(gk_archive *ar, int status, gk_archive **out) {
  if (status == GK_OK) {
    free(ar->msg);
    ar->msg = NULL;
    *out = ar;
    return GK_OK;
  }
  gk__set_last_error(status, "%s", ar->msg ? ar->msg : gk_strerror(status));
  gk_archive_close(ar);
  return status;
}

static gk_archive *new_archive(const char *name) {
  gk_archive *ar = calloc(1, sizeof *ar);
  if (ar && !(ar->name = strdup(name))) {
    free(ar);
    ar = NULL;
  }
  return ar;
}

GK_API int gk_archive_open(const char *path, gk_archive **out) {
  gk__clear_last_error();
  if (out) *out = NULL;
  if (!path || !out || !*path)
    return gk__set_last_error(GK_EINVAL, "gk_archive_open: %s",
                              !out    ? "out is NULL"
                              : !path ? "path is NULL"
                                      : "path is empty");
  unsigned char head[100];
  int rc = probe_file(path, head);
  if (rc != GK_OK) return rc;
  gk_archive *ar = new_archive(path);
  char *uri = path_uri(path);
  if (!ar || !uri) {
    free(uri);
    gk_archive_close(ar);
    return gk__set_last_error(GK_ENOMEM, "out of memory opening archive '%s'",
                              path);
  }
  if ((rc = check_header(ar, head)) != GK_OK) {
    free(uri);
    return finish_open(ar, rc, out);
  }
  /* NOMUTEX: an archive is used by one thread at a time (gk.h). */
  rc = sqlite3_open_v2(
      uri, &ar->db,
      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
  free(uri);
  if (rc != SQLITE_OK)
    rc = ar->db ? sql_fail(ar, rc, "open it")
                : gk__fail(ar, GK_ENOMEM, "out of memory opening archive '%s'",
                           path);
  else
    rc = check_and_load(ar);
  return finish_open(ar, rc, out);
}

GK_API int gk_archive_open_memory(const void *bytes, size_t size,
                                  gk_archive **out) {
  gk__clear_last_error();
  if (out) *out = NULL;
  if (!bytes || !out)
    return gk__set_last_error(GK_EINVAL, "gk_archive_open_memory: %s is NULL",
                              out ? "bytes" : "out");
  char name[64];
  snprintf(name, sizeof name, "<memory, %zu bytes>", size);
  if (size < 100 || memcmp(bytes, "SQLite format 3", 16) != 0)
    return gk__set_last_error(GK_ENOTARCHIVE,
                              "'%s' is not a gllm-kernels archive (%s)", name,
                              size == 0 ? "no bytes"
                              : size >= 16 && memcmp(bytes, "SQLite format 3", 16) == 0
                                  ? "a SQLite header cut short"
                                  : "not a SQLite database");
  if (size > (size_t)INT64_MAX)
    return gk__set_last_error(GK_EINVAL,
                              "'%s' is larger than SQLite can address", name);
  gk_archive *ar = new_archive(name);
  if (!ar)
    return gk__set_last_error(GK_ENOMEM, "out of memory opening archive '%s'",
                              name);
  int rc = check_header(ar, bytes);
  if (rc != GK_OK) return finish_open(ar, rc, out);
  rc = sqlite3_open_v2(":memory:", &ar->db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    rc = ar->db ? sql_fail(ar, rc, "open it")
                : gk__fail(ar, GK_ENOMEM, "out of memory opening archive '%s'",
                           name);
    return finish_open(ar, rc, out);
  }
  /* Borrowed, not copied: without SQLITE_DESERIALIZE_FREEONCLOSE or
   * RESIZEABLE SQLite neither frees nor grows the buffer, and READONLY means
   * it never writes to it, which makes the cast away from const sound. */
  rc = sqlite3_deserialize(ar->db, "main", (unsigned char *)(uintptr_t)bytes,
                           (sqlite3_int64)size, (sqlite3_int64)size,
                           SQLITE_DESERIALIZE_READONLY);
  rc = rc != SQLITE_OK ? sql_fail(ar, rc, "attach it") : check_and_load(ar);
  return finish_open(ar, rc, out);
}

GK_API void gk_archive_close(gk_archive *ar) {
  if (!ar) return;
  sqlite3_finalize(ar->blob_stmt);
  sqlite3_finalize(ar->size_stmt);
  sqlite3_finalize(ar->spec_stmt);
  sqlite3_finalize(ar->row_stmt);
  ZSTD_freeDCtx(ar->dctx);
  sqlite3_close(ar->db);
  for (size_t i = 0; i < ar->nrows; i++) free(ar->rows[i].strings);
  free(ar->rows);
  for (size_t i = 0; i < ar->nsome; i++) free(ar->some[i].strings);
  free(ar->some);
  free(ar->name);
  free(ar->msg);
  free(ar);
}

GK_API const char *gk_archive_errmsg(const gk_archive *ar) {
  if (!ar) return "no archive (NULL handle)";
  return ar->msg ? ar->msg : "";
}

/* ---- the index ----------------------------------------------------------- */

int gk__blob_stmts(gk_archive *ar) {
  int rc = SQLITE_OK;
  if (!ar->blob_stmt)
    rc = sqlite3_prepare_v3(ar->db,
                            "SELECT id, raw_size, codec, base, data, data_sha256, sha256 "
                            "FROM blob WHERE id = ?1",
                            -1, SQLITE_PREPARE_PERSISTENT, &ar->blob_stmt, NULL);
  return rc == SQLITE_OK ? GK_OK : sql_fail(ar, rc, "read the blob table");
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
      return sql_fail(ar, sqlite3_errcode(ar->db), "read the blob table");
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
