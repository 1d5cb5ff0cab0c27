#!/bin/sh
# setup.sh [PURPOSE...] - installs what a Debian 12 machine lacks to build and
# test gllm-kernels. Idempotent: installs only missing packages, and only
# refreshes the package lists when something is missing.
# PURPOSE says what the machine is for, so that a CI job installs only what it
# needs (default: all, what ./ci/main.sh and ./ci/test.sh need):
#   build      build gk (compilers, CMake, the libraries it links)
#   container  build gk and compile kernels in pinned images (+ podman when
#              there is no docker)
#   vulkan     build gk and compile the vulkan and wgsl kernels natively
#   release    merge, verify and sign the parts (the same as build)
#   test       everything the test suite uses (= all)
# $GK_SETUP is the default for the arguments (ci/part.sh and ci/merge.sh run
# this script with none).
set -eu
purposes=${*:-${GK_SETUP:-all}}

# Build tools and the libraries the project links (through pkg-config).
pkgs="build-essential cmake ninja-build pkg-config binutils python3
      liblua5.4-dev libzstd-dev libsqlite3-dev libsodium-dev libjansson-dev
      libcmocka-dev zstd sqlite3"
# The CUDA emulator (tests/backends/cuda/emu) runs its GPU threads as
# Boost.Context fibers.
pkgs="$pkgs libboost-context-dev"
# bench/load.sh compares libsodium's SHA-256 with OpenSSL's (libcrypto).
pkgs="$pkgs libssl-dev"
# Headless Chromium renders the page of 'gk matrix --html' in tests/ops.
# Only on Debian, where it is the real browser: Ubuntu's chromium package is
# a stub that asks for the snap, which containers (the CI's jobs) cannot
# run; there the test uses another Chromium it finds or says SKIP and why.
os_id=$( (. /etc/os-release 2>/dev/null && echo "${ID:-}") || true)
[ "$os_id" = debian ] && pkgs="$pkgs chromium"
# The release pipeline (tests/pipeline): libcurl for the remote cache,
# nginx (WebDAV PUT) to test it against, podman + runc to build in
# containers, git for the source revision, python3-yaml to lint the workflow.
pkgs="$pkgs libcurl4-openssl-dev nginx-light podman runc git python3-yaml curl"
# ROCm 5.2 from Debian: hipcc (clang 15) and the device libraries build the
# rocm images; libhsa-runtime-dev gives <hsa/hsa.h>, against which
# tests/backends/rocm checks libgk's HSA declarations, and the runtime libgk dlopen()s
# (it answers "no ROCm device" on machines without an AMD GPU).
pkgs="$pkgs hipcc rocm-device-libs libhsa-runtime-dev"
# hipcc 5.2 cannot target gfx942, RDNA3/4 (gfx1100-1102, gfx1200/1201) or the
# generic targets; Debian 12's clang-19 (with lld-19, which links AMDGPU code)
# builds them against the same HIP headers and device libraries
# (recipes/toolchains/hipclang.lua). libamdhip64-dev holds those headers.
pkgs="$pkgs clang-19 lld-19 libamdhip64-dev"
# Vulkan: the headers (libgk dlopen()s libvulkan; its types come from
# <vulkan/vulkan.h>), Mesa's lavapipe (Vulkan on the CPU: tests/backends/vulkan
# executes every kernel on it), glslang and spirv-val (the vulkan images).
pkgs="$pkgs mesa-vulkan-drivers libvulkan-dev glslang-tools spirv-tools"
# Robustness (ci/sanitize.sh, ci/fuzz.sh): valgrind memcheck of the loader
# tests; clang 14 with its runtime libraries for libFuzzer (-DGK_FUZZ=ON).
pkgs="$pkgs valgrind clang-14 libclang-rt-14-dev"
# WGSL: tests/backends/wgsl validates the images with Dawn (npm package `webgpu`).
# Only where the commands are missing: a machine may have Node.js from
# elsewhere, whose npm Debian's npm package would conflict with.
command -v node >/dev/null 2>&1 || pkgs="$pkgs nodejs"
command -v npm >/dev/null 2>&1 || pkgs="$pkgs npm"

# The packages each purpose keeps of the list above (all/test: every one).
build="build-essential cmake ninja-build pkg-config binutils python3 git
       liblua5.4-dev libzstd-dev libsqlite3-dev libsodium-dev libjansson-dev
       libcmocka-dev libcurl4-openssl-dev"
keep=""
for purpose in $purposes; do
  case $purpose in
    all | test) keep=all ;;
    build | release) keep="$keep $build" ;;
    container)
      keep="$keep $build"
      command -v docker >/dev/null 2>&1 || keep="$keep podman runc" ;;
    vulkan) keep="$keep $build glslang-tools spirv-tools" ;;
    *) echo "setup: unknown purpose '$purpose'; use build, container, vulkan, release, test or all" >&2
       exit 2 ;;
  esac
done
if [ "$keep" != all ]; then
  chosen=""
  for p in $pkgs; do
    case " $(echo $keep) " in *" $p "*) chosen="$chosen $p" ;; esac
  done
  pkgs=$chosen
fi

missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "setup: all packages present" >&2
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "setup: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet: refresh once if needed.
$SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1 || {
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends $missing
}
