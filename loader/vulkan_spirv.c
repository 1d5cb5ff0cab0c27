/*
 * vulkan_spirv.c - the Vulkan backend's descriptor (vulkan.c detects,
 * vulkan_module.c loads) and what libgk reads from a SPIR-V module without
 * a driver: the header check `gk verify` and every load run, the Vulkan
 * version a target names (the selection rule), and the reflection the
 * loader builds its pipeline layout from (entry points, local size,
 * storage buffers of set 0, push-constant size).
 *
 * The module is untrusted input, like every image: it is read word by word
 * with every instruction's length checked against the end, ids checked
 * against the header's bound, and nothing is allocated on its word beyond
 * a table of `bound` entries (bound is capped). Only little-endian modules
 * are accepted: every SPIR-V producer we build with writes them, and a
 * byte-swapped one is refused by name rather than misread.
 *
 * Nothing here needs <vulkan/vulkan.h>: it is built whether or not the
 * Vulkan headers were found, so verify and select work on any host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gk_internal.h"

enum {
  SPV_MAGIC = 0x07230203u,
  SPV_MAX_BOUND = 1u << 22, /* Vulkan's limit on ids (maxResultId-ish) */
  OP_CAPABILITY = 17,
  CAP_MATRIX = 0,
  CAP_SHADER = 1,
  OP_ENTRY_POINT = 15,
  OP_EXECUTION_MODE = 16,
  OP_TYPE_INT = 21,
  OP_TYPE_FLOAT = 22,
  OP_TYPE_VECTOR = 23,
  OP_TYPE_STRUCT = 30,
  OP_TYPE_POINTER = 32,
  OP_VARIABLE = 59,
  OP_DECORATE = 71,
  OP_MEMBER_DECORATE = 72,
  EXEC_GLCOMPUTE = 5,
  MODE_LOCAL_SIZE = 17,
  MODE_LOCAL_SIZE_ID = 38,
  DEC_BLOCK = 2,
  DEC_BUFFER_BLOCK = 3,
  DEC_BINDING = 33,
  DEC_DESCRIPTOR_SET = 34,
  DEC_OFFSET = 35,
  SC_UNIFORM_CONSTANT = 0,
  SC_UNIFORM = 2,
  SC_PUSH_CONSTANT = 9,
  SC_STORAGE_BUFFER = 12
};

static uint32_t rd32(const unsigned char *p) {
  return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* ---- versions and the selection rule ---------------------------------- */

int gk__vk_version_parse(const char *s, int *major, int *minor) {
  const char *p;
  if (!s || strncmp(s, "vulkan", 6) != 0) return 0;
  p = s + 6;
  if (p[0] < '1' || p[0] > '9' || p[1] != '.' || p[2] < '0' || p[2] > '9')
    return 0;
  if (p[3] != '\0' && !(p[3] >= '0' && p[3] <= '9' && p[4] == '\0')) return 0;
  *major = p[0] - '0';
  *minor = atoi(p + 2);
  return 1;
}

/* The newest SPIR-V version (0x00MMmm00) a Vulkan version consumes:
 * 1.0 -> 1.0, 1.1 -> 1.3, 1.2 -> 1.5, 1.3 and later -> 1.6. */
static uint32_t spirv_max_for(int major, int minor) {
  if (major > 1 || minor >= 3) return 0x00010600u;
  if (minor == 2) return 0x00010500u;
  if (minor == 1) return 0x00010300u;
  return 0x00010000u;
}

static int valid(const gk_device *dev, char *why, size_t why_size) {
  int ma, mi;
  if (gk__vk_version_parse(dev->arch, &ma, &mi)) return 1;
  gk__say(why, why_size,
      "has arch '%s'; a vulkan device's arch is the Vulkan version it "
      "supports, like vulkan1.3",
      dev->arch);
  return 0;
}

/* A SPIR-V image built for Vulkan X.Y runs on a device of version >= X.Y
 * (SPIR-V is not per GPU); the newest such image is the best, as it may use
 * what the older versions lack. */
static int fits(const gk_device *dev, const gk_image_info *row, unsigned flags,
                long *score, char *why, size_t why_size) {
  int hma, hmi, nma, nmi;
  (void)flags; /* SPIR-V is always compiled by the driver: no JIT choice */
  if (strcmp(row->format, "spirv") != 0) {
    gk__say(why, why_size, "format '%s' is not SPIR-V", row->format);
    return 0;
  }
  if (!gk__vk_version_parse(row->target, &nma, &nmi)) {
    gk__say(why, why_size, "unknown vulkan target '%s' (expected like vulkan1.1)",
        row->target);
    return 0;
  }
  if (!gk__vk_version_parse(dev->arch, &hma, &hmi)) {
    gk__say(why, why_size, "device arch '%s' is not a Vulkan version", dev->arch);
    return 0;
  }
  if (nma > hma || (nma == hma && nmi > hmi)) {
    gk__say(why, why_size, "needs %s, device has %s", row->target, dev->arch);
    return 0;
  }
  *score = nma * 100 + nmi;
  gk__say(why, why_size, "%s runs on %s", row->target, dev->arch);
  return 1;
}

/* ---- the header -------------------------------------------------------- */

/* SPIR-V header: magic, version (not newer than row's target accepts, when
 * row is not NULL), id bound, reserved word. GK_OK or GK_EFORMAT + why. */
static int spirv_check(const void *bytes, size_t size, const gk_image_info *row,
                       const gk__entries *e, char *why, size_t why_size) {
  const unsigned char *b = bytes;
  int ma, mi;
  if (size < 20 || size % 4 != 0) {
    gk__say(why, why_size,
        "the image is %zu bytes, not a SPIR-V module (a header of 5 words, "
        "then whole words)",
        size);
    return GK_EFORMAT;
  }
  uint32_t magic = rd32(b), version = rd32(b + 4), bound = rd32(b + 12);
  if (magic != SPV_MAGIC) {
    gk__say(why, why_size,
        magic == 0x03022307u
            ? "the SPIR-V module is big-endian; libgk reads little-endian "
              "modules only"
            : "the image is not SPIR-V (magic 0x%08x, expected 0x07230203)",
        (unsigned)magic);
    return GK_EFORMAT;
  }
  if ((version & 0xff0000ffu) != 0 || version < 0x00010000u) {
    gk__say(why, why_size, "the SPIR-V version word 0x%08x is malformed",
        (unsigned)version);
    return GK_EFORMAT;
  }
  if (bound == 0 || bound > SPV_MAX_BOUND) {
    gk__say(why, why_size, "the SPIR-V id bound %u is out of range (1..%u)",
        (unsigned)bound, (unsigned)SPV_MAX_BOUND);
    return GK_EFORMAT;
  }
  if (rd32(b + 16) != 0) {
    gk__say(why, why_size, "the SPIR-V header's reserved word is not 0");
    return GK_EFORMAT;
  }
  if (row) {
    if (!gk__vk_version_parse(row->target, &ma, &mi)) {
      gk__say(why, why_size, "vulkan target '%s' is not a Vulkan version like "
          "vulkan1.1", row->target);
      return GK_EFORMAT;
    }
    if (version > spirv_max_for(ma, mi)) {
      gk__say(why, why_size,
          "the module is SPIR-V %u.%u, newer than %s accepts (%u.%u)",
          (unsigned)(version >> 16), (unsigned)(version >> 8 & 0xff),
          row->target, (unsigned)(spirv_max_for(ma, mi) >> 16),
          (unsigned)(spirv_max_for(ma, mi) >> 8 & 0xff));
      return GK_EFORMAT;
    }
  }
  return GK_OK;
}

/* ---- reflection --------------------------------------------------------- */

/* What we learn of each id. */
typedef struct idinfo {
  uint16_t op;        /* the instruction that defined it */
  uint16_t flags;     /* F_* */
  uint32_t a, b;      /* op-specific: pointer (class, pointee), scalar width,
                         vector (component, count), variable (type, class) */
  uint32_t set, binding;
  uint32_t struct_at; /* word offset of an OpTypeStruct, for its members */
} idinfo;

enum { F_SET = 1, F_BINDING = 2, F_BLOCK = 4, F_BUFFER_BLOCK = 8 };

/* Bytes of a push-constant member type: 32/64-bit scalars and vectors. */
static uint32_t type_size(const idinfo *ids, uint32_t bound, uint32_t t) {
  if (t == 0 || t >= bound) return 0;
  if (ids[t].op == OP_TYPE_INT || ids[t].op == OP_TYPE_FLOAT)
    return ids[t].a / 8;
  if (ids[t].op == OP_TYPE_VECTOR) {
    uint32_t c = ids[t].a;
    if (c == 0 || c >= bound) return 0;
    if (ids[c].op != OP_TYPE_INT && ids[c].op != OP_TYPE_FLOAT) return 0;
    return ids[c].a / 8 * ids[t].b;
  }
  return 0;
}

/* A module being reflected: its words, its ids, and where a failure is
 * worded. */
typedef struct spv {
  const unsigned char *b;
  size_t nwords;
  uint32_t bound;
  idinfo *ids;
  char *why;
  size_t why_size;
} spv;

#define ARG(i) ((i) < len ? rd32(in + 4 * (i)) : 0)
#define ID_OK(x) ((x) != 0 && (x) < m->bound)

/* OpEntryPoint of a GLCompute shader at `in` (len words): its name and id. */
static int read_entry_point(const spv *m, const unsigned char *in, uint32_t len,
                            gk__spirv_info *out) {
  if (out->nentries == GK__SPIRV_MAX_ENTRIES) {
    gk__say(m->why, m->why_size, "the SPIR-V module has more than %d entry points",
        GK__SPIRV_MAX_ENTRIES);
    return GK_EFORMAT;
  }
  gk__spirv_entry *e = &out->entries[out->nentries];
  /* The name is a NUL-terminated string inside the instruction. */
  size_t maxc = (size_t)(len - 3) * 4, n = 0;
  const char *name = (const char *)(in + 12);
  while (n < maxc && name[n]) n++;
  if (n == maxc || n >= sizeof e->name) {
    gk__say(m->why, m->why_size, "a SPIR-V entry point name is unterminated or "
        "longer than %zu bytes", sizeof e->name - 1);
    return GK_EFORMAT;
  }
  memcpy(e->name, name, n);
  e->name[n] = '\0';
  e->id = ARG(2);
  out->nentries++;
  return GK_OK;
}

/* The instruction at word w (len words, op) into m->ids and out: types,
 * variables, decorations, entry points and their local sizes;
 * capabilities beyond the core are refused. */
static int read_instruction(spv *m, size_t w, uint32_t op, uint32_t len,
                            gk__spirv_info *out) {
  const unsigned char *in = m->b + 4 * w;
  idinfo *ids = m->ids;
  switch (op) {
  case OP_CAPABILITY:
    /* libgk creates devices with no optional feature enabled: a module
     * that declares more than the core capabilities would be invalid
     * usage there, so it is refused by name instead. */
    if (len >= 2 && ARG(1) != CAP_MATRIX && ARG(1) != CAP_SHADER) {
      gk__say(m->why, m->why_size, "the SPIR-V module needs capability %u, beyond the "
          "core Shader capability libgk's devices enable", (unsigned)ARG(1));
      return GK_EFORMAT;
    }
    break;
  case OP_ENTRY_POINT:
    if (len >= 4 && ARG(1) == EXEC_GLCOMPUTE) return read_entry_point(m, in, len, out);
    break;
  case OP_EXECUTION_MODE:
    if (len >= 6 && ARG(2) == MODE_LOCAL_SIZE) {
      for (int i = 0; i < out->nentries; i++)
        if (out->entries[i].id == ARG(1)) {
          out->entries[i].local_size[0] = ARG(3);
          out->entries[i].local_size[1] = ARG(4);
          out->entries[i].local_size[2] = ARG(5);
        }
    } else if (len >= 3 && ARG(2) == MODE_LOCAL_SIZE_ID) {
      gk__say(m->why, m->why_size, "the SPIR-V module sets its local size from "
          "specialization constants (LocalSizeId), which libgk does not "
          "resolve");
      return GK_EFORMAT;
    }
    break;
  case OP_TYPE_INT:
  case OP_TYPE_FLOAT:
    if (len >= 3 && ID_OK(ARG(1))) {
      ids[ARG(1)].op = (uint16_t)op;
      ids[ARG(1)].a = ARG(2);
    }
    break;
  case OP_TYPE_VECTOR:
    if (len >= 4 && ID_OK(ARG(1))) {
      ids[ARG(1)].op = (uint16_t)op;
      ids[ARG(1)].a = ARG(2);
      ids[ARG(1)].b = ARG(3);
    }
    break;
  case OP_TYPE_STRUCT:
    if (len >= 2 && ID_OK(ARG(1))) {
      ids[ARG(1)].op = (uint16_t)op;
      ids[ARG(1)].struct_at = (uint32_t)w;
    }
    break;
  case OP_TYPE_POINTER:
    if (len >= 4 && ID_OK(ARG(1))) {
      ids[ARG(1)].op = (uint16_t)op;
      ids[ARG(1)].a = ARG(2);
      ids[ARG(1)].b = ARG(3);
    }
    break;
  case OP_VARIABLE:
    if (len >= 4 && ID_OK(ARG(2))) {
      ids[ARG(2)].op = (uint16_t)op;
      ids[ARG(2)].a = ARG(1);
      ids[ARG(2)].b = ARG(3);
    }
    break;
  case OP_DECORATE:
    if (len >= 3 && ID_OK(ARG(1))) {
      idinfo *t = &ids[ARG(1)];
      switch (ARG(2)) {
      case DEC_DESCRIPTOR_SET: t->set = ARG(3); t->flags |= F_SET; break;
      case DEC_BINDING: t->binding = ARG(3); t->flags |= F_BINDING; break;
      case DEC_BLOCK: t->flags |= F_BLOCK; break;
      case DEC_BUFFER_BLOCK: t->flags |= F_BUFFER_BLOCK; break;
      default: break;
      }
    }
    break;
  default: break;
  }
  return GK_OK;
}

/* The first pass, over every instruction; then every compute entry point
 * must have a local size. */
static int read_module(spv *m, gk__spirv_info *out) {
  for (size_t w = 5; w < m->nwords;) {
    uint32_t word = rd32(m->b + 4 * w);
    uint32_t op = word & 0xffff, len = word >> 16;
    if (len == 0 || len > m->nwords - w) {
      gk__say(m->why, m->why_size, "SPIR-V instruction at word %zu runs past the end",
          w);
      return GK_EFORMAT;
    }
    int rc = read_instruction(m, w, op, len, out);
    if (rc != GK_OK) return rc;
    w += len;
  }
  if (out->nentries == 0) {
    gk__say(m->why, m->why_size, "the SPIR-V module has no compute (GLCompute) entry "
        "point");
    return GK_EFORMAT;
  }
  for (int i = 0; i < out->nentries; i++) {
    const uint32_t *ls = out->entries[i].local_size;
    if (!ls[0] || !ls[1] || !ls[2]) {
      gk__say(m->why, m->why_size, "SPIR-V entry point '%s' declares no local size",
          out->entries[i].name);
      return GK_EFORMAT;
    }
  }
  return GK_OK;
}

/* Descriptors (storage and uniform buffers of set 0, bindings 0..n-1) and
 * the push-constant block's type (*push_type, 0: none), from the
 * variables. */
static int read_bindings(const spv *m, gk__spirv_info *out, uint32_t *push_type) {
  const idinfo *ids = m->ids;
  *push_type = 0;
  for (uint32_t id = 1; id < m->bound; id++) {
    const idinfo *v = &ids[id];
    if (v->op != OP_VARIABLE) continue;
    uint32_t sc = v->b, ptr = v->a;
    uint32_t pointee = ID_OK(ptr) && ids[ptr].op == OP_TYPE_POINTER ? ids[ptr].b : 0;
    if (sc == SC_PUSH_CONSTANT) {
      if (*push_type) {
        gk__say(m->why, m->why_size, "the SPIR-V module has two push-constant blocks");
        return GK_EFORMAT;
      }
      *push_type = pointee;
      continue;
    }
    if (sc != SC_UNIFORM && sc != SC_STORAGE_BUFFER && sc != SC_UNIFORM_CONSTANT)
      continue;
    if (!(v->flags & F_BINDING)) continue;
    if (sc == SC_UNIFORM_CONSTANT) {
      gk__say(m->why, m->why_size, "the SPIR-V module binds an image or sampler "
          "(binding %u), which libgk's helper does not bind", v->binding);
      return GK_EFORMAT;
    }
    if (v->set != 0) {
      gk__say(m->why, m->why_size, "the SPIR-V module uses descriptor set %u; libgk "
          "binds set 0 only", v->set);
      return GK_EFORMAT;
    }
    if (v->binding >= GK__SPIRV_MAX_BINDINGS) {
      gk__say(m->why, m->why_size, "the SPIR-V module uses binding %u; libgk binds 0..%d",
          v->binding, GK__SPIRV_MAX_BINDINGS - 1);
      return GK_EFORMAT;
    }
    int storage = sc == SC_STORAGE_BUFFER ||
                  (ID_OK(pointee) && (ids[pointee].flags & F_BUFFER_BLOCK));
    uint32_t bit = 1u << v->binding;
    if ((out->storage_mask | out->uniform_mask) & bit) {
      gk__say(m->why, m->why_size, "two SPIR-V variables share binding %u", v->binding);
      return GK_EFORMAT;
    }
    if (storage)
      out->storage_mask |= bit;
    else
      out->uniform_mask |= bit;
  }
  uint32_t all = out->storage_mask | out->uniform_mask;
  while (all & (1u << out->nbindings)) out->nbindings++;
  if (all >> out->nbindings) {
    gk__say(m->why, m->why_size, "the SPIR-V module's bindings are not 0..n-1 (mask "
        "0x%x); libgk's helper binds buffer i to binding i", (unsigned)all);
    return GK_EFORMAT;
  }
  return GK_OK;
}

/* The push-constant block's size: its members' types from the struct, their
 * offsets from OpMemberDecorate (a second pass over the instructions, whose
 * lengths the first checked). */
static int read_push_block(const spv *m, uint32_t push_type, gk__spirv_info *out) {
  const idinfo *ids = m->ids;
  if (!ID_OK(push_type) || ids[push_type].op != OP_TYPE_STRUCT) {
    gk__say(m->why, m->why_size, "the SPIR-V push-constant block is not a struct");
    return GK_EFORMAT;
  }
  const unsigned char *st = m->b + 4 * (size_t)ids[push_type].struct_at;
  uint32_t nmem = (rd32(st) >> 16) - 2;
  for (size_t w = 5; w < m->nwords;) {
    const unsigned char *in = m->b + 4 * w;
    uint32_t word = rd32(in), op = word & 0xffff, len = word >> 16;
    if (op == OP_MEMBER_DECORATE && len >= 5 && ARG(1) == push_type &&
        ARG(3) == DEC_OFFSET) {
      uint32_t member = ARG(2), off = ARG(4);
      uint32_t ty = member < nmem ? rd32(st + 8 + 4 * (size_t)member) : 0;
      uint32_t sz = type_size(ids, m->bound, ty);
      if (!sz) {
        gk__say(m->why, m->why_size, "push-constant member %u is not a scalar or "
            "vector, which libgk does not size", (unsigned)member);
        return GK_EFORMAT;
      }
      if (off > 4096 || off + sz > 4096) {
        gk__say(m->why, m->why_size, "push-constant member %u lies at offset %u",
            (unsigned)member, (unsigned)off);
        return GK_EFORMAT;
      }
      if (off + sz > out->push_size) out->push_size = off + sz;
    }
    w += len;
  }
  return GK_OK;
}

#undef ARG
#undef ID_OK

int gk__spirv_reflect(const void *bytes, size_t size, gk__spirv_info *out,
                      char *why, size_t why_size) {
  int rc = spirv_check(bytes, size, NULL, NULL, why, why_size);
  if (rc != GK_OK) return rc;
  memset(out, 0, sizeof *out);
  spv m = {bytes, size / 4, rd32((const unsigned char *)bytes + 12), NULL, why, why_size};
  if (!(m.ids = calloc(m.bound, sizeof *m.ids))) {
    gk__say(why, why_size, "out of memory reading the SPIR-V module");
    return GK_ENOMEM;
  }
  uint32_t push_type = 0;
  rc = read_module(&m, out);
  if (rc == GK_OK) rc = read_bindings(&m, out, &push_type);
  if (rc == GK_OK && push_type) rc = read_push_block(&m, push_type, out);
  free(m.ids);
  return rc;
}

/* ---- the backend --------------------------------------------------------- */

const gk__backend gk__vk_backend = {
    .id = GK_BACKEND_VULKAN, .name = "vulkan", .detect = gk__vk_detect, /* vulkan.c */
    .valid = valid, .fits = fits,
    .formats = {{"spirv", spirv_check}},
    .ops = &gk__vk_ops, /* vulkan_module.c (vulkan.c without the Vulkan headers) */
};
