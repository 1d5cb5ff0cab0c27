/*
 * gk_internal.h - what the loader's files share with each other. Not API:
 * nothing here is exported from libgk.so (every name is gk__-prefixed and
 * hidden). The unit tests link libgk.a and may use it to reach corners the
 * public API cannot (a synthetic CPU, a lower detected level).
 */
#ifndef GK_INTERNAL_H
#define GK_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "gk.h"
#include "gk_compiler.h" /* GK__PRINTF */

struct sqlite3;
struct sqlite3_stmt;

/* Largest image libgk will decompress (and largest packed blob it will
 * read). Sizes come from an untrusted file: this bounds every allocation
 * made on its word. */
#define GK__MAX_IMAGE ((uint64_t)1 << 30)

/* ---- messages (status.c) ---------------------------------------------- */

/* A growable string for messages that list things. Allocation failure is
 * sticky and silent: the text is then cut short, never wrong. */
typedef struct gk__sb {
  char *p;
  size_t len, cap;
  int oom;
} gk__sb;

void gk__sb_printf(gk__sb *sb, const char *fmt, ...) GK__PRINTF(2, 3);

/* Formats a short reason (why a device or a row is what it is) into why;
 * nothing at all when why is NULL or why_size 0: a quick selection asks
 * for none (status.c). */
void gk__say(char *why, size_t why_size, const char *fmt, ...) GK__PRINTF(3, 4);
/* The text so far; "" when empty or allocation failed early. */
const char *gk__sb_str(const gk__sb *sb);
void gk__sb_free(gk__sb *sb);

/* Replaces *msg (malloc'ed, may be NULL) with the formatted text and returns
 * `status`. When memory runs out the message becomes NULL (read as ""): the
 * status still says what kind of failure it was. */
int gk__vsetmsg(char **msg, int status, const char *fmt, va_list ap);

/* Sets this thread's gk_last_error() text; returns `status`. */
int gk__set_last_error(int status, const char *fmt, ...) GK__PRINTF(2, 3);
void gk__clear_last_error(void);

/* strerror(e) into buf, thread-safely; returns buf. */
const char *gk__errno_text(int e, char *buf, size_t size);

/* Bounded copy that always terminates (when size > 0). */
void gk__strlcpy(char *dst, const char *src, size_t size);

/* ---- x86-64 levels (cpu.c) --------------------------------------------- */

/* Levels are 1..4 for "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4";
 * 0 means unknown. */
#define GK__X86_LEVEL_MAX 4

/* The CPUID words and XCR0 that decide the level; a plain value so tests
 * can describe CPUs this machine is not. Words of leaves the CPU does not
 * have are 0. */
typedef struct gk__x86_cpuid {
  uint32_t l1_ecx; /* leaf 1 ECX */
  uint32_t l7_ebx; /* leaf 7 subleaf 0 EBX */
  uint32_t e1_ecx; /* leaf 0x80000001 ECX */
  uint64_t xcr0;   /* XGETBV(0); 0 when OSXSAVE is clear */
} gk__x86_cpuid;

int gk__x86_level_of(const gk__x86_cpuid *c);
/* "x86-64-v3" -> 3; 0 for anything else (including NULL). */
int gk__x86_level_from_name(const char *name);
/* 3 -> "x86-64-v3"; NULL outside 1..4. */
const char *gk__x86_level_name(int level);
/* "x86-64, x86-64-v2, x86-64-v3, x86-64-v4" for messages. */
const char *gk__x86_level_list(void);

/* The CPU this process runs on. GK_OK or GK_ENODEVICE (with `why`). */
int gk__cpu_detect(gk_device *out, int asked, char *why, size_t why_size);

/* Test hook: caps the level gk__cpu_detect reports (0 removes the cap), to
 * play a lower CPU than the machine's. Process-wide; tests only. */
void gk__cpu_set_level_cap(int level);

/* ---- entry lists (index.c) -------------------------------------------- */

/* A row's entry points, read from its `entry` column ('["a","b"]') once
 * per load and handed to the image check, the backend's load and the
 * launches. */
#define GK__ENTRY_MAX 16 /* entries a row may list */
#define GK__NAME_MAX 64  /* longest entry name, plus one */
typedef struct gk__entries {
  int n; /* -1: the column is not a JSON array of at most GK__ENTRY_MAX names */
  char name[GK__ENTRY_MAX][GK__NAME_MAX];
  /* Each entry's dynamic shared memory in bytes (its launch's `shared`),
   * set by module.c before a GPU backend's load; 0 when the launch has
   * none or does not parse. */
  uint32_t shared[GK__ENTRY_MAX];
} gk__entries;
/* Parses an entry column into *e; returns e->n. */
int gk__entries_parse(const char *json, gk__entries *e);

/* ---- ELF images (elf.c) ------------------------------------------------ */

enum { GK__EM_X86_64 = 62, GK__EM_CUDA = 190, GK__EM_AMDGPU = 224 };
enum { GK__ET_EXEC = 2, GK__ET_DYN = 3 };

/* The header fields the checks look at, decoded; the tables they name lie
 * inside the image (checked). */
typedef struct gk__elf {
  unsigned osabi, abiversion; /* e_ident[EI_OSABI], e_ident[EI_ABIVERSION] */
  unsigned type, machine, ehsize, phentsize, phnum, shentsize, shnum;
  uint32_t version, flags;
  uint64_t phoff, shoff;
  const unsigned char *bytes; /* the image, for checks that read sections */
  size_t size;
} gk__elf;

/* Reads the header of an image that must be a 64-bit little-endian ELF of
 * this machine and type (GK__EM_*, GK__ET_*) into *h: 1, or 0 with why. */
int gk__elf_read(const void *bytes, size_t size, unsigned machine, unsigned type,
                 gk__elf *h, char *why, size_t why_size);
/* Every entry of e is a symbol the image's dynamic symbol table exports:
 * a function (kd 0: a shared object), or a kernel descriptor NAME.kd (kd
 * 1: an AMD code object, which HSA loads by it). 1, or 0 with why. */
int gk__elf_exports(const gk__elf *h, const gk__entries *e, int kd, char *why,
                    size_t why_size);

/* ---- archives (archive.c, index.c) ------------------------------------- */

typedef struct gk__row {
  gk_image_info info;
  char *strings; /* one block holding every string of `info` */
  int packed_known; /* info.packed_size is looked up on first ask */
  size_t pos;       /* its place in the index (rowid - 1) */
  int64_t blob;     /* its blob's id */
} gk__row;

/* The index is read lazily (docs/archive.md, "Reading"): an open checks
 * the header and the schema only. Selecting a variant reads just the rows
 * of (kernel, backend, variant) into `some`; anything that needs the whole
 * index (count, listing, explain, a failed selection's message, a
 * signature) reads all of it into `rows` once, checked. */
struct gk_archive {
  struct sqlite3 *db;
  struct sqlite3_stmt *blob_stmt; /* finds an image's blob by id; NULL until a read */
  struct sqlite3_stmt *row_stmt;  /* image rows from a rowid on (a selection's) */
  struct sqlite3_stmt *spec_stmt; /* one spec row, by id */
  struct ZSTD_DCtx_s *dctx;       /* reused by every read; NULL until one */
  struct sqlite3_stmt *size_stmt; /* a blob's packed size; NULL until asked */
  char *name;                     /* path, or "<memory, N bytes>" */
  gk__row *rows;                  /* the whole index, once read */
  size_t nrows;
  int whole;     /* rows/nrows hold the whole index */
  int broken;    /* reading the whole index failed: no quick ways after */
  int check_images; /* reads also hash the raw image (GK_OPEN_CHECK_IMAGES) */
  gk__row *some; /* rows read by selections before the whole index was */
  size_t nsome, somecap;
  char *msg; /* failure of the latest call; NULL = "" */
};

/* Orders index rows: (kernel, backend, variant, target), bytewise. */
int gk__row_cmp(const gk_image_info *a, const gk_image_info *b);

/* The image of row r (gk_archive_read's work, for a row in hand: a load
 * reads the row its selection chose, unpack.c): its blob decoded and
 * checked, then the image checked against the row and its entries e
 * (NULL: parsed here). *bytes is the caller's to free. Errors as
 * gk_archive_read, with the archive's message. */
int gk__read(gk_archive *ar, const gk__row *r, const gk__entries *e, void **bytes,
             size_t *size);

/* Checks that `bytes` fit the row: its entry list parses, and its
 * backend's check of its format passes (unpack.c). e: the row's entries
 * when the caller has them, else NULL. GK_OK, or GK_EFORMAT with `why`
 * (may be NULL) saying what does not fit. */
int gk__image_check(const void *bytes, size_t size, const gk_image_info *row,
                    const gk__entries *e, char *why, size_t why_size);

/* Prepares ar->blob_stmt when it is not yet. */
int gk__blob_stmts(gk_archive *ar);

/* Reads the whole index into ar->rows (once; later calls return at once).
 * GK_OK, or GK_ECORRUPT/GK_ENOMEM/GK_EIO with the archive's message set. */
int gk__index_whole(gk_archive *ar);

/* Row i of the index: from a selection's rows when it is one of them, else
 * from the whole index (read first). NULL with the archive's message set
 * (GK_ERANGE past the end, or the whole index's failure) in *status. */
gk__row *gk__index_row(gk_archive *ar, size_t i, int *status);

/* The rows of (kernel, backend, variant) in index order, found by a binary
 * search on the rowid and checked row by row: *first points into ar->some
 * (valid until the next call), *n of them (0 when there are none). When
 * anything disagrees (rows out of place, a bad row) it
 * answers GK_OK with no rows and *suspect set: the caller then reads the
 * whole index, which says what is wrong. Errors: GK_ENOMEM, GK_EIO. */
int gk__index_some(gk_archive *ar, const char *kernel, const char *backend,
                   const char *variant, gk__row **first, size_t *n, int *suspect);

/* Sets the archive's message and returns `status`, so a failure reads
 * `return gk__fail(ar, GK_EIO, "cannot ... '%s'", ar->name)`. */
int gk__fail(gk_archive *ar, int status, const char *fmt, ...) GK__PRINTF(3, 4);

/* A SQLite failure on `ar` as our status and message: "archive '...'
 * (is corrupt): cannot DOING: SQLite's message" (archive.c). */
int gk__sql_fail(gk_archive *ar, int rc, const char *doing);
/* SQLite's primary result code as a GK_ status. */
int gk__sql_status(int rc);
/* The name of libgk's VFS for archive files (vfs.c), registered on first
 * use; NULL if SQLite refused it (then the default VFS is used). */
const char *gk__archive_vfs(void);

/* Copies every string of `src` into one new block (*block, to free) that
 * `dst`'s pointers then reference. GK_OK or GK_ENOMEM. */
int gk__info_copy(gk_image_info *dst, const gk_image_info *src, char **block);

/* Describes a row in messages: "'qmatmul' bits=4 cpu x86-64-v3", into
 * buf; returns buf. */
const char *gk__row_describe(const gk_image_info *row, char *buf, size_t size);
/* gk_device_format into buf; returns buf (device.c). */
const char *gk__device_text(const gk_device *dev, char *buf, size_t size);
/* A row's or a device's description in a buffer of its own, which lives to
 * the end of the enclosing block: written among a message's arguments, so
 * that nothing is described before a failure is worded. */
#define GK__WHAT(row) gk__row_describe((row), (char[256]){""}, 256)
#define GK__DEVICE(dev) gk__device_text((dev), (char[160]){""}, 160)

/* 1 once libsodium is initialised (once per process; unpack.c), which
 * image hashing and signature checks (sign.c) both need. */
int gk__sodium_ready(void);

/* The best row of `kernel`/`variant` for dev, as gk_archive_select_ex
 * chooses it, in *row: valid until the archive is closed (select.c). */
int gk__select(gk_archive *ar, const gk_device *dev, const char *kernel, const char *variant,
               unsigned flags, const gk__row **row);

/* ---- GPU drivers (driver.c) ---------------------------------------- */

/* A backend's driver: a dlopen handle, or a test's resolver. */
typedef struct gk__driver {
  void *dl;
  gk_resolver_fn fn;
  void *ctx;
} gk__driver;

/* Opens the driver of `backend`: its installed resolver if a test set one,
 * else the first of `names` (NULL-terminated) that dlopen finds. GK_ENODEVICE
 * with a sentence in `why` when none loads. */
int gk__driver_open(gk_backend backend, const char *const *names,
                    gk__driver *out, char *why, size_t why_size);
/* An entry point by name; NULL when absent. */
void *gk__driver_sym(const gk__driver *d, const char *name);
void gk__driver_close(gk__driver *d);
/* 1 when a test installed a resolver for backend (no dlopen then). */
int gk__driver_has_resolver(gk_backend backend);

/* ---- backends: one descriptor each, one table (device.c) --------------- */

/* A backend's compatibility rule: 1 when `row` (of the device's backend)
 * runs on `dev`, with *score ranking the rows that do (higher is better);
 * 0 when not. Either way a short reason goes into why, unless why_size is
 * 0: a selection that lists no candidates words no reasons (gk__say). */
typedef int (*gk__fits_fn)(const gk_device *dev, const gk_image_info *row,
                           unsigned flags, long *score, char *why,
                           size_t why_size);

/* What the archive holds of one variant, in the backend's terms, for the
 * message of a selection where no row of rows [from, to) fits dev ("cuda
 * sm_75..sm_120 (9 cubins) + compute_75 PTX (CUDA 13.0)"), with in `note`
 * why the rule turned rows down ("PTX from CUDA 13.0 needs a driver >=
 * 13.0, this driver is 12.4"). */
typedef void (*gk__holdings_fn)(gk__sb *has, gk__sb *note, const gk__row *rows,
                                size_t from, size_t to, const char *variant,
                                const gk_device *dev, unsigned flags);

typedef struct gk__ops gk__ops; /* how a module loads (module.c) */

/*
 * Everything the loader's generic files (device.c, select.c, unpack.c,
 * module.c) ask of one backend, defined in the backend's own file - the
 * part built on every system: cpu.c, cuda_arch.c, rocm_isa.c,
 * vulkan_spirv.c, wgsl.c, metal_target.c; a driver side (cuda.c, rocm.c,
 * vulkan.c and vulkan_module.c, metal.m) gives it detect and ops - and
 * listed once in device.c's table, in the order gk_device_detect()
 * prefers them. Adding a backend is its file and a line there (and its
 * gk_backend value in gk.h; docs/loader.md). Hooks a backend has no use
 * for are NULL where the field says so.
 */
typedef struct gk__backend {
  gk_backend id;
  const char *name; /* gk_backend_name(): "cuda" */
  /* The device of index 0 here: GK_OK, or GK_ENODEVICE (or GK_EDRIVER)
   * with the reason in why. `asked` is 0 when gk_device_detect() looks for
   * the best device of the machine: a backend that must not win that way
   * (a CPU-type Vulkan device, a WGSL host) then says no. */
  int (*detect)(gk_device *out, int asked, char *why, size_t why_size);

  /* The device spec (gk_device_parse). An arch alone that starts with
   * `bare` names this backend ("sm_89" is cuda:sm_89; NULL: none). `arch`
   * checks the arch of a spec, which it may respell in place (`size`
   * bytes: cuda's "8.9" is sm_89): 1, or 0 with the reason in why (NULL:
   * any plain name of letters, digits, '_', '-' and '.'). `option` reads
   * one ",key=value" into d: 1, 0 for a bad value (with why), -1 when the
   * key is not this backend's (NULL: no options). `guess` writes the spec
   * a mistyped one most likely meant ("cuda:89" -> "cuda:sm_89"): 1, or 0
   * when there is no good guess (NULL: never). */
  const char *bare;
  int (*arch)(char *arch, size_t size, const char *spec, char *why, size_t why_size);
  int (*option)(gk_device *d, const char *opt, const char *spec, char *why,
                size_t why_size);
  int (*guess)(const char *spec, char *out, size_t size);

  /* Selection (select.c). `valid` checks a device: 1, or 0 with a reason
   * that follows "device 'cuda:sm_90a' " in the message. `fits` is the
   * backend's rule for one of its rows (gk__fits_fn). `holdings` words
   * what the archive has when no row fits (NULL: each row's backend and
   * target). */
  int (*valid)(const gk_device *dev, char *why, size_t why_size);
  gk__fits_fn fits;
  gk__holdings_fn holdings;

  /* Image checks (gk__image_check: every read, gk verify, gk pack): the
   * formats its rows may hold, each with the check of an image's bytes
   * against its row (header, target, entries): GK_OK, or GK_EFORMAT (or
   * GK_ENOMEM) with why. A format not listed is refused. */
  struct {
    const char *name;
    int (*check)(const void *bytes, size_t size, const gk_image_info *row,
                 const gk__entries *e, char *why, size_t why_size);
  } formats[2];

  /* Loading and using a module (module.c); never NULL: a backend whose
   * driver side is not built here has stand-ins that say so. */
  const gk__ops *ops;
} gk__backend;

/* The descriptor of backend b, or of the backend named `name` ("cuda");
 * NULL when there is none (device.c). */
const gk__backend *gk__backend_of(gk_backend b);
const gk__backend *gk__backend_named(const char *name);

extern const gk__backend gk__cpu_backend, gk__cuda_backend, gk__rocm_backend,
    gk__vk_backend, gk__wgsl_backend, gk__metal_backend;

/* ---- modules (module.c; each backend's ops in its driver's file) ------- */

/* How one backend loads and answers for a module (its descriptor's ops).
 * ready (NULL: nothing to check) refuses, before anything is selected, a
 * device this machine cannot stand for (a cpu level above its CPU's).
 * load takes ownership of `bytes` (the verified image, freed on failure
 * too), checks the device is really present, and on success sets *state,
 * which symbol, kernel_info and unload receive. They report failures with
 * gk__fail on `ar`. */
struct gk__ops {
  int (*ready)(gk_archive *ar, const gk_device *dev);
  int (*load)(gk_archive *ar, const gk_device *dev, const gk_image_info *row,
              const gk__entries *e, void *bytes, size_t size, void **state);
  void *(*symbol)(void *state, const char *name);
  int (*kernel_info)(void *state, const char *name, gk_kernel_info *out);
  void (*unload)(void *state);
  /* The device's limits (gk_module_limits), asked once at load; NULL:
   * gk_device_limits_known. */
  int (*limits)(void *state, gk_device_limits *out);
  /* Launches entry `name` with geometry d and the checked args; NULL when
   * libgk does not drive the backend. Failures set gk_last_error(). */
  int (*launch)(void *state, const char *name, const gk_launch *L,
                const gk_launch_dims *d, const gk_arg *args, size_t nargs,
                const gk_launch_options *opts);
  /* 1 when its rows carry launch data, parsed at load (gk_module_launch);
   * 0 when a module's entries are functions to call (cpu). */
  int launches;
};

/* ---- launches (launch.c) ----------------------------------------------- */

/* "launch of 'qmatmul' (qmatmul bits=4 cuda sm_86)", for messages. */
const char *gk__launch_what(const gk_launch *L);
gk_backend gk__launch_backend(const gk_launch *L);
/* The args a block of scalars (push constants) stands for: buffers as
 * pointers 0, scalars decoded at the row's offsets; args has room for
 * gk_launch_nparams(L). GK_OK, or GK_EINVAL (size is not the row's). */
int gk__launch_args_from_scalars(const gk_launch *L, const void *bytes,
                                 size_t size, gk_arg *args);
/* The row's dynamic shared memory of launch L (cuda, rocm; 0 elsewhere). */
uint32_t gk__launch_shared(const gk_launch *L);
/* A GPU load's refusal of entry `entry` of `row`, whose launch asks for
 * more shared memory per block than `device` (its words: "CUDA device 0
 * (NAME, sm_86)") allows: static (the image's) + dynamic (the launch's)
 * > limit. Says what to do; returns GK_EINVAL, set on ar. */
int gk__shared_refused(gk_archive *ar, const gk_image_info *row, const char *entry,
                       uint64_t static_bytes, uint32_t dynamic, uint64_t limit,
                       const char *device);
/* The parsed launch of entry `name` of module m, with its limits; NULL with
 * *status (GK_ENOSYMBOL, GK_ECORRUPT: gk_last_error() set) otherwise. */
const gk_launch *gk__module_launch(const gk_module *m, const char *name,
                                   const gk_device_limits **lim, int *status);

/* ---- ROCm (rocm_isa.c: names and ELF; rocm.c: HSA) -------------------- */

/* A target ID split: "gfx90a:sramecc+:xnack-" -> proc "gfx90a", sramecc
 * '+', xnack '-'; a feature not written is 0 ("any" in an image, "not
 * reported" for a device). */
typedef struct gk__amd_target {
  char proc[32];
  char xnack, sramecc;
} gk__amd_target;

/* Parses a target ID, optionally prefixed "amdgcn-amd-amdhsa--" (an HSA ISA
 * name). 1, or 0 with the reason in why. */
int gk__amd_parse(const char *id, gk__amd_target *t, char *why,
                  size_t why_size);
/* The ROCm rule (gk__rocm_backend's fits), which a load checks again
 * against the GPU really there (rocm.c). */
int gk__rocm_fits(const gk_device *dev, const gk_image_info *row,
                  unsigned flags, long *score, char *why, size_t why_size);
/* The first ROCm GPU: GK_OK, or GK_ENODEVICE with the reason. */
int gk__rocm_detect(gk_device *out, int asked, char *why, size_t why_size);
extern const gk__ops gk__rocm_ops;


/* ---- Vulkan (vulkan_spirv.c: SPIR-V and versions; vulkan.c: driver) --- */

#define GK__SPIRV_MAX_ENTRIES 8
#define GK__SPIRV_MAX_BINDINGS 16

/* What the loader reads from a SPIR-V module to build its pipelines. */
typedef struct gk__spirv_entry {
  char name[64];
  uint32_t id;
  uint32_t local_size[3];
} gk__spirv_entry;
typedef struct gk__spirv_info {
  gk__spirv_entry entries[GK__SPIRV_MAX_ENTRIES]; /* GLCompute entry points */
  int nentries;
  uint32_t storage_mask, uniform_mask; /* bindings of set 0, by kind */
  int nbindings;                       /* they are exactly 0..nbindings-1 */
  uint32_t push_size;                  /* bytes of the push-constant block */
} gk__spirv_info;

/* "vulkan1.3" -> 1, 3. 1, or 0 when s is not such a name. */
int gk__vk_version_parse(const char *s, int *major, int *minor);
/* Header check, then entry points, local sizes, bindings, push size.
 * GK_OK, GK_EFORMAT or GK_ENOMEM, with why. */
int gk__spirv_reflect(const void *bytes, size_t size, gk__spirv_info *out,
                      char *why, size_t why_size);
/* The best Vulkan device (discrete > integrated > virtual > cpu); with
 * asked 0, devices of type CPU (lavapipe) are passed over, as
 * gk_device_detect() must not prefer them to the native CPU backend. */
int gk__vk_detect(gk_device *out, int asked, char *why, size_t why_size);
extern const gk__ops gk__vk_ops;
/* The state `ops` keeps for module m; NULL when m is not one of its
 * modules (module.c). */
void *gk__module_state(const gk_module *m, const gk__ops *ops);

/* ---- WGSL text (wgsl.c) ------------------------------------------------ */

/* "webgpu" or "webgpu+feature...". 1, or 0 with why. */
int gk__wgsl_arch_ok(const char *arch, char *why, size_t why_size);

extern const gk__ops gk__wgsl_ops;

/* ---- Metal (metal_target.c: names, rule, header; metal.m: Apple only) -- */

/* The system default Metal device (Apple); elsewhere GK_ENODEVICE. */
int gk__metal_detect(gk_device *out, int asked, char *why, size_t why_size);
extern const gk__ops gk__metal_ops;

/* ---- CUDA (cuda_arch.c: targets, rule, image checks; cuda.c: driver) --- */

/* "sm_90a" -> cc 90, suffix 'a'; "compute_75" -> cc 75, ptx 1. */
typedef struct gk__cuda_target {
  int cc;      /* 10 * major + minor: 86, 100, 121 */
  char suffix; /* 0, 'a' (arch-specific) or 'f' (family) */
  int ptx;     /* 1 for compute_XY */
} gk__cuda_target;

/* 1 when t is sm_XY[a|f] or compute_XY[a|f] (2-3 digits), else 0. */
int gk__cuda_parse_target(const char *t, gk__cuda_target *out);
/* The CUDA release in a cuda row's toolchain ("nvcc 13.0.88" -> 13000, the
 * driver API's encoding); 0 when it does not say. */
int gk__cuda_toolkit_version(const char *toolchain);
/* The CUDA rule (gk__cuda_backend's fits), which a load checks again
 * against the GPU and driver really there (cuda.c). */
int gk__cuda_fits(const gk_device *dev, const gk_image_info *row,
                  unsigned flags, long *score, char *why, size_t why_size);
/* The first CUDA GPU: GK_OK, or GK_ENODEVICE with the reason. */
int gk__cuda_detect(gk_device *out, int asked, char *why, size_t why_size);
extern const gk__ops gk__cuda_ops;

#endif /* GK_INTERNAL_H */
