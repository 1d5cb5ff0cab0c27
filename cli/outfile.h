/* outfile.h - output files written atomically, so that a reader (a build
 * step, a web server, a packer) never sees half a file: the bytes go to a
 * temporary file in the same folder, are synced, and are renamed into place. */
#ifndef GK_CLI_OUTFILE_H
#define GK_CLI_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct cli_out {
  FILE *f;   /* write through this */
  char *path; /* NULL for stdout */
  char *tmp;
} cli_out;

/* Starts writing `path` ("-": stdout, nothing atomic to do). Returns 0, or -1
 * with a sentence in err naming the file. */
int cli_out_open(cli_out *o, const char *path, char *err, size_t errsize);

/* Flushes, syncs and renames the file into place; on any failure removes the
 * temporary file and returns -1 with a sentence in err. */
int cli_out_commit(cli_out *o, char *err, size_t errsize);

/* Gives up: removes the temporary file. Safe after a failed open. */
void cli_out_abort(cli_out *o);

/*
 * Writes `size` bytes as file `name` inside the folder open as `dirfd`,
 * atomically (temporary name in that folder, fsync, renameat). `name` is a
 * single path component; nothing is followed: a symlink already at `name` is
 * replaced, not written through. Mode 0644 minus the umask. Returns 0, or -1
 * with errno set.
 */
int cli_write_at(int dirfd, const char *name, const void *data, size_t size);

#endif
