/*
 * test_pages.c - the blob row order (packager/pages.c) against SQLite
 * itself: the bytes gkp__cell_size says a blob row takes in a leaf page
 * are what SQLite's dbstat table reports for that row, and appending rows
 * in gkp__page_order's order fills exactly the leaf pages it planned,
 * fewer than appending them in their own order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "pack_internal.h"

#define PAGE 1024

/* The blob table's shape (packager/pack.c). */
static const char table_sql[] =
    "PRAGMA page_size = 1024;"
    "CREATE TABLE blob (id INTEGER PRIMARY KEY, sha256 BLOB NOT NULL, raw_size INTEGER NOT NULL,"
    " codec TEXT NOT NULL, base INTEGER, data_sha256 BLOB NOT NULL, data BLOB NOT NULL);";

typedef struct row {
  long long raw, base; /* base 0: NULL */
  const char *codec;
  size_t n;            /* data bytes */
} row;

static sqlite3 *open_table(void) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, table_sql, NULL, NULL, NULL), SQLITE_OK);
  return db;
}

static void insert(sqlite3 *db, long long id, const row *r) {
  static unsigned char bytes[64 * 1024];
  sqlite3_stmt *s = NULL;
  assert_true(r->n <= sizeof bytes);
  assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO blob VALUES (?, ?, ?, ?, ?, ?, ?)", -1,
                                      &s, NULL), SQLITE_OK);
  sqlite3_bind_int64(s, 1, id);
  sqlite3_bind_blob(s, 2, bytes, 32, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, r->raw);
  sqlite3_bind_text(s, 4, r->codec, -1, SQLITE_STATIC);
  if (r->base) sqlite3_bind_int64(s, 5, r->base);
  else sqlite3_bind_null(s, 5);
  sqlite3_bind_blob(s, 6, bytes, 32, SQLITE_STATIC);
  sqlite3_bind_blob(s, 7, bytes, (int)r->n, SQLITE_STATIC);
  assert_int_equal(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
}

static long long query(sqlite3 *db, const char *sql) {
  sqlite3_stmt *s = NULL;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(s), SQLITE_ROW);
  long long v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

static size_t cell_of(long long id, const row *r) {
  gkp__column c[] = {
      {GKP__NULL, 0, 0},
      {GKP__BLOB, 0, 32},
      {GKP__INT, r->raw, 0},
      {GKP__TEXT, 0, strlen(r->codec)},
      {r->base ? GKP__INT : GKP__NULL, r->base, 0},
      {GKP__BLOB, 0, 32},
      {GKP__BLOB, 0, r->n},
  };
  return gkp__cell_size(id, c, sizeof c / sizeof *c, PAGE);
}

/* One row alone in its table: its leaf page's free bytes are the page
 * less its 8-byte header and that row's cell and pointer. Sizes cover a
 * row kept whole (up to 989 bytes of payload at this page size), just
 * over, and overflows whose local part is large, small or the minimum;
 * rowids and numbers of each varint width. */
static void cell_size_is_sqlites(void **state) {
  (void)state;
  static const size_t sizes[] = {0,   1,    40,   300,  800,  900,  905,  906,  907,  950,
                                 990, 1020, 1100, 1500, 1900, 2000, 2024, 3000, 5000, 33000};
  static const long long ids[] = {1, 127, 128, 20000, 3000000};
  static const long long raws[] = {0, 1, 100, 70000, 5000000000LL};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    for (size_t k = 0; k < sizeof ids / sizeof *ids; k++) {
      row r = {raws[(i + k) % 5], k % 2 ? ids[k] : 0, k % 2 ? "zstd-delta" : "zstd", sizes[i]};
      sqlite3 *db = open_table();
      insert(db, ids[k], &r);
      long long unused = query(db, "SELECT unused FROM dbstat WHERE name = 'blob' AND "
                                   "pagetype = 'leaf'");
      size_t want = (size_t)(PAGE - 8 - unused);
      if (cell_of(ids[k], &r) != want)
        fail_msg("data %zu bytes, rowid %lld: gkp__cell_size %zu, SQLite %zu", sizes[i],
                 ids[k], cell_of(ids[k], &r), want);
      sqlite3_close(db);
    }
}

static uint64_t mix(uint64_t x) { /* splitmix64 */
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

#define NROWS 300

static long long leaves_after(const row *rows, const size_t *order) {
  sqlite3 *db = open_table();
  assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
  /* rowids of 2 bytes, as cell_of(NROWS) counts */
  for (size_t k = 0; k < NROWS; k++) insert(db, (long long)k + 128, &rows[order[k]]);
  assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
  long long n = query(db, "SELECT count(*) FROM dbstat WHERE name = 'blob' AND pagetype = 'leaf'");
  sqlite3_close(db);
  return n;
}

/* Rows of sizes like an archive's (a few small deltas, most 1-30 KB):
 * appended in gkp__page_order's order they take the leaf pages it
 * planned - each page its rows' cells, the next page's first row never
 * fitting - and fewer than in their own order. The order is a
 * permutation and depends on the sizes alone. */
static void order_fills_pages(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 3; seed++) {
    row rows[NROWS];
    size_t cell[NROWS], order[NROWS], again[NROWS], plain[NROWS], seen[NROWS] = {0};
    for (size_t i = 0; i < NROWS; i++) {
      uint64_t x = mix(seed * 1000 + i);
      rows[i] = (row){(long long)(x % 90000), i % 3 ? (long long)(i / 3 + 1) : 0,
                      i % 3 ? "zstd-delta" : "zstd",
                      x % 7 == 0 ? 20 + (x >> 8) % 400 : 1000 + (x >> 16) % 30000};
      cell[i] = cell_of(NROWS, &rows[i]);
      plain[i] = i;
    }
    assert_int_equal(gkp__page_order(cell, NROWS, PAGE, order), 0);
    assert_int_equal(gkp__page_order(cell, NROWS, PAGE, again), 0);
    assert_memory_equal(order, again, sizeof order);
    for (size_t k = 0; k < NROWS; k++) {
      assert_true(order[k] < NROWS);
      assert_int_equal(seen[order[k]]++, 0);
    }
    /* The pages the order plans: a page ends where its next row no longer fits. */
    long long planned = 0;
    for (size_t k = 0, room = 0; k < NROWS; k++) {
      if (cell[order[k]] > room) planned++, room = PAGE - 8;
      room -= cell[order[k]];
    }
    long long got = leaves_after(rows, order), before = leaves_after(rows, plain);
    print_message("seed %llu: %lld leaf pages in page order (planned %lld), %lld in row order\n",
                  (unsigned long long)seed, got, planned, before);
    assert_int_equal(got, planned);
    assert_true(got < before);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cell_size_is_sqlites),
      cmocka_unit_test(order_fills_pages),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
