#!/bin/sh
# gk build --container with a real engine (podman as root, runc): the cpu
# recipes built through a local image give the native build's bytes; the
# compile sees its sources read-only, a read-only root, a scratch /tmp and
# no network; the image's ID is in the cache key; a module without an image
# is not built by surprise with the host's compiler.
# The image is made here (nothing can be pulled): a near-empty root file
# system imported with `podman import`, the host's /usr bind-mounted into it
# read-only with --container-mount (Debian's /bin, /lib, /lib64 point there).
# Usage: test_container.sh GK SOURCE_ROOT TEST_CACHE
. "$(dirname "$0")/lib.sh"
SRC=$2 CACHE=$3

PODMAN=$(command -v podman) || { echo "SKIP: podman is not installed (ci/setup.sh installs podman and runc)"; exit 77; }
command -v runc >/dev/null 2>&1 || { echo "SKIP: runc is not installed (podman's crun fails on these machines)"; exit 77; }

# The engine's own settings, for this test only: runc, cgroupfs, file
# events and ulimits (docs in FACTS: crun fails here), and a private store.
cat >"$T/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
cat >"$T/storage.conf" <<CONF
[storage]
driver = "vfs"
graphroot = "$T/storage"
runroot = "$T/run"
CONF
export CONTAINERS_CONF="$T/containers.conf" CONTAINERS_STORAGE_CONF="$T/storage.conf"
export GK_CONTAINER_ENGINE=podman

# The image: Debian's merged /usr layout, /etc/alternatives (cc is a link
# through it), nothing else.
mkdir -p "$T/rootfs/usr" "$T/rootfs/etc" "$T/rootfs/tmp" "$T/rootfs/proc" "$T/rootfs/sys" "$T/rootfs/dev"
for d in bin lib lib64 sbin; do ln -s "usr/$d" "$T/rootfs/$d"; done
cp -a /etc/alternatives "$T/rootfs/etc/"
tar -C "$T/rootfs" -cf "$T/root.tar" .
tag=localhost/gk-test-toolchain:$$
CLEANUP="$CLEANUP $PODMAN rmi -f $tag $tag-b >/dev/null 2>&1;"
if ! "$PODMAN" import -q "$T/root.tar" "$tag" >"$T/import.log" 2>&1; then
  echo "SKIP: podman cannot import an image here: $(tail -1 "$T/import.log")"; exit 77
fi
if ! "$PODMAN" run --rm --network=none -v /usr:/usr:ro "$tag" /usr/bin/true >"$T/run.log" 2>&1; then
  echo "SKIP: podman cannot run a container here: $(tail -1 "$T/run.log")"; exit 77
fi

# The real cpu recipes, one target (16 jobs), native then in the container.
mkdir -p "$T/p"
cp -r "$SRC/recipes" "$SRC/kernelsrc" "$T/p/"
now() { python3 -c 'import time; print(time.time())'; }
elapsed() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$2"; }
run "$GK" build --recipes "$T/p/recipes" --backend cpu --targets cpu=x86-64-v2 --cache "$CACHE" --out "$T/native"
expect_status 0 "native build"
ctr() { run "$GK" build --recipes "$T/p/recipes" --backend cpu --targets cpu=x86-64-v2 --container --container-mount /usr "$@"; }
t0=$(now)
ctr --container-image "cc=$tag" --cache "$T/cache" --out "$T/ctr" -j 2
t1=$(now)
expect_status 0 "build in the container"
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["images"]))' "$T/ctr/manifest.json")
expect_err_line "gk build: $n images, $n compiled, 0 from cache" "every job compiled in the container"
echo "container build of $n jobs: $(elapsed "$t0" "$t1") s"
diff -r "$T/native" "$T/ctr" >"$T/diff" || fail "container images differ from native ones: $(head -5 "$T/diff")"
[ -z "$(ls "$T/cache/v1/tmp")" ] || fail "job folders left in the cache: $(ls "$T/cache/v1/tmp")"

# The same image again: all cached.
ctr --container-image "cc=$tag" --cache "$T/cache" --out "$T/ctr"
expect_err_line "gk build: $n images, 0 compiled, $n from cache" "same image: cached"

# What a compile may touch, asked of a shell "compiler" in the container.
mkdir -p "$T/e/recipes/toolchains" "$T/e/src"
echo 'placeholder' >"$T/e/src/e.txt"
cat >"$T/e/recipes/toolchains/envcheck.lua" <<'LUA'
-- A test toolchain: its "image" is a report of what the job can do.
local SCRIPT = [[
out=$1 src=$2
{ touch "$src/w" 2>/dev/null && echo source-writable || echo source-readonly
  touch /etc/w 2>/dev/null && echo root-writable || echo root-readonly
  touch /tmp/w 2>/dev/null && echo tmp-writable || echo tmp-readonly
  echo "net: $(ls /sys/class/net | tr '\n' ' ')"
} >"$out"
]]
return {
  backend = "envcheck", format = "txt", ext = "txt", targets = { "any" },
  probe = function()
    local sh = gk.which("sh")
    if not sh then return nil, "no sh" end
    return { tool = sh, identity = "sh" }
  end,
  command = function(job, p) return { p.tool, "-c", SCRIPT, "sh", p.out, p.srcdir } end,
}
LUA
cat >"$T/e/recipes/e.lua" <<'LUA'
kernel "e" { envcheck { source = "../src/e.txt", targets = { "any" } } }
LUA
run "$GK" build --recipes "$T/e/recipes" --backend envcheck --container --container-mount /usr \
  --container-image "envcheck=$tag" --cache "$T/cache" --out "$T/eo"
expect_status 0 "envcheck build in the container"
report=$(cat "$T/eo/envcheck/e/any.txt" 2>/dev/null)
for want in source-readonly root-readonly tmp-writable "net: lo "; do
  echo "$report" | grep -qF -- "$want" || fail "in the container, expected '$want'; got: $report"
done
[ -e "$T/e/src/w" ] && fail "the container wrote into the source tree"
# The image's ID is in the key: another image (other content, other ID)
# compiles again, the first one is still cached.
mkdir -p "$T/rootfs/opt" && echo b >"$T/rootfs/opt/marker"
tar -C "$T/rootfs" -cf "$T/root-b.tar" . && "$PODMAN" import -q "$T/root-b.tar" "$tag-b" >/dev/null 2>&1 ||
  fail "cannot import the second image"
ebuild() {
  run "$GK" build --recipes "$T/e/recipes" --backend envcheck --container --container-mount /usr \
    --container-image "envcheck=$1" --cache "$T/cache" --out "$T/eo"
}
ebuild "$tag-b"
expect_err_line "gk build: 1 image, 1 compiled, 0 from cache" "another image: compiled again"
ebuild "$tag"
expect_err_line "gk build: 1 image, 0 compiled, 1 from cache" "the first image: still cached"

# The same natively, to show the check can fail.
run "$GK" build --recipes "$T/e/recipes" --backend envcheck --cache "$T/cache" --out "$T/en"
grep -q source-writable "$T/en/envcheck/e/any.txt" || fail "natively the source folder should be writable"
rm -f "$T/e/src/w"

# No image for the module, no image given: the backend is not built (and
# --backend makes that an error), never compiled on the host by surprise.
ctr --cache "$T/cache" --out "$T/noimg"
expect_status 1 "--container without an image for cc"
expect_err "toolchain module 'cc' names no container image; give one with --container-image cc=IMAGE" \
  "missing image explained"
ctr --container-image "cc=localhost/gk-no-such-image:1" --cache "$T/cache" --out "$T/noimg"
expect_status 1 "--container with an image that is not there"
expect_err "cannot find or pull container image 'localhost/gk-no-such-image:1'" "absent image explained"
run "$GK" build --recipes "$T/p/recipes" --container --container-image "nosuch=x" --out "$T/noimg" --cache "$T/cache"
expect_status 2 "--container-image for an unknown module"
expect_err "no toolchain module 'nosuch'" "unknown module named"
GK_CONTAINER_ENGINE=no-such-engine ctr --container-image "cc=$tag" --cache "$T/cache" --out "$T/noimg"
expect_status 1 "an engine that is not there"
expect_err "GK_CONTAINER_ENGINE is 'no-such-engine'" "engine named"
finish
