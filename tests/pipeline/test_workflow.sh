#!/bin/sh
# Lints .github/workflows/kernels.yml: parsed with PyYAML and checked for
# the structure the release needs (jobs, needs, matrix shards, pinned
# images, artifacts) and that every script a step runs exists in ci/ and
# parses; actionlint too when it is installed.
# Usage: test_workflow.sh SOURCE_ROOT
set -u
ROOT=$1
PY=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import yaml' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "FAIL: no python3 with PyYAML (ci/setup.sh installs python3-yaml)" >&2; exit 1; }
status=0
"$PY" - "$ROOT" <<'PY' || status=1
import os, re, subprocess, sys, yaml

root = sys.argv[1]
wf_path = os.path.join(root, ".github/workflows/kernels.yml")
wf = yaml.safe_load(open(wf_path))
errors = []
def check(cond, msg):
    if not cond:
        errors.append(msg)

# YAML 1.1 reads the key `on` as True.
on = wf.get("on", wf.get(True))
check(isinstance(on, dict) and "push" in on and "pull_request" in on, "triggers: push and pull_request")
jobs = wf.get("jobs") or {}
for name in ("linux", "cuda", "rocm", "metal", "release"):
    check(name in jobs, "job '%s' is missing" % name)

def needs(job):
    n = job.get("needs", [])
    return [n] if isinstance(n, str) else list(n)

for name, job in jobs.items():
    check("runs-on" in job, "%s: no runs-on" % name)
    check("timeout-minutes" in job, "%s: no timeout-minutes" % name)
    steps = job.get("steps") or []
    check(steps, "%s: no steps" % name)
    for i, st in enumerate(steps):
        check(("uses" in st) != ("run" in st), "%s step %d: exactly one of uses/run" % (name, i))
        if "uses" in st:
            check(re.search(r"@(v\d+|[0-9a-f]{40})$", st["uses"]), "%s step %d: action '%s' not pinned" % (name, i, st["uses"]))
    for n in needs(job):
        check(n in jobs, "%s needs unknown job '%s'" % (name, n))

# No cycle in needs.
seen, stack = set(), set()
def visit(n):
    if n in stack:
        errors.append("needs cycle through '%s'" % n); return
    if n in seen or n not in jobs: return
    stack.add(n)
    for m in needs(jobs[n]): visit(m)
    stack.discard(n); seen.add(n)
for n in jobs: visit(n)

build_jobs = [n for n in jobs if n != "release"]
rel = jobs.get("release", {})
check(sorted(needs(rel)) == sorted(build_jobs), "release must need every build job: %s" % needs(rel))
check(str(jobs.get("metal", {}).get("runs-on", "")).startswith("macos"), "metal runs on macOS")

def runs(job):
    return "\n".join(st.get("run", "") for st in job.get("steps") or [])

# Each build job uploads a part-* artifact; release downloads part-*.
for n in build_jobs:
    ups = [st for st in jobs[n].get("steps") or [] if str(st.get("uses", "")).startswith("actions/upload-artifact")]
    check(ups and all(str(u.get("with", {}).get("name", "")).startswith("part-") for u in ups),
          "%s: uploads no part-* artifact" % n)
    check("ci/part.sh" in runs(jobs[n]), "%s: does not build with ci/part.sh" % n)
downs = [st for st in rel.get("steps") or [] if str(st.get("uses", "")).startswith("actions/download-artifact")]
check(downs and downs[0].get("with", {}).get("pattern") == "part-*", "release: downloads part-*")
check("ci/merge.sh" in runs(rel), "release: merges with ci/merge.sh")

# Sharded container jobs: matrix 1..N, --shard .../N, the pinned image.
images = {}
for line in open(os.path.join(root, "ci/images.env")):
    m = re.match(r"^([A-Z_]+_IMAGE)=(\S+)$", line.strip())
    if m: images[m.group(1)] = m.group(2)
check(images, "ci/images.env defines no *_IMAGE")
for var, ref in images.items():
    check(re.search(r"@sha256:[0-9a-f]{64}$", ref), "%s is not pinned by digest: %s" % (var, ref))
for n, module, var in (("cuda", "nvcc", "CUDA_IMAGE"), ("rocm", "hipcc", "ROCM_IMAGE")):
    job = jobs.get(n, {})
    shards = (job.get("strategy") or {}).get("matrix", {}).get("shard")
    text = runs(job)
    check(isinstance(shards, list) and shards == list(range(1, len(shards) + 1)), "%s: matrix shard must be 1..N" % n)
    if isinstance(shards, list):
        check("--shard \"${{ matrix.shard }}/%d\"" % len(shards) in text, "%s: --shard I/%d" % (n, len(shards)))
    check("--container" in text and "%s=$%s" % (module, var) in text, "%s: builds in the pinned image" % n)
    check(". ci/images.env" in text and var in images, "%s: sources ci/images.env for %s" % (n, var))

# Every script a step runs exists, is executable and parses.
scripts = set()
for job in jobs.values():
    scripts.update(re.findall(r"(?:\./)?(ci/[\w.-]+\.sh)", runs(job)))
for s in ("ci/setup.sh", "ci/configure.sh", "ci/main.sh", "ci/test.sh", "ci/regenerate.sh"):
    scripts.add(s)
for s in sorted(scripts):
    p = os.path.join(root, s)
    if not os.path.isfile(p):
        errors.append("%s is run but does not exist" % s); continue
    check(os.access(p, os.X_OK), "%s is not executable" % s)
    r = subprocess.run(["sh", "-n", p], capture_output=True, text=True)
    check(r.returncode == 0, "%s does not parse: %s" % (s, r.stderr.strip()))
# Scripts the scripts call.
for s in sorted(scripts):
    p = os.path.join(root, s)
    if os.path.isfile(p):
        for t in re.findall(r'\$root/(ci/[\w.-]+\.sh)', open(p).read()):
            check(os.path.isfile(os.path.join(root, t)), "%s calls %s, which does not exist" % (s, t))

for e in errors:
    print("FAIL: " + e, file=sys.stderr)
print("workflow: %d jobs, %d scripts checked, %d problem(s)" % (len(jobs), len(scripts), len(errors)))
sys.exit(1 if errors else 0)
PY
if command -v actionlint >/dev/null 2>&1; then
  actionlint "$ROOT/.github/workflows/kernels.yml" || status=1
else
  echo "SKIP (actionlint part only): actionlint is not installed; the structural checks above ran"
fi
[ "$status" -eq 0 ] && echo "all checks passed"
exit "$status"
