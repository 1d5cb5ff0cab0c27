/*
 * vfs.c - the SQLite VFS libgk opens archive files through: the default
 * one (unix), with two things changed for a read-only file that nobody
 * writes while it is open (archive.c opens with immutable=1).
 *
 * - Read-ahead. SQLite reads a page at a time, and an image's blob is a
 *   chain of overflow pages that `gk pack` lays out one after another: a
 *   10 KB blob was eleven 1 KB preads. A read that starts where the last one
 *   ended fetches RA_BYTES at once, and later reads inside them are copies.
 *   Random reads (the index's b-tree pages) stay one page each: reading
 *   ahead of those would copy more than the syscalls it saves.
 * - No path canonicalization. The unix VFS resolves every component of the
 *   path with lstat(), so that two names of one file share its locks. An
 *   immutable file takes no locks, so the name is used as given (made
 *   absolute against the working directory).
 *
 * Everything else is the default VFS's own code, called through its
 * sqlite3_vfs (never copied: its functions read their own pAppData). The
 * VFS is registered once per process, not as the default, under a name
 * of its own, and unregistered when libgk is unloaded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gk_internal.h"

/* 8 KB: a typical cubin's blob (5-20 KB stored) in two or three reads. 16
 * KB read no faster and held 8 KB more (bench/load.sh, 2026-11-23). */
#define RA_BYTES 8192

/* Small: SQLite allocates szOsFile three times per connection (the
 * database and two journals it never opens here), so the buffer is
 * allocated apart, at the first read-ahead. */
typedef struct ra_file {
  sqlite3_file base;     /* pMethods = &ra_io */
  sqlite3_int64 next;    /* where the last read ended: a read from here is sequential */
  sqlite3_int64 buf_off; /* file offset of buf[0] */
  int buf_len;           /* bytes of buf that hold the file; 0: none */
  unsigned char *buf;    /* RA_BYTES (sqlite3_malloc), or NULL */
  /* the default VFS's file follows, szOsFile bytes (REAL below) */
} ra_file;

/* sizeof(ra_file) is a multiple of 8, as sqlite3_file needs. */
#define REAL(f) ((sqlite3_file *)((char *)(f) + sizeof(ra_file)))
_Static_assert(sizeof(ra_file) % 8 == 0, "the real file stays aligned");

static sqlite3_vfs *real_vfs; /* the default VFS when ours was made */

/* ---- the file ---------------------------------------------------------------- */

static int ra_close(sqlite3_file *f) {
  ra_file *p = (ra_file *)f;
  sqlite3_file *r = REAL(f);
  sqlite3_free(p->buf);
  p->buf = NULL, p->buf_len = 0;
  return r->pMethods ? r->pMethods->xClose(r) : SQLITE_OK;
}

static int ra_read(sqlite3_file *f, void *out, int amt, sqlite3_int64 off) {
  ra_file *p = (ra_file *)f;
  sqlite3_file *r = REAL(f);
  const int sequential = off == p->next;
  p->next = off + amt;
  if (p->buf_len && off >= p->buf_off && off + amt <= p->buf_off + p->buf_len) {
    memcpy(out, p->buf + (off - p->buf_off), (size_t)amt);
    return SQLITE_OK;
  }
  if (sequential && amt < RA_BYTES && (p->buf || (p->buf = sqlite3_malloc(RA_BYTES)))) {
    int rc = r->pMethods->xRead(r, p->buf, RA_BYTES, off);
    if (rc == SQLITE_OK) {
      p->buf_off = off, p->buf_len = RA_BYTES;
      memcpy(out, p->buf, (size_t)amt);
      return SQLITE_OK;
    }
    /* A short read (the end of the file) says nothing of how much of buf
     * is real: forget it and read the request itself. */
    p->buf_len = 0;
    if (rc != SQLITE_IOERR_SHORT_READ) return rc;
  }
  return r->pMethods->xRead(r, out, amt, off);
}

static int ra_write(sqlite3_file *f, const void *data, int amt, sqlite3_int64 off) {
  ((ra_file *)f)->buf_len = 0;
  return REAL(f)->pMethods->xWrite(REAL(f), data, amt, off);
}

static int ra_truncate(sqlite3_file *f, sqlite3_int64 size) {
  ((ra_file *)f)->buf_len = 0;
  return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int ra_sync(sqlite3_file *f, int flags) {
  return REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int ra_file_size(sqlite3_file *f, sqlite3_int64 *size) {
  return REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int ra_lock(sqlite3_file *f, int level) {
  return REAL(f)->pMethods->xLock(REAL(f), level);
}

static int ra_unlock(sqlite3_file *f, int level) {
  return REAL(f)->pMethods->xUnlock(REAL(f), level);
}

static int ra_check_reserved(sqlite3_file *f, int *out) {
  return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int ra_file_control(sqlite3_file *f, int op, void *arg) {
  return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int ra_sector_size(sqlite3_file *f) {
  return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int ra_device_characteristics(sqlite3_file *f) {
  return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

/* Version 1: no shared memory (no WAL) and no memory-mapped pages, which
 * the archive uses neither of (a mapping would turn a file cut short under
 * the reader into SIGBUS instead of an error). */
static const sqlite3_io_methods ra_io = {
    .iVersion = 1,
    .xClose = ra_close,
    .xRead = ra_read,
    .xWrite = ra_write,
    .xTruncate = ra_truncate,
    .xSync = ra_sync,
    .xFileSize = ra_file_size,
    .xLock = ra_lock,
    .xUnlock = ra_unlock,
    .xCheckReservedLock = ra_check_reserved,
    .xFileControl = ra_file_control,
    .xSectorSize = ra_sector_size,
    .xDeviceCharacteristics = ra_device_characteristics,
};

/* ---- the VFS ----------------------------------------------------------------- */

static int ra_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
                   int *out_flags) {
  (void)vfs;
  ra_file *p = (ra_file *)f;
  memset(p, 0, sizeof *p);
  p->next = -1;
  int rc = real_vfs->xOpen(real_vfs, name, REAL(f), flags, out_flags);
  /* SQLite calls xClose only when pMethods is set, whatever xOpen returns:
   * set it once the real file is open (or half open, with its own methods
   * to close it). */
  if (REAL(f)->pMethods) p->base.pMethods = &ra_io;
  return rc;
}

static int ra_delete(sqlite3_vfs *vfs, const char *name, int sync) {
  (void)vfs;
  return real_vfs->xDelete(real_vfs, name, sync);
}

static int ra_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
  (void)vfs;
  return real_vfs->xAccess(real_vfs, name, flags, out);
}

/* The name as given, absolute (see the top of the file). */
static int ra_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
  (void)vfs;
  size_t len = strlen(name);
  if (name[0] == '/') {
    if (len >= (size_t)n) return SQLITE_CANTOPEN;
    memcpy(out, name, len + 1);
    return SQLITE_OK;
  }
  if (!getcwd(out, (size_t)n)) return SQLITE_CANTOPEN;
  size_t cwd = strlen(out);
  if (cwd + 1 + len >= (size_t)n) return SQLITE_CANTOPEN;
  out[cwd] = '/';
  memcpy(out + cwd + 1, name, len + 1);
  return SQLITE_OK;
}

static void *ra_dlopen(sqlite3_vfs *vfs, const char *name) {
  (void)vfs;
  return real_vfs->xDlOpen(real_vfs, name);
}

static void ra_dlerror(sqlite3_vfs *vfs, int n, char *msg) {
  (void)vfs;
  real_vfs->xDlError(real_vfs, n, msg);
}

static void (*ra_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void) {
  (void)vfs;
  return real_vfs->xDlSym(real_vfs, h, sym);
}

static void ra_dlclose(sqlite3_vfs *vfs, void *h) {
  (void)vfs;
  real_vfs->xDlClose(real_vfs, h);
}

static int ra_randomness(sqlite3_vfs *vfs, int n, char *out) {
  (void)vfs;
  return real_vfs->xRandomness(real_vfs, n, out);
}

static int ra_sleep(sqlite3_vfs *vfs, int us) {
  (void)vfs;
  return real_vfs->xSleep(real_vfs, us);
}

static int ra_current_time(sqlite3_vfs *vfs, double *out) {
  (void)vfs;
  return real_vfs->xCurrentTime(real_vfs, out);
}

static int ra_last_error(sqlite3_vfs *vfs, int n, char *out) {
  (void)vfs;
  return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, n, out) : 0;
}

static int ra_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
  (void)vfs;
  if (real_vfs->iVersion >= 2 && real_vfs->xCurrentTimeInt64)
    return real_vfs->xCurrentTimeInt64(real_vfs, out);
  double day;
  int rc = real_vfs->xCurrentTime(real_vfs, &day);
  *out = (sqlite3_int64)(day * 86400000.0);
  return rc;
}

static sqlite3_vfs ra_vfs = {
    .iVersion = 2,
    .zName = "gk-archive",
    .xOpen = ra_open,
    .xDelete = ra_delete,
    .xAccess = ra_access,
    .xFullPathname = ra_full_pathname,
    .xDlOpen = ra_dlopen,
    .xDlError = ra_dlerror,
    .xDlSym = ra_dlsym,
    .xDlClose = ra_dlclose,
    .xRandomness = ra_randomness,
    .xSleep = ra_sleep,
    .xCurrentTime = ra_current_time,
    .xGetLastError = ra_last_error,
    .xCurrentTimeInt64 = ra_current_time64,
};

static pthread_once_t ra_once = PTHREAD_ONCE_INIT;
static int ra_ready;

static void ra_register(void) {
  if (sqlite3_initialize() != SQLITE_OK || !(real_vfs = sqlite3_vfs_find(NULL))) return;
  ra_vfs.szOsFile = (int)sizeof(ra_file) + real_vfs->szOsFile;
  ra_vfs.mxPathname = real_vfs->mxPathname;
  ra_ready = sqlite3_vfs_register(&ra_vfs, 0) == SQLITE_OK;
}

/* Before the code goes away: SQLite must not keep pointers into it. */
__attribute__((destructor)) static void ra_unregister(void) {
  if (ra_ready) sqlite3_vfs_unregister(&ra_vfs);
}

const char *gk__archive_vfs(void) {
  pthread_once(&ra_once, ra_register);
  return ra_ready ? ra_vfs.zName : NULL;
}
