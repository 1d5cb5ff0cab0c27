/*
 * remote.h - the HTTP half of the remote cache (remote.c, and the entries'
 * encoding in remote_ac.c), used by cache.c only. Not API: gkcache.h
 * describes what a user of the cache sees.
 *
 * The server speaks bazel-remote's HTTP/1.1 REST layout, which plain
 * WebDAV servers (nginx dav_methods PUT) serve too:
 *   GET/PUT BASE/cas/<sha256>   bytes whose SHA-256 is <sha256>
 *   GET/PUT BASE/ac/<key>       an ActionResult protobuf for action <key>
 * 404 is a miss. Any other failure (no connection, a timeout, a 5xx) warns
 * once on the log and switches the remote off for the rest of the build;
 * a refused upload switches uploads off only.
 */
#ifndef GKC_REMOTE_H
#define GKC_REMOTE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gk_compiler.h" /* GK__PRINTF */
#include "gkcache.h"

typedef struct gkc__remote gkc__remote;

/* Opens a client for base URL `url` (http:// or https://) with the
 * credentials and keys of o (gkcache.h; copied). Returns NULL with a
 * sentence in err (may be NULL) for a URL or header it cannot use; nothing
 * is sent yet. */
gkc__remote *gkc__remote_open(const char *url, const gkc_remote_options *o, FILE *log,
                              gk_err *err);
void gkc__remote_close(gkc__remote *r);

/* Whether downloads / uploads are still on. */
int gkc__remote_can_get(const gkc__remote *r);
int gkc__remote_can_put(const gkc__remote *r);

/* GET BASE/<kind>/<hex> (kind "ac" or "cas"). Returns 1 with *data (malloc'd,
 * the caller frees) and *len, 0 on a miss or when the remote is off. */
int gkc__remote_get(gkc__remote *r, const char *kind, const char *hex,
                    unsigned char **data, size_t *len);

/* PUT BASE/<kind>/<hex>. Returns 0 when stored, -1 otherwise (warned). */
int gkc__remote_put(gkc__remote *r, const char *kind, const char *hex,
                    const void *data, size_t len);

/* Warns once per `what` (a short tag) that the remote sent something wrong;
 * does not switch it off. */
void gkc__remote_warn_bad(gkc__remote *r, const char *what, const char *fmt, ...)
    GK__PRINTF(3, 4);

/* One output of an action result: a name and a digest. */
typedef struct gkc__output {
  char path[64];
  char hash[65];
  uint64_t size;
} gkc__output;

/* Encodes an ActionResult (REAPI v2) whose output_files are outs[0..n),
 * into a malloc'd buffer. Returns 0 or -1 (out of memory). */
int gkc__ac_encode(const gkc__output *outs, size_t n, unsigned char **buf, size_t *len);

/* Decodes the output_files of an ActionResult, up to max of them. Returns
 * how many, or -1 when the bytes are not a well-formed message. */
int gkc__ac_decode(const unsigned char *buf, size_t len, gkc__output *outs, size_t max);

/*
 * Signed entries. The signature is an Ed25519 signature of
 *   "gk-remote-ac-v1" NUL KEY NUL gkc__ac_encode(outputs)
 * (KEY: the job key's 64 hex digits; outputs as decoded, in order), stored
 * in the ActionResult as execution_metadata (field 9) .auxiliary_metadata
 * (field 11), an Any {type_url = GKC__SIG_TYPE, value = {1: public key,
 * 2: signature}}. Only what a reader uses is signed, and binding KEY means
 * that the entry of one job copied under another job's key fails.
 */
#define GKC__SIG_TYPE "type.gllm-kernels.dev/gk.RemoteAcSignature.v1"

/* Like gkc__ac_encode, signed for key by the key pair (sk: libsodium's
 * 64-byte form). Returns 0 or -1 (out of memory). */
int gkc__ac_encode_signed(const gkc__output *outs, size_t n, const char *key,
                          const unsigned char sk[64], unsigned char **buf, size_t *len);

/* Is the entry buf signed for key by one of trusted[0..ntrusted)? 0 when it
 * is; -1 otherwise, with the reason in why ("it is not signed", ...; may be
 * NULL). */
int gkc__ac_check(const unsigned char *buf, size_t len, const char *key,
                  const unsigned char (*trusted)[32], size_t ntrusted, gk_err *why);

/*
 * The protocol, on top of the above. An action-cache entry for a job key is
 * an ActionResult with two output files: "image" (the image's digest) and
 * "deps.json" (a CAS blob: {"format": "gk-remote-deps", "version": 1,
 * "deps": [[path, sha256], ...]}, the files the compile read besides its
 * source, as the local record has them). A hit needs every dependency to
 * hash the same here, and every blob to hash to its name.
 */

/* Looks key up remotely after a local miss; on a hit the image and record
 * are added to the local cache and *out is filled (out->remote = 1).
 * Returns 1 on a hit, else 0. */
int gkc__remote_lookup(gkc_cache *c, gkc__remote *r, const char *key, const char *base,
                       gkc_result *out);

/* Uploads a freshly stored result: the image, its dependency list (a
 * record's [path, sha256, stamp] arrays; borrowed), then the action entry. */
void gkc__remote_store(gkc_cache *c, gkc__remote *r, const char *key, const gkc_result *res,
                       json_t *jdeps);

#endif
