/*
 * cmd_sign.c - gk keygen and gk sign: Ed25519 keys (libsodium) and signed
 * archives (docs/archive.md, "Signatures").
 *
 * libgk computes the digest and checks signatures, and the packager writes
 * the `signature` table (gkp_sign), the one change a signed archive has
 * over the archive gk pack wrote; this file makes keys and signatures. It
 * works on a private copy: the archive is copied beside the output, every
 * check runs on that copy, the row is added, the copy is checked again and
 * renamed into place. So what is signed is what was checked, and a reader
 * never sees half a file.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cmd.h"
#include "gkpack.h"
#include "util.h"

/* The first word of each key file: says what the file is, so a public key
 * handed to gk sign (or a secret one to gk verify) gets a clear answer. */
#define PUB_TAG "gk-ed25519-public"
#define SEC_TAG "gk-ed25519-secret"

static const char keygen_usage[] =
  "usage: gk keygen --out NAME [--json]\n"
  "\n"
  "Makes an Ed25519 key pair for signing archives: NAME.key, the secret key\n"
  "(mode 0600: keep it private), and NAME.pub, the public key to publish with\n"
  "the archives ('gk verify --key NAME.pub', gk_archive_verify_signature).\n"
  "Existing files are never overwritten.\n"
  "\n"
  "  --out NAME  path of the key files, without extension\n"
  "  --json      {public, secret, key_id, public_key} on stdout\n";

typedef struct keygen_args {
  const char *name;
  int json;
} keygen_args;

static const cli_option keygen_opts[] = {
  CLI_VALUE("--out", "-o", "NAME", keygen_args, name),
  CLI_FLAG("--json", NULL, keygen_args, json),
  CLI_END};
/* Anything but its options is refused, unknown options as well. */
static const cli_command keygen_cmd = {
  .name = "keygen", .usage = keygen_usage, .opts = keygen_opts,
  .refuse = "unexpected argument '%s' (see 'gk keygen --help')", .flags = CLI_ANY_ARG};

static const char sign_usage[] =
  "usage: gk sign ARCHIVE --key NAME.key [-o OUT] [--json]\n"
  "\n"
  "Signs an archive with an Ed25519 secret key (from 'gk keygen'). The\n"
  "signature covers the archive's index and metadata, and so every image\n"
  "through its SHA-256, but not how images are compressed. Every image is\n"
  "verified first (as 'gk verify' does); an archive that fails is not signed.\n"
  "Signatures by other keys are kept while they still match; a stale one is\n"
  "dropped and said so. The archive is rewritten atomically (or written to\n"
  "OUT); signing is deterministic: the same archive and key give the same\n"
  "bytes.\n"
  "\n"
  "  --key FILE         the secret key (NAME.key); must not be readable by\n"
  "                     others\n"
  "  -o, --output FILE  write the signed archive here instead of in place\n"
  "  --json             {archive, key_id, public_key, digest, signers,\n"
  "                     dropped} on stdout\n";

typedef struct sign_args {
  const char *path, *key, *out;
  int json;
} sign_args;

static const cli_option sign_opts[] = {
  CLI_VALUE("--key", NULL, "FILE", sign_args, key),
  CLI_VALUE("--output", "-o", "FILE", sign_args, out),
  CLI_FLAG("--json", NULL, sign_args, json),
  CLI_END};
static const cli_command sign_cmd = {
  .name = "sign", .usage = sign_usage, .opts = sign_opts, CLI_ARCHIVE(sign_args)};

/* ---- key files ---------------------------------------------------------- */

static void hex_of(const uint8_t *b, size_t n, char *out, size_t outsize) {
  sodium_bin2hex(out, outsize, b, n);
}

/* Reads a key file's one line: TAG, one space, 64 hex digits, a newline.
 * 0 with the 32 bytes in out, or -1 having said why. */
static int read_key_file(const char *cmd, const char *path, int secret,
                         uint8_t out[32]) {
  const char *tag = secret ? SEC_TAG : PUB_TAG;
  const char *other = secret ? PUB_TAG : SEC_TAG;
  char buf[256];
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    cli_error(cmd, "cannot open key file '%s': %s%s", path, strerror(errno),
              errno == ENOENT ? " (make a key pair with 'gk keygen --out NAME')"
                              : "");
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    cli_error(cmd, "key file '%s' is not a regular file", path);
    close(fd);
    return -1;
  }
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0) {
    cli_error(cmd, "cannot read key file '%s': %s", path, strerror(errno));
    return -1;
  }
  buf[n] = '\0';
  size_t taglen = strlen(tag);
  if (strncmp(buf, other, strlen(other)) == 0) {
    cli_error(cmd,
              secret ? "'%s' is a public key; gk %s needs the secret key "
                       "(NAME.key from 'gk keygen')"
                     : "'%s' is a secret key; gk %s needs the public key "
                       "(NAME.pub from 'gk keygen'), and a secret key should "
                       "never leave its owner",
              path, cmd);
    sodium_memzero(buf, sizeof buf);
    return -1;
  }
  const char *end = NULL;
  size_t got = 0;
  int ok = strncmp(buf, tag, taglen) == 0 && buf[taglen] == ' ' &&
           sodium_hex2bin(out, 32, buf + taglen + 1, 64, NULL, &got, &end) == 0 &&
           got == 32 && end == buf + taglen + 65 &&
           (strcmp(end, "\n") == 0 || *end == '\0');
  sodium_memzero(buf, sizeof buf);
  if (!ok) {
    cli_error(cmd,
              "'%s' is not a gk %s key file (expected one line '%s' and 64 "
              "hex digits, as 'gk keygen --out NAME' writes)",
              path, secret ? "secret" : "public", tag);
    return -1;
  }
  /* ssh's rule: a secret key others can read is no longer secret, and
   * signing with it would hide that. (Checked once the file is known to be
   * a key: a public key or a stray file gets that answer instead.) */
  if (secret && (st.st_mode & 077)) {
    cli_error(cmd,
              "secret key '%s' is readable by other users (mode %04o); "
              "make it private with 'chmod 600 %s', and make a new key pair "
              "if others may have copied it",
              path, (unsigned)(st.st_mode & 07777), path);
    sodium_memzero(out, 32);
    return -1;
  }
  return 0;
}

int cli_read_public_key(const char *cmd, const char *path, uint8_t out[32]) {
  return read_key_file(cmd, path, 0, out);
}

int cli_read_secret_key(const char *cmd, const char *path, uint8_t seed[32]) {
  return read_key_file(cmd, path, 1, seed);
}

/* Creates `path` holding `text`, with `mode`, never replacing anything:
 * written to a temporary file first and link()ed into place, which fails
 * if the name exists, so the file appears whole or not at all. */
static int write_new_file(const char *cmd, const char *path, const char *text,
                          mode_t mode) {
  size_t n = strlen(path);
  char *tmp = malloc(n + sizeof ".tmp-XXXXXX");
  if (!tmp) {
    cli_error(cmd, "out of memory");
    return -1;
  }
  memcpy(tmp, path, n);
  memcpy(tmp + n, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");
  int fd = mkstemp(tmp), rc = -1;
  if (fd < 0) {
    cli_error(cmd, "cannot write '%s': %s", path, strerror(errno));
    free(tmp);
    return -1;
  }
  size_t len = strlen(text);
  if (fchmod(fd, mode) != 0 || write(fd, text, len) != (ssize_t)len ||
      fsync(fd) != 0) {
    cli_error(cmd, "cannot write '%s': %s", tmp, strerror(errno));
  } else if (link(tmp, path) != 0) {
    cli_error(cmd, "cannot create '%s': %s%s", path, strerror(errno),
              errno == EEXIST ? " (gk keygen never replaces a key; choose "
                                "another NAME)"
                              : "");
  } else {
    rc = 0;
  }
  close(fd);
  unlink(tmp);
  free(tmp);
  return rc;
}

int cmd_keygen(int argc, char **argv) {
  keygen_args a = {0};
  int parsed = cli_parse(&keygen_cmd, argc, argv, &a);
  if (parsed >= 0) return parsed;
  const char *name = a.name;
  int json = a.json;
  if (!name || !*name) {
    cli_error("keygen", "needs --out NAME (see 'gk keygen --help')");
    return EXIT_USAGE;
  }
  size_t n = strlen(name);
  char *pub = malloc(n + 5), *sec = malloc(n + 5);
  int rc = EXIT_FAIL;
  uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  uint8_t seed[crypto_sign_SEEDBYTES];
  char line[160], hex[65];
  if (!pub || !sec) {
    cli_error("keygen", "out of memory");
    goto keygen_out;
  }
  snprintf(pub, n + 5, "%s.pub", name);
  snprintf(sec, n + 5, "%s.key", name);
  /* Checked up front so that neither file is made when one exists. */
  struct stat st;
  const char *const both[] = {sec, pub};
  for (int i = 0; i < 2; i++)
    if (lstat(both[i], &st) == 0) {
      cli_error("keygen",
                "'%s' exists; gk keygen never replaces a key (choose another "
                "NAME, or delete the old pair if you mean to)",
                both[i]);
      goto keygen_out;
    }
  if (sodium_init() < 0) {
    cli_error("keygen", "libsodium failed to initialise");
    goto keygen_out;
  }
  /* The secret key file holds the 32-byte seed (RFC 8032's private key);
   * libsodium's 64-byte form is derived from it when signing. */
  randombytes_buf(seed, sizeof seed);
  crypto_sign_seed_keypair(pk, sk, seed);
  hex_of(seed, sizeof seed, hex, sizeof hex);
  snprintf(line, sizeof line, "%s %s\n", SEC_TAG, hex);
  sodium_memzero(hex, sizeof hex);
  int wrote = write_new_file("keygen", sec, line, 0600);
  sodium_memzero(line, sizeof line);
  if (wrote != 0) goto keygen_out;
  hex_of(pk, sizeof pk, hex, sizeof hex);
  snprintf(line, sizeof line, "%s %s\n", PUB_TAG, hex);
  mode_t mask = umask(0);
  umask(mask);
  if (write_new_file("keygen", pub, line, 0644 & ~mask) != 0) {
    unlink(sec); /* a secret key without its public half is of no use */
    goto keygen_out;
  }
  if (json) {
    json_t *o = json_pack("{s:s, s:s, s:s%, s:s}", "public", pub, "secret", sec,
                          "key_id", hex, (size_t)16, "public_key", hex);
    json_dumpf(o, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(o);
  }
  fprintf(stderr, "gk keygen: wrote '%s' (secret, keep it private) and '%s' "
                  "(public, key %.16s)\n", sec, pub, hex);
  rc = EXIT_OK;
keygen_out:
  sodium_memzero(seed, sizeof seed);
  sodium_memzero(sk, sizeof sk);
  free(pub);
  free(sec);
  return rc;
}

/* ---- signing ------------------------------------------------------------ */

/* The mode a plain open(O_CREAT, 0666) would give, as gk pack's archives
 * have. */
static mode_t file_mode(void) {
  mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

/* Copies the file at `from` into the open file `to`. 0, or -1 with errno. */
static int copy_into(const char *from, int to) {
  int fd = open(from, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1 << 16];
  ssize_t n;
  int rc = 0;
  while ((n = read(fd, buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      rc = -1;
      break;
    }
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(to, buf + off, (size_t)(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        rc = -1;
        break;
      }
      off += w;
    }
    if (rc) break;
  }
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

/* Every image must read back whole and match its row: a signature vouches
 * for the hashes in the index, so they had better be the images' hashes. */
static int check_images(gk_archive *ar, const char *path) {
  size_t n = 0;
  gk_archive_count(ar, &n);
  for (size_t i = 0; i < n; i++) {
    void *bytes = NULL;
    size_t size = 0;
    int rc = gk_archive_read(ar, i, &bytes, &size);
    gk_free(bytes);
    if (rc != GK_OK) {
      cli_error("sign", "will not sign '%s': %s (run 'gk verify %s', and "
                        "rebuild the archive)",
                path, gk_archive_errmsg(ar), path);
      return -1;
    }
  }
  return 0;
}

/* fsync of the folder holding `path`, so the rename survives a crash. */
static void sync_dir_of(const char *path) {
  char *copy = strdup(path);
  if (!copy) return;
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(copy);
}

/* One signing: the key, and what gk sign learns of the archive's copy. */
typedef struct signing {
  uint8_t pk[32], sk[64], digest[32];
  char id[17];                    /* the key's first 8 bytes in hex */
  uint8_t (*signers)[32];         /* the keys the archive carries signatures of */
  uint8_t (*drop)[32];            /* those whose signature no longer matches */
  size_t nsigners, ndrop;
  int already;                    /* it carries a valid signature by this key */
  char *tmp;                      /* the private copy, beside the output */
  int fd;
} signing;

static int load_key(const char *keyfile, signing *s) {
  uint8_t seed[32];
  if (sodium_init() < 0) {
    cli_error("sign", "libsodium failed to initialise");
    return -1;
  }
  if (read_key_file("sign", keyfile, 1, seed) != 0) return -1;
  crypto_sign_seed_keypair(s->pk, s->sk, seed);
  sodium_memzero(seed, sizeof seed);
  hex_of(s->pk, 8, s->id, sizeof s->id);
  return 0;
}

/* The checks whose messages a user reads run on the archive itself, so
 * they name it: every image, then the digest (in *digest). */
static int check_archive(const char *path, uint8_t digest[32]) {
  gk_archive *ar = cli_open_archive("sign", path, GK_OPEN_CHECK_IMAGES);
  int rc = ar && check_images(ar, path) == 0 ? 0 : -1;
  if (rc == 0 && gk_archive_digest(ar, digest) != GK_OK) {
    cli_error("sign", "cannot sign '%s': %s", path, gk_archive_errmsg(ar));
    rc = -1;
  }
  gk_archive_close(ar);
  return rc;
}

/* The private copy of the archive everything below checks and changes. */
static int copy_beside(const sign_args *a, signing *s) {
  size_t n = strlen(a->out);
  if (!(s->tmp = malloc(n + sizeof ".tmp-XXXXXX"))) {
    cli_error("sign", "out of memory");
    return -1;
  }
  memcpy(s->tmp, a->out, n);
  memcpy(s->tmp + n, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");
  if ((s->fd = mkstemp(s->tmp)) < 0) {
    cli_error("sign", "cannot write '%s' (temporary file beside it): %s", a->out,
              strerror(errno));
    free(s->tmp);
    s->tmp = NULL;
    return -1;
  }
  if (fchmod(s->fd, file_mode()) != 0 || copy_into(a->path, s->fd) != 0) {
    cli_error("sign", "cannot copy '%s' to '%s': %s", a->path, s->tmp, strerror(errno));
    return -1;
  }
  return 0;
}

/* The copy's digest, which must be the checked archive's (digest0), or the
 * archive changed while it was copied; its signers, and which of them no
 * longer match. */
static int read_signers(const char *path, const uint8_t digest0[32], signing *s) {
  gk_archive *ar = NULL;
  int rc = -1;
  if (gk_archive_open(s->tmp, &ar) != GK_OK || gk_archive_digest(ar, s->digest) != GK_OK ||
      memcmp(s->digest, digest0, 32) != 0 ||
      gk_archive_signers(ar, NULL, 0, &s->nsigners) != GK_OK) {
    const char *why = ar ? gk_archive_errmsg(ar) : gk_last_error();
    cli_error("sign", "'%s' changed while it was being signed%s%s%s; try again", path,
              *why ? " (" : "", why, *why ? ")" : "");
    goto signers_out;
  }
  s->signers = calloc(s->nsigners + 1, sizeof *s->signers);
  s->drop = calloc(s->nsigners + 1, sizeof *s->drop);
  if (!s->signers || !s->drop ||
      gk_archive_signers(ar, s->signers, s->nsigners, &s->nsigners) != GK_OK) {
    cli_error("sign", "cannot read the signatures of '%s'", path);
    goto signers_out;
  }
  for (size_t i = 0; i < s->nsigners; i++) {
    int valid = gk_archive_verify_signature(ar, s->signers[i]) == GK_OK;
    if (memcmp(s->signers[i], s->pk, 32) == 0) s->already = valid;
    if (!valid) memcpy(s->drop[s->ndrop++], s->signers[i], 32);
  }
  rc = 0;
signers_out:
  gk_archive_close(ar);
  return rc;
}

/* Signs the copy (dropping the stale signatures), checks it and renames it
 * into place. */
static int publish(const sign_args *a, signing *s) {
  uint8_t sig[64];
  gk_err err;
  gk_archive *ar = NULL;
  crypto_sign_detached(sig, NULL, s->digest, sizeof s->digest, s->sk);
  if ((!s->already || s->ndrop) &&
      gkp_sign(s->tmp, s->pk, sig, *s->drop, s->ndrop, &err) != 0) {
    /* SQLite's words, cut at 511 bytes as they always were. */
    cli_error("sign", "cannot add the signature to '%s': %.511s (is its "
                      "'signature' table malformed? 'gk pack' the build "
                      "again and sign that)",
              a->path, err.msg);
    return -1;
  }
  /* What is published must verify: checked on the bytes about to be
   * renamed into place, by the same code every reader runs. */
  if (fsync(s->fd) != 0 || gk_archive_open(s->tmp, &ar) != GK_OK ||
      gk_archive_verify_signature(ar, s->pk) != GK_OK) {
    cli_error("sign", "the signed copy of '%s' does not verify: %s", a->path,
              ar ? gk_archive_errmsg(ar) : gk_last_error());
    gk_archive_close(ar);
    return -1;
  }
  gk_archive_close(ar);
  if (rename(s->tmp, a->out) != 0) {
    cli_error("sign", "cannot rename '%s' to '%s': %s", s->tmp, a->out, strerror(errno));
    return -1;
  }
  free(s->tmp);
  s->tmp = NULL;
  sync_dir_of(a->out);
  for (size_t i = 0; i < s->ndrop; i++) {
    char did[17];
    hex_of(s->drop[i], 8, did, sizeof did);
    fprintf(stderr,
            "gk sign: dropped the signature by key %s: it no longer matches "
            "the archive (its owner must sign it again)\n",
            did);
  }
  fprintf(stderr, "gk sign: signed '%s' with key %s\n", a->out, s->id);
  return 0;
}

static void print_json(const sign_args *a, const signing *s) {
  char hex[65], dhex[65];
  json_t *sg = json_array(), *dr = json_array();
  for (size_t i = 0; i < s->nsigners; i++) {
    int dropped = 0;
    for (size_t j = 0; j < s->ndrop; j++) dropped |= memcmp(s->drop[j], s->signers[i], 32) == 0;
    hex_of(s->signers[i], 32, hex, sizeof hex);
    json_array_append_new(dropped ? dr : sg, json_string(hex));
  }
  hex_of(s->pk, 32, hex, sizeof hex);
  if (!s->already) json_array_append_new(sg, json_string(hex));
  hex_of(s->digest, 32, dhex, sizeof dhex);
  json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o}", "archive", a->out, "key_id", s->id,
                        "public_key", hex, "digest", dhex, "signers", sg, "dropped", dr);
  json_dumpf(o, stdout, JSON_INDENT(2));
  putchar('\n');
  json_decref(o);
}

int cmd_sign(int argc, char **argv) {
  sign_args a = {0};
  signing s = {.fd = -1};
  uint8_t digest0[32];
  int rc = cli_parse(&sign_cmd, argc, argv, &a);
  if (rc >= 0) return rc;
  if (!a.path || !a.key) {
    cli_error("sign", "needs an archive and --key NAME.key (see 'gk sign --help')");
    return EXIT_USAGE;
  }
  if (!a.out) a.out = a.path;
  rc = EXIT_FAIL;
  if (load_key(a.key, &s) != 0 || check_archive(a.path, digest0) != 0 ||
      copy_beside(&a, &s) != 0 || read_signers(a.path, digest0, &s) != 0)
    goto sign_out;
  if (s.already && s.ndrop == 0 && strcmp(a.out, a.path) == 0)
    fprintf(stderr, "gk sign: '%s' is already signed by key %s; nothing to do\n", a.path,
            s.id);
  else if (publish(&a, &s) != 0)
    goto sign_out;
  if (a.json) print_json(&a, &s);
  rc = EXIT_OK;
sign_out:
  sodium_memzero(s.sk, sizeof s.sk);
  if (s.fd >= 0) close(s.fd);
  if (s.tmp) unlink(s.tmp);
  free(s.tmp);
  free(s.signers);
  free(s.drop);
  return rc;
}
