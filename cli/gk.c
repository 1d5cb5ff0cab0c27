/*
 * gk.c - the gk command: a git-style dispatch table over cmd_*.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "gk.h"
#include "util.h"

typedef struct command {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
} command;

static const command commands[] = {
  {"build",  cmd_build,  "compile the recipes' kernels into an output folder"},
  {"cache",  cmd_cache,  "look after the build cache: stats, verify [--fix], gc --max-size"},
  {"pack",   cmd_pack,   "bundle a build output folder into one fat archive"},
  {"ls",     cmd_ls,     "list the images of an archive"},
  {"matrix", cmd_matrix, "print an archive's support matrix (kernels x targets)"},
  {"verify", cmd_verify, "check every image of an archive (hash, ELF header)"},
  {"probe",  cmd_probe,  "show the device and the image each kernel would get, and why"},
  {"diff",   cmd_diff,   "compare two archives: targets, kernels, variants, images"},
  {"extract", cmd_extract, "write an archive's images out as files"},
  {"embed",  cmd_embed,  "turn an archive into a C or assembler file to link into a program"},
  {"keygen", cmd_keygen, "make an Ed25519 key pair for signing archives"},
  {"sign",   cmd_sign,   "sign an archive (its index and metadata) with a secret key"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
  fprintf(f, "usage: gk [--version] [--help] <command> [<args>]\n\ncommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n'gk help <command>' or 'gk <command> --help' shows a command's options.\n");
}

static const command *find(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0) return &commands[i];
  return NULL;
}

/* A result that did not reach stdout (a full disk, a closed pipe's EIO) is
 * a failure: a script reading it must not take a cut-short listing for the
 * whole one. stdio reports write errors only here, at the last flush. */
static int flush_stdout(const char *name, int rc) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
  fprintf(stderr, "gk %s: cannot write the result to stdout: %s\n", name,
          errno ? strerror(errno) : "write error");
  return rc == EXIT_OK ? EXIT_FAIL : rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  const char *name = argv[1];
  if (cli_is_help(name)) {
    usage(stdout);
    return EXIT_OK;
  }
  if (strcmp(name, "--version") == 0) {
    printf("gk %d.%d.%d (archive format %d)\n", GK_VERSION_MAJOR,
           GK_VERSION_MINOR, GK_VERSION_PATCH, GK_ARCHIVE_FORMAT);
    return EXIT_OK;
  }
  if (strcmp(name, "help") == 0) {
    if (argc < 3) {
      usage(stdout);
      return EXIT_OK;
    }
    const command *c = find(argv[2]);
    if (!c) {
      fprintf(stderr, "gk: '%s' is not a gk command; see 'gk --help'\n", argv[2]);
      return EXIT_USAGE;
    }
    char *help_argv[] = {argv[2], "--help", NULL};
    return c->fn(2, help_argv);
  }
  const command *c = find(name);
  if (!c) {
    fprintf(stderr, "gk: '%s' is not a gk command; see 'gk --help'\n", name);
    return EXIT_USAGE;
  }
  return flush_stdout(name, c->fn(argc - 1, argv + 1));
}
