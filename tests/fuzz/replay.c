/*
 * replay.c - main() for a fuzz target built without libFuzzer: runs
 * LLVMFuzzerTestOneInput on every file named, and on every file of every
 * folder named (the committed corpus, findings included), so ctest checks
 * that no input that once crashed crashes again - under the sanitizer tree
 * with the same instrumentation as the fuzzer.
 *
 * Each input is passed in a heap buffer of exactly its size, as libFuzzer
 * does: a read one byte past the end is an ASan report, not a silent pass.
 * Replaying no input at all is a failure, not a pass.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return -1;
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) {
      uint8_t *b = realloc(buf, cap *= 2);
      if (!b) free(buf);
      buf = b;
    }
  }
  int err = ferror(f);
  fclose(f);
  if (!buf || err) {
    fprintf(stderr, "replay: cannot read '%s'\n", path);
    free(buf);
    return -1;
  }
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) abort();
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 1;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays a folder's files in name order (reproducible runs). */
static int replay_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    return -1;
  }
  char **names = NULL;
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char **nn = realloc(names, (n + 1) * sizeof *names);
    if (!nn) abort();
    names = nn;
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_name);
  int count = 0;
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      int r = replay_file(path);
      if (r < 0) count = -1;
      else if (count >= 0) count += r;
    }
    free(names[i]);
  }
  free(names);
  return count;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0) {
    printf("usage: %s FILE|DIR... - runs the fuzz target on each input\n",
           argv[0]);
    return argc < 2 ? 2 : 0;
  }
  int total = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    int r = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? replay_dir(argv[i])
                                                            : replay_file(argv[i]);
    if (r < 0) return 1;
    total += r;
  }
  printf("replayed %d input(s)\n", total);
  if (total == 0) {
    fprintf(stderr, "replay: no input found in the paths given\n");
    return 1;
  }
  return 0;
}
