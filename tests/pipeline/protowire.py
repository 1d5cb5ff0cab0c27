"""protowire.py - the protobuf wire format, as far as the pipeline tests read
and write action-cache entries (an ActionResult names its outputs: field 2,
OutputFile{path=1, digest=2{hash=1, size_bytes=2}}). Imported by
test_remote.sh and test_remote_trust.sh (PYTHONPATH=tests/pipeline)."""


def varint(b, i):
    """The varint at b[i]: (value, index after it)."""
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """A message's fields as (number, value): varints as ints, the rest bytes."""
    i, res = 0, []
    while i < len(b):
        tag, i = varint(b, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
        else:
            raise SystemExit("wire type %d" % wt)
        res.append((f, v))
    return res


def enc_varint(v):
    b = bytearray()
    while True:
        b.append((v & 0x7f) | (0x80 if v > 0x7f else 0))
        v >>= 7
        if not v:
            return bytes(b)


def ld(f, data):
    """Field f, length-delimited."""
    return enc_varint(f << 3 | 2) + enc_varint(len(data)) + data


def output(path, h, size):
    """An ActionResult's output_files entry for path, of digest (h, size)."""
    return ld(2, ld(1, path.encode()) + ld(2, ld(1, h.encode()) + enc_varint(2 << 3) + enc_varint(size)))
