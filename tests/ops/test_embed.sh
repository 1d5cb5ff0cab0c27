#!/bin/bash
# gk embed: C and .incbin output, linked into a program that opens the bytes
# in place; the output is reproducible; symbol names are checked.
. "$(dirname "$0")/lib.sh"

n=$("$GK" ls "$ARCHIVE" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["images"]))')
link() { # link SYM SOURCE BINARY: embed_check against the generated source
  "$CC" -std=c11 -O1 -Wall -Wextra -pedantic -Werror $SAN_FLAGS -DSYM="$1" -I"$LOADER_INC" \
    "$(dirname "$0")/embed_check.c" "$2" "$LIBGK_A" -lsqlite3 -lzstd -lsodium -ljansson -ldl -pthread \
    -o "$3" 2>"$T/cc.log" || { cat "$T/cc.log" >&2; fail "cannot build with $2"; }
}

run "$GK" embed --help; expect_status 0 "embed --help"
expect_out "extern const unsigned char NAME[];" "embed --help shows the declarations"

# The C form: builds warning-free, holds the bytes, opens in place.
run "$GK" embed "$ARCHIVE" -o "$T/kernels.c" --symbol kernels; expect_status 0 "embed C"
expect_err "wrote '$T/kernels.c'" "embed says what it wrote"
link kernels "$T/kernels.c" "$T/check_c"
run "$T/check_c" "$ARCHIVE"; expect_status 0 "the C form works"
expect_out "ok: kernels, $(stat -c %s "$ARCHIVE") bytes, $n images read in place" "C form"
grep -q '^const size_t kernels_size = ' "$T/kernels.c" || fail "C form lacks kernels_size"

# The brace-list form holds the same bytes.
run "$GK" embed "$ARCHIVE" -o "$T/array.c" --symbol arr --array; expect_status 0 "embed --array"
grep -q '^  0x[0-9a-f][0-9a-f],' "$T/array.c" || fail "--array does not write a brace list"
link arr "$T/array.c" "$T/check_array"
run "$T/check_array" "$ARCHIVE"; expect_status 0 "the --array form works"
expect_out "ok: arr, " "array form"
run "$GK" embed "$ARCHIVE" -o "$T/x.c" --array --asm; expect_status 2 "--array with --asm"

# Every byte value survives the string form, octal escapes next to digits
# and '?' (trigraphs under -std=c11) included: an archive whose one image
# holds all 256 values in every order of neighbours that matters.
python3 - "$T/bytes.bin" <<'PY'
import sys
tricky = b'0?' + b'?=1' + b'"2' + b'\\3' + b'\x001' + b'\x7f9'
open(sys.argv[1], "wb").write(bytes(range(256)) + tricky + bytes(range(255, -1, -1)))
PY
[ "$(stat -c %s "$T/bytes.bin")" -eq 525 ] || fail "bytes.bin has the wrong size"
"$MKARCHIVE" "$T/bytes.gkfat" "k|cuda|compute_90||ptx|=x" "b|cpu|x86-64||so|@$T/bytes.bin" ||
  fail "mkarchive bytes"
"$GK" embed "$T/bytes.gkfat" -o "$T/bytes.c" --symbol bytes 2>/dev/null || fail "embed bytes"
link bytes "$T/bytes.c" "$T/check_bytes"
run "$T/check_bytes" "$T/bytes.gkfat" --no-read; expect_status 0 "every byte value survives the string form"

# Reproducible: the same bytes from another folder and another run; the
# path of the archive is not in the output, only its name.
mkdir -p "$T/elsewhere"
cp "$ARCHIVE" "$T/elsewhere/kernels.gkfat"
(cd "$T/elsewhere" && "$GK" embed kernels.gkfat -o again.c --symbol kernels 2>/dev/null) || fail "embed from another folder"
cmp -s "$T/kernels.c" "$T/elsewhere/again.c" || fail "embed is not reproducible"
grep -qF "$(dirname "$ARCHIVE")" "$T/kernels.c" && fail "the C form holds the archive's folder"

# The default symbol comes from the file name.
run "$GK" embed "$T/elsewhere/kernels.gkfat" -o "$T/default.c"; expect_status 0 "embed default symbol"
grep -q 'const unsigned char kernels_gkfat\[' "$T/default.c" || fail "default symbol is not kernels_gkfat"
cp "$ARCHIVE" "$T/2024-05.gkfat"
run "$GK" embed "$T/2024-05.gkfat" -o "$T/digits.c"; expect_status 0 "embed a file name starting with a digit"
grep -q 'const unsigned char _2024_05_gkfat\[' "$T/digits.c" || fail "default symbol of 2024-05.gkfat"

# The assembler form, with .incbin.
run "$GK" embed "$ARCHIVE" -o "$T/kernels.S" --symbol blob --asm; expect_status 0 "embed --asm"
grep -qF ".incbin \"$(realpath "$ARCHIVE")\"" "$T/kernels.S" || fail "--asm does not .incbin the archive's absolute path"
link blob "$T/kernels.S" "$T/check_s"
run "$T/check_s" "$ARCHIVE"; expect_status 0 "the .incbin form works"
expect_out "ok: blob, " "incbin form"
nm "$T/check_s" | grep -q ' R blob$' || fail "blob is not a global read-only symbol"

# To stdout.
run "$GK" embed "$ARCHIVE" -o - --symbol s; expect_status 0 "embed -o -"
grep -q '^const size_t s_size' "$T/stdout" || fail "embed -o - writes the C file to stdout"

# Refused: names that are not C identifiers, files that are not archives.
for bad in 1abc a-b int "" "a b" "k\$" static_assert; do
  run "$GK" embed "$ARCHIVE" -o "$T/bad.c" --symbol "$bad"; expect_status 2 "symbol '$bad'"
  expect_err "is not a C identifier" "symbol '$bad' is refused with the reason"
done
[ -e "$T/bad.c" ] && fail "a refused symbol still wrote the file"
echo "not an archive" >"$T/junk.gkfat"
run "$GK" embed "$T/junk.gkfat" -o "$T/junk.c"; expect_status 1 "embed a non-archive"
expect_err "is not an archive libgk can open" "embed a non-archive says why"
[ -e "$T/junk.c" ] && fail "embed of a non-archive wrote a file"
run "$GK" embed "$T/missing.gkfat" -o "$T/m.c"; expect_status 1 "embed a missing file"
expect_err "cannot read '$T/missing.gkfat'" "embed a missing file names it"
ls "$T"/*.tmp-* >/dev/null 2>&1 && fail "a temporary file was left behind"
finish
