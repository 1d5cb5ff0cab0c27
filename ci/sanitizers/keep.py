#!/usr/bin/env python3
"""keep.py [KEEP_TXT] - prints GK_SANITIZE_KEEP for ci/sanitizers/env.sh:
the libraries of keep.txt plus every Vulkan driver library that the Vulkan
loader's manifests name, colon-separated, only those that exist here.

The manifests are looked up where the loader looks (VK_DRIVER_FILES or
VK_ICD_FILENAMES when set, else the system icd.d folders); a driver's
library_path is absolute, relative to its manifest, or a bare name that
dlopen() searches for."""
import glob, json, os, sys, sysconfig

here = os.path.dirname(os.path.abspath(__file__))
keep_txt = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "keep.txt")
# Where dlopen() finds a bare name on Debian (no LD_LIBRARY_PATH involved).
arch = sysconfig.get_config_var("MULTIARCH") or ""
libdirs = ["/usr/local/lib", "/lib", "/usr/lib"] + (
    ["/usr/lib/" + arch, "/lib/" + arch] if arch else [])


def exists(name):
    if "/" in name:
        return os.path.exists(name)
    return any(os.path.exists(os.path.join(d, name)) for d in libdirs)


names = []
for line in open(keep_txt):
    line = line.split("#", 1)[0].strip()
    if line:
        names.append(line)

listed = os.environ.get("VK_DRIVER_FILES") or os.environ.get("VK_ICD_FILENAMES")
if listed:
    manifests = [m for m in listed.split(":") if m]
else:
    manifests = []
    for d in ("/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d",
              "/usr/share/vulkan/icd.d"):
        manifests += sorted(glob.glob(os.path.join(d, "*.json")))
for m in manifests:
    try:
        path = json.load(open(m))["ICD"]["library_path"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("keep.py: skipping Vulkan manifest '%s': %s" % (m, e), file=sys.stderr)
        continue
    if "/" in path and not os.path.isabs(path):
        path = os.path.normpath(os.path.join(os.path.dirname(m), path))
    names.append(path)

seen = set()
print(":".join(n for n in names if exists(n) and not (n in seen or seen.add(n))))
