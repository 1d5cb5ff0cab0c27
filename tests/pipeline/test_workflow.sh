#!/bin/sh
# Lints .github/workflows/kernels.yml: parsed with PyYAML and checked for
# the structure the release needs (jobs, needs, matrix shards, pinned
# images for cpu, cuda and rocm, artifacts, every backend built), the tests
# on pull requests, the coverage gate, per-job setup, the remote cache's
# trust (pull requests read only; only pushes to main get the write and
# signing secrets) and the signed release; and that every script a step runs
# exists in ci/ and parses; actionlint too when it is installed.
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
for name in ("test", "linux", "shaders", "cuda", "rocm", "metal", "release"):
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

def runs(job):
    return "\n".join(st.get("run", "") for st in job.get("steps") or [])

build_jobs = [n for n in jobs if "ci/part.sh" in runs(jobs[n])]
rel = jobs.get("release", {})
check(sorted(needs(rel)) == sorted(build_jobs + ["test"]),
      "release must need every build job and the tests: %s" % needs(rel))
check(str(jobs.get("metal", {}).get("runs-on", "")).startswith("macos"), "metal runs on macOS")

# Every backend a toolchain module builds (the README presents each) is
# built by some job.
built = set()
for n in build_jobs:
    built.update(re.findall(r"--backend\s+(\w+)", runs(jobs[n])))
modules = set()
tcdir = os.path.join(root, "recipes/toolchains")
for f in os.listdir(tcdir):
    if not f.endswith(".lua"): continue  # lib/: what modules share
    m = re.search(r'^\s*backend\s*=\s*"(\w+)"', open(os.path.join(tcdir, f)).read(), re.M)
    if m: modules.add(m.group(1))
check(modules and modules <= built, "backends no job builds: %s" % sorted(modules - built))

# The test suite runs on pull requests: a job running ci/test.sh that no
# `if` keeps from pull_request events.
tests = [n for n in jobs if "ci/test.sh" in runs(jobs[n])]
check(tests, "no job runs ci/test.sh")
for n in tests:
    cond = str(jobs[n].get("if", ""))
    check("pull_request" not in cond and "refs/" not in cond, "%s: ci/test.sh must run on pull requests (if: %s)" % (n, cond))

# Coverage gate: parts fail on a skipped target unless allowed with a reason.
env = wf.get("env") or {}
check(str(env.get("GK_REQUIRE_TARGETS", "")) == "1", "env: GK_REQUIRE_TARGETS must be 1")
for line in str(env.get("GK_ALLOW_SKIPPED", "")).splitlines():
    line = line.strip()
    if line and not line.startswith("#"):
        check(re.match(r"^\w+(:\S+)?\s+\S", line), "GK_ALLOW_SKIPPED: '%s' needs BACKEND[:TARGET] REASON" % line)
check("ci/check-skipped.sh" in open(os.path.join(root, "ci/part.sh")).read(), "ci/part.sh does not run ci/check-skipped.sh")

# Each job installs only what it needs: ci/setup.sh's purpose in GK_SETUP
# for every job that builds gk through part.sh or merge.sh (macOS has its own).
setup_text = open(os.path.join(root, "ci/setup.sh")).read()
for n, job in jobs.items():
    text = runs(job)
    if ("ci/part.sh" in text or "ci/merge.sh" in text) and not str(job.get("runs-on", "")).startswith("macos"):
        purpose = str((job.get("env") or {}).get("GK_SETUP", ""))
        check(purpose and purpose not in ("all", "test"), "%s: set GK_SETUP to what the job needs, not everything" % n)
        for p in purpose.split():
            check(re.search(r"^\s*(\S+ \| )*%s( \| \S+)*\)" % re.escape(p), setup_text, re.M),
                  "%s: ci/setup.sh has no purpose '%s'" % (n, p))

# The remote cache: pull requests read only. The cache's write secrets are
# only given to pushes on main, every build job trusts the writers' key and
# none reads the secrets directly into a command.
text = open(wf_path).read()
for secret in ("GK_CACHE_SIGN_KEY", "GK_CACHE_TOKEN"):
    for line in text.splitlines():
        if "${{" in line and "secrets." + secret in line:
            check("github.event_name == 'push'" in line and "github.ref == 'refs/heads/main'" in line,
                  "secrets.%s must be guarded by a push to main: %s" % (secret, line.strip()))
for n in build_jobs:
    steps = jobs[n].get("steps") or []
    setup = [st for st in steps if "ci/remote-cache-setup.sh" in st.get("run", "")]
    check(setup, "%s: no remote cache keys step (ci/remote-cache-setup.sh)" % n)
    for st in setup:
        e = st.get("env") or {}
        check("vars.GK_CACHE_PUBLIC_KEY" in str(e.get("CACHE_PUBLIC_KEY", "")), "%s: does not trust the writers' key" % n)
        check('"$GITHUB_ENV"' in st.get("run", "") or "$GITHUB_ENV" in st.get("run", ""), "%s: the keys do not reach the build" % n)
    part_at = [i for i, st in enumerate(steps) if "ci/part.sh" in st.get("run", "")]
    setup_at = [i for i, st in enumerate(steps) if "ci/remote-cache-setup.sh" in st.get("run", "")]
    check(setup_at and part_at and setup_at[0] < part_at[0], "%s: the remote cache keys come after the build" % n)

# The release is signed with the release key, on tags only, and publishes
# the public key and its fingerprint.
for line in text.splitlines():
    if "${{" in line and "secrets.GK_RELEASE_KEY" in line:
        check("startsWith(github.ref, 'refs/tags/')" in line, "secrets.GK_RELEASE_KEY outside tags: %s" % line.strip())
rel_text = runs(rel)
check("secrets.GK_RELEASE_KEY" in yaml.safe_dump(rel), "release: does not use secrets.GK_RELEASE_KEY")
check("GK_SIGN_KEY=" in rel_text, "release: ci/merge.sh is not given GK_SIGN_KEY")
merge_steps = [st for st in rel.get("steps") or [] if "ci/merge.sh" in st.get("run", "")]
check(merge_steps and "vars.GK_RELEASE_PUBLIC_KEY" in str((merge_steps[0].get("env") or {}).get("GK_SIGN_PUBLIC_KEY", "")),
      "release: the signing key is not checked against vars.GK_RELEASE_PUBLIC_KEY")
check("kernels.pub" in rel_text and "signing-key.txt" in rel_text, "release: the public key and its fingerprint are not published")
check(re.search(r'"\$gk" sign .*GK_SIGN_KEY', open(os.path.join(root, "ci/merge.sh")).read()), "ci/merge.sh does not sign")
check((wf.get("permissions") or {}).get("contents") == "read", "the workflow's default permissions must be contents: read")
for n, job in jobs.items():
    if n != "release":
        check("permissions" not in job, "%s: only the release job may write" % n)

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
for n, module, var in (("cuda", "nvcc", "CUDA_IMAGE"), ("rocm", "hipcc", "ROCM_IMAGE"),
                       ("linux", "cc", "CPU_IMAGE")):
    job = jobs.get(n, {})
    text = runs(job)
    if n != "linux":
        shards = (job.get("strategy") or {}).get("matrix", {}).get("shard")
        check(isinstance(shards, list) and shards == list(range(1, len(shards) + 1)), "%s: matrix shard must be 1..N" % n)
        if isinstance(shards, list):
            check("--shard \"${{ matrix.shard }}/%d\"" % len(shards) in text, "%s: --shard I/%d" % (n, len(shards)))
    check("--container" in text and "%s=$%s" % (module, var) in text, "%s: builds in the pinned image" % n)
    check(". ci/images.env" in text and var in images, "%s: sources ci/images.env for %s" % (n, var))
    check("ci/check-images.sh %s" % var in text, "%s: does not check %s against its registry" % (n, var))

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
