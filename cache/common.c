/*
 * common.c - what every part of the cache uses (cache_internal.h): hex
 * names, folders, the paths of temporaries and objects, whole-file reads
 * and atomic writes, and the writers' lock. It calls no other file of the
 * cache, so that each of them may call it.
 */
#define _POSIX_C_SOURCE 200809L
#include "cache_internal.h"
#include "gkcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int gkc__is_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

int gkc__is_hex64(const char *s) {
  return s && strlen(s) == GKC_HEX_LEN && gkc__is_hex(s, GKC_HEX_LEN);
}

char *gkc__dupf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

uint64_t gkc__fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* mkdir -p; an existing folder is success. Modifies nothing on failure
 * beyond the folders it managed to create. */
int gkc__mkdirs(const char *path) {
  char buf[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) return errno = ENAMETOOLONG, -1;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    buf[i] = saved;
  }
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
  return 0;
}

int gkc_temp_path(gkc_cache *c, const char *suffix, char *buf, size_t size) {
  /* host tag + pid + counter is unique; the random part keeps apart two
   * containers with one host name and pid namespaces of their own. */
  unsigned char r[6];
  char rx[13];
  randombytes_buf(r, sizeof r);
  sodium_bin2hex(rx, sizeof rx, r, sizeof r);
  int n = snprintf(buf, size, "%s/tmp/%s-%ld-%lu-%s%s", c->root, c->host,
                   (long)getpid(), ++c->counter, rx, suffix ? suffix : "");
  return n < 0 || (size_t)n >= size ? gk_err_set(&c->err, "temporary path too long") : 0;
}

int gkc_object_path(const gkc_cache *c, const char *sha, char *buf,
                    size_t size) {
  int n = snprintf(buf, size, "%s/objects/%.2s/%s", c->root, sha, sha);
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

char *gkc_read_file(const char *path, size_t cap, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  char *buf = NULL;
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < cap &&
      (buf = malloc((size_t)st.st_size + 1)))
    n = read(fd, buf, (size_t)st.st_size);
  close(fd);
  if (n != st.st_size) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = (size_t)n;
  return buf;
}

/* Writes `data` to `dest` through a temporary file in the cache's tmp folder
 * and a rename: readers see the old file or the new one, never a part. */
int gkc__write_atomic(gkc_cache *c, const char *dest, const char *data, size_t len) {
  char tmp[PATH_MAX];
  if (gkc_temp_path(c, ".part", tmp, sizeof tmp) != 0) return -1;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return gk_err_set(&c->err, "cannot write '%s': %s", tmp, strerror(errno));
  size_t off = 0;
  while (off < len) {
    ssize_t n = write(fd, data + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      unlink(tmp);
      return gk_err_set(&c->err, "cannot write '%s': %s", tmp, strerror(e));
    }
    off += (size_t)n;
  }
  if (close(fd) != 0 || rename(tmp, dest) != 0) {
    int e = errno;
    unlink(tmp);
    return gk_err_set(&c->err, "cannot write '%s': %s", dest, strerror(e));
  }
  return 0;
}

int gkc__lock(gkc_cache *c) {
  if (c->lockfd < 0) {
    char *path = gkc__dupf("%s/lock", c->root);
    int fd = path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666) : -1;
    if (fd < 0) {
      gk_err_set(&c->err, "cannot open the cache's lock '%s': %s", path ? path : c->root,
                 strerror(errno));
      free(path);
      return -1;
    }
    free(path);
    c->lockfd = fd;
  }
  while (flock(c->lockfd, LOCK_EX) != 0)
    if (errno != EINTR)
      return gk_err_set(&c->err, "cannot lock the cache '%s': %s", c->dir, strerror(errno));
  return 0;
}

void gkc__unlock(gkc_cache *c) {
  if (c->lockfd >= 0) flock(c->lockfd, LOCK_UN);
}
