/* cmd_verify.c - gk verify: every image decompresses, hashes and parses as
 * its index row says. Needs no device: this is what a release check runs. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "util.h"

static const char verify_usage[] =
  "usage: gk verify FILE [--key NAME.pub] [--json]\n"
  "\n"
  "Checks every image of an archive: it decompresses to its recorded size, its\n"
  "SHA-256 matches the index, and its ELF header fits the row's backend and\n"
  "target. Exits 1 if any image fails.\n"
  "\n"
  "  --key NAME.pub  also check that the archive carries a valid signature by\n"
  "                  this public key ('gk sign'); exits 1 if it does not\n"
  "  --json   a JSON object {ok, images: [{kernel, backend, target, variant,\n"
  "           ok, error?}], digest, signers: [public keys], signature?:\n"
  "           {key_id, public_key, ok, error?}} on stdout; when the archive\n"
  "           or key cannot be read, {ok: false, archive, error}\n";

typedef struct verify_args {
  const char *path, *key;
  int json;
} verify_args;

static const cli_option verify_opts[] = {
  CLI_VALUE("--key", NULL, "NAME.pub", verify_args, key),
  CLI_FLAG("--json", NULL, verify_args, json),
  CLI_END};
static const cli_command verify_cmd = {
  .name = "verify", .usage = verify_usage, .opts = verify_opts, CLI_ARCHIVE(verify_args)};

int cmd_verify(int argc, char **argv) {
  verify_args a = {0};
  size_t n = 0, bad = 0;
  int st = cli_parse(&verify_cmd, argc, argv, &a);
  if (st >= 0) return st;
  if (!a.path) {
    cli_error("verify", "needs an archive (see 'gk verify --help')");
    return EXIT_USAGE;
  }
  const char *path = a.path, *keyfile = a.key;
  int json = a.json;
  uint8_t pk[GK_PUBLIC_KEY_BYTES];
  gk_archive *ar = NULL;
  if ((keyfile && cli_read_public_key("verify", keyfile, pk) != 0) ||
      !(ar = cli_open_archive("verify", path, GK_OPEN_CHECK_IMAGES))) {
    /* A script reading --json gets an answer on every failure, as from
     * gk build --json. */
    if (json) {
      json_t *root = json_pack("{s:b, s:s, s:s}", "ok", 0, "archive", path, "error",
                               cli_last_error());
      json_dumpf(root, stdout, JSON_INDENT(2));
      putchar('\n');
      json_decref(root);
    }
    return EXIT_FAIL;
  }
  gk_archive_count(ar, &n);

  json_t *rows = json_array();
  for (size_t i = 0; i < n; i++) {
    gk_image_info im;
    void *bytes = NULL;
    size_t size = 0;
    gk_archive_image(ar, i, &im);
    int rc = gk_archive_read(ar, i, &bytes, &size);
    gk_free(bytes);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:b}", "kernel", im.kernel,
                          "backend", im.backend, "target", im.target, "variant",
                          im.variant, "ok", rc == GK_OK);
    if (rc != GK_OK) {
      bad++;
      json_object_set_new(o, "error", json_string(gk_archive_errmsg(ar)));
      if (!json)
        printf("FAIL %s %s %s %s: %s\n", im.backend, im.kernel, im.target,
               im.variant, gk_archive_errmsg(ar));
    } else if (!json) {
      printf("ok   %s %s %s %s\n", im.backend, im.kernel, im.target, im.variant);
    }
    json_array_append_new(rows, o);
  }

  /* The signature: checked against --key, else only reported. */
  char hex[2 * GK_PUBLIC_KEY_BYTES + 1];
  uint8_t digest[GK_DIGEST_BYTES];
  size_t nsigners = 0;
  uint8_t(*signers)[GK_PUBLIC_KEY_BYTES] = NULL;
  json_t *sj = json_array(), *sig = NULL;
  if (gk_archive_signers(ar, NULL, 0, &nsigners) == GK_OK && nsigners &&
      (signers = calloc(nsigners, sizeof *signers)) &&
      gk_archive_signers(ar, signers, nsigners, &nsigners) == GK_OK)
    for (size_t i = 0; i < nsigners; i++) {
      cli_hex(signers[i], hex);
      json_array_append_new(sj, json_string(hex));
    }
  free(signers);
  int sig_ok = 1;
  if (keyfile) {
    sig_ok = gk_archive_verify_signature(ar, pk) == GK_OK;
    cli_hex(pk, hex);
    sig = json_pack("{s:s%, s:s, s:b}", "key_id", hex, (size_t)16,
                    "public_key", hex, "ok", sig_ok);
    if (!sig_ok)
      json_object_set_new(sig, "error", json_string(gk_archive_errmsg(ar)));
    if (!json && sig_ok)
      printf("ok   signature by key %.16s\n", hex);
    else if (!json)
      printf("FAIL signature: %s\n", gk_archive_errmsg(ar));
  }
  if (json) {
    json_t *root = json_pack("{s:b, s:o, s:o}", "ok", bad == 0 && sig_ok,
                             "images", rows, "signers", sj);
    if (gk_archive_digest(ar, digest) == GK_OK) {
      cli_hex(digest, hex);
      json_object_set_new(root, "digest", json_string(hex));
    }
    if (sig) json_object_set_new(root, "signature", sig);
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(root);
  } else {
    json_decref(rows);
    json_decref(sig);
    fprintf(stderr, "gk verify: %zu of %zu images ok", n - bad, n);
    if (keyfile)
      fprintf(stderr, "; signature by key %.16s %s\n", hex,
              sig_ok ? "valid" : "NOT valid");
    else if (json_array_size(sj))
      fprintf(stderr, "; signed by %zu key(s), not checked (pass --key "
                      "NAME.pub)\n", json_array_size(sj));
    else
      fputc('\n', stderr);
    json_decref(sj);
  }
  gk_archive_close(ar);
  return bad || !sig_ok ? EXIT_FAIL : EXIT_OK;
}
