/* util.h - small helpers shared by the gk commands: errors, archive opening
 * with a user-facing message, build notes. Options: args.h. */
#ifndef GK_CLI_UTIL_H
#define GK_CLI_UTIL_H

#include <stddef.h>

#include "gk.h"
#include "gk_compiler.h"

/* Exit statuses of every command. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* Prints "gk CMD: message\n" on stderr. */
void cli_error(const char *cmd, const char *fmt, ...) GK__PRINTF(2, 3);
/* The message of the last cli_error ("" before any): what a --json result
 * that failed says in its "error". */
const char *cli_last_error(void);

/* True when arg is -h or --help. */
int cli_is_help(const char *arg);

/* Opens an archive (gk_open_options.flags = flags: GK_OPEN_CHECK_IMAGES
 * where images must match what a signature names) and reads its index, or
 * prints why not; NULL on failure. */
gk_archive *cli_open_archive(const char *cmd, const char *path, unsigned flags);

/*
 * What the build of an archive could not make (its meta "skipped", a JSON
 * array of {backend, target?, reason}: docs/archive.md) and the oldest
 * driver each backend's images need (meta "min_driver", {"cuda":"13.0"}).
 * Sets *skipped and *drivers to new references (an empty array / object
 * when the archive has none: one packed before they were recorded). 0, or
 * -1 after printing why as "gk CMD: ...".
 */
int cli_build_notes(const char *cmd, const char *path, void **skipped, void **drivers);

/* "rocm gfx942: skipped, REASON" or "metal: skipped, REASON" for one entry
 * of "skipped" (a json_t *), into buf. */
void cli_skip_text(const void *entry, char *buf, size_t size);

/* Lowercase hex of 32 bytes into out[65]. */
void cli_hex(const unsigned char *sha, char out[65]);

#endif
