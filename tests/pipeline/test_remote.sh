#!/bin/sh
# The shared remote cache against a real nginx (WebDAV PUT) on loopback:
# a second machine (a copy of the project, a fresh local cache) compiles
# nothing; entries are checked by hash and by the local headers; a dead,
# silent or read-only server never fails a build (one warning, then local).
# Usage: test_remote.sh GK
. "$(dirname "$0")/lib.sh"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "SKIP: nginx is not installed (ci/setup.sh installs nginx-light)"; exit 77; }

# nginx with its own prefix and config, on a free loopback port.
mkdir -p "$T/ngx/store/ro/cas" "$T/ngx/store/ro/ac" "$T/ngx/tmp" "$T/ngx/logs"
start_nginx() {
  port=$(free_port)
  cat >"$T/ngx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
user root;
pid $T/ngx/nginx.pid;
error_log $T/ngx/logs/error.log;
events { worker_connections 64; }
http {
  access_log $T/ngx/logs/access.log;
  client_body_temp_path $T/ngx/tmp/body;
  proxy_temp_path $T/ngx/tmp/proxy;
  fastcgi_temp_path $T/ngx/tmp/fastcgi;
  uwsgi_temp_path $T/ngx/tmp/uwsgi;
  scgi_temp_path $T/ngx/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    root $T/ngx/store;
    client_max_body_size 1g;
    location / {
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
    }
    # Read-only: GET works, PUT is refused (405).
    location /ro/ { }
  }
}
CONF
  "$NGINX" -p "$T/ngx" -c "$T/ngx/nginx.conf" -e "$T/ngx/logs/error.log" &
  ngx_pid=$!
  CLEANUP="$CLEANUP kill $ngx_pid 2>/dev/null; wait $ngx_pid 2>/dev/null;"
  for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0
    kill -0 "$ngx_pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
started=0
for _ in 1 2 3; do start_nginx && { started=1; break; }; done
[ "$started" -eq 1 ] || { fail "nginx did not start: $(cat "$T/ngx/logs/error.log")"; finish; }
URL="http://127.0.0.1:$port"
echo "nginx on $URL"

make_project "$T/p"
now() { python3 -c 'import time; print(time.time())'; }
elapsed() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$2"; }

# Machine A: compiles and uploads.
run "$GK" build --recipes "$T/p/recipes" --cache "$T/ca" --out "$T/oa" --remote-cache "$URL"
expect_status 0 "build A with the remote cache"
expect_err_line "gk build: 5 images, 5 compiled, 0 from cache" "A compiles everything"
grep -q warning "$T/stderr" && fail "A warned: $(cat "$T/stderr")"
[ "$(ls "$T/ngx/store/ac" | wc -l)" -eq 5 ] || fail "expected 5 action entries: $(ls "$T/ngx/store/ac")"
# Every CAS entry hashes to its name; every image is there.
for f in "$T"/ngx/store/cas/*; do
  [ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$(basename "$f")" ] || fail "CAS entry $(basename "$f") is not named by its hash"
done
for f in "$T"/oa/cpu/*/*.so; do
  [ -f "$T/ngx/store/cas/$(sha256sum <"$f" | cut -d' ' -f1)" ] || fail "image $f was not uploaded"
done
# An action entry is an ActionResult protobuf naming the image (field 2,
# OutputFile{path=1, digest=2{hash=1}}): the bytes bazel-remote checks.
PYTHONPATH="$(dirname "$0")" python3 - "$T/ngx/store/ac" "$T/ngx/store/cas" <<'PY' || fail "action entries are not ActionResult messages"
import os, sys
from protowire import fields
for name in os.listdir(sys.argv[1]):
    outs = {}
    for f, v in fields(open(os.path.join(sys.argv[1], name), "rb").read()):
        assert f == 2
        d = dict(fields(v))
        dig = dict(fields(d[2]))
        outs[d[1].decode()] = (dig[1].decode(), dig[2])
    assert set(outs) == {"image", "deps.json"}, outs
    for h, size in outs.values():
        assert os.path.getsize(os.path.join(sys.argv[2], h)) == size
PY

# Machine B: the project elsewhere, an empty cache: everything downloaded.
cp -r "$T/p" "$T/p2"
t0=$(now)
run "$GK" build --recipes "$T/p2/recipes" --cache "$T/cb" --out "$T/ob" --remote-cache "$URL" --json
t1=$(now)
expect_status 0 "build B"
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache (5 from the remote cache)" "B downloads everything"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["remote_hits"] == 5, d' "$T/stdout" ||
  fail "--json lacks remote_hits 5"
diff -r "$T/oa/cpu" "$T/ob/cpu" >/dev/null || fail "downloaded images differ from the compiled ones"
echo "remote-cache hit build of 5 jobs: $(elapsed "$t0" "$t1") s"
# ... and keeps them: without the remote, all local.
run "$GK" build --recipes "$T/p2/recipes" --cache "$T/cb" --out "$T/ob"
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache" "B's local cache kept the downloads"
# GK_REMOTE_CACHE is the default for --remote-cache.
GK_REMOTE_CACHE=$URL run "$GK" build --recipes "$T/p2/recipes" --cache "$T/cb2" --out "$T/ob2"
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache (5 from the remote cache)" "GK_REMOTE_CACHE"

# Another machine's headers differ: those entries are misses, not errors.
echo '#define SCALE 7' >"$T/p2/src/inc/h.h"
run "$GK" build --recipes "$T/p2/recipes" --cache "$T/cc" --out "$T/oc" --remote-cache "$URL" --remote-cache-readonly
expect_status 0 "build C with other headers"
expect_err_line "gk build: 5 images, 4 compiled, 1 from cache (1 from the remote cache)" "C recompiles what read the header"
grep -q warning "$T/stderr" && fail "a header mismatch warned: $(cat "$T/stderr")"
[ "$(ls "$T/ngx/store/ac" | wc -l)" -eq 5 ] || fail "--remote-cache-readonly uploaded"
echo '#define SCALE 3' >"$T/p2/src/inc/h.h"

# A damaged entry on the server: refused by hash, compiled locally.
img=$(sha256sum <"$T/oa/cpu/o/x86-64.so" | cut -d' ' -f1)
printf 'garbage' >"$T/ngx/store/cas/$img"
run "$GK" build --recipes "$T/p2/recipes" --cache "$T/cd" --out "$T/od" --remote-cache "$URL"
expect_status 0 "build D with a damaged entry"
expect_err "does not hash to its name" "damage reported"
expect_err_line "gk build: 5 images, 1 compiled, 4 from cache (4 from the remote cache)" "the damaged one compiled"
cmp -s "$T/oa/cpu/o/x86-64.so" "$T/od/cpu/o/x86-64.so" || fail "a damaged download reached the output"
[ "$(sha256sum <"$T/ngx/store/cas/$img" | cut -d' ' -f1)" = "$img" ] || fail "D did not upload the good image again"

# A read-only server (PUT 405): one warning, the build goes on.
run "$GK" build --recipes "$T/p/recipes" --cache "$T/ce" --out "$T/oe" --remote-cache "$URL/ro"
expect_status 0 "build against a read-only remote"
[ "$(grep -c 'remote cache' "$T/stderr")" -eq 1 ] || fail "expected one warning: $(cat "$T/stderr")"
expect_err "answered HTTP 405; going on without uploading to it" "refused upload explained"

# A dead remote (nothing listens): one warning, local cache, success.
dead=$(free_port)
t0=$(now)
run "$GK" build --recipes "$T/p/recipes" --cache "$T/cf" --out "$T/of" --remote-cache "http://127.0.0.1:$dead"
t1=$(now)
expect_status 0 "build against a dead remote"
expect_err_line "gk build: 5 images, 5 compiled, 0 from cache" "dead remote: compiled locally"
[ "$(grep -c 'remote cache' "$T/stderr")" -eq 1 ] || fail "expected one warning: $(cat "$T/stderr")"
expect_err "going on with the local cache only" "dead remote explained"
echo "build against a dead remote: $(elapsed "$t0" "$t1") s"

# A server that accepts and never answers: given up after the stall limit.
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
held, end = [], time.time() + 60
s.settimeout(1)
while time.time() < end:
    try: held.append(s.accept()[0])
    except socket.timeout: pass
' >"$T/slow.port" &
slow_pid=$!
CLEANUP="$CLEANUP kill $slow_pid 2>/dev/null;"
for _ in $(seq 50); do [ -s "$T/slow.port" ] && break; sleep 0.1; done
t0=$(now)
run "$GK" build --recipes "$T/p/recipes" --cache "$T/cg" --out "$T/og" --remote-cache "http://127.0.0.1:$(cat "$T/slow.port")"
t1=$(now)
kill "$slow_pid" 2>/dev/null
expect_status 0 "build against a silent remote"
[ "$(grep -c 'remote cache' "$T/stderr")" -eq 1 ] || fail "expected one warning: $(cat "$T/stderr")"
secs=$(elapsed "$t0" "$t1")
echo "build against a silent remote: $secs s"
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 20 else 1)' "$secs" || fail "a silent remote held the build $secs s"

# Not an HTTP URL: a usage error before anything runs; credentials never shown.
run "$GK" build --recipes "$T/p/recipes" --cache "$T/ch" --out "$T/oh" --remote-cache "ftp://x"
expect_status 2 "--remote-cache ftp://"
expect_err "is not an http:// or https:// URL" "bad URL explained"
run "$GK" build --recipes "$T/p/recipes" --cache "$T/ci" --out "$T/oi" --remote-cache "http://user:secret@127.0.0.1:$dead"
grep -q secret "$T/stderr" && fail "a password was printed: $(cat "$T/stderr")"
expect_err "http://***@127.0.0.1" "credentials redacted"
finish
