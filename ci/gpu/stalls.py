#!/usr/bin/env python3
"""stalls.py < RAW.csv - the stall reasons of each launch in an Nsight Compute
raw page (`ncu --import R.ncu-rep --page raw --csv`), largest first: for each
metric whose name says "issue_stalled" (WarpStateStats' cycles a warp spends
in that state per instruction it issues, or the sampler's counts), its value
and its share of their sum, so that a session without ncu reads what holds
a kernel. ci/gpu/run.sh's ncu step writes it to ncu-NAME-stalls.txt. Exit 0;
1 when the input has no such metric.
"""
import csv
import sys


def main():
    if len(sys.argv) > 1:
        print(__doc__.strip())
        return 0 if sys.argv[1] in ("-h", "--help") else 2
    rows = list(csv.reader(sys.stdin))
    if len(rows) < 3:
        print("stalls.py: no launch in the raw page (%d lines)" % len(rows))
        return 1
    names, units = rows[0], rows[1]
    found = False
    for row in rows[2:]:
        cells = dict(zip(names, row))
        title = " ".join(cells.get(k, "") for k in ("Kernel Name", "Grid Size", "Block Size"))
        stalls = []
        for i, name in enumerate(names):
            if "issue_stalled" not in name or i >= len(row):
                continue
            try:
                v = float(row[i].replace(",", ""))
            except ValueError:
                continue
            stalls.append((v, name, units[i] if i < len(units) else ""))
        if not stalls:
            continue
        found = True
        print("== " + title.strip())
        for group in ("pcsamp", "average"):
            part = sorted((s for s in stalls if group in s[1]), reverse=True)
            total = sum(v for v, _, _ in part) or 1.0
            for v, name, unit in part:
                if v > 0:
                    print("  %-90s %12.3f %-8s %5.1f%%" % (name, v, unit, 100.0 * v / total))
        rest = [s for s in stalls if "pcsamp" not in s[1] and "average" not in s[1]]
        for v, name, unit in sorted(rest, reverse=True):
            if v > 0:
                print("  %-90s %12.3f %s" % (name, v, unit))
    if not found:
        print("stalls.py: no issue_stalled metric in the raw page (%d columns)" % len(names))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
