#!/usr/bin/env python3
"""sass_mix.py CUBIN KERNEL [--min N] [--json]: the instruction mix of a
kernel's machine code, read from the cubin itself, for machines with no
disassembler (this one has nvcc and ptxas, but neither cuobjdump nor
nvdisasm, and the CUDA 13 packages that carry them are not installable).

An sm_70 and newer instruction is 16 bytes; the low 12 bits of its first 8
are its opcode (the form with registers, an immediate or a uniform register
operand each have their own). The script splits KERNEL's .text section into
straight runs, each ending at a branch (BRA) or an EXIT, and prints, for
each run of at least N instructions (default 24), where it lies, its length
and its opcodes, named where known. A loop body without branches inside is
one run: its length is what a trip issues.

The names were found here, not read in a manual: each comes from a kernel
of a few lines compiled by ptxas 13.0 for sm_90a, whose code holds one
instruction many times (64 fmaf: FFMA; 32 selects by a bit: FSEL, R2P;
16 dp4a: IDP4A; 16 mma.sync: HMMA or IMMA; ldmatrix: LDSM; cp.async:
LDGSTS; ex2: MUFU; ...). Others are guesses and say so (a trailing '?'), and
opcodes not named print as hex. ci/gpu/run.sh's sass step dumps the same
cubins with cuobjdump on a GPU machine, which settles them.

tests/backends/cuda/test_ptxas.sh uses it to bound qmatmul's m = 1 loop
(docs/gpu-speed.md).
"""
import argparse
import collections
import json
import struct
import sys

NAMES = {
    0x223: "FFMA", 0x823: "FFMA.imm", 0x221: "FADD", 0x421: "FADD.imm", 0x208: "FSEL",
    0x804: "R2P", 0x212: "LOP3", 0x812: "LOP3.imm", 0x20C: "ISETP", 0x80C: "ISETP.imm",
    0x210: "IADD3", 0x810: "IADD3.imm", 0x224: "IMAD", 0x824: "IMAD.imm", 0x225: "IMAD.WIDE",
    0x825: "IMAD.WIDE.imm", 0x219: "SHF", 0x819: "SHF.imm", 0x202: "MOV", 0x802: "MOV.imm",
    0x981: "LDG", 0x986: "STG", 0xB82: "LDC", 0xAB9: "ULDC", 0xF89: "SHFL", 0x947: "BRA",
    0x94D: "EXIT", 0x918: "NOP", 0x945: "BSSY", 0x941: "BSYNC", 0x230: "HADD2.F32?",
    0x435: "HFMA2.MMA?", 0x98F: "CCTL?", 0x387: "STL", 0x983: "LDL", 0x211: "LEA",
    0x220: "FMUL", 0x209: "FMNMX", 0x308: "MUFU", 0x23E: "F2FP", 0x226: "IDP4A",
    0x23C: "HMMA", 0x237: "IMMA", 0x83B: "LDSM", 0x984: "LDS", 0x988: "STS",
    0xFAE: "LDGSTS", 0xB1D: "BAR", 0x919: "S2R",
}
BRANCH, EXIT = 0x947, 0x94D


def text_section(path, kernel):
    """The bytes of section .text.KERNEL of the ELF file at path."""
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit(f"sass_mix.py: {path}: not a 64-bit ELF file (a cubin from nvcc -cubin)")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx][4]
    want = ".text." + kernel
    for name, _, _, _, off, size in heads:
        end = data.index(b"\0", strtab + name)
        if data[strtab + name:end].decode() == want:
            return data[off:off + size]
    sys.exit(f"sass_mix.py: {path} has no section {want} (no kernel '{kernel}')")


def runs(code):
    """The straight runs: (first, last, [opcodes]), each ending at a branch
    or an exit (or at the end)."""
    ops = [struct.unpack_from("<Q", code, i)[0] & 0xFFF for i in range(0, len(code), 16)]
    out, first = [], 0
    for i, op in enumerate(ops):
        if op in (BRANCH, EXIT) or i == len(ops) - 1:
            out.append((first, i, ops[first:i + 1]))
            first = i + 1
    return out


def mix(ops):
    counts = collections.Counter(NAMES.get(o, "0x%03x" % o) for o in ops)
    return dict(counts.most_common())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cubin")
    ap.add_argument("kernel")
    ap.add_argument("--min", type=int, default=24, help="shortest run printed (instructions)")
    ap.add_argument("--json", action="store_true", help="one JSON object: the runs and the total")
    a = ap.parse_args()
    code = text_section(a.cubin, a.kernel)
    found = [{"first": f, "last": l, "length": len(o), "mix": mix(o)}
             for f, l, o in runs(code) if len(o) >= a.min]
    total = len(code) // 16
    if a.json:
        json.dump({"kernel": a.kernel, "instructions": total, "runs": found}, sys.stdout)
        print()
        return
    print(f"{a.kernel}: {total} instructions; runs of {a.min} or more:")
    for r in found:
        ops = " ".join(f"{k}:{v}" for k, v in r["mix"].items())
        print(f"  {r['first']}-{r['last']} ({r['length']}): {ops}")


if __name__ == "__main__":
    main()
