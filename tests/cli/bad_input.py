#!/usr/bin/env python3
"""Runs one row of bad_inputs.tsv: a bad input to gk and the message a user
must see for it.

Usage: bad_input.py GK ARCHIVE OUTDIR TABLE NAME

Each row (tab-separated; '-' for an empty field):
  name     the test's name (ctest: cli.bad_input.NAME)
  setup    comma-separated steps that make the bad input, in a fresh scratch
           folder $T (see SETUP below)
  command  run by bash with $GK, $T, $P (a small project), $R (a recipes
           folder), $ARCHIVE (a real archive), $OUTDIR (its build folder)
  exit     the exit status gk must give
  message  one whole line of stderr, exactly; the same variables, plus
           @EROFS@ (the reason a read-only folder gives), @ENOSPC@ (a full
           disk's) and @ANY@ (any text, for a part that is not ours: a
           compiler's own words)
  leaves   '-', or comma-separated paths under $T that the failure may
           create (a compile cache); anything else that appears in $T after
           the command is something half-written, and fails the row

A row whose situation cannot be made here (a full disk needs a tmpfs mount,
hence root) exits 77 with SKIP and the reason.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "bad_inputs")
VARS = ("GK", "T", "P", "R", "ARCHIVE", "OUTDIR")


class Skip(Exception):
    pass


def read_row(table, name):
    for n, line in enumerate(open(table, encoding="utf-8"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        if len(f) != 6:
            sys.exit("FAIL: %s:%d: %d fields, expected 6 (name setup command exit message leaves)"
                     % (table, n, len(f)))
        if f[0] == name:
            return [None if x == "-" else x for x in f]
    sys.exit("FAIL: no row '%s' in %s" % (name, table))


def mount_tmpfs(path, opts, mounts):
    """A tmpfs at path (root only); False when mounting is not permitted."""
    if os.geteuid() != 0:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return False
    mounts.append(path)
    return True


def setup(steps, env, mounts, subst):
    T, P, R = env["T"], env["P"], env["R"]
    for step in steps.split(",") if steps else []:
        kind, _, arg = step.partition(":")
        path = os.path.join(T, arg)
        if kind == "recipe":  # bad_inputs/ARG.lua as $R/ARG.lua, @P@ = $P
            text = open(os.path.join(DATA, arg + ".lua"), encoding="utf-8").read()
            open(os.path.join(R, arg + ".lua"), "w").write(text.replace("@P@", P))
        elif kind == "cctool":  # bad_inputs/ARG.lua replaces the cc module
            os.makedirs(os.path.join(R, "toolchains"), exist_ok=True)
            shutil.copy(os.path.join(DATA, arg + ".lua"), os.path.join(R, "toolchains", "cc.lua"))
        elif kind == "dir":
            os.makedirs(path)
        elif kind == "file":
            open(path, "w").close()
        elif kind == "keygen":  # a key pair $T/ARG.key, $T/ARG.pub (gk keygen)
            subprocess.run([env["GK"], "keygen", "--out", path], check=True, capture_output=True)
        elif kind == "readable":  # a file others may read (mode 0644)
            os.chmod(path, 0o644)
        elif kind == "text":
            open(path, "w").write("hello, not an archive\n")
        elif kind == "random":
            open(path, "wb").write(os.urandom(100000))
        elif kind == "foreign":  # a SQLite database, but not ours
            subprocess.run(["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                            "c.execute('create table t(x)'); c.commit()", path], check=True)
        elif kind == "future":  # our archive, from a newer format version
            shutil.copy(env["ARCHIVE"], path)
            subprocess.run(["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                            "c.execute('pragma user_version=99'); c.commit()", path], check=True)
        elif kind == "truncated":  # the first 8 KiB of a real archive
            open(path, "wb").write(open(env["ARCHIVE"], "rb").read(8192))
        elif kind == "ro":  # a folder nothing can be written into
            os.makedirs(path)
            if mount_tmpfs(path, "ro,size=64k,mode=0755", mounts):
                subst["@EROFS@"] = "Read-only file system"
            elif os.geteuid() != 0:
                os.chmod(path, 0o555)
                subst["@EROFS@"] = "Permission denied"
            else:
                raise Skip("cannot mount a read-only tmpfs, and root writes through permissions: "
                           "no unwritable folder can be made here")
        elif kind == "full":  # a folder on a full file system
            os.makedirs(path)
            if not mount_tmpfs(path, "size=64k", mounts):
                raise Skip("a full disk is simulated with a small tmpfs, and mounting one needs "
                           "root (or is not permitted here)")
            try:
                with open(os.path.join(path, "fill"), "wb") as f:
                    while True:
                        f.write(b"\0" * 4096)
                        f.flush()
            except OSError:
                pass
            subst["@ENOSPC@"] = "No space left on device"
        else:
            sys.exit("FAIL: unknown setup step '%s'" % step)


def expand(text, env):
    return re.sub(r"\$(%s)\b" % "|".join(sorted(VARS, key=len, reverse=True)),
                  lambda m: env[m.group(1)], text)


def snapshot(T):
    out = set()
    for d, dirs, files in os.walk(T):
        for n in dirs + files:
            out.add(os.path.relpath(os.path.join(d, n), T))
    return out


def main():
    gk, archive, outdir, table, name = sys.argv[1:6]
    _, steps, command, want_exit, message, leaves = read_row(table, name)
    T = tempfile.mkdtemp(prefix="gk-bad-input.")
    mounts = []
    failures = []
    try:
        env = dict(os.environ)
        env.update(GK=os.path.abspath(gk), T=T, P=os.path.join(T, "p"), R=os.path.join(T, "r"),
                   ARCHIVE=os.path.abspath(archive), OUTDIR=os.path.abspath(outdir),
                   GK_CACHE_DIR=os.path.join(T, "default-cache"), LC_ALL="C")
        for k in [k for k in env if k.startswith("GK_REMOTE_CACHE")]:
            env.pop(k)  # never a remote (or its keys) the environment names
        shutil.copytree(os.path.join(DATA, "project"), env["P"])
        os.makedirs(env["R"])
        subst = {}
        setup(steps, env, mounts, subst)
        before = snapshot(T)

        r = subprocess.run(["bash", "-c", command], env=env, cwd=T, capture_output=True,
                           text=True, errors="replace", timeout=300)
        print("$ %s\nexit %d\n%s" % (expand(command, env), r.returncode, r.stderr), end="")

        if r.returncode != int(want_exit):
            failures.append("exit %d, expected %s" % (r.returncode, want_exit))
        want = expand(message, env)
        pattern = ".*".join(re.escape(p) for p in want.split("@ANY@"))
        for k, v in subst.items():
            pattern = pattern.replace(re.escape(k), re.escape(v))
        if "@EROFS@" in want and "@EROFS@" not in subst or "@ENOSPC@" in want and "@ENOSPC@" not in subst:
            sys.exit("FAIL: row '%s' uses a placeholder its setup does not make" % name)
        if not any(re.fullmatch(pattern, line) for line in r.stderr.splitlines()):
            failures.append("no line of stderr is\n    %s" % want)

        # Nothing half-written: the only new paths are the ones the row allows.
        allowed = [expand(x, env) for x in (leaves.split(",") if leaves else [])]
        allowed = [os.path.relpath(x, T) if os.path.isabs(x) else x for x in allowed]
        new = sorted(p for p in snapshot(T) - before
                     if not any(p == a or p.startswith(a + "/") for a in allowed))
        if new:
            failures.append("left behind in $T: %s" % ", ".join(new[:10]))
    except Skip as e:
        print("SKIP: %s" % e)
        return 77
    finally:
        for m in reversed(mounts):
            if subprocess.run(["umount", m]).returncode != 0:
                subprocess.run(["umount", "-l", m])
        shutil.rmtree(T, ignore_errors=True)
    for f in failures:
        print("FAIL: %s: %s" % (name, f))
    if not failures:
        print("ok: %s" % name)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
