/*
 * gk.h - the gllm-kernels loader (libgk): the whole public contract.
 *
 * libgk opens a fat archive of compiled GPU/CPU kernel images (a SQLite
 * database, see docs/archive.md), finds the device this process runs on,
 * picks the best image for it by the vendor's compatibility rules, checks
 * the image's SHA-256 and loads it. What is not declared here is not API.
 *
 * Conventions
 * - Every function that can fail returns a status: GK_OK (0) or a negative
 *   GK_E* code. Results come back through OUT parameters, which are left
 *   untouched on failure unless said otherwise.
 * - Handles are opaque. Every create has a destroy; destroy(NULL) is a no-op.
 * - A handle carries the detail of its last failure: gk_archive_errmsg()
 *   gives a sentence naming the subject ("no image of 'qmatmul' bits=4 fits
 *   cpu:x86-64-v2; archive 'k.gkfat' has cpu x86-64-v3, cpu x86-64-v4").
 *   libgk never prints and never exits.
 * - Threads: one gk_archive may be used by one thread at a time (guard it if
 *   you share it). Separate archives are independent. A loaded gk_module is
 *   immutable; its symbols may be used from any thread. gk_strerror and the
 *   gk_device_* functions are thread-safe.
 * - Drivers (libcuda, libhsa-runtime64, libvulkan) are dlopen()ed, never
 *   linked: libgk needs no GPU toolkit at run time.
 * - This version implements the cpu backend (x86-64, Linux), the cuda
 *   backend (NVIDIA GPUs through the driver API, libcuda.so.1: cubins and
 *   PTX) and the rocm backend (AMD GPUs through the HSA runtime,
 *   libhsa-runtime64.so.1).
 * - Vulkan (SPIR-V images, libvulkan.so.1) is implemented; its buffer and
 *   dispatch helper is in gk_vulkan.h. WGSL images are text handed to a
 *   WebGPU host (device "wgsl"). Metal loads metallibs on Apple systems
 *   only; elsewhere it reports GK_ENODEVICE saying so.
 * - The kernels' CPU signatures (gk_qmatmul_fn ...), what to cast
 *   gk_module_symbol's address to, are in gk_kernels.h, included below.
 */
#ifndef GK_H
#define GK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define GK_API __declspec(dllexport)
#elif defined(__GNUC__)
#  define GK_API __attribute__((visibility("default")))
#else
#  define GK_API
#endif

#define GK_VERSION_MAJOR 0
#define GK_VERSION_MINOR 1
#define GK_VERSION_PATCH 0

/* Archive format version this library reads (PRAGMA user_version). */
#define GK_ARCHIVE_FORMAT 4
/* Longest chain of delta-coded blobs an archive may hold (docs/archive.md,
 * "Blobs"): reading one image decompresses at most this many frames before
 * its own. A deeper chain, or a cycle, is a corrupt archive. */
#define GK_ARCHIVE_DELTA_DEPTH 2
/* PRAGMA application_id of every archive: 'gkfa' as a big-endian int. */
#define GK_ARCHIVE_APPLICATION_ID 0x676b6661

/*
 * Status codes. The list is written once: X(NAME, value, message). Values
 * never change once released; new codes are added at the end.
 */
#define GK_STATUS_MAP(X)                                                        \
  X(OK,          0,  "success")                                                 \
  X(EINVAL,     -1,  "invalid argument")                                        \
  X(ENOMEM,     -2,  "out of memory")                                           \
  X(EIO,        -3,  "I/O error")                                               \
  X(ENOTARCHIVE,-4,  "not a gllm-kernels archive")                              \
  X(EVERSION,   -5,  "unsupported archive format version")                      \
  X(ECORRUPT,   -6,  "archive is corrupt")                                      \
  X(ENOKERNEL,  -7,  "no such kernel or variant in the archive")                \
  X(ENOIMAGE,   -8,  "no image in the archive fits the device")                 \
  X(ENODEVICE,  -9,  "no device of the requested kind")                         \
  X(EDRIVER,    -10, "the device driver reported an error")                     \
  X(ENOSYMBOL,  -11, "no such symbol in the module")                            \
  X(EHASH,      -12, "image SHA-256 does not match the index")                  \
  X(EFORMAT,    -13, "image does not match its index row (ELF header)")         \
  X(ETOOBIG,    -14, "image exceeds the size limit")                            \
  X(ERANGE,     -15, "index out of range")                                      \
  X(ESIGNATURE, -16, "archive signature missing or not valid")

typedef enum gk_status {
#define GK__STATUS_ENUM(name, value, msg) GK_##name = value,
  GK_STATUS_MAP(GK__STATUS_ENUM)
#undef GK__STATUS_ENUM
} gk_status;

/* Static English text for a status; never NULL ("unknown status" for
 * values not in the list). */
GK_API const char *gk_strerror(int status);

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */
/* ------------------------------------------------------------------------ */

/* Backends, in the order gk_device_detect() prefers them. */
typedef enum gk_backend {
  GK_BACKEND_NONE = 0,
  GK_BACKEND_CUDA = 1,
  GK_BACKEND_ROCM = 2,
  GK_BACKEND_METAL = 3,
  GK_BACKEND_VULKAN = 4,
  GK_BACKEND_CPU = 5,
  /* WGSL text for a host that compiles it itself (WebGPU): not a device
   * libgk drives, so gk_device_detect() never returns it; ask for it with
   * gk_device_detect_backend(GK_BACKEND_WGSL) or the spec "wgsl". */
  GK_BACKEND_WGSL = 6
} gk_backend;

/* "cuda", "rocm", "metal", "vulkan", "cpu", "wgsl"; NULL for anything else. */
GK_API const char *gk_backend_name(gk_backend b);
/* Inverse of gk_backend_name; GK_BACKEND_NONE when unknown. */
GK_API gk_backend gk_backend_from_name(const char *name);

/*
 * A device: a plain value, copy it freely. `arch` is the architecture in
 * the form the archive's `target` column uses for that backend:
 *   cpu   "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" (x86-64 levels)
 *   cuda  "sm_86"            rocm  "gfx90a:sramecc+:xnack-"
 * `driver_version` is the driver's version as the vendor encodes it
 * (CUDA: 12040 for 12.4), 0 when unknown or meaningless (cpu).
 * `name` is a human-readable description ("AMD EPYC 9554", "lavapipe").
 */
typedef struct gk_device {
  gk_backend backend;
  char arch[64];
  char name[128];
  int driver_version;
  int index; /* ordinal among the backend's devices */
} gk_device;

/*
 * Finds the best device present: CUDA > ROCm > Metal > Vulkan > CPU, the
 * first backend with a usable device. The CPU is always present, so this
 * only fails on a machine whose CPU libgk cannot describe.
 * Returns GK_OK, or GK_ENODEVICE.
 */
GK_API int gk_device_detect(gk_device *out);

/*
 * Finds the device of one backend (index 0). GK_ENODEVICE when that backend
 * has no device or no driver here; `why` (may be NULL) receives a sentence
 * saying what was missing ("libcuda.so.1 not found").
 */
GK_API int gk_device_detect_backend(gk_backend backend, gk_device *out,
                                    char *why, size_t why_size);

/*
 * Describes a device from a text spec, without touching any driver:
 * "cpu:x86-64-v2", "cuda:sm_86", "cuda:sm_90,driver=12.4",
 * "rocm:gfx90a:sramecc+:xnack-". The arch is checked for its backend's
 * shape: cpu an x86-64 level, cuda "sm_" and 2-3 digits (a device has no
 * 'a'/'f' suffix), rocm "gfx..." with ":feature+"/":feature-" settings.
 * ",driver=X.Y" is for cuda only. A spec of only a backend name ("cpu")
 * means the device of that backend detected here. Short forms name their
 * backend: a bare arch ("sm_89", "gfx942:xnack-", "x86-64-v3") and a
 * compute capability written "cuda:8.9" (cuda:sm_89). A spec that is
 * close to one (cuda:89, sm89, compute_89, sm_90a) is refused with the
 * exact spec in `why` ("did you mean cuda:sm_89?").
 * Returns GK_OK, GK_EINVAL (`why`, may be NULL, says what is wrong), or,
 * for a bare backend name, the status of gk_device_detect_backend
 * (GK_ENODEVICE when that backend has no device here).
 */
GK_API int gk_device_parse(const char *spec, gk_device *out, char *why,
                           size_t why_size);

/* Writes "backend:arch" (plus ",driver=X.Y" when known) into buf,
 * truncated to size. dev NULL writes ""; buf NULL or size 0 writes nothing. */
GK_API void gk_device_format(const gk_device *dev, char *buf, size_t size);

/* ------------------------------------------------------------------------ */
/* Archives                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct gk_archive gk_archive;

/*
 * Opens an archive file read-only. The file must not change while open.
 * The open checks the header and the schema; index rows are read when
 * first needed (a selection reads only its kernel's rows for the device's
 * backend and the variant; gk_archive_count reads them all), so damage in
 * them shows there, as GK_ECORRUPT with the archive's message.
 * On failure *out is set to NULL and the status says why; the path and the
 * reason are in the message of gk_last_error() for this thread.
 * Errors: GK_EINVAL, GK_EIO (cannot open/read), GK_ENOTARCHIVE (not SQLite,
 * or SQLite without our application_id), GK_EVERSION, GK_ECORRUPT,
 * GK_ENOMEM.
 */
GK_API int gk_archive_open(const char *path, gk_archive **out);

/*
 * Opens an archive held in memory, e.g. linked into the host binary. The
 * bytes are BORROWED: they must stay valid and unchanged until
 * gk_archive_close(). Nothing is copied. Errors as gk_archive_open(); the
 * messages name the archive "<memory, N bytes>".
 */
GK_API int gk_archive_open_memory(const void *bytes, size_t size,
                                  gk_archive **out);

/* Closes the archive. Modules loaded from it stay valid. NULL is a no-op. */
GK_API void gk_archive_close(gk_archive *ar);

/* The failure of the latest call on this archive, as a sentence naming
 * the archive and the subject; "" when that call succeeded (every call
 * taking the archive replaces it). Owned by the archive, valid until the
 * next call on it. NULL gives a fixed text, never NULL. */
GK_API const char *gk_archive_errmsg(const gk_archive *ar);

/* The failure of the latest gk_archive_open*() on this thread (those
 * functions have no handle to carry it), or of the latest launch call
 * (gk_launch_*, gk_module_launch*); "" when it succeeded. Thread-local:
 * another thread's calls do not change it. */
GK_API const char *gk_last_error(void);

/*
 * One row of the index. Every string is owned by the archive and stays valid
 * until gk_archive_close(). `entry` and `launch` are JSON texts (an array of
 * entry-point names, an object of launch metadata; "{}" when none).
 */
typedef struct gk_image_info {
  const char *kernel;    /* "qmatmul" */
  const char *backend;   /* "cpu", "cuda", ... */
  const char *target;    /* exact target the recipe asked for: "x86-64-v3", "sm_90a" */
  const char *variant;   /* canonical "bits=4"; "" when the kernel has no parameters */
  const char *format;    /* "so", "cubin", "ptx", "hsaco", "spirv", "wgsl", "metallib" */
  const char *entry;     /* JSON array of entry symbols */
  const char *launch;    /* JSON object of launch metadata */
  const char *toolchain; /* "cc 12.2.0 x86_64-linux-gnu" */
  uint64_t raw_size;     /* bytes of the image */
  uint64_t packed_size;  /* bytes its blob takes in the archive (shared blobs counted once per
                          * row; a delta-coded image's own bytes, not its base's) */
  unsigned char sha256[32];
} gk_image_info;

/* Number of rows in the index, reading all of it when it has not been yet:
 * GK_ECORRUPT (a bad row, rows out of gk pack's order or repeated),
 * GK_ENOMEM or GK_EIO then, *count 0. GK_EINVAL when an argument is NULL. */
GK_API int gk_archive_count(gk_archive *ar, size_t *count);

/* Row i (0 <= i < count), in the index's order (kernel, backend, variant,
 * target). GK_ERANGE past the end. */
GK_API int gk_archive_image(gk_archive *ar, size_t i, gk_image_info *out);

/*
 * Decompresses row i into a new buffer (*bytes, *size; free it with
 * gk_free). Before zstd reads a blob (the image's and each base it is coded
 * against), the SHA-256 of its stored bytes must be the one its blob row
 * records (docs/archive.md, "Reading"); when the archive was opened with
 * trusted keys or GK_OPEN_CHECK_IMAGES, the SHA-256 of the decompressed
 * image must also be the row's. Then the image is checked against the row
 * as gk_image_check does: its format's header fits the row's backend,
 * target and toolchain, and it holds every entry the row lists (what each
 * format's check reads: docs/archive.md, "Reading"). Sizes in the file are
 * not believed: the blob must be exactly one zstd frame declaring raw_size
 * (for a delta-coded image, decompressed against its base image's bytes,
 * itself one plain frame: docs/archive.md, "Blobs"), and images over 1 GiB
 * are refused. SHA-256 is computed by OpenSSL's libcrypto when the system
 * has it, else by libsodium.
 * Errors: GK_EINVAL, GK_ERANGE, GK_ECORRUPT, GK_EHASH, GK_EFORMAT,
 * GK_ETOOBIG, GK_ENOMEM. *bytes is NULL on failure.
 */
GK_API int gk_archive_read(gk_archive *ar, size_t i, void **bytes,
                           size_t *size);

/* Frees memory returned by libgk. NULL is a no-op. */
GK_API void gk_free(void *p);

/*
 * Checks image bytes against what an index row says of them, as every read
 * does (gk_archive_read): the format's header fits the backend and target,
 * and every name in row->entry is in the image (a cubin's .text.NAME, a PTX
 * .entry, a shared object's exported function, an AMD code object's
 * NAME.kd kernel descriptor, a SPIR-V entry point, a WGSL function with the
 * @compute attribute, a kernel in a metallib's function list). Only backend, target,
 * format, entry and toolchain of the row are read. For build tools: gk
 * build and gk pack check each image before it reaches an archive.
 * GK_OK; GK_EFORMAT with `why` (may be NULL) saying what does not fit;
 * GK_EINVAL when bytes or row (or one of those fields) is NULL.
 * Thread-safe.
 */
GK_API int gk_image_check(const void *bytes, size_t size, const gk_image_info *row,
                          char *why, size_t why_size);

/*
 * Chooses the image of `kernel` (and `variant`, "" or NULL when the kernel has
 * one only) that fits `dev` best, without loading anything: it reads the
 * index rows of (kernel, the device's backend, variant) when the whole
 * index has not been read, else the whole index (for an unnamed variant,
 * a listing or a failure's message). *index receives the row for
 * gk_archive_image/gk_archive_read.
 * Rules: cpu - the highest x86-64 level not above the device's level.
 * rocm - the processor must be the device's ("gfx90a"), and each feature
 * the image's target ID sets ("gfx90a:xnack-") must equal the device's
 * setting, a feature left out running with either (comgr's rule); failing
 * that, a generic target covering the processor (gfx11-generic for gfx1100
 * ... gfx1153). An image pinned to the device's settings beats one for
 * "any", and an exact processor beats a generic target. A rocm device that
 * names a generic target, or a feature its processor lacks, is GK_EINVAL.
 * cuda - NVIDIA's compatibility: an 'a' image (sm_90a) on exactly its
 * capability first, then an 'f' family image (sm_100f: major 10, minor >=
 * 0), then plain SASS of the device's major with the highest minor not
 * above the device's, then PTX (the highest compute_XY not above the
 * device) unless flags has GK_LOAD_NO_JIT. The driver version must be at
 * least the toolkit's (read from the row's toolchain, "nvcc 13.0.88") for
 * PTX, and of at least its major for SASS (CUDA's minor-version
 * compatibility); a device with driver_version 0 (a spec without
 * ",driver=") is not held to either. When nothing fits, the message says
 * what the archive has ("cuda sm_75..sm_120 (9 cubins) + compute_75 PTX
 * (CUDA 13.0)") and why the driver rules images out.
 * Rows of other backends are never chosen.
 * GK_ENOKERNEL when the archive has no such kernel/variant (or variant is
 * NULL/"" and the kernel has several): the message lists the kernels or
 * variants it has. GK_ENOIMAGE when it has, but none fits the device: the
 * message lists what it holds. GK_EINVAL for NULL arguments or a device
 * that is not valid (unknown backend, cpu arch not an x86-64 level).
 * GK_ECORRUPT, GK_ENOMEM, GK_EIO when the index rows it reads fail
 * (gk_archive_count).
 */
GK_API int gk_archive_select(gk_archive *ar, const gk_device *dev,
                             const char *kernel, const char *variant,
                             size_t *index);

/*
 * Signed archives (docs/archive.md, "Signatures"). An archive may carry
 * Ed25519 signatures (`gk sign`) over its digest: a SHA-256 of its logical
 * content - the metadata and every index row as gk_archive_image gives it,
 * image bytes through their SHA-256 - not of how it is stored, so
 * re-compressing an archive keeps its signatures valid, while any change to
 * the index or metadata breaks them. A changed image is refused when read
 * (GK_EHASH), its SHA-256 being signed. Keys are 32-byte Ed25519 public keys
 * (a `gk keygen` NAME.pub holds one in hex). Messages name a key by its
 * first 8 bytes in hex.
 */
#define GK_PUBLIC_KEY_BYTES 32
#define GK_DIGEST_BYTES 32

/* Open options for the *_ex opens. Zero-initialise it ({0}): all zeros is
 * the plain open. */
typedef struct gk_open_options {
  /* ntrusted_keys public keys, 32 bytes each, back to back (borrowed for
   * the call). When ntrusted_keys > 0 the open succeeds only if the archive
   * carries a valid signature by at least one of them; otherwise it fails
   * with GK_ESIGNATURE and gk_last_error() says why (not signed, signed by
   * another key, or contents changed after signing). */
  const uint8_t *trusted_keys;
  size_t ntrusted_keys;
  /* GK_OPEN_* bits. */
  unsigned flags;
} gk_open_options;

/* gk_archive_read also checks each image's own SHA-256 (the one the index
 * row and a signature name) after decompressing it, on top of the stored
 * bytes' SHA-256 it always checks first. Implied by trusted keys; `gk
 * verify` sets it. Costs a hash of the raw image per read. */
#define GK_OPEN_CHECK_IMAGES 1u

/* gk_archive_open / gk_archive_open_memory with options (opts NULL = the
 * plain call). Errors as theirs, plus GK_ESIGNATURE, and GK_EINVAL when
 * ntrusted_keys > 0 with trusted_keys NULL. *out is NULL on failure. */
GK_API int gk_archive_open_ex(const char *path, const gk_open_options *opts,
                              gk_archive **out);
GK_API int gk_archive_open_memory_ex(const void *bytes, size_t size,
                                     const gk_open_options *opts,
                                     gk_archive **out);

/* The archive's digest, what a signature signs (32 bytes). Reads the meta
 * table (not held in memory). GK_OK, GK_EINVAL, GK_ECORRUPT (meta missing,
 * not text, or keys or index rows repeated or out of order), GK_ENOMEM. */
GK_API int gk_archive_digest(gk_archive *ar, uint8_t digest[32]);

/* The public keys the archive carries signatures of, valid or not, sorted:
 * fills at most `cap` of keys (NULL when cap is 0) and sets *count to their
 * number (call again with more room if it exceeds cap). 0 for an unsigned
 * archive. Rows of the wrong shape are not counted. GK_ESIGNATURE when the
 * signature table itself is malformed. */
GK_API int gk_archive_signers(gk_archive *ar, uint8_t (*keys)[32], size_t cap,
                              size_t *count);

/* GK_OK when the archive carries a signature by `pubkey` that is valid for
 * its digest. GK_ESIGNATURE otherwise, the message saying which: not signed,
 * signed by other keys only (naming one), or the signature does not match
 * (the index or metadata changed after signing). Errors of
 * gk_archive_digest. Image bytes are not read: they are checked by
 * gk_archive_read against the signed SHA-256. */
GK_API int gk_archive_verify_signature(gk_archive *ar, const uint8_t pubkey[32]);

/* ------------------------------------------------------------------------ */
/* Modules                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct gk_module gk_module;

/*
 * Selects, decompresses, verifies (SHA-256, ELF header) and loads the best
 * image of `kernel`/`variant` for `dev` (NULL: the device gk_device_detect() finds, CUDA where there is one; a load never falls back to another backend, so pass gk_device_parse("cpu", ...) to get a C function).
 * CPU images are shared objects loaded from memory (memfd_create + dlopen
 * of /proc/self/fd/N, RTLD_NOW | RTLD_LOCAL); no file is written. Each
 * loaded module holds one file descriptor (the memfd) until unloaded. Where
 * memfd_create does not exist (macOS) the image is written to a file
 * created 0600 in $TMPDIR, dlopen()ed and unlinked at once. A cpu
 * device that claims more than this CPU has (gk_device_parse("cpu:x86-64-v4")
 * on a v3 machine) is refused with GK_ENODEVICE rather than risking an
 * illegal instruction. ROCm images (code objects) are loaded into an HSA
 * executable for GPU agent dev->index (hsa_init, reader from memory, load,
 * freeze); the image must also fit the GPU that is really there, so a
 * device described by a spec that is not present is GK_ENODEVICE, as is a
 * machine without an AMD GPU (the message names hsa_init's status). The
 * module holds an hsa_init reference and its executable until unloaded.
 * CUDA images are loaded into the primary context of CUDA device
 * dev->index (cuDevicePrimaryCtxRetain, made current only during the load):
 * cuLibraryLoadData (driver 12.0+) or cuModuleLoadDataEx, every entry point
 * of the row resolved at once; again the image must fit the GPU and driver
 * really there (GK_ENODEVICE otherwise, naming both), and a driver that
 * refuses the image gives GK_EDRIVER in words ("PTX from CUDA 13.0 needs a
 * driver >= 13.0; this driver is 12.4", the JIT's log for bad PTX). The
 * module holds a primary-context reference until unloaded.
 * Dynamic shared memory (CUDA, ROCm): an entry whose launch has `shared`
 * > 0 is checked at load against the device: its static shared memory
 * (gk_kernel_info's group_segment_size) plus `shared` must fit what the
 * device gives one block (CUDA: CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_
 * PER_BLOCK_OPTIN, 99 KB on sm_86, 227 KB on sm_90; ROCm: the size of the
 * agent's group segment, the LDS), else GK_EINVAL with a message naming
 * the entry, the bytes, the device and what to do. On CUDA a function
 * whose static + dynamic shared memory is above 48 KB is opted in once, at
 * load (cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
 * shared)), so its CUfunction launches with the row's `shared` from
 * gk_module_launch or from the caller's own cuLaunchKernel alike.
 * The module does not reference the archive: it may
 * outlive it. *out is NULL on failure. Errors: GK_EINVAL (also: the
 * launch's shared memory does not fit the device), those of
 * gk_archive_select and gk_archive_read, GK_ENODEVICE, GK_EDRIVER (dlopen
 * failed, or the driver refused the image or the opt-in: the message names
 * the call and its status). Detail in gk_archive_errmsg(ar).
 */
GK_API int gk_module_load(gk_archive *ar, const gk_device *dev,
                          const char *kernel, const char *variant,
                          gk_module **out);

/* The row the module was loaded from (strings owned by the module).
 * NULL when m is NULL. */
GK_API const gk_image_info *gk_module_info(const gk_module *m);

/* The device the module was loaded for (the detected one when
 * gk_module_load got NULL). NULL when m is NULL. */
GK_API const gk_device *gk_module_device(const gk_module *m);

/*
 * Address of an entry point. CPU: the function (cast it to the kernel's C
 * signature, e.g. gk_qmatmul_fn). ROCm: the kernel object handle of kernel
 * `name` (the "NAME.kd" descriptor), cast to a pointer: what an AQL dispatch
 * packet's kernel_object field takes, as (uint64_t)(uintptr_t). CUDA: the
 * CUfunction of entry `name` (one the row lists) in the device's primary
 * context, for cuLaunchKernel with that context current (cudaSetDevice or
 * cuCtxSetCurrent); block, grid, dynamic shared memory (opted in at load
 * when past 48 KB) and parameters are in the row's `launch`
 * (docs/kernels.md, "Launching on GPUs"). Vulkan: a
 * const gk_vk_entry * (gk_vulkan.h: the VkPipeline and its layouts). WGSL:
 * the shader text (const char *, NUL-terminated, owned by the module) when
 * it declares entry point `name`. Metal (Apple): the
 * id<MTLComputePipelineState>, borrowed. NULL when absent or when m or
 * name is NULL.
 */
GK_API void *gk_module_symbol(const gk_module *m, const char *name);

/*
 * What a launch of one entry point needs besides its address. `object` is
 * gk_module_symbol's value as an integer (ROCm: the kernel object handle for
 * the AQL packet; CUDA: the CUfunction; CPU: the function's address). The
 * sizes are in bytes and come from the code object's kernel descriptor
 * (ROCm) or cuFuncGetAttribute/cuFuncGetParamInfo (CUDA: static shared
 * memory, local memory per thread, and the parameter block, 0 when the
 * driver is older than 12.4): the kernel argument
 * segment (size and alignment of the buffer the dispatch points to), the
 * static group segment (LDS, "shared memory") and the private segment
 * (scratch) per work-item. CPU modules report the sizes as 0. A launch's
 * shared memory per block is group_segment_size plus its dynamic part,
 * gk_launch_dims.shared (what gk_module_load checked against the device).
 */
typedef struct gk_kernel_info {
  uint64_t object;
  uint32_t kernarg_size;
  uint32_t kernarg_align;
  uint32_t group_segment_size;
  uint32_t private_segment_size;
} gk_kernel_info;

/* Fills *out for entry point `name` of the module. GK_OK, GK_EINVAL (an
 * argument is NULL), GK_ENOSYMBOL (no such entry point) or GK_EDRIVER (the
 * driver would not answer). Thread-safe like gk_module_symbol. */
GK_API int gk_module_kernel_info(const gk_module *m, const char *name,
                                 gk_kernel_info *out);

/* Unloads the module; its symbols become invalid. NULL is a no-op. (An
 * image that glibc keeps mapped after dlclose - linked -z nodelete, or
 * with STB_GNU_UNIQUE symbols - keeps its memfd open for the life of the
 * process, so that its /proc/self/fd name can never alias a later image.) */
GK_API void gk_module_unload(gk_module *m);

/* ------------------------------------------------------------------------ */
/* Load options and driver hooks (shared by the GPU backends)                 */
/* ------------------------------------------------------------------------ */

/* Flags for the *_ex functions. */
#define GK_LOAD_NO_JIT 0x1u /* never choose an image the driver must compile
                               (CUDA PTX): some deployments forbid JIT */

/* gk_archive_select / gk_module_load with flags (0 = the plain call). */
GK_API int gk_archive_select_ex(gk_archive *ar, const gk_device *dev,
                                const char *kernel, const char *variant,
                                unsigned flags, size_t *index);
GK_API int gk_module_load_ex(gk_archive *ar, const gk_device *dev,
                             const char *kernel, const char *variant,
                             unsigned flags, gk_module **out);

/*
 * Why each image of `kernel`/`variant` was or was not chosen for `dev`: one
 * candidate per index row of that variant (every backend), in index order.
 * Fills at most `cap` entries of `out` and sets *count to the number of
 * candidates (which may exceed cap: call again with a larger array).
 * Errors as gk_archive_select except GK_ENOIMAGE: a device that nothing
 * fits still gets its candidates, none with `fits` set.
 */
typedef struct gk_candidate {
  size_t index;  /* the row, for gk_archive_image */
  int fits;      /* 1 when the image can run on the device */
  int chosen;    /* 1 for the row gk_archive_select_ex would return */
  char why[160]; /* the rule's reason: "needs x86-64-v4, device is x86-64-v3" */
} gk_candidate;
GK_API int gk_archive_explain(gk_archive *ar, const gk_device *dev,
                              const char *kernel, const char *variant,
                              unsigned flags, gk_candidate *out, size_t cap,
                              size_t *count);

/*
 * Driver resolver hook (volkInitializeCustom's idea). libgk normally finds a
 * backend's driver with dlopen (libcuda.so.1, libhsa-runtime64.so.1,
 * libvulkan.so.1) and resolves its entry points by name. A test that must
 * stand in for a driver that cannot exist on the machine (no GPU) installs a
 * resolver instead: libgk then asks `fn(ctx, "cuInit")` etc. for every entry
 * point and never calls dlopen for that backend. NULL fn restores dlopen.
 * CUDA asks first for "cuGetProcAddress_v2" (then "cuGetProcAddress") and,
 * when given one, resolves every entry point through it, at the ABI version
 * libgk was written for; otherwise by exported name ("cuCtxPushCurrent_v2").
 * Not thread-safe: install before any other call for that backend. A
 * resolver is a TEST DOUBLE for the driver; production code never sets one.
 */
typedef void *(*gk_resolver_fn)(void *ctx, const char *symbol);
GK_API int gk_driver_set_resolver(gk_backend backend, gk_resolver_fn fn,
                                  void *ctx);

/* ------------------------------------------------------------------------ */
/* Launching GPU kernels (docs/kernels.md, "Launching on GPUs")              */
/* ------------------------------------------------------------------------ */

/*
 * Every GPU row's `launch` JSON says how to call its entry points: the
 * threads of one block (workgroup), the blocks (workgroups) per axis as
 * count expressions over the call's integer parameters and the device's
 * properties, the dynamic shared memory, and the parameters in signature
 * order with their types. libgk reads it, so a program launches a kernel
 * without writing a grid, a block or a parameter layout.
 *
 * Count expressions: integers, parameter names, the device properties
 * dev.compute_units (streaming multiprocessors on CUDA, compute units on
 * ROCm) and dev.max_threads (most threads in one block or workgroup),
 * + - * / and parentheses, evaluated in 64-bit integers with '/' rounding
 * UP ("n / 8" blocks of 8 cover n). Overflow, division by a number <= 0 or
 * of a negative one, unknown names, a device property the device does not
 * report, nesting deeper than 32 and expressions longer than 255 bytes
 * are errors, never a crash or a wrong count. A count below 1 becomes 1
 * and one above the device's limit becomes the limit: every kernel loops
 * over what a smaller grid leaves.
 *
 * Failures here have no archive to carry their message: it is this
 * thread's gk_last_error(), naming the kernel and the parameter
 * ("launch of 'qmatmul' (cuda sm_86): parameter 4 'm' is i64; an f32 was
 * given").
 */

/* A parameter's type: a device pointer (CUdeviceptr, an HSA pointer as an
 * integer, or a gk_vk_buffer * on Vulkan), int64_t, int32_t or float. */
typedef enum gk_arg_type {
  GK_ARG_PTR = 1,
  GK_ARG_I64 = 2,
  GK_ARG_I32 = 3,
  GK_ARG_F32 = 4
} gk_arg_type;

/* A tagged parameter value. Build them with gk_arg_ptr() and friends, in
 * signature order. Every member of `v` starts at the same address, so
 * &args[i].v is what CUDA's kernelParams[i] points at. */
typedef struct gk_arg {
  gk_arg_type type;
  union {
    uint64_t ptr;
    int64_t i64;
    int32_t i32;
    float f32;
  } v;
} gk_arg;

static inline gk_arg gk_arg_ptr(uint64_t device_address) {
  gk_arg a;
  a.type = GK_ARG_PTR;
  a.v.ptr = device_address;
  return a;
}
static inline gk_arg gk_arg_i64(int64_t x) {
  gk_arg a;
  a.type = GK_ARG_I64;
  a.v.i64 = x;
  return a;
}
static inline gk_arg gk_arg_i32(int32_t x) {
  gk_arg a;
  a.type = GK_ARG_I32;
  a.v.ptr = 0;
  a.v.i32 = x;
  return a;
}
static inline gk_arg gk_arg_f32(float x) {
  gk_arg a;
  a.type = GK_ARG_F32;
  a.v.ptr = 0;
  a.v.f32 = x;
  return a;
}

/* Most parameters a launch row may declare. */
#define GK_LAUNCH_MAX_PARAMS 16
/* Largest block of scalars (Vulkan push constants, WGSL uniform, Metal
 * setBytes): Vulkan's guaranteed maxPushConstantsSize. */
#define GK_LAUNCH_MAX_SCALAR_BYTES 128

/*
 * What a device allows, as count expressions see it. 0 in compute_units or
 * max_threads means "not known": an expression naming it then fails.
 * max_groups is the most blocks (workgroups) per axis a launch may have.
 */
typedef struct gk_device_limits {
  int64_t compute_units; /* dev.compute_units */
  int64_t max_threads;   /* dev.max_threads */
  uint32_t max_groups[3];
} gk_device_limits;

/* The limits of a device known without its driver (a spec such as
 * "cuda:sm_86"): the backend's documented grid limits (CUDA 2^31-1 x 65535
 * x 65535; ROCm 2^31-1 per axis (the packet's grid counts work-items in 32
 * bits, which gk_launch_eval also respects); Vulkan and WGSL 65535, the
 * minimum every device allows; Metal 2^31-1) and max_threads 1024 (CUDA,
 * ROCm) or 256 (Vulkan's and WebGPU's guaranteed minimum); compute_units
 * unknown (0). GK_OK, or GK_EINVAL for NULL or a backend without launches
 * (cpu). Thread-safe. */
GK_API int gk_device_limits_known(const gk_device *dev, gk_device_limits *out);

/* The limits of the device a GPU module was loaded on, asked of its driver
 * at load (CUDA: multiprocessor count, max threads per block, max grid
 * dimensions; Vulkan: maxComputeWorkGroupInvocations and
 * maxComputeWorkGroupCount, no compute units in core Vulkan; ROCm, Metal,
 * WGSL for now: gk_device_limits_known). GK_OK or
 * GK_EINVAL (NULL, or a cpu module). Thread-safe. */
GK_API int gk_module_limits(const gk_module *m, gk_device_limits *out);

/* A row's launch for one entry point, parsed and checked: every count
 * expression compiled, every name resolved against the row's parameters
 * and the device properties. Immutable: usable from several threads. */
typedef struct gk_launch gk_launch;

/*
 * Parses row->launch for entry `entry` of row->backend (cuda and rocm:
 * block, grid, shared, params; vulkan: local_size, groups, bindings,
 * push_constants; wgsl: workgroup_size, groups, bindings, params; metal:
 * threads_per_threadgroup, groups, buffers, params). A launch object that
 * holds an object keyed by the entry's name gives that one; otherwise one
 * object describes every entry of the row. `entry` NULL: the row's only
 * launch. What it refuses, a launch at run time would refuse too: the
 * recipe engine calls it on every section when it reads a recipe. That
 * includes a `shared` above what any GPU of the backend gives one block
 * (CUDA 232448 bytes, sm_90's and sm_100's opt-in limit; ROCm 327680, the
 * LDS of gfx1250); the limit of one device is checked by gk_module_load.
 * On failure *out is NULL; GK_EINVAL (NULL argument, a cpu row), or
 * GK_ECORRUPT (not JSON, a field missing or of the wrong shape, a bad
 * expression), with gk_last_error() saying which field and why. Free with
 * gk_launch_free.
 */
GK_API int gk_launch_parse(const gk_image_info *row, const char *entry,
                           gk_launch **out);
/* NULL is a no-op. */
GK_API void gk_launch_free(gk_launch *L);

/* The parameters in signature order: on Vulkan, WGSL and Metal the
 * buffers (pointers) then the scalars, which is the C signature's order
 * for every kernel of the set; a scalar sized u32 in the row is an i64
 * (int64_t in C). 0 for NULL. */
GK_API size_t gk_launch_nparams(const gk_launch *L);
/* Parameter i's name (owned by L) and type. GK_OK, GK_EINVAL or GK_ERANGE. */
GK_API int gk_launch_param(const gk_launch *L, size_t i, const char **name,
                           gk_arg_type *type);

/* A launch, evaluated for one call. */
typedef struct gk_launch_dims {
  uint32_t block[3];   /* threads per block / workgroup size, from the row */
  uint32_t grid[3];    /* blocks / workgroups per axis: what cuLaunchKernel's
                          grid, an AQL packet's grid_size / workgroup size,
                          vkCmdDispatch and WebGPU's dispatchWorkgroups take */
  uint32_t shared;     /* dynamic shared memory, bytes (cuda, rocm): the
                          row's `shared`, cuLaunchKernel's sharedMemBytes,
                          added to the AQL packet's group segment */
  uint32_t nbuffers;   /* vulkan, wgsl, metal: the buffers bound, in order */
  uint32_t scalar_size; /* bytes of `scalars` (0 on cuda and rocm) */
  /* vulkan: the push constants; wgsl: the uniform buffer's bytes; metal:
   * what setBytes takes. Little-endian, at the row's offsets. */
  unsigned char scalars[GK_LAUNCH_MAX_SCALAR_BYTES];
} gk_launch_dims;

/*
 * Evaluates L for one call: checks that args has exactly the launch's
 * parameters in order and type (an i64 given for a u32 scalar must fit 32
 * bits unsigned), evaluates the counts with `lim` (NULL: the backend's
 * gk_device_limits_known) and clamps them. GK_OK, or GK_EINVAL with
 * gk_last_error() naming the parameter or the expression and the fault.
 * Thread-safe; allocates nothing.
 */
GK_API int gk_launch_eval(const gk_launch *L, const gk_device_limits *lim,
                          const gk_arg *args, size_t nargs,
                          gk_launch_dims *out);

/* gk_launch_eval for entry `entry` of a loaded GPU module, with the
 * launch parsed at load and the module's device limits. GK_ENOSYMBOL for
 * an entry the row does not list, GK_ECORRUPT when its launch did not
 * parse (gk_last_error() says why), else as gk_launch_eval. */
GK_API int gk_module_launch_dims(const gk_module *m, const char *entry,
                                 const gk_arg *args, size_t nargs,
                                 gk_launch_dims *out);

/* Options of gk_module_launch; NULL or zero-initialised ({0}) is the
 * plain launch. */
typedef struct gk_launch_options {
  /* CUDA: the CUstream (NULL: the legacy default stream); it must belong
   * to the module's context (the device's primary context). ROCm: the
   * hsa_queue_t * of the module's agent to write the packet to (NULL: a
   * queue the module creates at its first launch and keeps until
   * unloaded). Ignored elsewhere. */
  void *stream;
  /* ROCm: the handle of the hsa_signal_t the packet decrements when the
   * kernel finishes (its completion_signal; 0: none). Ignored elsewhere
   * (CUDA launches are asynchronous on the stream; Vulkan dispatches
   * finish before gk_module_launch returns). */
  uint64_t signal;
  /* Replaces the row's counts (clamped alike) when not NULL. */
  const uint32_t *grid;
} gk_launch_options;

/*
 * Launches entry `entry` of a loaded GPU module with args in signature
 * order (gk_module_launch_dims' checks), geometry from the row:
 *   cuda   cuLaunchKernel on opts->stream, the module's context current
 *          for the call (pushed and popped); asynchronous as CUDA is.
 *   rocm   an AQL kernel dispatch packet on opts->stream's queue (or the
 *          module's own), with the barrier bit (in order, as a stream)
 *          and opts->signal as completion signal; asynchronous. The
 *          kernarg segment (the kernel descriptor's size: the args at
 *          their natural alignment, code object v5/v6 hidden block counts,
 *          group sizes and grid dimensions, zeros elsewhere) is one of 64
 *          slots the module keeps in the agent's kernarg memory, reused 64
 *          launches of the module later: no more than 64 launches of one
 *          module may be unfinished at once (on the module's own queue
 *          libgk waits for the packet processor; on the caller's, wait on
 *          the signals). Finish every launch before unloading.
 *   vulkan gk_vk_dispatch with the buffers (args' pointers are
 *          gk_vk_buffer *, gk_arg_buffer in gk_vulkan.h) and the push
 *          constants from the scalars; returns when the dispatch is done.
 *   metal  NOT YET: GK_EINVAL (gk_module_launch_dims gives the
 *          threadgroups and the setBytes block).
 * WGSL modules are not driven by libgk (use gk_module_launch_dims: grid
 * is what dispatchWorkgroups takes, scalars the uniform buffer); cpu
 * modules are called directly (gk_module_symbol).
 * GK_OK; GK_EINVAL (arguments, or a wgsl or cpu module); GK_ENOSYMBOL;
 * GK_ECORRUPT (the row's launch); GK_EDRIVER (the driver refused: the
 * message names the call and its status); GK_ENOMEM. The message is this
 * thread's gk_last_error(). Thread-safe as the module is.
 */
GK_API int gk_module_launch(const gk_module *m, const char *entry,
                            const gk_arg *args, size_t nargs,
                            const gk_launch_options *opts);

/*
 * Checks a paged KV cache's block table on the host, by the rule the
 * kernels apply (docs/kernels.md, "paged_attention"): sequence s is valid
 * when 0 <= seq_lens[s], ceil(seq_lens[s] / page) <= max_pages, each of
 * its first ceil(seq_lens[s] / page) entries block_table[s * max_pages + j]
 * is in [0, n_pages), and seq_lens[s] >= min_len (0 for paged_attention;
 * kv_append's sq before a kv_append call). Entries past a sequence's pages
 * are not looked at (padding such as -1 is fine).
 * Returns GK_OK when every sequence is valid (*bad_seq = -1, msg ""), or
 * GK_EINVAL with *bad_seq = the first invalid sequence and in msg a
 * sentence naming it and the entry or length at fault, e.g. "sequence 3:
 * block_table[3][2] = 917 (its page 2, tokens 128 .. 191) is not a page
 * of the pool of 512 pages". Arguments
 * that are themselves wrong (n_seqs, max_pages, n_pages or min_len < 0,
 * page <= 0, a NULL table with n_seqs > 0) give GK_EINVAL with *bad_seq =
 * -1. bad_seq and msg may be NULL; msg gets at most msg_size bytes, always
 * NUL-terminated when msg_size > 0. Reads only its inputs; thread-safe.
 */
GK_API int gk_paged_check(const int32_t *block_table, const int32_t *seq_lens,
                          int64_t n_seqs, int64_t max_pages, int64_t n_pages,
                          int64_t page, int64_t min_len, int64_t *bad_seq,
                          char *msg, size_t msg_size);

#ifdef __cplusplus
}
#endif

/* The kernels' CPU signatures (gk_qmatmul_fn ...). */
#include "gk_kernels.h"

#endif /* GK_H */
