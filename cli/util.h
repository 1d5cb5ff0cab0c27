/* util.h - small helpers shared by the gk commands: option parsing, errors,
 * archive opening with a user-facing message. */
#ifndef GK_CLI_UTIL_H
#define GK_CLI_UTIL_H

#include <stddef.h>

#include "gk.h"

/* Exit statuses of every command. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* Prints "gk CMD: message\n" on stderr. */
void cli_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Matches argv[*i] against a long option taking a value: "--name VALUE" or
 * "--name=VALUE" (short aliases such as "-o" too when `alias` is not NULL).
 * On a match, *val is the value and *i advances past it; a missing value is
 * reported and makes *bad non-zero. Returns 1 on a match.
 */
int cli_opt(int argc, char **argv, int *i, const char *name, const char *alias,
            const char **val, int *bad, const char *cmd);

/* True when arg is -h or --help. */
int cli_is_help(const char *arg);

/*
 * Parses the arguments of a command of the form "gk CMD FILE [--json]"
 * (json NULL: no --json option). Returns -1 when the command should go on
 * with *path set, or the exit status to return (--help printed, or a usage
 * error reported).
 */
int cli_archive_args(int argc, char **argv, const char *usage, const char **path,
                     int *json);

/* Opens an archive (gk_open_options.flags = flags: GK_OPEN_CHECK_IMAGES
 * where images must match what a signature names) and reads its index, or
 * prints why not; NULL on failure. */
gk_archive *cli_open_archive(const char *cmd, const char *path, unsigned flags);

/* Lowercase hex of 32 bytes into out[65]. */
void cli_hex(const unsigned char *sha, char out[65]);

#endif
