/*
 * test_corrupt.c ARCHIVE [--quick] - damage a real archive (the fixture
 * "archive": the recipes' cpu images) and check that libgk either refuses
 * it clearly or hands out exactly the original bytes.
 *
 * Damage: bytes flipped on every SQLite page (b-tree page header, cell
 * pointers, cells, the middle and the end of the page) and across the whole
 * 100-byte file header, with several bit patterns; the file truncated at 0,
 * inside the header, at, before and after every page boundary and at other
 * offsets; a few bursts of random bytes. Each damaged copy is opened from
 * memory and from a file (alternately; both for the header and truncation
 * cases), every row is read, and every kernel/variant is selected and
 * loaded for this machine's CPU.
 *
 * Every outcome must be one of:
 * - a status from gk.h's list with a message (the open's naming the
 *   archive), or
 * - success with bytes equal to the original image of that row (same
 *   kernel, backend, target and variant: byte for byte, not just by hash),
 *   or, for a row whose name the damage changed to one the original does
 *   not have, bytes equal to some original image (counted and reported:
 *   only a signature protects the index's names), and a loaded module
 *   whose image is the one the undamaged archive selects.
 * Anything else fails, naming the case; a crash names it too.
 * --quick takes every 8th case (valgrind runs it that way).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gk.h"

#if defined(__SANITIZE_ADDRESS__)
#define GK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GK_ASAN 1
#endif
#endif
#ifdef GK_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* One image of the undamaged archive. */
typedef struct ref {
  char key[512]; /* kernel|backend|target|variant */
  unsigned char sha[32];
  unsigned char *bytes;
  size_t size;
} ref;

/* One kernel/variant and the row the undamaged archive loads for it. */
typedef struct pick {
  char kernel[128], variant[128];
  unsigned char sha[32];
  int status; /* of the undamaged load */
} pick;

static ref *refs;
static size_t nrefs;
static pick *picks;
static size_t npicks;
static gk_device cpu;
static char scratch[64];
static char current[160]; /* the case under test, for a crash report */

static struct {
  long cases, opened, refused_open, index_refused, reads_ok, reads_refused, renamed, missed;
  long loads_ok, loads_refused, by_status[32];
} count;
static int failures;

#ifdef GK_ASAN
/* ASan reports the crash itself and then calls this. */
static void on_death(void) {
  fprintf(stderr, "test_corrupt: died during case: %s\n", current);
}
#else
static void on_signal(int sig) {
  /* Only async-signal-safe calls here. */
  static const char msg[] = "test_corrupt: crashed during case: ";
  ssize_t w = write(2, msg, sizeof msg - 1);
  w = write(2, current, strlen(current));
  w = write(2, "\n", 1);
  (void)w;
  signal(sig, SIG_DFL);
  raise(sig);
}
#endif

static void fail(const char *fmt, const char *detail) {
  if (failures++ < 20) {
    fprintf(stderr, "FAIL (%s): ", current);
    fprintf(stderr, fmt, detail);
    fputc('\n', stderr);
  }
}

static void key_of(const gk_image_info *i, char *buf, size_t size) {
  snprintf(buf, size, "%s|%s|%s|%s", i->kernel, i->backend, i->target, i->variant);
}

static const ref *ref_by_key(const char *key) {
  for (size_t i = 0; i < nrefs; i++)
    if (strcmp(refs[i].key, key) == 0) return &refs[i];
  return NULL;
}

/* A status is clear when it is one of gk.h's and comes with a message. */
static int clear_status(int rc, const char *msg) {
  if (rc >= 0 || rc < -31 || strcmp(gk_strerror(rc), "unknown status") == 0) return 0;
  count.by_status[-rc]++;
  return msg && *msg;
}

static unsigned char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
  if (!b || fread(b, 1, (size_t)len, f) != (size_t)len) {
    fclose(f);
    free(b);
    return NULL;
  }
  fclose(f);
  *n = (size_t)len;
  return b;
}

static int open_bytes(const unsigned char *b, size_t n, int from_file,
                      gk_archive **ar) {
  if (!from_file) return gk_archive_open_memory(b, n, ar);
  int fd = open(scratch, O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0 || (n && write(fd, b, n) != (ssize_t)n) || close(fd) != 0) {
    perror(scratch);
    exit(1);
  }
  return gk_archive_open(scratch, ar);
}

/* Every kernel/variant loaded (all of them when `all`, else one,
 * rotating) first, while libgk has read only the rows selection needs
 * (a binary search on rowids), then the whole index and every row read;
 * each outcome checked. */
static void exercise(gk_archive *ar, int all, long rotate) {
  int rc;
  for (size_t k = 0; k < npicks; k++) {
    if (!all && (long)k != rotate % (long)npicks) continue;
    const pick *pk = &picks[k];
    gk_module *m;
    rc = gk_module_load(ar, &cpu, pk->kernel, pk->variant, &m);
    if (rc != GK_OK) {
      count.loads_refused++;
      if (!clear_status(rc, gk_archive_errmsg(ar)))
        fail("load refused without a clear status: %s", gk_archive_errmsg(ar));
      continue;
    }
    count.loads_ok++;
    const gk_image_info *mi = gk_module_info(m);
    char key[512];
    key_of(mi, key, sizeof key);
    const ref *named = ref_by_key(key);
    if (pk->status != GK_OK || memcmp(mi->sha256, pk->sha, 32) != 0) {
      /* Another image than the undamaged choice is fine only when it is an
       * image of this kernel and variant that fits, under its own name
       * with its own bytes: a row whose variant was damaged can hide the best one
       * from a selection that reads only its rows (docs/archive.md). */
      if (pk->status == GK_OK && named && memcmp(named->sha, mi->sha256, 32) == 0 &&
          strcmp(mi->kernel, pk->kernel) == 0 && strcmp(mi->variant, pk->variant) == 0 &&
          strcmp(mi->backend, "cpu") == 0)
        count.missed++;
      else
        fail("kernel '%s' loaded an image the undamaged archive would not", pk->kernel);
    } else if (!gk_module_symbol(m, pk->kernel))
      fail("kernel '%s' loaded without its entry point", pk->kernel);
    gk_module_unload(m);
  }
  size_t n = 0;
  if ((rc = gk_archive_count(ar, &n)) != GK_OK) {
    count.index_refused++;
    if (!clear_status(rc, gk_archive_errmsg(ar)))
      fail("the index refused without a clear status: %s", gk_archive_errmsg(ar));
    if (n != 0) fail("%s", "gk_archive_count failed but counted rows");
  }
  for (size_t i = 0; i < n; i++) {
    gk_image_info info;
    if (gk_archive_image(ar, i, &info) != GK_OK) {
      fail("%s", "gk_archive_image failed below the row count");
      continue;
    }
    void *p;
    size_t len;
    rc = gk_archive_read(ar, i, &p, &len);
    if (rc != GK_OK) {
      count.reads_refused++;
      if (!clear_status(rc, gk_archive_errmsg(ar)))
        fail("read refused without a clear status: %s", gk_archive_errmsg(ar));
      continue;
    }
    count.reads_ok++;
    char key[512];
    key_of(&info, key, sizeof key);
    const ref *r = ref_by_key(key);
    if (!r) {
      /* A name the damage invented: the bytes must still be an original
       * image, the one whose hash the row carries. */
      count.renamed++;
      for (size_t j = 0; j < nrefs && !r; j++)
        if (memcmp(refs[j].sha, info.sha256, 32) == 0) r = &refs[j];
    }
    if (!r || len != r->size || memcmp(p, r->bytes, len) != 0)
      fail("row %s read successfully but its bytes are not the original image", key);
    gk_free(p);
  }
}

static void run_case(const unsigned char *b, size_t n, int from_file, int all,
                     long rotate) {
  gk_archive *ar = NULL;
  count.cases++;
  int rc = open_bytes(b, n, from_file, &ar);
  if (rc != GK_OK) {
    count.refused_open++;
    const char *msg = gk_last_error();
    if (!clear_status(rc, msg))
      fail("open refused without a clear status: %s", msg);
    else if (!strstr(msg, from_file ? scratch : "<memory,"))
      fail("the open's message does not name the archive: %s", msg);
    return;
  }
  count.opened++;
  exercise(ar, all, rotate);
  gk_archive_close(ar);
}

/* Reads the undamaged archive: the reference bytes of every row and what
 * each kernel/variant loads on this CPU. */
static int load_reference(const unsigned char *b, size_t n) {
  gk_archive *ar;
  if (gk_archive_open_memory(b, n, &ar) != GK_OK) {
    fprintf(stderr, "test_corrupt: the undamaged archive does not open: %s\n",
            gk_last_error());
    return 0;
  }
  gk_archive_count(ar, &nrefs);
  refs = calloc(nrefs, sizeof *refs);
  picks = calloc(nrefs, sizeof *picks);
  for (size_t i = 0; i < nrefs; i++) {
    gk_image_info info;
    void *p;
    if (gk_archive_image(ar, i, &info) != GK_OK ||
        gk_archive_read(ar, i, &p, &refs[i].size) != GK_OK) {
      fprintf(stderr, "test_corrupt: the undamaged archive's row %zu does not read: %s\n",
              i, gk_archive_errmsg(ar));
      return 0;
    }
    refs[i].bytes = p;
    memcpy(refs[i].sha, info.sha256, 32);
    key_of(&info, refs[i].key, sizeof refs[i].key);
    int seen = 0;
    for (size_t k = 0; k < npicks; k++)
      seen |= strcmp(picks[k].kernel, info.kernel) == 0 &&
              strcmp(picks[k].variant, info.variant) == 0;
    if (seen || strcmp(info.backend, "cpu") != 0) continue;
    pick *pk = &picks[npicks++];
    snprintf(pk->kernel, sizeof pk->kernel, "%s", info.kernel);
    snprintf(pk->variant, sizeof pk->variant, "%s", info.variant);
    gk_module *m;
    pk->status = gk_module_load(ar, &cpu, pk->kernel, pk->variant, &m);
    if (pk->status == GK_OK) memcpy(pk->sha, gk_module_info(m)->sha256, 32);
    gk_module_unload(m);
  }
  gk_archive_close(ar);
  return nrefs > 0 && npicks > 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0) {
    printf("usage: test_corrupt ARCHIVE [--quick]\n");
    return argc < 2 ? 2 : 0;
  }
  int stride = argc > 2 && strcmp(argv[2], "--quick") == 0 ? 8 : 1;
  size_t n;
  unsigned char *orig = read_file(argv[1], &n);
  if (!orig) {
    printf("SKIP: archive '%s' cannot be read (build it: ctest -R fixture.archive)\n",
           argv[1]);
    return 77;
  }
#ifdef GK_ASAN
  __sanitizer_set_death_callback(on_death);
#else
  signal(SIGSEGV, on_signal);
  signal(SIGBUS, on_signal);
  signal(SIGFPE, on_signal);
  signal(SIGILL, on_signal);
  signal(SIGABRT, on_signal);
#endif
  if (gk_device_detect_backend(GK_BACKEND_CPU, &cpu, NULL, 0) != GK_OK ||
      !load_reference(orig, n)) {
    fprintf(stderr, "test_corrupt: cannot set up from '%s'\n", argv[1]);
    return 1;
  }
  const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(scratch, sizeof scratch, "%s/gk-corrupt-XXXXXX", tmp);
  int sfd = mkstemp(scratch);
  if (sfd < 0) {
    perror(scratch);
    return 1;
  }
  close(sfd);

  /* SQLite's page size: header bytes 16-17, big endian, 1 meaning 65536. */
  size_t page = (size_t)orig[16] << 8 | orig[17];
  if (page == 1) page = 65536;
  size_t npages = n / page;
  unsigned char *buf = malloc(n);
  static const struct { int xor_; int set; const char *name; } pat[] = {
      {0x01, -1, "xor 0x01"}, {0x80, -1, "xor 0x80"},
      {0, 0x00, "= 0x00"},    {0, 0xff, "= 0xff"}};
  long c = 0;

  /* The file header: every byte, two patterns each, from memory and from
   * a file in turn. */
  for (size_t off = 0; off < 100 && off < n; off++)
    for (int k = 0; k < 2; k++, c++) {
      if (c % stride) continue;
      int pi = (int)(off + (size_t)k) % 4;
      memcpy(buf, orig, n);
      buf[off] = pat[pi].set >= 0 ? (unsigned char)pat[pi].set
                                  : (unsigned char)(buf[off] ^ pat[pi].xor_);
      snprintf(current, sizeof current, "header byte %zu %s (%s)", off,
               pat[pi].name, k ? "file" : "memory");
      run_case(buf, n, k, c % 16 == 0, c);
    }
  /* Every page: its b-tree header and cell pointers, a cell area, the
   * middle and the last byte; the first page's b-tree starts at 100. */
  /* One pattern per offset, rotating, so each kind of offset meets every
   * pattern across the pages. */
  static const size_t in_page[] = {0, 1, 3, 5, 8, 12, 0, 0};
  for (size_t pg = 0; pg < npages; pg++)
    for (size_t j = 0; j < sizeof in_page / sizeof in_page[0]; j++, c++) {
        if (c % stride) continue;
        size_t off = pg * page + (pg == 0 ? 100 : 0) + in_page[j];
        if (j == 6) off = pg * page + page / 2;
        if (j == 7) off = pg * page + page - 1;
        int pi = (int)(pg + j) % 4;
        memcpy(buf, orig, n);
        buf[off] = pat[pi].set >= 0 ? (unsigned char)pat[pi].set
                                    : (unsigned char)(buf[off] ^ pat[pi].xor_);
        snprintf(current, sizeof current, "page %zu byte %zu (offset %zu) %s", pg + 1,
                 off - pg * page, off, pat[pi].name);
        run_case(buf, n, (int)(c & 1), c % 16 == 0, c);
      }
  /* Truncation: nothing, inside the header, around every page boundary. */
  size_t cuts[1024], ncuts = 0;
  static const size_t early[] = {0, 1, 15, 16, 17, 50, 99, 100, 101, 512};
  for (size_t i = 0; i < sizeof early / sizeof early[0]; i++) cuts[ncuts++] = early[i];
  /* Every page boundary; one byte either side of every 4th. */
  for (size_t pg = 1; pg <= npages && ncuts + 3 < 1024; pg++) {
    cuts[ncuts++] = pg * page;
    if (pg % 4 == 0) {
      cuts[ncuts++] = pg * page - 1;
      cuts[ncuts++] = pg * page + 1;
    }
  }
  for (size_t i = 0; i < ncuts; i++, c++) {
    if (c % stride || cuts[i] >= n) continue;
    /* The early cuts from both sides; the rest from each in turn. */
    for (int f = i < sizeof early / sizeof early[0] ? 0 : (int)(i & 1); f < 2; f++) {
      snprintf(current, sizeof current, "truncated to %zu of %zu bytes (%s)", cuts[i],
               n, f ? "file" : "memory");
      run_case(orig, cuts[i], f, 0, c);
      if (i >= sizeof early / sizeof early[0]) break;
    }
  }
  /* Bursts: 1-16 random bytes at random places (a fixed seed). */
  uint32_t rng = 0x2545f491u;
  for (int i = 0; i < 100; i++, c++) {
    memcpy(buf, orig, n);
    int len = 0;
    for (int b = 0; b < 1 + i % 16; b++) {
      rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
      buf[rng % n] = (unsigned char)(rng >> 24);
      len++;
    }
    if (c % stride) continue;
    snprintf(current, sizeof current, "burst %d (%d random bytes)", i, len);
    run_case(buf, n, i & 1, c % 16 == 0, c);
  }
  unlink(scratch);

  printf("corrupt: %ld cases on '%s' (%zu bytes, %zu pages of %zu): %ld opened, %ld "
         "refused at open, %ld whose index was refused when read\n",
         count.cases, argv[1], n, npages, page, count.opened, count.refused_open,
         count.index_refused);
  printf("  reads: %ld original bytes, %ld refused; loads: %ld the undamaged "
         "archive's image, %ld refused\n",
         count.reads_ok, count.reads_refused, count.loads_ok, count.loads_refused);
  printf("  rows renamed by the damage yet verified (only a signature catches "
         "these): %ld\n  loads of a less fitting image, its own bytes, the best one hidden "
         "by a damaged row name (selections from the whole index - after gk_archive_count, "
         "or under a signature - do not use it): %ld\n  statuses:", count.renamed, count.missed);
  for (int s = 1; s < 32; s++)
    if (count.by_status[s]) printf(" %s %ld,", gk_strerror(-s), count.by_status[s]);
  printf("\n");
  for (size_t i = 0; i < nrefs; i++) free(refs[i].bytes);
  free(refs);
  free(picks);
  free(buf);
  free(orig);
  if (failures) {
    printf("FAIL: %d case(s) ended in neither a clear status nor the original bytes\n",
           failures);
    return 1;
  }
  /* The damage must have reached both kinds of outcome. */
  if (count.opened == 0 || count.refused_open == 0 || count.reads_refused == 0) {
    printf("FAIL: the damage did not exercise both refusals and successes\n");
    return 1;
  }
  printf("PASS: every case ended in a clear status or the original bytes\n");
  return 0;
}
