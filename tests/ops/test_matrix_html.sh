#!/bin/bash
# gk matrix --html: one self-contained page, rendered by headless Chromium.
# Checks what a reader sees: the DOM after rendering (cells, legend, counts)
# and the screenshot (the cells are painted in their state's colour).
. "$(dirname "$0")/lib.sh"

make_synthetic "$T/syn.gkfat"
run "$GK" matrix "$T/syn.gkfat" --html "$T/syn.html"; expect_status 0 "matrix --html"
expect_err "wrote '$T/syn.html'" "matrix --html says what it wrote"
[ -s "$T/stdout" ] && fail "matrix --html prints nothing on stdout"
run "$GK" matrix "$T/syn.gkfat" --json; cp "$T/stdout" "$T/syn.json"
run "$GK" matrix "$ARCHIVE" --html "$T/real.html"; expect_status 0 "matrix --html (real)"
run "$GK" matrix "$T/syn.gkfat" --html -; expect_status 0 "matrix --html -"
cmp -s "$T/stdout" "$T/syn.html" || fail "--html - and --html FILE differ"
run "$GK" matrix "$T/syn.gkfat" --html "$T/no/such/dir/x.html"; expect_status 1 "--html into a missing folder"
expect_err "no/such/dir" "--html names the file it cannot write"
ls "$T"/*.tmp-* >/dev/null 2>&1 && fail "a temporary file was left behind"

# Self-contained, and the hostile kernel name is text, not markup.
py "the page is self-contained and escaped" "$T/syn.html" <<'PY'
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
low = html.lower()
for bad in ("<script", "<link", "<img", "<iframe", "@import", "url(", "http://", "https://", "src="):
    assert bad not in low, bad
assert "<b>&x" not in html and "&lt;b&gt;&amp;x" in html
assert low.startswith("<!doctype html>") and '<meta charset="utf-8">' in low
# The cards behind each target, and where the names come from (issue 23).
assert "<h2>Products</h2>" in html and "read 2026-11-26" in html
assert "<li><b>cuda compute_90 sm_90a</b>: NVIDIA GH200, NVIDIA H200, NVIDIA H100</li>" in html
assert "<li><b>rocm gfx90a:xnack+</b>: AMD Instinct MI210, AMD Instinct MI250, AMD Instinct MI250X</li>" in html
PY

# Headless, sandbox off (root), nothing fetched or synced, a fresh profile.
chrome() {
  profile=$(mktemp -d "$T/profile.XXXXXX")
  timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-extensions --disable-default-apps --force-color-profile=srgb \
    --hide-scrollbars --user-data-dir="$profile" "$@"
}

# The first Chromium-family browser that really renders a page. A command of
# that name may be a stub: Ubuntu's chromium and chromium-browser packages
# only say "requires the chromium snap", which containers cannot run.
BROWSER="" why=""
for b in chromium chromium-browser google-chrome-stable google-chrome; do
  if ! command -v "$b" >/dev/null 2>&1; then
    continue
  fi
  BROWSER=$b
  if chrome --dump-dom 'data:text/html,<p id="gk">gk-probe-ok</p>' >"$T/probe.out" 2>&1 &&
    grep -q 'gk-probe-ok</p>' "$T/probe.out"; then
    break
  fi
  why="$why $b ($(command -v "$b")) does not render a page: $(grep -m1 . "$T/probe.out" | cut -c1-160);"
  BROWSER=""
done
[ -n "$BROWSER" ] || skip "no working headless Chromium:${why:- none of chromium, chromium-browser, google-chrome is installed (ci/setup.sh installs chromium on Debian);} the static checks passed"
echo "rendering with $BROWSER ($(command -v "$BROWSER"))"

chrome --dump-dom "file://$T/syn.html" >"$T/dom.html" 2>"$T/chrome.log" ||
  { cat "$T/chrome.log" >&2; fail "chromium --dump-dom failed"; }
py "the rendered DOM shows the grid, legend and counts" "$T/dom.html" "$T/syn.json" <<'PY'
import json, sys
from html.parser import HTMLParser
d = json.load(open(sys.argv[2]))

class Grid(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell, self.text = [], None, None, None
        self.ids, self.heads, self.in_head, self.th = {}, [], False, None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "thead": self.in_head = True
        if tag == "tr" and not self.in_head: self.row = []
        if tag == "td" and self.row is not None and "data-state" in a:
            self.cell = [a["data-state"], a.get("class", ""), "", a.get("title", "")]
        if tag == "th" and self.in_head and a.get("class") == "target": self.th = ""
        if "id" in a: self.text = [a["id"], ""]
    def handle_endtag(self, tag):
        if tag == "thead": self.in_head = False
        if tag == "td" and self.cell is not None:
            self.row.append(self.cell); self.cell = None
        if tag == "tr" and self.row is not None:
            self.rows.append(self.row); self.row = None
        if tag == "th" and self.th is not None:
            self.heads.append(self.th); self.th = None
        if self.text and tag in ("b", "span"):
            self.ids[self.text[0]] = self.text[1]; self.text = None
    def handle_data(self, data):
        if self.cell is not None: self.cell[2] += data
        if self.th is not None: self.th += data
        if self.text: self.text[1] += data

g = Grid()
g.feed(open(sys.argv[1], encoding="utf-8").read())
assert g.heads == [c["target"] for c in d["columns"]], g.heads
assert len(g.rows) == len(d["rows"]), (len(g.rows), len(d["rows"]))
shown = {"present": "\u2713", "ptx": "PTX", "ptx-only": "PTX only", "absent": "\u2013"}
for got, want in zip(g.rows, d["rows"]):
    assert [c[0] for c in got] == [c["state"] for c in want["cells"]], (got, want)
    for c in got:
        assert c[0] in c[1].split(), c           # class carries the state
        assert c[2] == shown[c[0]], c            # and so does the text
        assert c[3].endswith(": none") == (c[0] == "absent"), c
n = d["counts"]
assert g.ids["count-present"] == str(n["present"]) == "7", g.ids
assert g.ids["count-ptx"] == str(n["ptx"]) == "1"
assert g.ids["count-ptx-only"] == str(n["ptx_only"]) == "3"
assert g.ids["count-absent"] == str(n["absent"])
assert (g.ids["images"], g.ids["rows"], g.ids["columns"]) == ("11", "5", "9"), g.ids
PY

# The screenshots: each state's colour covers an area that grows with its
# number of cells. The real archive (16 present, nothing else) against the
# synthetic one (7 present, 1 ptx, 3 ptx-only, 34 absent): the legend
# swatches are in both, so only painted cells make the difference.
for page in syn real; do
  (cd "$T" && chrome --window-size=1400,900 --screenshot="$T/$page.png" "file://$T/$page.html" \
    >/dev/null 2>"$T/chrome.log") || { cat "$T/chrome.log" >&2; fail "chromium --screenshot $page failed"; }
done
py "the screenshots show the cells in their colours" "$T/syn.png" "$T/real.png" <<'PY'
import struct, sys, zlib
def pixels(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6) and not interlace, (depth, ctype, interlace)
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    out, prev = bytearray(), bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += line; prev = line
    counts = {}
    for i in range(0, len(out), bpp):
        k = bytes(out[i:i + 3]); counts[k] = counts.get(k, 0) + 1
    return counts
colour = {"present": bytes.fromhex("2e7d32"), "ptx": bytes.fromhex("fbc02d"),
          "ptx-only": bytes.fromhex("d84315"), "absent": bytes.fromhex("eeeeee")}
syn, real = pixels(sys.argv[1]), pixels(sys.argv[2])
area = lambda c, s: c.get(colour[s], 0)
for s in colour: print(s, "syn", area(syn, s), "real", area(real, s))
# Present: 16 cells against 7, both well above the swatch alone.
assert area(real, "present") > 1.5 * area(syn, "present") > 0
# PTX only: 3 cells (plus the swatch) against the swatch alone.
assert area(syn, "ptx-only") > 3 * area(real, "ptx-only") > 0
assert area(syn, "ptx") > 1.5 * area(real, "ptx") > 0
assert area(syn, "absent") > 5 * area(real, "absent") > 0
PY
finish
