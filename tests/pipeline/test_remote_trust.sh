#!/bin/sh
# Credentials and trust for the remote cache, against a real nginx on
# loopback with TLS (a CA, a server and a client certificate made here with
# the openssl command line), basic auth on uploads and a second server that
# asks for a client certificate:
#   - an upload without credentials is refused: one warning, the build works;
#   - with credentials (a header, $GK_REMOTE_CACHE_HEADERS, a netrc file, a
#     client certificate) it uploads; TLS is verified (no CA: no remote);
#   - entries signed with --remote-cache-sign-key are accepted under
#     --remote-cache-trust; a poisoned entry (written into the server's
#     folder, pointing at another valid blob) and a signed entry copied to
#     another job's key are refused with one warning, and the archive is a
#     clean build's, byte for byte (without trust both would be taken);
#   - no credential appears in anything the test's commands printed, in the
#     server's logs or in the local caches.
# Usage: test_remote_trust.sh GK
. "$(dirname "$0")/lib.sh"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || skip "nginx is not installed (ci/setup.sh installs nginx-light)"
command -v openssl >/dev/null 2>&1 || skip "the openssl command is not installed (it makes the test's CA)"
unset GK_REMOTE_CACHE_HEADERS GK_REMOTE_CACHE_NETRC GK_REMOTE_CACHE_CA GK_REMOTE_CACHE_TRUST \
  GK_REMOTE_CACHE_CLIENT_CERT GK_REMOTE_CACHE_CLIENT_KEY GK_REMOTE_CACHE_SIGN_KEY
# The credentials, distinctive enough to be searched for afterwards.
USER=gk-writer PASS=Pa55-w0rd-never-shown-7d1e
BASIC=$(printf '%s:%s' "$USER" "$PASS" | base64 | tr -d '\n')
LOGS=$T/logs
mkdir -p "$LOGS" "$T/pki"

# step NAME CMD...: run (lib.sh), keeping its output under $LOGS/NAME.*
step() {
  name=$1
  shift
  run "$@"
  cp "$T/stdout" "$LOGS/$name.out"
  cp "$T/stderr" "$LOGS/$name.err"
}

# ---- a CA, the server's certificate (127.0.0.1) and a client's ------------
(
  cd "$T/pki" || exit 1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=gk test CA" -keyout ca.key -out ca.pem &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -keyout server.key -out server.csr &&
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext &&
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.pem &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=gk client" \
    -keyout client.key -out client.csr &&
  printf 'extendedKeyUsage=clientAuth\n' >client.ext &&
  openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile client.ext -out client.pem &&
  # Another CA, which the servers do not know.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=other CA" -keyout other.key -out other.pem
) >"$LOGS/openssl.log" 2>&1 || { fail "openssl could not make the test's certificates: $(cat "$LOGS/openssl.log")"; finish; }
printf '%s:%s\n' "$USER" "$(openssl passwd -apr1 "$PASS")" >"$T/pki/htpasswd"

# ---- nginx: basic auth on PUT (port), client certificates (mport) ----------
mkdir -p "$T/ngx/store" "$T/ngx/mstore" "$T/ngx/tmp" "$T/ngx/logs"
start_nginx() {
  port=$(free_port)
  mport=$(free_port)
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
  ssl_certificate $T/pki/server.pem;
  ssl_certificate_key $T/pki/server.key;
  client_max_body_size 1g;
  # Anyone may read; only the writer, with its password, may upload.
  server {
    listen 127.0.0.1:$port ssl;
    root $T/ngx/store;
    location / {
      dav_methods PUT;
      create_full_put_path on;
      limit_except GET HEAD {
        auth_basic "gk cache";
        auth_basic_user_file $T/pki/htpasswd;
      }
    }
  }
  # Only clients with a certificate from the test CA.
  server {
    listen 127.0.0.1:$mport ssl;
    root $T/ngx/mstore;
    ssl_client_certificate $T/pki/ca.pem;
    ssl_verify_client on;
    location / {
      dav_methods PUT;
      create_full_put_path on;
    }
  }
}
CONF
  "$NGINX" -p "$T/ngx" -c "$T/ngx/nginx.conf" -e "$T/ngx/logs/error.log" &
  ngx_pid=$!
  CLEANUP="$CLEANUP kill $ngx_pid 2>/dev/null; wait $ngx_pid 2>/dev/null;"
  for _ in $(seq 50); do
    curl -s -o /dev/null --cacert "$T/pki/ca.pem" "https://127.0.0.1:$port/" && return 0
    kill -0 "$ngx_pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
started=0
for _ in 1 2 3; do start_nginx && { started=1; break; }; done
[ "$started" -eq 1 ] || { fail "nginx did not start: $(cat "$T/ngx/logs/error.log")"; finish; }
URL="https://127.0.0.1:$port"
MURL="https://127.0.0.1:$mport"
echo "nginx on $URL (basic auth on PUT) and $MURL (client certificates)"

make_project "$T/p"
"$GK" keygen --out "$T/writer" 2>"$LOGS/keygen.err" >/dev/null
"$GK" keygen --out "$T/stranger" 2>>"$LOGS/keygen.err" >/dev/null
nac() { find "$1/ac" -type f 2>/dev/null | wc -l; }
warnings() { grep -c 'warning' "$T/stderr"; }

# The clean build: local only, what every build below must give.
step clean "$GK" build --recipes "$T/p/recipes" --cache "$T/c0" --out "$T/o0"
expect_status 0 "the clean build"
"$GK" pack "$T/o0" -o "$T/clean.gkfat" 2>/dev/null

# TLS is verified: the system's CAs do not know the test CA, so the remote
# is off (one warning) and the build compiles locally.
step no_ca "$GK" build --recipes "$T/p/recipes" --cache "$T/c1" --out "$T/o1" --remote-cache "$URL"
expect_status 0 "a server whose certificate cannot be verified"
expect_err "going on with the local cache only" "unverified TLS turns the remote off"
[ "$(warnings)" -eq 1 ] || fail "expected one warning: $(cat "$T/stderr")"
step other_ca "$GK" build --recipes "$T/p/recipes" --cache "$T/c1b" --out "$T/o1b" --remote-cache "$URL" \
  --remote-cache-ca "$T/pki/other.pem"
expect_err "going on with the local cache only" "another CA does not verify the server"

# No credentials: downloads work, the upload is refused (401): one warning.
step anonymous "$GK" build --recipes "$T/p/recipes" --cache "$T/c2" --out "$T/o2" --remote-cache "$URL" \
  --remote-cache-ca "$T/pki/ca.pem"
expect_status 0 "an anonymous upload"
expect_err "answered HTTP 401 (credentials missing or refused" "the refusal explained"
expect_err "going on without uploading to it" "uploads off"
[ "$(warnings)" -eq 1 ] || fail "expected one warning: $(cat "$T/stderr")"
[ "$(nac "$T/ngx/store")" -eq 0 ] || fail "an anonymous upload was stored"
# A wrong password is refused the same way.
step wrong_password "$GK" build --recipes "$T/p/recipes" --cache "$T/c2b" --out "$T/o2b" \
  --remote-cache "$URL" --remote-cache-ca "$T/pki/ca.pem" \
  --remote-cache-header "Authorization: Basic $(printf '%s:nope' "$USER" | base64)"
expect_err "answered HTTP 401" "a wrong password is refused"

# The writer: credentials in a header, entries signed.
step writer "$GK" build --recipes "$T/p/recipes" --cache "$T/c3" --out "$T/o3" --remote-cache "$URL" \
  --remote-cache-ca "$T/pki/ca.pem" --remote-cache-header "Authorization: Basic $BASIC" \
  --remote-cache-sign-key "$T/writer.key" --json
expect_status 0 "the signing writer"
expect_err_line "gk build: 5 images, 5 compiled, 0 from cache" "the writer compiles"
grep -q warning "$T/stderr" && fail "the writer warned: $(cat "$T/stderr")"
[ "$(nac "$T/ngx/store")" -eq 5 ] || fail "expected 5 action entries, got $(nac "$T/ngx/store")"
# The same from the environment and from a netrc file (another project
# copy, another cache: uploads again, identical bytes).
GK_REMOTE_CACHE_HEADERS="X-Unused: 1
Authorization: Basic $BASIC" \
  step env_header "$GK" build --recipes "$T/p/recipes" --cache "$T/c3b" --out "$T/o3b" --remote-cache "$URL" \
  --remote-cache-ca "$T/pki/ca.pem" --remote-cache-readonly
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache (5 from the remote cache)" "headers from the environment"
printf 'machine 127.0.0.1\nlogin %s\npassword %s\n' "$USER" "$PASS" >"$T/netrc"
chmod 600 "$T/netrc"
cp -r "$T/p" "$T/p3"
echo '__attribute__((visibility("default"))) int o2(int x) { return x + 2; }' >>"$T/p3/src/o.c"
step netrc "$GK" build --recipes "$T/p3/recipes" --cache "$T/c3c" --out "$T/o3c" --remote-cache "$URL" \
  --remote-cache-ca "$T/pki/ca.pem" --remote-cache-netrc "$T/netrc"
expect_status 0 "a netrc login"
grep -q warning "$T/stderr" && fail "the netrc login warned: $(cat "$T/stderr")"
[ "$(nac "$T/ngx/store")" -eq 6 ] || fail "the netrc login did not upload: $(nac "$T/ngx/store") entries"
# Mutual TLS: without a client certificate the server refuses the handshake.
step mtls_none "$GK" build --recipes "$T/p/recipes" --cache "$T/c4" --out "$T/o4" --remote-cache "$MURL" \
  --remote-cache-ca "$T/pki/ca.pem"
expect_status 0 "no client certificate"
[ "$(warnings)" -eq 1 ] || fail "expected one warning: $(cat "$T/stderr")"
[ "$(nac "$T/ngx/mstore")" -eq 0 ] || fail "stored without a client certificate"
GK_REMOTE_CACHE_CLIENT_KEY="$T/pki/client.key" \
  step mtls "$GK" build --recipes "$T/p/recipes" --cache "$T/c4b" --out "$T/o4b" --remote-cache "$MURL" \
  --remote-cache-ca "$T/pki/ca.pem" --remote-cache-client-cert "$T/pki/client.pem"
expect_status 0 "a client certificate"
grep -q warning "$T/stderr" && fail "mutual TLS warned: $(cat "$T/stderr")"
[ "$(nac "$T/ngx/mstore")" -eq 5 ] || fail "mutual TLS did not upload"

# A reader trusting the writer's key gets everything.
cp -r "$T/p" "$T/p2"
step trusted "$GK" build --recipes "$T/p2/recipes" --cache "$T/c5" --out "$T/o5" --remote-cache "$URL" \
  --remote-cache-ca "$T/pki/ca.pem" --remote-cache-trust "$T/writer.pub"
expect_status 0 "a trusting reader"
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache (5 from the remote cache)" "signed entries are taken"
grep -q warning "$T/stderr" && fail "signed entries warned: $(cat "$T/stderr")"
# ... and one trusting another key gets nothing, with one warning.
GK_REMOTE_CACHE_TRUST="$T/stranger.pub" \
  step stranger "$GK" build --recipes "$T/p2/recipes" --cache "$T/c6" --out "$T/o6" --remote-cache "$URL" \
  --remote-cache-ca "$T/pki/ca.pem" --remote-cache-readonly
expect_err_line "gk build: 5 images, 5 compiled, 0 from cache" "entries of an untrusted key are compiled"
expect_err "which is not trusted" "the untrusted signer named"
[ "$(warnings)" -eq 1 ] || fail "expected one warning: $(cat "$T/stderr")"

# The attack: someone who can write to the server (not the writer) points
# one job at another job's image (a valid blob, its own hash), unsigned, and
# copies a signed entry of a third job over a fourth's key.
PYTHONPATH="$(dirname "$0")" python3 - "$T/ngx/store" "$T/o3" >"$T/attack" <<'PY' || fail "could not poison the cache"
import hashlib, os, sys
store, out = sys.argv[1], sys.argv[2]
from protowire import fields, output
images = {}
for d, _, files in os.walk(out):
    for n in files:
        if n.endswith(".so"):
            p = os.path.join(d, n)
            images[hashlib.sha256(open(p, "rb").read()).hexdigest()] = os.path.relpath(p, out)
entries = {}
for d, _, files in os.walk(os.path.join(store, "ac")):
    for key in files:
        raw = open(os.path.join(d, key), "rb").read()
        outs = {}
        for f, v in fields(raw):
            if f == 2:
                o = dict(fields(v)); dg = dict(fields(o[2]))
                outs[o[1].decode()] = (dg[1].decode(), dg[2])
        if outs["image"][0] in images:
            entries[key] = (os.path.join(d, key), raw, outs)
# Small kernels compile to the same bytes for several targets: pick pairs
# whose images differ, or the attack would change nothing; and pairs of one
# kernel, whose images export the same entry points (gk build checks them,
# so an image of another kernel would be refused without any trust).
img = lambda k: entries[k][2]["image"][0]
kern = lambda k: images[img(k)].split("/")[1]
ks = sorted(entries)
pick = None
for a in ks:
    for b in ks:
        if img(a) == img(b) or kern(a) != kern(b):
            continue
        rest = [k for k in ks if k not in (a, b)]
        cd = [(c, d) for c in rest for d in rest if img(c) != img(d) and kern(c) == kern(d)]
        if cd and not pick:
            pick = (a, b) + cd[0]
assert pick, "no two different images among %d entries" % len(ks)
a, b, c, d = pick
# a's entry, unsigned, pointing at b's image (a blob the server has).
pa, _, oa = entries[a]
bimg = entries[b][2]["image"]
open(pa, "wb").write(output("image", bimg[0], bimg[1]) + output("deps.json", *oa["deps.json"]))
# c's signed entry copied over d's.
open(entries[d][0], "wb").write(entries[c][1])
print("%s... now names %s's image, unsigned; %s... is a copy of %s..." % (a[:12], images[img(b)], d[:12], c[:12]))
PY
echo "the attack: $(cat "$T/attack")"
# Without trust both are taken: the attack is real.
step untrusting "$GK" build --recipes "$T/p2/recipes" --cache "$T/c7" --out "$T/o7" --remote-cache "$URL" \
  --remote-cache-ca "$T/pki/ca.pem" --remote-cache-readonly
expect_err_line "gk build: 5 images, 0 compiled, 5 from cache (5 from the remote cache)" "without trust every entry is taken"
"$GK" pack "$T/o7" -o "$T/untrusting.gkfat" 2>/dev/null
cmp -s "$T/clean.gkfat" "$T/untrusting.gkfat" && fail "without trust the archive is still the clean one (the test attacks nothing)"
# Under trust both are refused, with one warning, and the archive is the clean one.
step attacked "$GK" build --recipes "$T/p2/recipes" --cache "$T/c8" --out "$T/o8" --remote-cache "$URL" \
  --remote-cache-ca "$T/pki/ca.pem" --remote-cache-trust "$T/stranger.pub" \
  --remote-cache-trust "$T/writer.pub" --remote-cache-readonly
expect_status 0 "a trusting build of a poisoned cache"
expect_err_line "gk build: 5 images, 2 compiled, 3 from cache (3 from the remote cache)" "the two bad entries compiled here"
[ "$(warnings)" -eq 1 ] || fail "expected one warning: $(cat "$T/stderr")"
grep 'warning' "$T/stderr" | grep -Eq 'is not signed|does not match' || fail "the refusal is not explained: $(cat "$T/stderr")"
"$GK" pack "$T/o8" -o "$T/attacked.gkfat" 2>/dev/null
cmp -s "$T/clean.gkfat" "$T/attacked.gkfat" || fail "the archive of the attacked build differs from the clean one"

# A password in the URL and in messages about it.
step url_password "$GK" build --recipes "$T/p/recipes" --cache "$T/c9" --out "$T/o9" \
  --remote-cache "https://$USER:$PASS@127.0.0.1:$port" --json

# No credential anywhere: the commands' output, the server's logs, the
# caches (keys, records, the no-op build's index).
for secret in "$PASS" "$BASIC"; do
  hits=$(grep -rlF -- "$secret" "$LOGS" "$T/ngx/logs" "$T"/c[0-9]* 2>/dev/null)
  [ -z "$hits" ] || fail "a credential appears in: $hits"
done
grep -q '\*\*\*@127.0.0.1' "$LOGS/url_password.err" || fail "the URL's password was not redacted: $(cat "$LOGS/url_password.err")"
echo "logs searched: $(ls "$LOGS" | wc -l) files; the warnings they hold:"
grep -h warning "$LOGS"/*.err | sed 's/^/  /'

finish
