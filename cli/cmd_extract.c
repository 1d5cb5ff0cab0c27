/* cmd_extract.c - gk extract: the images of an archive as files, laid out as
 * `gk build` lays them out (docs/manifest.md), so an operator can feed one to
 * a vendor tool (cuobjdump, llvm-objdump) or repack a subset.
 *
 * The archive is untrusted input, and its strings become file names. Every
 * name is checked against a narrow alphabet before anything is written, and
 * folders are walked with openat(O_NOFOLLOW): nothing lands outside DIR,
 * whatever the index says and whatever links DIR already holds. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cmd.h"
#include "outfile.h"
#include "util.h"

static const char extract_usage[] =
  "usage: gk extract FILE -o DIR [--kernel K] [--variant V] [--backend B]\n"
  "                  [--target T] [--json]\n"
  "\n"
  "Writes the images of an archive (all, or those matching every filter given)\n"
  "as DIR/BACKEND/KERNEL/TARGET[.VARIANT].FORMAT, the layout of 'gk build'\n"
  "(variant bits=4,causal=1 -> bits4.causal1; target gfx90a:xnack- ->\n"
  "gfx90a-xnack-), plus DIR/manifest.json listing\n"
  "them, so that 'gk pack DIR' packs them again. Each image is decompressed and\n"
  "verified (SHA-256, ELF header) first, and each file is written atomically.\n"
  "Names from the archive that are not plain (letters, digits and _ . : + = , -,\n"
  "not starting with '.' or '-') are refused, and so are two images that would\n"
  "get the same file: then nothing is written. Links inside DIR are never\n"
  "followed.\n"
  "\n"
  "  -o, --out DIR   folder to write into (created if missing)\n"
  "  --kernel K, --variant V, --backend B, --target T   exact-match filters\n"
  "  --json          {archive, dir, images: [{kernel, backend, target, variant,\n"
  "                  format, path, size, sha256}]} on stdout\n";

typedef struct extract_args {
  const char *path, *dir, *kernel, *variant, *backend, *target;
  int json;
} extract_args;

static const cli_option extract_opts[] = {
  CLI_VALUE("--out", "-o", "DIR", extract_args, dir),
  CLI_VALUE("--kernel", NULL, "K", extract_args, kernel),
  CLI_VALUE("--variant", NULL, "V", extract_args, variant),
  CLI_VALUE("--backend", NULL, "B", extract_args, backend),
  CLI_VALUE("--target", NULL, "T", extract_args, target),
  CLI_FLAG("--json", NULL, extract_args, json),
  CLI_END};
static const cli_command extract_cmd = {
  .name = "extract", .usage = extract_usage, .opts = extract_opts, CLI_ARCHIVE(extract_args)};

/* A name that may become one path component: a narrow alphabet, nothing
 * hidden, no option lookalike, bounded length. */
static int plain_name(const char *s, const char *extra) {
  size_t n = strlen(s);
  if (n == 0 || n > 128 || s[0] == '.' || s[0] == '-' || strstr(s, ".."))
    return 0;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
          strchr(extra, c)))
      return 0;
  }
  return 1;
}

/* The file name of a row: TARGET[.VARIANT].FORMAT, the variant with '='
 * dropped and ',' as '.' (docs/manifest.md). 0 when a part is not plain. */
static int file_name(const gk_image_info *im, char *out, size_t size,
                     const char **bad) {
  char var[256];
  size_t v = 0;
  if (!plain_name(im->backend, "")) return *bad = "backend", 0;
  if (!plain_name(im->kernel, "")) return *bad = "kernel", 0;
  if (!plain_name(im->target, ":+")) return *bad = "target", 0;
  if (!plain_name(im->format, "")) return *bad = "format", 0;
  if (*im->variant && !plain_name(im->variant, "=,+")) return *bad = "variant", 0;
  for (const char *s = im->variant; *s && v + 1 < sizeof var; s++)
    if (*s != '=') var[v++] = *s == ',' ? '.' : *s;
  var[v] = '\0';
  if (*im->variant && !plain_name(var, "+")) return *bad = "variant", 0;
  int n = snprintf(out, size, "%s%s%s.%s", im->target, v ? "." : "", var, im->format);
  if (n < 0 || (size_t)n >= size) return *bad = "target", 0;
  /* Target IDs hold ':' (gfx90a:xnack-), which some file systems refuse:
   * like gk build, write '-' there; the manifest keeps the real ID. */
  for (size_t i = 0, t = strlen(im->target); i < t; i++)
    if (out[i] == ':') out[i] = '-';
  return 1;
}

/* A name from the archive, fit to print: bytes outside printable ASCII
 * as \xNN, cut short when long. */
static void quote(const char *s, char *out, size_t size) {
  size_t n = 0;
  for (; *s && n + 5 < size; s++) {
    unsigned char c = (unsigned char)*s;
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out[n++] = (char)c;
    else
      n += (size_t)snprintf(out + n, size - n, "\\x%02x", c);
  }
  out[n] = '\0';
}

/* Opens (creating it first if needed) the folder `name` inside dirfd,
 * refusing a link; *made says whether it was created. -1 with errno on
 * failure. */
static int subdir(int dirfd, const char *name, unsigned char *made) {
  if (mkdirat(dirfd, name, 0777) == 0)
    *made = 1;
  else if (errno != EEXIST)
    return -1;
  return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* mkdir -p of the user's own DIR (trusted: it may go through links).
 * *made: how many trailing components of DIR it created (0: DIR existed). */
static int open_out_dir(const char *dir, int *made) {
  char *p = strdup(dir);
  *made = 0;
  if (!p) return -1;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/' || s[-1] == '/') continue;
    *s = '\0';
    if (mkdir(p, 0777) == 0)
      (*made)++;
    else if (errno != EEXIST)
      break;
    *s = '/';
  }
  free(p);
  if (mkdir(dir, 0777) == 0)
    (*made)++;
  else if (errno != EEXIST)
    return -1;
  return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

typedef struct pick {
  size_t index;
  gk_image_info im;
  char rel[512]; /* BACKEND/KERNEL/FILE */
  char file[300];
  /* What this run created, to take back if a later image fails. */
  unsigned char new_file, made_backend, made_kernel;
} pick;

/* A failed extraction leaves DIR as it was, as far as it can: the files it
 * added and the folders it made go (a file it replaced keeps its new bytes,
 * which are a verified image of the same name). */
static void undo(int dirfd, const char *dir, pick *picks, size_t upto, int made_dirs) {
  for (size_t i = upto + 1; i-- > 0;) {
    pick *p = &picks[i];
    char d[512];
    if (p->new_file) unlinkat(dirfd, p->rel, 0);
    snprintf(d, sizeof d, "%s/%s", p->im.backend, p->im.kernel);
    if (p->made_kernel) unlinkat(dirfd, d, AT_REMOVEDIR);
    if (p->made_backend) unlinkat(dirfd, p->im.backend, AT_REMOVEDIR);
  }
  char *p = strdup(dir);
  size_t len = p ? strlen(p) : 0;
  while (len > 1 && p[len - 1] == '/') p[--len] = '\0';
  for (int i = 0; p && i < made_dirs; i++) {
    if (rmdir(p) != 0) break;
    char *slash = strrchr(p, '/');
    if (!slash) break;
    *slash = '\0';
  }
  free(p);
}

static int pick_cmp(const void *pa, const void *pb) {
  return strcmp(((const pick *)pa)->rel, ((const pick *)pb)->rel);
}

static int matches(const char *filter, const char *value) {
  return !filter || strcmp(filter, value) == 0;
}

/* Writes one verified image under dirfd; 0, or -1 with err filled. */
static int write_image(gk_archive *ar, int dirfd, pick *p, char *err,
                       size_t errsize) {
  void *bytes = NULL;
  size_t size = 0;
  int bfd = -1, kfd = -1, rc = -1;
  int st = gk_archive_read(ar, p->index, &bytes, &size);
  if (st != GK_OK) {
    snprintf(err, errsize, "image %s does not verify: %s", p->rel, gk_archive_errmsg(ar));
    return -1;
  }
  if ((bfd = subdir(dirfd, p->im.backend, &p->made_backend)) < 0 ||
      (kfd = subdir(bfd, p->im.kernel, &p->made_kernel)) < 0) {
    snprintf(err, errsize, "cannot create folder %s/%s: %s%s", p->im.backend,
             p->im.kernel, strerror(errno),
             errno == ELOOP || errno == ENOTDIR ? " (a link or a file is in the way; "
                                                  "links are not followed)"
                                                : "");
    goto write_out;
  }
  struct stat old;
  p->new_file = fstatat(kfd, p->file, &old, AT_SYMLINK_NOFOLLOW) != 0;
  if (cli_write_at(kfd, p->file, bytes, size) != 0) {
    snprintf(err, errsize, "cannot write %s: %s", p->rel, strerror(errno));
    goto write_out;
  }
  rc = 0;
write_out:
  if (kfd >= 0) close(kfd);
  if (bfd >= 0) close(bfd);
  gk_free(bytes);
  return rc;
}

/* DIR/manifest.json for the written images (docs/manifest.md), so the
 * folder is a valid 'gk pack' input. */
static int write_manifest(int dirfd, const pick *p, size_t n) {
  json_t *imgs = json_array();
  for (size_t i = 0; i < n; i++) {
    char hex[65];
    cli_hex(p[i].im.sha256, hex);
    json_t *entry = json_loads(p[i].im.entry, 0, NULL);
    json_t *launch = json_loads(p[i].im.launch, 0, NULL);
    json_array_append_new(
        imgs, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:I, s:s}",
                        "kernel", p[i].im.kernel, "backend", p[i].im.backend,
                        "target", p[i].im.target, "variant", p[i].im.variant,
                        "format", p[i].im.format, "path", p[i].rel, "entry",
                        json_is_array(entry) ? entry : json_array(), "launch",
                        json_is_object(launch) ? launch : json_object(),
                        "toolchain", p[i].im.toolchain, "size",
                        (json_int_t)p[i].im.raw_size, "sha256", hex));
    if (entry && !json_is_array(entry)) json_decref(entry);
    if (launch && !json_is_object(launch)) json_decref(launch);
  }
  json_t *root = json_pack("{s:s, s:i, s:o, s:[]}", "format", "gllm-kernels-manifest",
                           "version", 1, "images", imgs, "skipped");
  char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!text) return -1;
  size_t len = strlen(text);
  text[len] = '\n'; /* json_dumps leaves room: replace the NUL, write len+1 */
  int rc = cli_write_at(dirfd, "manifest.json", text, len + 1);
  free(text);
  return rc;
}

/* A row's name that file_name refused, quoted for a message. */
static void bad_name(const pick *p, const char *what, char *out, size_t size) {
  const char *v = !strcmp(what, "backend")  ? p->im.backend
                  : !strcmp(what, "kernel") ? p->im.kernel
                  : !strcmp(what, "target") ? p->im.target
                  : !strcmp(what, "format") ? p->im.format
                                            : p->im.variant;
  quote(v, out, size);
}

/* The rows that match the filters, with their files: every name is checked
 * before the first byte is written, so a bad row stops the whole
 * extraction, not half of it. *np of them into *picks (the caller frees
 * it); 0, or -1 having said why. */
static int pick_images(gk_archive *ar, const extract_args *a, pick **picks, size_t *np) {
  size_t n = 0;
  gk_archive_count(ar, &n);
  if (!(*picks = calloc(n ? n : 1, sizeof **picks))) {
    cli_error("extract", "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    pick *p = &(*picks)[*np];
    const char *what = NULL;
    if (gk_archive_image(ar, i, &p->im) != GK_OK) {
      cli_error("extract", "cannot read the index of '%s': %s", a->path, gk_archive_errmsg(ar));
      return -1;
    }
    if (!matches(a->kernel, p->im.kernel) || !matches(a->variant, p->im.variant) ||
        !matches(a->backend, p->im.backend) || !matches(a->target, p->im.target))
      continue;
    p->index = i;
    if (!file_name(&p->im, p->file, sizeof p->file, &what)) {
      char shown[200];
      bad_name(p, what, shown, sizeof shown);
      cli_error("extract",
                "archive '%s', row %zu: the %s '%s' is not a safe file name "
                "(letters, digits, _ . - and for targets/variants : + = , only; "
                "no leading '.' or '-', no '..'); nothing written",
                a->path, i, what, shown);
      return -1;
    }
    snprintf(p->rel, sizeof p->rel, "%s/%s/%s", p->im.backend, p->im.kernel, p->file);
    (*np)++;
  }
  if (*np == 0) {
    cli_error("extract", "no image of archive '%s' matches%s%s%s%s%s%s%s%s (see 'gk ls %s')",
              a->path, a->kernel ? " --kernel " : "", a->kernel ? a->kernel : "",
              a->variant ? " --variant " : "", a->variant ? a->variant : "",
              a->backend ? " --backend " : "", a->backend ? a->backend : "",
              a->target ? " --target " : "", a->target ? a->target : "", a->path);
    return -1;
  }
  /* Distinct rows must not share a file ("bits=4" and "bits4" both give
   * bits4): one would silently replace the other. */
  qsort(*picks, *np, sizeof **picks, pick_cmp);
  for (size_t i = 1; i < *np; i++) {
    const pick *p = &(*picks)[i - 1], *q = &(*picks)[i];
    if (!strcmp(q->rel, p->rel)) {
      cli_error("extract",
                "archive '%s': variants '%s' and '%s' of %s would both be written "
                "as %s; nothing written",
                a->path, p->im.variant, q->im.variant, q->im.kernel, q->rel);
      return -1;
    }
  }
  return 0;
}

/* Writes the picked images and the manifest into DIR, or, failing, takes
 * back what it wrote. 0, or -1 having said why. */
static int write_all(gk_archive *ar, const extract_args *a, pick *picks, size_t np) {
  int made_dirs = 0, dirfd = open_out_dir(a->dir, &made_dirs), rc = -1;
  if (dirfd < 0) {
    cli_error("extract", "cannot create or open folder '%s': %s", a->dir, strerror(errno));
    return -1;
  }
  for (size_t i = 0; i < np; i++) {
    char err[1024];
    if (write_image(ar, dirfd, &picks[i], err, sizeof err) != 0) {
      undo(dirfd, a->dir, picks, i, made_dirs);
      cli_error("extract", "'%s' -> '%s': %s; nothing written", a->path, a->dir, err);
      goto write_all_out;
    }
  }
  if (write_manifest(dirfd, picks, np) != 0) {
    int e = errno;
    undo(dirfd, a->dir, picks, np - 1, made_dirs);
    cli_error("extract", "cannot write '%s/manifest.json': %s; nothing written", a->dir,
              strerror(e));
    goto write_all_out;
  }
  rc = 0;
write_all_out:
  close(dirfd);
  return rc;
}

/* What was written: a line per image, or --json. */
static void print_picks(const extract_args *a, const pick *picks, size_t np) {
  json_t *list = json_array();
  for (size_t i = 0; i < np; i++) {
    const gk_image_info *im = &picks[i].im;
    char hex[65];
    cli_hex(im->sha256, hex);
    if (!a->json)
      printf("%s (%llu bytes, sha256 %.16s)\n", picks[i].rel,
             (unsigned long long)im->raw_size, hex);
    else
      json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s}",
                                            "kernel", im->kernel, "backend", im->backend,
                                            "target", im->target, "variant", im->variant,
                                            "format", im->format, "path", picks[i].rel, "size",
                                            (json_int_t)im->raw_size, "sha256", hex));
  }
  if (a->json) {
    json_t *root = json_pack("{s:s, s:s, s:o}", "archive", a->path, "dir", a->dir, "images",
                             list);
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(root);
  } else {
    json_decref(list);
    fprintf(stderr, "gk extract: wrote %zu images and manifest.json to '%s'\n", np, a->dir);
  }
}

int cmd_extract(int argc, char **argv) {
  extract_args a = {0};
  size_t np = 0;
  pick *picks = NULL;
  gk_archive *ar = NULL;
  int rc = cli_parse(&extract_cmd, argc, argv, &a);
  if (rc >= 0) return rc;
  if (!a.path || !a.dir || !*a.dir) {
    cli_error("extract", "needs an archive and -o DIR (see 'gk extract --help')");
    return EXIT_USAGE;
  }
  rc = EXIT_FAIL;
  if ((ar = cli_open_archive("extract", a.path, 0)) && pick_images(ar, &a, &picks, &np) == 0 &&
      write_all(ar, &a, picks, np) == 0) {
    /* Listed once everything is written: a failure lists nothing. */
    print_picks(&a, picks, np);
    rc = EXIT_OK;
  }
  free(picks);
  gk_archive_close(ar);
  return rc;
}
