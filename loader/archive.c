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

/* Reads one int from a pragma such as "PRAGMA application_id". */
static int pragma_int(gk_archive *ar, const char *sql, const char *doing,
                      int *out) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(ar->db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *out = sqlite3_column_int(st, 0);
    rc = GK_OK;
  } else {
    rc = sql_fail(ar, rc, doing);
  }
  sqlite3_finalize(st);
  return rc;
}

/* The columns of docs/archive.md the loader reads. Extra columns are
 * tolerated; a format change that matters bumps user_version instead. */
static const char *const image_cols[] = {
    "kernel", "backend",   "target",   "variant", "format", "entry",
    "launch", "toolchain", "raw_size", "sha256",  NULL};
static const char *const blob_cols[] = {"id",    "sha256", "raw_size",
                                        "codec", "base",   "data", NULL};

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

/* What check_table checks, in one query and two compilations: both are
 * ordinary tables (not views: views are disabled anyway) and statements
 * naming every column the loader reads compile. 1 when all holds. */
static int schema_quick_ok(gk_archive *ar) {
  static const char *const sql[] = {
      "SELECT count(*) = 2 FROM sqlite_master WHERE type = 'table' AND "
      "lower(name) IN ('image', 'blob') AND sql LIKE 'CREATE TABLE%'",
      "SELECT kernel, backend, target, variant, format, entry, launch, "
      "toolchain, raw_size, sha256 FROM image LIMIT 0",
      "SELECT id, sha256, raw_size, codec, base, data FROM blob LIMIT 0"};
  int ok = 1;
  for (int i = 0; i < 3 && ok; i++) {
    sqlite3_stmt *st = NULL;
    ok = sqlite3_prepare_v2(ar->db, sql[i], -1, &st, NULL) == SQLITE_OK &&
         (i > 0 || (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1));
    sqlite3_finalize(st);
  }
  return ok;
}

/* Text of column `col`, refused unless it is TEXT without NUL bytes:
 * everything downstream compares these as C strings. */
static const char *row_text(sqlite3_stmt *st, int col) {
  if (sqlite3_column_type(st, col) != SQLITE_TEXT) return NULL;
  const char *s = (const char *)sqlite3_column_text(st, col);
  if (!s || strlen(s) != (size_t)sqlite3_column_bytes(st, col)) return NULL;
  return s;
}

static int cmp_row(const void *pa, const void *pb) {
  const gk_image_info *a = &((const gk__row *)pa)->info;
  const gk_image_info *b = &((const gk__row *)pb)->info;
  int c = strcmp(a->kernel, b->kernel);
  if (!c) c = strcmp(a->backend, b->backend);
  if (!c) c = strcmp(a->target, b->target);
  if (!c) c = strcmp(a->variant, b->variant);
  return c;
}

/* Selection relies on the rows being sorted and each name being unique.
 * SQLite's ORDER BY and the primary key promise both only for an intact
 * file: a damaged one can return rows out of order (an index b-tree that
 * disagrees with its table) or two rows under one name (a flipped bit in
 * "causal=0"), which would hand out another variant's image under a valid
 * hash. So the order is made here and a repeated name is corruption. */
static int index_order(gk_archive *ar) {
  if (ar->nrows > 1) qsort(ar->rows, ar->nrows, sizeof *ar->rows, cmp_row);
  for (size_t i = 1; i < ar->nrows; i++)
    if (cmp_row(&ar->rows[i - 1], &ar->rows[i]) == 0) {
      char what[256];
      gk__row_describe(&ar->rows[i].info, what, sizeof what);
      return gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: image %s appears twice in the index",
                      ar->name, what);
    }
  return GK_OK;
}

static int load_index(gk_archive *ar) {
  static const char *const names[] = {"kernel",  "backend",  "target",
                                      "variant", "format",   "entry",
                                      "launch",  "toolchain"};
  sqlite3_stmt *st = NULL;
  size_t cap = 0;
  /* NOT INDEXED: every column from the table's own row. Through the
   * primary key's index, SQLite takes the names from the index and the rest
   * from the row its entry points to, so one damaged index entry pairs a
   * name with another row's hash: a verified image under the wrong name
   * (tests/loader/test_corrupt.c found it). index_order() sorts instead. */
  int rc = sqlite3_prepare_v2(
      ar->db,
      "SELECT kernel, backend, target, variant, format, entry, launch, "
      "toolchain, raw_size, sha256 FROM image NOT INDEXED",
      -1, &st, NULL);
  if (rc != SQLITE_OK) return sql_fail(ar, rc, "read the index");
  int status = GK_OK;
  while (status == GK_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    size_t n = ar->nrows + 1;
    gk_image_info info;
    memset(&info, 0, sizeof info);
    const char **const field[] = {&info.kernel,  &info.backend,  &info.target,
                                  &info.variant, &info.format,   &info.entry,
                                  &info.launch,  &info.toolchain};
    for (int c = 0; c < 8 && status == GK_OK; c++)
      if (!(*field[c] = row_text(st, c)))
        status =
            gk__fail(ar, GK_ECORRUPT,
                     "archive '%s' is corrupt: image row %zu has a bad '%s'",
                     ar->name, n, names[c]);
    if (status != GK_OK) break;
    sqlite3_int64 raw = sqlite3_column_int64(st, 8);
    if (sqlite3_column_type(st, 8) != SQLITE_INTEGER || raw < 0) {
      status = gk__fail(
          ar, GK_ECORRUPT,
          "archive '%s' is corrupt: image row %zu has a bad 'raw_size'",
          ar->name, n);
      break;
    }
    if (sqlite3_column_type(st, 9) != SQLITE_BLOB ||
        sqlite3_column_bytes(st, 9) != 32) {
      status =
          gk__fail(ar, GK_ECORRUPT,
                   "archive '%s' is corrupt: image row %zu has a bad 'sha256'",
                   ar->name, n);
      break;
    }
    info.raw_size = (uint64_t)raw;
    memcpy(info.sha256, sqlite3_column_blob(st, 9), 32);
    /* packed_size is storage, which selection and loading never need: it
     * is looked up when gk_archive_image is asked, keeping opens short. */

    if (ar->nrows == cap) {
      size_t ncap = cap ? cap * 2 : 16;
      gk__row *rows = ncap <= SIZE_MAX / sizeof *rows
                          ? realloc(ar->rows, ncap * sizeof *rows)
                          : NULL;
      if (!rows) {
        status =
            gk__fail(ar, GK_ENOMEM,
                     "archive '%s': out of memory reading the index", ar->name);
        break;
      }
      ar->rows = rows;
      cap = ncap;
    }
    gk__row *r = &ar->rows[ar->nrows];
    r->packed_known = 0;
    if (gk__info_copy(&r->info, &info, &r->strings) != GK_OK) {
      status =
          gk__fail(ar, GK_ENOMEM,
                   "archive '%s': out of memory reading the index", ar->name);
      break;
    }
    ar->nrows++;
  }
  if (status == GK_OK && rc != SQLITE_DONE)
    status = sql_fail(ar, rc, "read the index");
  sqlite3_finalize(st);
  return status == GK_OK ? index_order(ar) : status;
}

/* Everything after the database is attached: settings, identity, version,
 * schema, index. */
static int check_and_load(gk_archive *ar) {
  int rc, v;
  /* The schema is data from the file: no triggers, views or functions with
   * side effects may run on its word, and the connection refuses writes to
   * sqlite_schema even if asked. */
  sqlite3_db_config(ar->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_db_config(ar->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
  sqlite3_db_config(ar->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
  sqlite3_db_config(ar->db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);
  rc = sqlite3_exec(ar->db, "PRAGMA trusted_schema=OFF", NULL, NULL, NULL);
  if (rc != SQLITE_OK) return sql_fail(ar, rc, "configure SQLite");

  /* application_id lives in the file header: reading it parses no schema,
   * so a foreign database is turned away before any of it is interpreted. */
  if ((rc = pragma_int(ar, "PRAGMA application_id", "read the header", &v)))
    return rc == GK_ENOTARCHIVE
               ? gk__fail(ar, rc, "'%s' is not a gllm-kernels archive (%s)",
                          ar->name, sqlite3_errmsg(ar->db))
               : rc;
  if ((uint32_t)v != GK_ARCHIVE_APPLICATION_ID)
    return gk__fail(ar, GK_ENOTARCHIVE,
                    "'%s' is a SQLite database but not a gllm-kernels archive "
                    "(application_id 0x%08x, expected 0x%08x)",
                    ar->name, (unsigned)v, (unsigned)GK_ARCHIVE_APPLICATION_ID);

  if ((rc = pragma_int(ar, "PRAGMA user_version", "read the header", &v)))
    return rc;
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

  /* check_table costs more than reading a small index: it runs only when
   * the quick check fails, to say what is wrong. */
  if (!schema_quick_ok(ar)) {
    if ((rc = check_table(ar, "image", image_cols))) return rc;
    if ((rc = check_table(ar, "blob", blob_cols))) return rc;
  }
  if ((rc = load_index(ar))) return rc;
  rc = sqlite3_prepare_v3(ar->db,
                          "SELECT id, raw_size, codec, base, data "
                          "FROM blob WHERE sha256 = ?1",
                          -1, SQLITE_PREPARE_PERSISTENT, &ar->blob_stmt, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v3(ar->db,
                            "SELECT id, raw_size, codec, base, data "
                            "FROM blob WHERE id = ?1",
                            -1, SQLITE_PREPARE_PERSISTENT, &ar->base_stmt, NULL);
  if (rc != SQLITE_OK) return sql_fail(ar, rc, "read the blob table");
  return GK_OK;
}

/* Before SQLite sees a file, make sure it is one: SQLite treats an empty
 * file as an empty database, and its errors lose errno. */
static int probe_file(const char *path) {
  char ebuf[128];
  unsigned char head[16];
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
  do n = read(fd, head, sizeof head);
  while (n < 0 && errno == EINTR);
  e = errno;
  close(fd);
  if (n < 0)
    return gk__set_last_error(GK_EIO, "cannot read archive '%s': %s", path,
                              gk__errno_text(e, ebuf, sizeof ebuf));
  if (n < (ssize_t)sizeof head || memcmp(head, "SQLite format 3", 16) != 0)
    return gk__set_last_error(
        GK_ENOTARCHIVE, "'%s' is not a gllm-kernels archive (%s)", path,
        n == 0 ? "the file is empty" : "not a SQLite database");
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
  int rc = probe_file(path);
  if (rc != GK_OK) return rc;
  gk_archive *ar = new_archive(path);
  char *uri = path_uri(path);
  if (!ar || !uri) {
    free(uri);
    gk_archive_close(ar);
    return gk__set_last_error(GK_ENOMEM, "out of memory opening archive '%s'",
                              path);
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
  if (size < 16 || memcmp(bytes, "SQLite format 3", 16) != 0)
    return gk__set_last_error(GK_ENOTARCHIVE,
                              "'%s' is not a gllm-kernels archive (%s)", name,
                              size == 0 ? "no bytes" : "not a SQLite database");
  if (size > (size_t)INT64_MAX)
    return gk__set_last_error(GK_EINVAL,
                              "'%s' is larger than SQLite can address", name);
  gk_archive *ar = new_archive(name);
  if (!ar)
    return gk__set_last_error(GK_ENOMEM, "out of memory opening archive '%s'",
                              name);
  int rc = sqlite3_open_v2(":memory:", &ar->db,
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
  sqlite3_finalize(ar->base_stmt);
  sqlite3_finalize(ar->size_stmt);
  ZSTD_freeDCtx(ar->dctx);
  sqlite3_close(ar->db);
  for (size_t i = 0; i < ar->nrows; i++) free(ar->rows[i].strings);
  free(ar->rows);
  free(ar->name);
  free(ar->msg);
  free(ar);
}

GK_API const char *gk_archive_errmsg(const gk_archive *ar) {
  if (!ar) return "no archive (NULL handle)";
  return ar->msg ? ar->msg : "";
}

/* ---- the index ----------------------------------------------------------- */

GK_API int gk_archive_count(gk_archive *ar, size_t *count) {
  if (!ar) return GK_EINVAL;
  if (!count) return gk__fail(ar, GK_EINVAL, "gk_archive_count: count is NULL");
  free(ar->msg);
  ar->msg = NULL;
  *count = ar->nrows;
  return GK_OK;
}

GK_API int gk_archive_image(gk_archive *ar, size_t i, gk_image_info *out) {
  if (!ar) return GK_EINVAL;
  if (!out) return gk__fail(ar, GK_EINVAL, "gk_archive_image: out is NULL");
  if (i >= ar->nrows)
    return gk__fail(ar, GK_ERANGE,
                    "archive '%s' has %zu images; there is no image %zu",
                    ar->name, ar->nrows, i);
  free(ar->msg);
  ar->msg = NULL;
  gk__row *r = &ar->rows[i];
  if (!r->packed_known) {
    /* length() of a blob reads the record header, not the blob. A missing
     * blob reads as 0 here and is reported when the image is read: the
     * index is still worth listing. */
    if (!ar->size_stmt &&
        sqlite3_prepare_v3(ar->db, "SELECT length(data) FROM blob WHERE sha256 = ?1",
                           -1, SQLITE_PREPARE_PERSISTENT, &ar->size_stmt,
                           NULL) != SQLITE_OK)
      return sql_fail(ar, sqlite3_errcode(ar->db), "read the blob table");
    sqlite3_bind_blob(ar->size_stmt, 1, r->info.sha256, 32, SQLITE_STATIC);
    sqlite3_int64 packed = sqlite3_step(ar->size_stmt) == SQLITE_ROW
                               ? sqlite3_column_int64(ar->size_stmt, 0) : 0;
    sqlite3_reset(ar->size_stmt);
    r->info.packed_size = packed > 0 ? (uint64_t)packed : 0;
    r->packed_known = 1;
  }
  *out = r->info;
  return GK_OK;
}
