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
                                        "codec", "data",   NULL};

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

/* Text of column `col`, refused unless it is TEXT without NUL bytes:
 * everything downstream compares these as C strings. */
static const char *row_text(sqlite3_stmt *st, int col) {
  if (sqlite3_column_type(st, col) != SQLITE_TEXT) return NULL;
  const char *s = (const char *)sqlite3_column_text(st, col);
  if (!s || strlen(s) != (size_t)sqlite3_column_bytes(st, col)) return NULL;
  return s;
}

static int load_index(gk_archive *ar) {
  static const char *const names[] = {"kernel",  "backend",  "target",
                                      "variant", "format",   "entry",
                                      "launch",  "toolchain"};
  sqlite3_stmt *st = NULL;
  size_t cap = 0;
  int rc = sqlite3_prepare_v2(
      ar->db,
      "SELECT kernel, backend, target, variant, format, entry, launch, "
      "toolchain, raw_size, sha256, "
      "(SELECT length(data) FROM blob WHERE blob.sha256 = image.sha256) "
      "FROM image ORDER BY kernel, backend, target, variant",
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
    /* A missing blob is reported when the image is read: the index is
     * still worth listing. */
    sqlite3_int64 packed = sqlite3_column_int64(st, 10);
    info.packed_size = packed > 0 ? (uint64_t)packed : 0;

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
  return status;
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
        GK_ARCHIVE_FORMAT, v > GK_ARCHIVE_FORMAT ? " (update libgk)" : "");

  if ((rc = check_table(ar, "image", image_cols))) return rc;
  if ((rc = check_table(ar, "blob", blob_cols))) return rc;
  if ((rc = load_index(ar))) return rc;
  rc = sqlite3_prepare_v3(ar->db,
                          "SELECT rowid, raw_size, codec, length(data) "
                          "FROM blob WHERE sha256 = ?1",
                          -1, SQLITE_PREPARE_PERSISTENT, &ar->blob_stmt, NULL);
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
  *out = ar->rows[i].info;
  return GK_OK;
}

/* ---- reading an image ---------------------------------------------------- */

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static int sodium_ready;
static void sodium_start(void) { sodium_ready = sodium_init() >= 0; }

/* The packed bytes of a row's blob: looked up by hash, then read through
 * the incremental blob API after its size has been checked. */
static int read_blob(gk_archive *ar, const gk_image_info *row, const char *what,
                     unsigned char **packed, size_t *packed_size) {
  sqlite3_stmt *st = ar->blob_stmt;
  sqlite3_blob *blob = NULL;
  int status = GK_OK;
  *packed = NULL;
  sqlite3_reset(st);
  sqlite3_bind_blob(st, 1, row->sha256, 32, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    status = gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: image %s has no blob", ar->name,
                      what);
    goto out;
  }
  if (rc != SQLITE_ROW) {
    status = sql_fail(ar, rc, "read the blob table");
    goto out;
  }
  sqlite3_int64 rowid = sqlite3_column_int64(st, 0);
  sqlite3_int64 raw = sqlite3_column_int64(st, 1);
  const char *codec = (const char *)sqlite3_column_text(st, 2);
  sqlite3_int64 n = sqlite3_column_int64(st, 3);
  if (sqlite3_column_type(st, 1) != SQLITE_INTEGER || raw < 0 ||
      (uint64_t)raw != row->raw_size) {
    status = gk__fail(
        ar, GK_ECORRUPT,
        "archive '%s' is corrupt: image %s is %llu bytes in the index "
        "but its blob says %lld",
        ar->name, what, (unsigned long long)row->raw_size, (long long)raw);
    goto out;
  }
  if (!codec || strcmp(codec, "zstd") != 0) {
    status =
        gk__fail(ar, GK_ECORRUPT,
                 "archive '%s': image %s uses codec '%s'; libgk knows 'zstd'",
                 ar->name, what, codec ? codec : "(null)");
    goto out;
  }
  if (n <= 0 || (uint64_t)n > GK__MAX_IMAGE) {
    status = gk__fail(ar, n <= 0 ? GK_ECORRUPT : GK_ETOOBIG,
                      "archive '%s': image %s has %lld packed bytes", ar->name,
                      what, (long long)n);
    goto out;
  }
  sqlite3_reset(st);
  rc = sqlite3_blob_open(ar->db, "main", "blob", "data", rowid, 0, &blob);
  if (rc != SQLITE_OK) {
    status = sql_fail(ar, rc, "read an image blob");
    goto out;
  }
  if (sqlite3_blob_bytes(blob) != n) {
    status =
        gk__fail(ar, GK_ECORRUPT,
                 "archive '%s' is corrupt: the blob of image %s changed size",
                 ar->name, what);
    goto out;
  }
  if (!(*packed = malloc((size_t)n))) {
    status =
        gk__fail(ar, GK_ENOMEM, "archive '%s': out of memory reading image %s",
                 ar->name, what);
    goto out;
  }
  rc = sqlite3_blob_read(blob, *packed, (int)n, 0);
  if (rc != SQLITE_OK) {
    status = sql_fail(ar, rc, "read an image blob");
    goto out;
  }
  *packed_size = (size_t)n;
out:
  sqlite3_blob_close(blob);
  sqlite3_reset(st);
  if (status != GK_OK) {
    free(*packed);
    *packed = NULL;
  }
  return status;
}

GK_API int gk_archive_read(gk_archive *ar, size_t i, void **bytes,
                           size_t *size) {
  if (bytes) *bytes = NULL;
  if (!ar) return GK_EINVAL;
  if (!bytes || !size)
    return gk__fail(ar, GK_EINVAL, "gk_archive_read: %s is NULL",
                    bytes ? "size" : "bytes");
  if (i >= ar->nrows)
    return gk__fail(ar, GK_ERANGE,
                    "archive '%s' has %zu images; there is no image %zu",
                    ar->name, ar->nrows, i);
  free(ar->msg);
  ar->msg = NULL;

  const gk_image_info *row = &ar->rows[i].info;
  char what[256], why[256];
  unsigned char *packed = NULL, *raw = NULL, hash[32];
  size_t npacked = 0;
  int status = GK_OK;
  gk__row_describe(row, what, sizeof what);

  if (row->raw_size > GK__MAX_IMAGE) {
    status =
        gk__fail(ar, GK_ETOOBIG,
                 "archive '%s': image %s is %llu bytes, over libgk's limit of "
                 "%llu",
                 ar->name, what, (unsigned long long)row->raw_size,
                 (unsigned long long)GK__MAX_IMAGE);
    goto out;
  }
  if ((status = read_blob(ar, row, what, &packed, &npacked))) goto out;

  /* The frame must be exactly one zstd frame declaring exactly raw_size:
   * then the output buffer below is the right size by construction. */
  unsigned long long declared = ZSTD_getFrameContentSize(packed, npacked);
  if (declared == ZSTD_CONTENTSIZE_ERROR ||
      declared == ZSTD_CONTENTSIZE_UNKNOWN || declared != row->raw_size) {
    status = gk__fail(ar, GK_ECORRUPT,
                      "archive '%s' is corrupt: the data of image %s %s",
                      ar->name, what,
                      declared == ZSTD_CONTENTSIZE_ERROR ? "is not a zstd frame"
                      : declared == ZSTD_CONTENTSIZE_UNKNOWN
                          ? "is a zstd frame that does not declare its size"
                          : "declares another size than the index");
    goto out;
  }
  size_t framed = ZSTD_findFrameCompressedSize(packed, npacked);
  if (ZSTD_isError(framed) || framed != npacked) {
    status =
        gk__fail(ar, GK_ECORRUPT,
                 "archive '%s' is corrupt: the data of image %s is not exactly "
                 "one zstd frame",
                 ar->name, what);
    goto out;
  }
  size_t rawn = (size_t)row->raw_size;
  if (!(raw = malloc(rawn ? rawn : 1))) {
    status =
        gk__fail(ar, GK_ENOMEM, "archive '%s': out of memory reading image %s",
                 ar->name, what);
    goto out;
  }
  size_t got = ZSTD_decompress(raw, rawn, packed, npacked);
  if (ZSTD_isError(got) || got != rawn) {
    status = gk__fail(
        ar, GK_ECORRUPT,
        "archive '%s' is corrupt: image %s does not decompress (%s)", ar->name,
        what, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short output");
    goto out;
  }

  pthread_once(&sodium_once, sodium_start);
  if (!sodium_ready) {
    status = gk__fail(
        ar, GK_EIO, "libsodium failed to initialise (reading image %s)", what);
    goto out;
  }
  crypto_hash_sha256(hash, raw, rawn);
  if (memcmp(hash, row->sha256, 32) != 0) {
    status = gk__fail(ar, GK_EHASH,
                      "archive '%s': image %s does not match its SHA-256",
                      ar->name, what);
    goto out;
  }
  if ((status = gk__elf_check(raw, rawn, row, why, sizeof why))) {
    gk__fail(ar, status, "archive '%s': image %s does not fit its row: %s",
             ar->name, what, why);
    goto out;
  }
  *bytes = raw;
  *size = rawn;
  raw = NULL;
out:
  free(packed);
  free(raw);
  return status;
}

GK_API void gk_free(void *p) { free(p); }
