/*
 * sign.c - the one change a signed archive has over the archive gk pack
 * wrote: rows of its `signature` table (docs/archive.md, "Signatures").
 *
 * The packager is the format's one writer; libgk computes the digest a
 * signature signs and checks signatures, and gk sign (cli/cmd_sign.c)
 * makes the signature, a private copy to write it into, and the checks
 * before and after.
 */
#include "gkpack.h"

#include <sqlite3.h>
#include <stdio.h>

/* WITHOUT ROWID keeps the rows in key order on disk, whatever order keys
 * signed in: the same archive and keys give the same bytes. */
static const char table_sql[] =
  "PRAGMA journal_mode=OFF; BEGIN; "
  "CREATE TABLE IF NOT EXISTS signature ("
  "public_key BLOB PRIMARY KEY NOT NULL CHECK (length(public_key) = 32), "
  "sig BLOB NOT NULL CHECK (length(sig) = 64)"
  ") WITHOUT ROWID";

int gkp_sign(const char *path, const unsigned char pk[32], const unsigned char sig[64],
             const unsigned char *drop, size_t ndrop, gk_err *err) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
  if (rc == SQLITE_OK) {
    /* The file is untrusted until the caller has checked it: a trigger it
     * carried could otherwise run on our INSERT. */
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);
    rc = sqlite3_exec(db, table_sql, NULL, NULL, NULL);
  }
  for (size_t i = 0; rc == SQLITE_OK && i <= ndrop; i++) {
    /* The stale signatures first, then ours (i == ndrop). */
    rc = sqlite3_prepare_v2(db,
                            i < ndrop ? "DELETE FROM signature WHERE public_key = ?1"
                                      : "INSERT OR REPLACE INTO signature "
                                        "(public_key, sig) VALUES (?1, ?2)",
                            -1, &st, NULL);
    if (rc != SQLITE_OK) break;
    sqlite3_bind_blob(st, 1, i < ndrop ? drop + 32 * i : pk, 32, SQLITE_STATIC);
    if (i == ndrop) sqlite3_bind_blob(st, 2, sig, 64, SQLITE_STATIC);
    rc = sqlite3_step(st);
    rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    sqlite3_finalize(st);
    st = NULL;
  }
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  if (rc != SQLITE_OK) gk_err_set(err, "%s", db ? sqlite3_errmsg(db) : "out of memory");
  if (sqlite3_close(db) != SQLITE_OK && rc == SQLITE_OK) {
    gk_err_set(err, "cannot close the database");
    rc = SQLITE_ERROR;
  }
  return rc == SQLITE_OK ? 0 : -1;
}
