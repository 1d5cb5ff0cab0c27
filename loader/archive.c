/*
 * archive.c - opening a fat archive (docs/archive.md): the file or the
 * bytes, its header and its schema. Its index is read by index.c, its
 * images by unpack.c.
 *
 * The archive is untrusted input. It is opened read-only with SQLite in
 * defensive mode and with schema code untrusted, identified by its
 * application_id before anything else is asked of it; its rows are read
 * when a call needs them, and no size read from the file is believed
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
int gk__sql_status(int rc) {
  switch (rc & 0xff) {
  case SQLITE_NOMEM: return GK_ENOMEM;
  case SQLITE_NOTADB: return GK_ENOTARCHIVE;
  case SQLITE_IOERR:
  case SQLITE_CANTOPEN: return GK_EIO;
  default: return GK_ECORRUPT;
  }
}

static int sql_fail(gk_archive *ar, int rc, const char *doing) {
  int status = gk__sql_status(rc);
  return gk__fail(ar, status, "archive '%s'%s: cannot %s: %s", ar->name,
                  status == GK_ECORRUPT ? " is corrupt" : "", doing,
                  sqlite3_errmsg(ar->db));
}

int gk__sql_fail(gk_archive *ar, int rc, const char *doing) {
  return sql_fail(ar, rc, doing);
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
      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, gk__archive_vfs());
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
