/*
 * cmd_build.c - gk build: compiles the recipes' kernels into an output
 * folder (docs/manifest.md). The work is the recipe engine's (gkrecipes.h);
 * this file reads the command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cmd.h"
#include "gkcache.h"
#include "gkrecipes.h"
#include "util.h"

static const char *const CMD = "build";

static const char build_usage[] =
    "usage: gk build --recipes DIR --out DIR [--backend NAME]...\n"
    "                [--targets BACKEND=T1,T2]... [--cache DIR] [-j N] [--strict]\n"
    "                [--json] [--shard I/N] [--remote-cache URL] [--container]\n"
    "\n"
    "Compiles every kernel of the *.lua recipes directly in DIR, for every\n"
    "backend whose toolchain is present, into the output folder: images at\n"
    "OUT/BACKEND/KERNEL/TARGET[.VARIANT].EXT and OUT/manifest.json, written last.\n"
    "Jobs already in the cache are not compiled again. A failed build leaves\n"
    "the output folder as it was.\n"
    "\n"
    "options:\n"
    "  --recipes DIR    folder of recipes (*.lua); DIR/toolchains/NAME.lua adds or\n"
    "                   replaces the toolchain module NAME\n"
    "  -o, --out DIR    output folder, created if missing (--output too)\n"
    "  --kernel NAME    build only this kernel (repeatable); the manifest then\n"
    "                   lists only its images\n"
    "  --backend NAME   build only this backend (repeatable); fails if its\n"
    "                   toolchain is missing\n"
    "  --targets BACKEND=T1,T2\n"
    "                   build these targets of BACKEND instead of the lists in\n"
    "                   the recipes (repeatable, one per backend), e.g.\n"
    "                   --targets cuda=sm_80,sm_90\n"
    "  --cache DIR      compile cache (default: $GK_CACHE_DIR, else\n"
    "                   $HOME/.gsc/gllm/kernels)\n"
    "  -j, --jobs N     compile N jobs at once (default: the number of CPUs)\n"
    "  --strict         fail when a toolchain cannot produce a target the recipes\n"
    "                   ask for (default: skip that target, saying why)\n"
    "  --json           print a summary as JSON on stdout\n"
    "  -h, --help       show this help\n"
    "\n"
    "release pipeline (several runners, one archive):\n"
    "  --shard I/N      build only slice I of N of the jobs; slices are fixed by a\n"
    "                   hash of kernel, backend, target and variant, so every\n"
    "                   runner agrees and 'gk pack --merge' of all N equals one\n"
    "                   build of everything\n"
    "  --remote-cache URL\n"
    "                   also use a shared HTTP cache (bazel-remote layout: /ac/,\n"
    "                   /cas/; default: $GK_REMOTE_CACHE). A slow or dead one is\n"
    "                   skipped with one warning, never failing the build\n"
    "  --remote-cache-readonly\n"
    "                   download from the remote cache, never upload (also\n"
    "                   $GK_REMOTE_CACHE_READONLY=1)\n"
    "  --remote-cache-header 'NAME: VALUE'\n"
    "                   send this header with every request, e.g. 'Authorization:\n"
    "                   Bearer TOKEN' (repeatable; also one per line in\n"
    "                   $GK_REMOTE_CACHE_HEADERS, which other users cannot see in\n"
    "                   ps). Never printed\n"
    "  --remote-cache-netrc FILE\n"
    "                   the login for the cache's host (default: $GK_REMOTE_CACHE_NETRC,\n"
    "                   else ~/.netrc when it exists)\n"
    "  --remote-cache-ca FILE\n"
    "                   PEM certificates of the CAs that verify an https cache\n"
    "                   (default: $GK_REMOTE_CACHE_CA, else the system's); TLS is\n"
    "                   always verified\n"
    "  --remote-cache-client-cert FILE, --remote-cache-client-key FILE\n"
    "                   PEM client certificate and key for a cache that asks for\n"
    "                   one (mutual TLS; $GK_REMOTE_CACHE_CLIENT_CERT, _KEY)\n"
    "  --remote-cache-sign-key NAME.key\n"
    "                   sign every action entry uploaded (gk keygen; default:\n"
    "                   $GK_REMOTE_CACHE_SIGN_KEY)\n"
    "  --remote-cache-trust NAME.pub\n"
    "                   accept only entries signed by this key (repeatable; also\n"
    "                   $GK_REMOTE_CACHE_TRUST, paths separated by ':'); others are\n"
    "                   compiled here, with one warning\n"
    "  --container      run every compile in the container image its toolchain\n"
    "                   module names (docker, else podman; $GK_CONTAINER_ENGINE):\n"
    "                   sources read-only, no network, only the output writable\n"
    "  --container-image MODULE=IMAGE\n"
    "                   use IMAGE for toolchain module MODULE (repeatable)\n"
    "  --container-mount PATH\n"
    "                   also mount host PATH read-only, at the same place\n"
    "\n"
    "Progress and errors go to stderr. Exit status: 0 built, 1 failed, 2 usage.\n";

/* What gk build checks each image with: libgk's own reader, so an image
 * that would not load never reaches a manifest (gkr_options.check_image). */
static int check_image(const void *bytes, size_t size, const gkr_image_row *r, char *why,
                       size_t why_size) {
  /* A backend libgk does not load (a toolchain module's own) has no rule
   * to check its images by. */
  if (gk_backend_from_name(r->backend) == GK_BACKEND_NONE) return 0;
  gk_image_info row = {0};
  row.backend = r->backend;
  row.target = r->target;
  row.format = r->format;
  row.entry = r->entry_json;
  row.launch = r->launch_json;
  row.toolchain = r->toolchain;
  row.kernel = row.variant = "";
  return gk_image_check(bytes, size, &row, why, why_size) == GK_OK ? 0 : -1;
}

/* -j N, -jN, --jobs N, --jobs=N */
static int parse_jobs(const char *v, int *jobs) {
  char *end;
  long n = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || n < 1 || n > 1024) return -1;
  *jobs = (int)n;
  return 0;
}

/* What the remote cache options and their environment variables give. */
typedef struct remote_args {
  cli_list headers;  /* argv's and $GK_REMOTE_CACHE_HEADERS' lines */
  char *env_headers; /* a copy of the variable, cut into lines */
  const char *sign_key;
  cli_list trust; /* argv's, then $GK_REMOTE_CACHE_TRUST's */
  char *env_trust;
  unsigned char seed[32];
  unsigned char (*trusted)[32];
} remote_args;

static const char *env_or(const char *v, const char *name) {
  const char *e = v ? NULL : getenv(name);
  return v ? v : e && *e ? e : NULL;
}

/* Splits a copy of $name at sep into list (which has room). */
static int split_env(const char *name, char sep, char **copy, const char **list, size_t *n) {
  const char *e = getenv(name);
  if (!e || !*e) return 0;
  if (!(*copy = strdup(e))) return -1;
  for (char *p = *copy, *q; p; p = q) {
    if ((q = strchr(p, sep))) *q++ = '\0';
    if (sep == '\n' && *p && p[strlen(p) - 1] == '\r') p[strlen(p) - 1] = '\0';
    if (*p) list[(*n)++] = p;
  }
  return 0;
}

static size_t count_of(const char *name, char sep) {
  const char *e = getenv(name);
  size_t n = 1;
  for (; e && *e; e++) n += *e == sep;
  return n;
}

/* A file the remote cache reads later (CA, certificate, netrc): said now
 * if it cannot be read, not on the first request. */
static int check_file(const char *opt, const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0) {
    cli_error(CMD, "cannot read %s file '%s': %s", opt, path, strerror(errno));
    return -1;
  }
  int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  close(fd);
  if (!ok) cli_error(CMD, "%s file '%s' is not a regular file", opt, path);
  return ok ? 0 : -1;
}

/* Fills o's credentials and keys from the options and the environment,
 * checking each. Returns EXIT_OK, or the status to exit with (said why). */
static int remote_setup(gkr_options *o, remote_args *ra) {
  gk_err err;
  if (split_env("GK_REMOTE_CACHE_HEADERS", '\n', &ra->env_headers, ra->headers.v,
                &ra->headers.n) ||
      split_env("GK_REMOTE_CACHE_TRUST", ':', &ra->env_trust, ra->trust.v, &ra->trust.n)) {
    cli_error(CMD, "out of memory");
    return EXIT_FAIL;
  }
  for (size_t i = 0; i < ra->headers.n; i++)
    if (gkc_check_header(ra->headers.v[i], &err) != 0) {
      cli_error(CMD, "%s", err.msg);
      return EXIT_USAGE;
    }
  o->remote_netrc = env_or(o->remote_netrc, "GK_REMOTE_CACHE_NETRC");
  o->remote_ca = env_or(o->remote_ca, "GK_REMOTE_CACHE_CA");
  o->remote_client_cert = env_or(o->remote_client_cert, "GK_REMOTE_CACHE_CLIENT_CERT");
  o->remote_client_key = env_or(o->remote_client_key, "GK_REMOTE_CACHE_CLIENT_KEY");
  ra->sign_key = env_or(ra->sign_key, "GK_REMOTE_CACHE_SIGN_KEY");
  /* Without a remote these are of no use; not an error, since a CI job's
   * environment may set them for every build. */
  if (!o->remote_cache || !*o->remote_cache) return EXIT_OK;
  /* Said before the build makes its cache folder, the URL shown without
   * its password. */
  if (strncmp(o->remote_cache, "http://", 7) != 0 && strncmp(o->remote_cache, "https://", 8) != 0) {
    char *shown = gkc_redact_url(o->remote_cache);
    cli_error(CMD, "remote cache '%s' is not an http:// or https:// URL; give the base URL of "
                   "a bazel-remote style cache (GET/PUT /ac/ and /cas/)", shown ? shown : "?");
    free(shown);
    return EXIT_USAGE;
  }
  const struct { const char *opt, *path; } files[] = {
      {"--remote-cache-netrc", o->remote_netrc},
      {"--remote-cache-ca", o->remote_ca},
      {"--remote-cache-client-cert", o->remote_client_cert},
      {"--remote-cache-client-key", o->remote_client_key}};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++)
    if (files[i].path && check_file(files[i].opt, files[i].path) != 0) return EXIT_FAIL;
  if (o->remote_client_key && !o->remote_client_cert) {
    cli_error(CMD, "--remote-cache-client-key needs --remote-cache-client-cert, the "
                   "certificate that goes with the key");
    return EXIT_USAGE;
  }
  if (sodium_init() < 0) {
    cli_error(CMD, "libsodium failed to initialise");
    return EXIT_FAIL;
  }
  if (ra->sign_key) {
    if (cli_read_secret_key(CMD, ra->sign_key, ra->seed) != 0) return EXIT_FAIL;
    o->remote_sign_seed = ra->seed;
  }
  if (ra->trust.n) {
    if (!(ra->trusted = calloc(ra->trust.n, sizeof *ra->trusted))) {
      cli_error(CMD, "out of memory");
      return EXIT_FAIL;
    }
    for (size_t i = 0; i < ra->trust.n; i++)
      if (cli_read_public_key(CMD, ra->trust.v[i], ra->trusted[i]) != 0) return EXIT_FAIL;
    o->remote_trusted = (const unsigned char(*)[32])ra->trusted;
    o->nremote_trusted = ra->trust.n;
  }
  o->remote_headers = ra->headers.v;
  o->nremote_headers = ra->headers.n;
  return EXIT_OK;
}

/* What the command line and the environment give. */
typedef struct build_args {
  gkr_options o;
  remote_args ra;
  cli_list backends, kernels, targets, images, mounts;
  int json;
} build_args;

static int take_jobs(void *field, const cli_arg *a) {
  if (parse_jobs(a->value, field) == 0) return 0;
  cli_error(a->cmd, "option '%s' needs a number of jobs from 1 to 1024, got '%s'", a->opt,
            a->value);
  return -1;
}

static const cli_option build_opts[] = {
  CLI_VALUE("--recipes", NULL, "DIR", build_args, o.recipes_dir),
  CLI_VALUE("--out", NULL, "DIR", build_args, o.out_dir),
  CLI_TAKE("--kernel", NULL, "NAME", build_args, kernels, cli_add),
  CLI_TAKE("--backend", NULL, "NAME", build_args, backends, cli_add),
  CLI_TAKE("--targets", NULL, "BACKEND=T1,T2", build_args, targets, cli_add),
  CLI_VALUE("--cache", NULL, "DIR", build_args, o.cache_dir),
  {"--jobs", "-j", "N", offsetof(build_args, o.jobs), take_jobs, CLI_GLUED}, /* -j8 too */
  CLI_FLAG("--strict", NULL, build_args, o.strict),
  CLI_FLAG("--json", NULL, build_args, json),
  CLI_VALUE("--shard", NULL, "I/N", build_args, o.shard),
  CLI_VALUE("--remote-cache", NULL, "URL", build_args, o.remote_cache),
  CLI_FLAG("--remote-cache-readonly", NULL, build_args, o.remote_readonly),
  CLI_TAKE("--remote-cache-header", NULL, "'NAME: VALUE'", build_args, ra.headers, cli_add),
  CLI_VALUE("--remote-cache-netrc", NULL, "FILE", build_args, o.remote_netrc),
  CLI_VALUE("--remote-cache-ca", NULL, "FILE", build_args, o.remote_ca),
  CLI_VALUE("--remote-cache-client-cert", NULL, "FILE", build_args, o.remote_client_cert),
  CLI_VALUE("--remote-cache-client-key", NULL, "FILE", build_args, o.remote_client_key),
  CLI_VALUE("--remote-cache-sign-key", NULL, "NAME.key", build_args, ra.sign_key),
  CLI_TAKE("--remote-cache-trust", NULL, "NAME.pub", build_args, ra.trust, cli_add),
  CLI_FLAG("--container", NULL, build_args, o.container),
  CLI_TAKE("--container-image", NULL, "MODULE=IMAGE", build_args, images, cli_add),
  CLI_TAKE("--container-mount", NULL, "PATH", build_args, mounts, cli_add),
  CLI_END};
static const cli_command build_cmd = {
  .name = "build", .usage = build_usage, .opts = build_opts,
  .refuse = "unexpected argument '%s'; the recipes folder is given with --recipes "
            "(see 'gk build --help')"};

int cmd_build(int argc, char **argv) {
  build_args a = {0};
  gkr_options o;
  remote_args *ra = &a.ra;
  cli_list *lists[] = {&a.backends, &a.kernels, &a.targets, &a.images, &a.mounts};
  int status = EXIT_USAGE, oom = 0;
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
    oom |= !(lists[i]->v = calloc((size_t)argc, sizeof(char *)));
  ra->headers.v = calloc((size_t)argc + count_of("GK_REMOTE_CACHE_HEADERS", '\n'), sizeof(char *));
  ra->trust.v = calloc((size_t)argc + count_of("GK_REMOTE_CACHE_TRUST", ':'), sizeof(char *));
  if (oom || !ra->headers.v || !ra->trust.v) {
    cli_error(CMD, "out of memory");
    status = EXIT_FAIL;
    goto out;
  }
  if ((status = cli_parse(&build_cmd, argc, argv, &a)) >= 0) goto out;
  status = EXIT_USAGE;
  o = a.o;
  if (!o.recipes_dir || !*o.recipes_dir) {
    cli_error(CMD, "missing --recipes DIR, the folder of *.lua recipes (see 'gk build --help')");
    goto out;
  }
  if (!o.out_dir || !*o.out_dir) {
    cli_error(CMD, "missing --out DIR, the output folder (see 'gk build --help')");
    goto out;
  }
  if (o.cache_dir && !*o.cache_dir) {
    cli_error(CMD, "option '--cache' needs a folder, got ''");
    goto out;
  }
  /* $GK_REMOTE_CACHE is read here rather than by the engine, so that the
   * URL (which may hold a password) is never recorded as an environment
   * value by the no-op build's trace. */
  if (!o.remote_cache) o.remote_cache = env_or(NULL, "GK_REMOTE_CACHE");
  const char *ro = getenv("GK_REMOTE_CACHE_READONLY");
  if (ro && *ro && strcmp(ro, "0") != 0) o.remote_readonly = 1;
  if ((status = remote_setup(&o, ra)) != EXIT_OK) goto out;
  o.backends = a.backends.v;
  o.nbackends = a.backends.n;
  o.kernels = a.kernels.v;
  o.nkernels = a.kernels.n;
  o.targets = a.targets.v;
  o.ntargets = a.targets.n;
  o.container_images = a.images.v;
  o.ncontainer_images = a.images.n;
  o.container_mounts = a.mounts.v;
  o.ncontainer_mounts = a.mounts.n;
  o.check_image = check_image;
  o.log = stderr;

  char *summary = NULL;
  status = gkr_build(&o, a.json ? &summary : NULL);
  if (a.json && summary) printf("%s\n", summary);
  free(summary);
out:
  sodium_memzero(ra->seed, sizeof ra->seed);
  free(ra->headers.v);
  free(ra->trust.v);
  free(ra->trusted);
  free(ra->env_headers);
  free(ra->env_trust);
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) free(lists[i]->v);
  return status;
}
