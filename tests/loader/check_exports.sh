#!/bin/sh
# check_exports.sh LIBGK_SO: libgk.so must export the gk_* API and nothing
# else (no gk__ internals, no bundled library symbols).
set -eu
lib=$1
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }')
if [ -z "$syms" ]; then
  echo "FAIL: nm found no exported symbols in $lib" >&2
  exit 1
fi
bad=$(printf '%s\n' "$syms" | grep -v '^gk_' || true)
internal=$(printf '%s\n' "$syms" | grep '^gk__' || true)
if [ -n "$bad$internal" ]; then
  echo "FAIL: $lib exports symbols outside the API:" >&2
  printf '%s\n' $bad $internal >&2
  exit 1
fi
for want in gk_archive_open gk_module_load gk_strerror; do
  printf '%s\n' "$syms" | grep -qx "$want" || { echo "FAIL: $want not exported" >&2; exit 1; }
done
echo "ok: $(printf '%s\n' "$syms" | wc -l) symbols, all gk_*"
