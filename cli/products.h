/* products.h - which cards a GPU target is: the products behind each CUDA
 * compute capability and AMD processor the recipes build for, from the
 * vendors' own lists (the table and its sources are in products.c), and the
 * way back from a product's name to its target. For operators who read
 * "gfx1100" or "sm_86"; libgk knows nothing of product names. */
#ifndef GK_CLI_PRODUCTS_H
#define GK_CLI_PRODUCTS_H

#include <stddef.h>

#include "gk.h"

/* The lists the names come from and when they were read, for output. */
extern const char cli_products_source[];

/* One row of the table: a target and the products it names. */
typedef struct cli_target {
  const char *backend;         /* "cuda" or "rocm" */
  const char *target;          /* "sm_89", "gfx1100", "gfx11-generic" */
  const char *const *products; /* NULL-terminated; NULL for a generic target */
  const char *const *covers;   /* a generic target's processors, NULL-terminated;
                                  NULL for the others */
} cli_target;

/*
 * The row of a target as images and devices name it: cuda "sm_90", "sm_90a",
 * "sm_100f" and "compute_90" are the row of their compute capability (sm_90);
 * rocm "gfx90a:sramecc+:xnack-" the row of its processor (gfx90a). NULL when
 * the table names no product for it (cpu, metal, vulkan, sm_88, gfx940...).
 */
const cli_target *cli_target_find(const char *backend, const char *target);

/* The products of a row (a generic target: those of every processor it
 * covers, in their order) into out, at most max; returns how many there are
 * in all. t NULL has none. The strings are static. */
size_t cli_target_products(const cli_target *t, const char **out, size_t max);

/* The products of a row joined by ", " into buf (truncated to size; "" for
 * none). */
void cli_target_products_text(const cli_target *t, char *buf, size_t size);

/* A product and its row. */
typedef struct cli_product {
  const char *name; /* as the vendor's list writes it: "GeForce RTX 4090" */
  const cli_target *target;
} cli_product;

enum { CLI_PRODUCT_NONE, CLI_PRODUCT_FOUND, CLI_PRODUCT_AMBIGUOUS };

/*
 * The product a name means, in any case and spacing, with or without the
 * vendor ("RTX 4090", "rtx4090", "NVIDIA GeForce RTX 4090", "MI300X", "Radeon
 * RX 7900 XTX", a driver's "NVIDIA H100 80GB HBM3"). Returns
 *   CLI_PRODUCT_FOUND      out[0] the product (the best match; several that
 *                          share one target, e.g. "W7900", are one answer)
 *   CLI_PRODUCT_AMBIGUOUS  out[] a product of each target the name could mean
 *                          ("RTX 6000": sm_75, sm_89, sm_120)
 *   CLI_PRODUCT_NONE       out[] the closest names, best first (maybe none)
 * with *n the entries of out set (at most max).
 */
int cli_product_find(const char *query, cli_product *out, size_t max, size_t *n);

/*
 * A --device value: a device spec (gk_device_parse), or else a product's name
 * standing for its target's spec ("RTX 4090": cuda:sm_89), the device named
 * "RTX 4090 (from a spec)". *product is the product's name, NULL for a spec.
 * Returns gk_device_parse's status; GK_EINVAL for a name that is no product
 * or several, `why` saying which ones come closest.
 */
int cli_device_parse(const char *spec, gk_device *dev, const char **product, char *why,
                     size_t why_size);

#endif
