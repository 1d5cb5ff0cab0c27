/* outfile.c - atomic output files (see outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The mode a plain open(O_CREAT, 0666) would give: mkstemp's 0600 would
 * surprise whoever serves or packages the file. */
static mode_t file_mode(void) {
  mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

int cli_out_open(cli_out *o, const char *path, char *err, size_t errsize) {
  memset(o, 0, sizeof *o);
  if (strcmp(path, "-") == 0) {
    o->f = stdout;
    return 0;
  }
  size_t n = strlen(path);
  o->path = strdup(path);
  o->tmp = malloc(n + sizeof ".tmp-XXXXXX");
  if (!o->path || !o->tmp) {
    snprintf(err, errsize, "out of memory");
    goto open_fail;
  }
  memcpy(o->tmp, path, n);
  memcpy(o->tmp + n, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");
  int fd = mkstemp(o->tmp);
  if (fd < 0) {
    snprintf(err, errsize, "cannot write '%s' (temporary file beside it): %s", path,
             strerror(errno));
    goto open_fail;
  }
  fchmod(fd, file_mode());
  o->f = fdopen(fd, "wb");
  if (!o->f) {
    snprintf(err, errsize, "cannot write '%s': %s", o->tmp, strerror(errno));
    close(fd);
    unlink(o->tmp);
    goto open_fail;
  }
  return 0;
open_fail:
  free(o->path);
  free(o->tmp);
  memset(o, 0, sizeof *o);
  return -1;
}

int cli_out_commit(cli_out *o, char *err, size_t errsize) {
  int rc = 0;
  if (!o->path) { /* stdout */
    if (fflush(o->f) != 0 || ferror(o->f)) {
      snprintf(err, errsize, "cannot write to stdout: %s", strerror(errno));
      rc = -1;
    }
    return rc;
  }
  if (fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0) {
    snprintf(err, errsize, "cannot write '%s': %s", o->tmp, strerror(errno));
    rc = -1;
  }
  if (fclose(o->f) != 0 && rc == 0) {
    snprintf(err, errsize, "cannot write '%s': %s", o->tmp, strerror(errno));
    rc = -1;
  }
  o->f = NULL;
  if (rc == 0 && rename(o->tmp, o->path) != 0) {
    snprintf(err, errsize, "cannot rename '%s' to '%s': %s", o->tmp, o->path,
             strerror(errno));
    rc = -1;
  }
  if (rc != 0) unlink(o->tmp);
  free(o->path);
  free(o->tmp);
  o->path = o->tmp = NULL;
  return rc;
}

void cli_out_abort(cli_out *o) {
  if (!o->path) return;
  if (o->f) fclose(o->f);
  unlink(o->tmp);
  free(o->path);
  free(o->tmp);
  memset(o, 0, sizeof *o);
}

int cli_write_at(int dirfd, const char *name, const void *data, size_t size) {
  char tmp[512];
  int fd = -1, saved;
  /* O_EXCL|O_NOFOLLOW: the temporary name is never an existing file or a
   * link planted there; retry with another suffix if it is taken. */
  for (unsigned k = 0; fd < 0 && k < 100; k++) {
    if (snprintf(tmp, sizeof tmp, ".%s.tmp-%ld-%u", name, (long)getpid(), k) >=
        (int)sizeof tmp) {
      errno = ENAMETOOLONG;
      return -1;
    }
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                file_mode());
    if (fd < 0 && errno != EEXIST) return -1;
  }
  if (fd < 0) return -1;
  const unsigned char *p = data;
  for (size_t off = 0; off < size;) {
    ssize_t w = write(fd, p + off, size - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) goto write_fail;
    off += (size_t)w;
  }
  if (fsync(fd) != 0) goto write_fail;
  if (close(fd) != 0) {
    fd = -1;
    goto write_fail;
  }
  fd = -1;
  /* rename replaces the directory entry itself: a symlink at `name` is
   * swapped out, its target is never touched. */
  if (renameat(dirfd, tmp, dirfd, name) != 0) goto write_fail;
  return 0;
write_fail:
  saved = errno ? errno : EIO;
  if (fd >= 0) close(fd);
  unlinkat(dirfd, tmp, 0);
  errno = saved;
  return -1;
}
