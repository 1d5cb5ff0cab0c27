# lib.sh - sourced by the CLI tests: a scratch folder and assertions.
# Usage in a test: . "$(dirname "$0")/lib.sh"; then run/expect helpers.
set -u
GK=$1 OUT=$2 ARCHIVE=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

. "$(dirname "$0")/../common/check.sh"
