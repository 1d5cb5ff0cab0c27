/* cmd.h - the gk commands; one file per command (cmd_*.c), dispatched by gk.c. */
#ifndef GK_CMD_H
#define GK_CMD_H

#include <stdint.h>

/* Each returns the process exit status: 0 success, 1 failure, 2 usage error.
 * argv[0] is the command name ("build"). */
int cmd_build(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_probe(int argc, char **argv);
/* gk probe FILE --launch ... (probe_launch.c), called by cmd_probe. */
int cmd_probe_launch(int argc, char **argv);
int cmd_matrix(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_extract(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_sign(int argc, char **argv);

/* Reads a public key file (NAME.pub from gk keygen) into out; 0, or -1
 * after printing why as "gk CMD: ..." (cmd_sign.c). */
int cli_read_public_key(const char *cmd, const char *path, uint8_t out[32]);
/* Reads a secret key file (NAME.key: the 32-byte Ed25519 seed), refusing
 * one that others can read; 0, or -1 after printing why. The caller wipes
 * seed (sodium_memzero). */
int cli_read_secret_key(const char *cmd, const char *path, uint8_t seed[32]);

#endif
