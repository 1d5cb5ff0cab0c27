/*
 * gkpack.h - writes fat archives (docs/archive.md). Build side only: the
 * loader never includes this. Archives are read back (merging, metadata)
 * through libgk, the format's one reader.
 *
 * Errors follow the build side's convention (common/gk_err.h): a function
 * that fails returns -1 (NULL for a handle) with one sentence in the
 * caller's gk_err, its last argument (NULL: no sentence), and leaves it
 * alone when it succeeds.
 */
#ifndef GKPACK_H
#define GKPACK_H

#include <stddef.h>

#include "gk.h"
#include "gk_err.h"

/* One image to pack. Strings are borrowed for the duration of the call.
 * entry_json: JSON array text ("[\"qmatmul\"]"); launch_json: JSON object
 * text ("{}" or NULL for none). sha256: the 32 bytes of the image's
 * SHA-256 when the caller has checked the image against it already (a
 * manifest's, a read archive's row), which the archive then records
 * without hashing the image again; NULL: gk pack hashes it. */
typedef struct gkp_image {
  const char *kernel, *backend, *target, *variant, *format;
  const char *entry_json, *launch_json, *toolchain;
  const void *data;
  size_t size;
  const unsigned char *sha256;
} gkp_image;

/* One row of the archive's `meta` table (docs/archive.md). Borrowed. */
typedef struct gkp_meta {
  const char *key, *value;
} gkp_meta;

/* Default zstd level for images. */
#define GKP_DEFAULT_LEVEL 19

/*
 * Writes an archive of `n` images to `path` atomically (temporary file in
 * the same folder, fsync, rename): on failure nothing is left at `path` and
 * no temporary file remains. Rows are sorted by (kernel, backend, target,
 * variant) whatever the order given, so the same images give the same
 * bytes. Two images with the same key are an error. Each distinct image is
 * one zstd frame at `level`, plain or coded against a sibling "base" image
 * chosen from the images alone (docs/archive.md, "Blobs"); choosing costs
 * trial compressions of every pair in a family (backend, kernel, format).
 * Returns 0, or -1 with a sentence in *err.
 */
int gkp_write(const char *path, const gkp_image *images, size_t n, int level, gk_err *err);

/*
 * gkp_write with metadata: the `meta` rows `meta[0..nmeta)` besides the ones
 * gk pack writes itself (format, generator, and toolchains: the distinct
 * toolchain identities of the images as a JSON array), which they may not
 * repeat. Rows go in key order: the same inputs give the same bytes.
 */
int gkp_write_meta(const char *path, const gkp_image *images, size_t n,
                   const gkp_meta *meta, size_t nmeta, int level, gk_err *err);

/* Checks one image against its row (header, entry points): 0, or -1 with a
 * sentence in why. The CLI passes libgk's gk_image_check; the packager
 * does not link libgk. This callback keeps the (why, why_size) buffer of
 * gk_image_check, public loader API, rather than a gk_err. */
typedef int (*gkp_check_fn)(const gkp_image *im, char *why, size_t why_size);

/*
 * Packs a `gk build` output folder: reads DIR/manifest.json (docs/manifest.md),
 * reads each image, checks its size and SHA-256 against the manifest and,
 * when check is not NULL, the image against its row, and writes the archive
 * with gkp_write_meta (the manifest's meta and skipped list as metadata).
 * Returns 0, or -1 with a sentence in *err naming the file at fault.
 */
int gkp_pack_dir(const char *dir, const char *path, int level, gkp_check_fn check, gk_err *err);

/*
 * Merges the archives inputs[0..n) (partial archives from sharded or
 * per-platform builds) into one archive at `path`, written as gkp_write
 * does. Every image is read through libgk first, which checks it (its
 * stored bytes, its SHA-256 and size, its header against its row). Rows
 * with the same key (kernel, backend, target, variant) must be identical
 * in every column; a pair that differs is a conflict, and the merge fails
 * naming the key and both archives. Metadata: the
 * recipes objects are joined (a name with two hashes is a conflict),
 * source_dirty is "true" if any input says so, else "unknown" if any does,
 * every other key must agree where present. The result equals the archive
 * one build of all the images would give. Returns 0, or -1 with a sentence
 * in *err.
 */
int gkp_merge(const char *const *inputs, size_t n, const char *path, int level, gk_err *err);

/*
 * Writes signatures into the archive at `path` (docs/archive.md,
 * "Signatures"): removes the rows of the ndrop public keys in drop (32
 * bytes each, back to back: stale signatures), then adds or replaces the row of public key pk with sig, the
 * Ed25519 signature of the archive's digest (gk_archive_digest), creating
 * the `signature` table when there is none. Nothing else of the file
 * changes, and the same archive and signatures give the same bytes. The
 * file is changed in place without a journal: give a private copy, checked
 * before and after (gk sign renames it into place). Returns 0, or -1 with
 * SQLite's words in *err.
 */
int gkp_sign(const char *path, const unsigned char pk[32], const unsigned char sig[64],
             const unsigned char *drop, size_t ndrop, gk_err *err);

/*
 * Opens the archive at `path` with libgk (gk_archive_open_ex with
 * gk_open_options.flags = flags). NULL on failure, with the sentence every
 * gk command gives in *err: libgk's message, which names the file.
 */
gk_archive *gkp_open_archive(const char *path, unsigned flags, gk_err *err);

/*
 * Reads the `meta` table of the archive at `path`, sorted by key, into
 * *out (an array of *n rows; free it with gkp_meta_free), through libgk:
 * the file must open as an archive, and its rows be what a signature's
 * digest reads (each key once, text). Returns 0, or -1 with a sentence in
 * *err (libgk's message when it refused the archive).
 */
int gkp_read_meta(const char *path, gkp_meta **out, size_t *n, gk_err *err);
void gkp_meta_free(gkp_meta *meta, size_t n);

#endif
