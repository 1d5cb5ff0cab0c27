#!/bin/sh
# check-skipped.sh MANIFEST - fails when the build of MANIFEST (out/.../
# manifest.json) skipped a backend or target the recipes ask for, unless
# $GK_ALLOW_SKIPPED lists it: one entry per line, "BACKEND REASON" for a
# whole backend or "BACKEND:TARGET REASON" for one target, the reason saying
# why the release may ship without it. ci/part.sh runs it when
# $GK_REQUIRE_TARGETS=1 (the release workflow sets both), so a release never
# leaves out a target silently.
#   GK_ALLOW_SKIPPED='rocm:gfx1201 hipcc of the pinned image cannot target it' ci/check-skipped.sh out/parts/rocm-1/manifest.json
set -eu
[ $# -eq 1 ] || { echo "usage: ci/check-skipped.sh MANIFEST" >&2; exit 2; }
exec python3 - "$1" <<'PY'
import json, os, sys
path = sys.argv[1]
try:
    skipped = json.load(open(path)).get("skipped", [])
except (OSError, ValueError) as e:
    sys.exit("ci/check-skipped.sh: cannot read manifest '%s': %s" % (path, e))
allowed = {}
for n, line in enumerate(os.environ.get("GK_ALLOW_SKIPPED", "").splitlines(), 1):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    what, _, reason = line.partition(" ")
    if not reason.strip():
        sys.exit("ci/check-skipped.sh: GK_ALLOW_SKIPPED line %d ('%s') has no reason; write "
                 "'BACKEND[:TARGET] REASON'" % (n, line))
    allowed[what] = reason.strip()
bad = 0
for s in skipped:
    what = s["backend"] + (":" + s["target"] if s.get("target") else "")
    if what in allowed or s["backend"] in allowed:
        print("ci/check-skipped.sh: %s skipped (%s), allowed: %s"
              % (what, s.get("reason", ""), allowed.get(what) or allowed[s["backend"]]), file=sys.stderr)
    else:
        print("ci/check-skipped.sh: %s was skipped: %s; a release needs it (or list it in "
              "GK_ALLOW_SKIPPED with the reason)" % (what, s.get("reason", "")), file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
