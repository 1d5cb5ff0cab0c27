#!/bin/sh
# setup-macos.sh - what a macOS runner (the Metal part of a release) needs to
# build gk, from Homebrew. Idempotent: installs only what is missing. The
# Metal compiler itself comes with Xcode (since Xcode 26 as a separate
# component: xcodebuild -downloadComponent MetalToolchain).
#
# Formula names as Homebrew spells them: pkg-config is the pkgconf formula;
# sqlite and curl are keg-only (macOS has its own, older copies), so
# ci/configure.sh points pkg-config at their kegs, as it does at lua@5.4's
# when the plain lua formula has moved past 5.4 (gk needs pkg-config's
# lua5.4, the Lua it embeds).
set -eu
command -v brew >/dev/null 2>&1 || { echo "setup-macos: Homebrew is needed (https://brew.sh)" >&2; exit 1; }
missing=""
# Tools: a runner may have them from elsewhere (GitHub's images ship cmake
# outside Homebrew); only a missing command is installed.
command -v cmake >/dev/null 2>&1 || missing="$missing cmake"
command -v ninja >/dev/null 2>&1 || missing="$missing ninja"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkgconf"
# Libraries gk links (loader: sqlite, zstd, libsodium; build side: lua,
# jansson, curl for the remote cache; cmocka for the tests).
for f in lua zstd sqlite libsodium jansson cmocka curl; do
  brew list --versions "$f" >/dev/null 2>&1 || missing="$missing $f"
done
if [ -n "$missing" ]; then
  echo "setup-macos: installing$missing" >&2
  brew install $missing
else
  echo "setup-macos: all formulae present" >&2
fi
if ! pkg-config --exists lua5.4 && ! brew list --versions lua@5.4 >/dev/null 2>&1; then
  echo "setup-macos: Homebrew's lua is not 5.4 ($(brew list --versions lua)); installing lua@5.4" >&2
  brew install lua@5.4
fi
