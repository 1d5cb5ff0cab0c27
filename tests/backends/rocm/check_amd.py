#!/usr/bin/env python3
"""check_amd.py DIR N: every rocm image gk extract wrote to DIR (with its
manifest.json) is the AMD code object its row says, read here by a small ELF
reader of its own (not libgk's): e_machine 224 (EM_AMDGPU), EI_OSABI 64
(HSA), EI_ABIVERSION 3 (code object v5) for a processor and 4 (v6) for a
generic target, e_flags' processor (EF_AMDGPU_MACH, LLVM AMDGPUUsage), the
xnack and sramecc fields (v4+: 0 unsupported, 1 any, 2 off, 3 on), the
generic version (e_flags >> 24, v6: 1 for a generic target, 0 otherwise),
and for each entry point of the row a global function and its 64-byte
kernel descriptor object NAME.kd. Rows must come from clang 19 (hipclang).
Expects N images; exit 1 naming each image that fails."""
import json
import os
import struct
import sys

# EF_AMDGPU_MACH of the targets the hipclang fixture builds.
MACH = {"gfx942": 0x4C, "gfx1100": 0x41, "gfx1101": 0x46, "gfx1102": 0x47,
        "gfx1200": 0x48, "gfx1201": 0x4E, "gfx9-generic": 0x51,
        "gfx10-3-generic": 0x53, "gfx11-generic": 0x54, "gfx12-generic": 0x59}
# Processors with xnack / sramecc settings among them (AMDGPUUsage).
XNACK = {"gfx942", "gfx9-generic"}
SRAMECC = {"gfx942"}


def symbols(b):
    """{name: (type, size)} of the ELF's .symtab."""
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    out = {}
    for s in secs:
        if s[1] != 2:  # SHT_SYMTAB
            continue
        strtab = secs[s[6]]
        for off in range(s[4], s[4] + s[5], 24):
            name, info, _, _, _, size = struct.unpack_from("<IBBHQQ", b, off)
            start = strtab[4] + name
            n = b[start:b.index(b"\0", start)].decode()
            if n and (info >> 4) == 1:  # STB_GLOBAL
                out[n] = (info & 0xF, size)
    return out


def check(path, row):
    b = open(path, "rb").read()
    t = row["target"]
    generic = t.endswith("-generic")
    want = [
        (b[:4] == b"\x7fELF" and b[4] == 2, "not a 64-bit ELF"),
        (struct.unpack_from("<H", b, 18)[0] == 224, "e_machine %d, not 224" % struct.unpack_from("<H", b, 18)[0]),
        (b[7] == 64, "EI_OSABI %d, not 64 (HSA)" % b[7]),
        (b[8] == (4 if generic else 3), "code object v%d, expected v%d" % (b[8] + 2, 6 if generic else 5)),
    ]
    flags, = struct.unpack_from("<I", b, 0x30)
    want += [
        ((flags & 0xFF) == MACH[t], "e_flags 0x%x: processor 0x%x, not %s's 0x%x" % (flags, flags & 0xFF, t, MACH[t])),
        (((flags >> 8) & 3) == (1 if t in XNACK else 0), "e_flags 0x%x: xnack field %d" % (flags, (flags >> 8) & 3)),
        (((flags >> 10) & 3) == (1 if t in SRAMECC else 0), "e_flags 0x%x: sramecc field %d" % (flags, (flags >> 10) & 3)),
        ((flags >> 24) == (1 if generic else 0), "e_flags 0x%x: generic version %d" % (flags, flags >> 24)),
        (row["toolchain"].startswith("clang 19."), "toolchain '%s', not clang 19" % row["toolchain"]),
    ]
    syms = symbols(b)
    for e in row["entry"]:
        want.append((syms.get(e, (0,))[0] == 2, "no function %s" % e))       # STT_FUNC
        want.append((syms.get(e + ".kd") == (1, 64), "no 64-byte kernel descriptor %s.kd" % e))  # STT_OBJECT
    return [why for ok, why in want if not ok]


def main():
    root, n = sys.argv[1], int(sys.argv[2])
    rows = [r for r in json.load(open(os.path.join(root, "manifest.json")))["images"]
            if r["backend"] == "rocm"]
    bad = 0
    for r in rows:
        errs = check(os.path.join(root, r["path"]), r)
        for e in errs:
            print("%s: %s" % (r["path"], e))
        bad += bool(errs)
    if len(rows) != n:
        print("%d rocm images, expected %d" % (len(rows), n))
        bad += 1
    print("%d of %d images as their rows say" % (len(rows) - bad, len(rows)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
