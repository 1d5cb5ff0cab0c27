# env.sh - the settings of the sanitizer stage, sourced by ci/sanitize.sh
# and by the test that checks them (tests/sanitize). The caller sets
# GK_SANITIZERS to this folder first (a sourced sh script cannot find itself).
#
# halt_on_error/abort: a report fails the test that triggered it;
# detect_leaks: leaks are findings (LSan runs at exit of every program,
# gk included); the suppression files name the third-party code they cover,
# and GK_SANITIZE_KEEP keeps the third-party libraries that are dlopen()ed
# and closed loaded to the end (keep_loaded.c, keep.txt), so that what they
# leave behind is seen under their own names, never as "<unknown module>".
: "${GK_SANITIZERS:?set GK_SANITIZERS to ci/sanitizers before sourcing env.sh}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$GK_SANITIZERS/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$GK_SANITIZERS/ubsan.supp"
GK_SANITIZE_KEEP=$(python3 "$GK_SANITIZERS/keep.py")
export GK_SANITIZE_KEEP
