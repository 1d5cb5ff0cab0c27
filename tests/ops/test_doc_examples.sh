#!/bin/bash
# Every code block of the README and docs/ that shows a complete program (a C
# block with main) is compiled against libgk and run, in a folder whose
# kernels.gkfat is the fixture archive: the examples stay true on any machine.
. "$(dirname "$0")/lib.sh"

python3 - "$T" "$SRC/README.md" "$SRC"/docs/*.md "$SRC/recipes/README.md" <<'PY' || fail "cannot extract the examples"
import re, sys, os
out, n = sys.argv[1], 0
for path in sys.argv[2:]:
    text = open(path, encoding="utf-8").read()
    for m in re.finditer(r"^```c\n(.*?)^```", text, re.S | re.M):
        if re.search(r"\bint main\s*\(", m.group(1)):
            line = text.count("\n", 0, m.start()) + 1
            name = "%s_%d" % (os.path.basename(path).replace(".", "_"), line)
            open(os.path.join(out, name + ".c"), "w").write(m.group(1))
            n += 1
if n == 0:
    sys.exit("no complete program found in %s" % ", ".join(sys.argv[2:]))
print("%d complete programs" % n)
PY
cp "$ARCHIVE" "$T/kernels.gkfat"
for c in "$T"/*.c; do
  name=$(basename "$c" .c)
  # shellcheck disable=SC2086
  if ! "$CC" -std=c11 -O1 -Wall -Wextra -Werror $SAN_FLAGS -I"$LOADER_INC" "$c" "$LIBGK_A" \
       -lsqlite3 -lzstd -lsodium -ljansson -ldl -pthread -o "$T/$name" 2>"$T/cc.log"; then
    fail "$name (${name%_*}, line ${name##*_}) does not compile: $(cat "$T/cc.log")"
    continue
  fi
  (cd "$T" && "./$name") >"$T/run.log" 2>&1 || fail "$name exits $?: $(cat "$T/run.log")"
done
finish
