/*
 * gkpack.h - writes fat archives (docs/archive.md). Build side only: the
 * loader never includes this.
 */
#ifndef GKPACK_H
#define GKPACK_H

#include <stddef.h>

/* One image to pack. Strings are borrowed for the duration of the call.
 * entry_json: JSON array text ("[\"qmatmul\"]"); launch_json: JSON object
 * text ("{}" or NULL for none). */
typedef struct gkp_image {
  const char *kernel, *backend, *target, *variant, *format;
  const char *entry_json, *launch_json, *toolchain;
  const void *data;
  size_t size;
} gkp_image;

/* Default zstd level for images. */
#define GKP_DEFAULT_LEVEL 19

/*
 * Writes an archive of `n` images to `path` atomically (temporary file in
 * the same folder, fsync, rename): on failure nothing is left at `path` and
 * no temporary file remains. Rows are sorted by (kernel, backend, target,
 * variant) whatever the order given, so the same images give the same
 * bytes. Two images with the same key are an error. Returns 0, or -1 with
 * a sentence in err.
 */
int gkp_write(const char *path, const gkp_image *images, size_t n, int level,
              char *err, size_t errsize);

/*
 * Packs a `gk build` output folder: reads DIR/manifest.json (docs/manifest.md),
 * reads each image, checks its size and SHA-256 against the manifest, and
 * writes the archive with gkp_write. Returns 0, or -1 with a sentence in err
 * naming the file at fault.
 */
int gkp_pack_dir(const char *dir, const char *path, int level, char *err,
                 size_t errsize);

#endif
