#!/bin/sh
# setup-macos.sh - what a macOS runner (the Metal part of a release) needs to
# build gk, from Homebrew. The Metal compiler itself comes with Xcode (since
# Xcode 26 as a separate component: xcodebuild -downloadComponent MetalToolchain).
set -eu
command -v brew >/dev/null 2>&1 || { echo "setup-macos: Homebrew is needed (https://brew.sh)" >&2; exit 1; }
for f in cmake ninja pkg-config lua zstd sqlite libsodium jansson cmocka curl; do
  brew list --formula "$f" >/dev/null 2>&1 || brew install "$f"
done
