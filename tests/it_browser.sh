# it_browser.sh - the live dashboard and the job report as a real browser
# renders them (headless Chromium).
#
# A real local job (telem_launch --local 3 --nodes 2: n1, n2 active, n3 in
# reserve) with collectors timing the cpu test on every active node, a
# threshold detector on a metric the program on n2 records itself (so the
# event is certain), and telem_agg on an ephemeral port.  Once telem_agg
# lists the nodes and the event and answers the collectors' series, the
# dashboard at its URL is loaded in headless Chromium until its DOM holds
# the charts (or a generous bound runs out): one chart of the collector
# metric with one line per device (the devices of the collector map), the
# node names with their states, the event's text; then a screenshot must
# show charts, not a blank page (the PNG decoded with zlib alone).  Every
# node's system snapshot is summed up in a "Node systems" details element
# (GET /telem/snapshot, or the report's embedded copies) naming its CPU.  Then
# `telem_client report` writes the job's report, the job stops, no
# telem_agg of this job may be left, and the report is opened from its
# file with every host name unresolvable: the same facts, from the data
# inlined in the file.
#
# The browser is $TELEM_CHROMIUM, else chromium on PATH; where there is
# none the test installs Debian's chromium (tests/peer_install.sh, as root
# on Debian), and is skipped, with the reason, only where it cannot (not
# root, no apt, the install failed, or TELEM_BROWSER_INSTALL=0).  Every
# wait is on behaviour, bounded (60 s for the browser, which can be slow
# to start the first time); every process the test started, Chromium's
# included, is ended however the test ends.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
C=$TELEM_BIN/telem_client
OUT=$T/out
mkdir "$OUT"
unset TELEM_LEVEL TELEM_NODEFILE SLURM_JOB_NODELIST || true
for p in telem_launch telem_agg telem_watch telem_collect add_data_demo; do
    [ -x "$TELEM_BIN/$p" ] || fail "$p is not built"
done

# ---- the browser -------------------------------------------------------------
source "$(dirname "${BASH_SOURCE[0]}")/browser.sh"

# ---- checks (python3's standard library only) ---------------------------------
cat >"$T/page.py" <<'PY'
"""Checks of the job's HTTP answers, of the page's DOM and of a screenshot."""
import json, operator, os, re, struct, sys, urllib.error, urllib.request, zlib
from html.parser import HTMLParser
from itertools import accumulate

def fail(why):
    sys.exit(why)

# The job's telem_agg answers only requests with the job's token.
TOKEN = os.environ.get("AGG_TOKEN", "")
AUTH = {"Authorization": "Bearer " + TOKEN} if TOKEN else {}

def get(url, body=None):
    req = urllib.request.Request(url, data=None if body is None else
                                 json.dumps(body).encode(),
                                 headers=dict(AUTH, **{"Content-Type":
                                                       "application/json"}))
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)

STATES = {"n1": "active", "n2": "active", "n3": "idle"}

def job(url):
    """The nodes with their states and the flag event; prints its text."""
    j = get(url + "telem/job")
    got = {n["name"]: n["state"] for n in j["job"]["nodes"]}
    if got != STATES:
        fail("nodes: %s" % got)
    ev = [e for e in j["events"] if e.get("detector") == "flag"]
    if not ev:
        fail("no flag event yet")
    print(ev[0]["text"])

def series(url, metric, labels):
    """/api/query has points of `metric` from every device of `labels`."""
    res = get(url + "api/query?arrays=true", {"start": "15m-ago",
          "msResolution": True, "queries": [{"metric": metric, "aggregator": "none"}]})
    got = {s["tags"]["host"] + "/" + s["tags"]["gpu"] for s in res if s["dps"]}
    if not set(labels.split(",")) <= got:
        fail("devices with points: %s" % sorted(got))

# The DOM tree (Node, Tree) is browser_rows.py's, beside this test.
sys.path.insert(0, os.environ["TESTS_DIR"])
from browser_rows import Tree  # noqa: E402

def by_class(root, c):
    return root.find(lambda n: c in n.cls())

def dom(path, mode, metric, labels, event_file, snap_file):
    """The rendered page: charts, nodes, the event, the page's mode."""
    t = Tree()
    t.feed(open(path, encoding="utf-8").read())
    root = t.root
    status = " ".join(n.text() for n in by_class(root, "telem-status"))
    want = {"live": "live, updated", "report": "report generated"}[mode]
    if want not in status or by_class(root, "telem-error"):
        fail("page status: %r" % status)
    charts = [c for c in by_class(root, "telem-chart")
              if c.attrs.get("data-metric") == metric]
    if len(charts) != 1 or not re.fullmatch(r"cg_.+_seconds", metric):
        fail("charts of %s: %d (every chart: %s)" % (metric, len(charts),
             [c.attrs for c in by_class(root, "telem-chart")]))
    c = charts[0]
    want_labels = sorted(labels.split(","))
    if c.attrs.get("data-series") != str(len(want_labels)):
        fail("%s: data-series %s, devices %d" % (metric,
             c.attrs.get("data-series"), len(want_labels)))
    if not c.find(lambda n: n.tag == "canvas"):
        fail("%s: no canvas drawn: %r" % (metric, c.text()[:200]))
    drawn = sorted(n.text() for n in by_class(c, "u-label") if n.text() != "Time")
    if drawn != want_labels:
        fail("%s: lines %s, devices %s" % (metric, drawn, want_labels))
    nodes = {n.own_text(): [k[6:] for k in n.cls() if k.startswith("state-")]
             for n in by_class(root, "telem-node")}
    if nodes != {k: [v] for k, v in STATES.items()}:
        fail("nodes shown: %s" % nodes)
    text = open(event_file, encoding="utf-8").read().rstrip("\n")
    events = root.find(lambda n: n.attrs.get("id") == "telem-events")
    rows = [(" ".join(x.text() for x in by_class(li, "telem-sev")),
             " ".join(x.text() for x in by_class(li, "telem-text")))
            for e in events for li in e.find(lambda n: n.tag == "li")]
    if ("warn flag", text) not in rows:
        fail("event %r not listed: %s" % (text, rows))
    systems(root, mode, snap_file)

def snapshot(url, out):
    """n1's system snapshot from /telem/snapshot (written to out); 404 for
    a node the job does not have."""
    doc = get(url + "telem/snapshot?node=n1")
    if not isinstance(doc.get("cpu"), dict):
        fail("n1's snapshot has no cpu: %s" % str(doc)[:200])
    try:
        urllib.request.urlopen(urllib.request.Request(
            url + "telem/snapshot?node=nx", headers=AUTH), timeout=10)
        fail("a snapshot of node nx")
    except urllib.error.HTTPError as e:
        if e.code != 404:
            fail("node nx: HTTP %d" % e.code)
    json.dump(doc, open(out, "w"))

def systems(root, mode, snap_file):
    """A "telem-system" details element per node, each active node's with
    its snapshot (the reserve n3 runs no telemd until it is needed: it has
    none); n1's summary names its CPU model."""
    doc = json.load(open(snap_file))
    got = {d.attrs.get("data-node"): d for d in by_class(root, "telem-system")
           if d.tag == "details"}
    if sorted(got) != sorted(STATES):
        fail("node systems shown: %s" % sorted(got))
    bare = [n for n, d in got.items() if d.attrs.get("data-ready") != "1"
            and STATES[n] == "active"]
    if bare:
        fail("nodes without a system summary: %s" % bare)
    summary = " ".join(s.text() for s in got["n1"].find(lambda n: n.tag == "summary"))
    model = doc["cpu"].get("model_name") or "?"
    if not summary.startswith("n1: " + model):
        fail("n1's system summary %r, CPU model %r" % (summary, model))
    fields = [dt.text() for dt in got["n1"].find(lambda n: n.tag == "dt")]
    for f in ("CPU model", "Cores", "Memory", "Kernel", "GPUs"):
        if f not in fields:
            fail("n1's system fields: %s" % fields)

def png_rows(path):
    """The rows of an 8-bit RGB or RGBA, non-interlaced PNG: (w, h, bpp, rows)."""
    d = open(path, "rb").read()
    if d[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s: not a PNG" % path)
    pos, idat, hdr = 8, [], None
    while pos + 8 <= len(d):
        n, typ = struct.unpack(">I4s", d[pos:pos + 8])
        body = d[pos + 8:pos + 8 + n]
        pos += 12 + n
        if typ == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat.append(body)
        elif typ == b"IEND":
            break
    if not hdr or hdr[2] != 8 or hdr[3] not in (2, 6) or hdr[6]:
        fail("%s: PNG header %s (expected 8-bit RGB(A), not interlaced)" % (path, hdr))
    w, h, bpp = hdr[0], hdr[1], 3 if hdr[3] == 2 else 4
    raw, stride, m = zlib.decompress(b"".join(idat)), w * bpp, (255).__and__
    prev, rows = bytes(stride), []
    for y in range(h):
        f, r = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        if f == 0:
            cur = r
        elif f == 1:                        # Sub: a running sum per channel
            out = bytearray(stride)
            for c in range(bpp):
                out[c::bpp] = bytes(map(m, accumulate(r[c::bpp])))
            cur = bytes(out)
        elif f == 2:                        # Up
            cur = bytes(map(m, map(operator.add, r, prev)))
        elif f in (3, 4):                   # Average, Paeth
            out = bytearray(r)
            for i in range(stride):
                a = out[i - bpp] if i >= bpp else 0
                b, cc = prev[i], prev[i - bpp] if i >= bpp else 0
                if f == 3:
                    out[i] = (out[i] + ((a + b) >> 1)) & 255
                    continue
                p = a + b - cc
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
                out[i] = (out[i] + (a if pa <= pb and pa <= pc
                                    else b if pb <= pc else cc)) & 255
            cur = bytes(out)
        else:
            fail("%s: row %d has filter %d" % (path, y, f))
        rows.append(cur)
        prev = cur
    return w, h, bpp, rows

SERIES_COLORS = [(0x1f, 0x77, 0xb4), (0xd6, 0x27, 0x28)]  # telem.js COLORS[0:2]

def png(path, w_want, h_want, nlines):
    """Not blank: several colours, a chart-like share of pixels off the
    background, and the first series' line colours drawn."""
    w, h, bpp, rows = png_rows(path)
    if (w, h) != (int(w_want), int(h_want)):
        fail("%s: %dx%d" % (path, w, h))
    count = {}
    for r in rows:
        for px in zip(r[0::bpp], r[1::bpp], r[2::bpp]):
            count[px] = count.get(px, 0) + 1
    bg, nbg = max(count.items(), key=lambda kv: kv[1])
    off = 1 - nbg / (w * h)
    near = lambda col: sum(n for px, n in count.items()
                           if max(abs(px[k] - col[k]) for k in range(3)) <= 60)
    lines = [near(col) for col in SERIES_COLORS[:int(nlines)]]
    print("%s: %d colours, background %s, %.1f %% off it, series colours %s"
          % (path, len(count), bg, 100 * off, lines))
    if len(count) < 2 or off < 0.05 or min(lines) < 200:
        fail("%s looks blank or chartless" % path)

{"job": job, "series": series, "dom": dom, "png": png,
 "snapshot": snapshot}[sys.argv[1]](*sys.argv[2:])
PY
page() { TESTS_DIR=$(dirname "${BASH_SOURCE[0]}") python3 "$T/page.py" "$@"; }

# ---- the job ---------------------------------------------------------------------
cat >"$T/prog.sh" <<'EOF2'
#!/usr/bin/env bash
if [ "$TELEM_NODE" = n2 ]; then
    "$TELEM_BIN/add_data_demo" --count 3 --metric it_flag --quiet
fi
while [ ! -e "$OUT/go" ]; do sleep 0.05; done
EOF2
chmod +x "$T/prog.sh"
export OUT TELEM_BIN
"$L" --rundir "$TELEM_RUNDIR" --grace 2 --local 3 --nodes 2 --resilient \
    --telemetry-level 2 --agg-port 0 \
    --collect "--period 0.2 --reps 1 --devices 0" \
    --detector "flag=threshold:metric=it_flag,op=>,value=0,severity=warn" \
    -- "$T/prog.sh" >"$T/job.out" 2>"$T/job.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")

# wait_s SECONDS CMD...: runs CMD until it succeeds, for at most SECONDS.
wait_s() {
    local end=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < end)) || return 1
        sleep 0.05
    done
}
URLF=$TELEM_RUNDIR/telem_agg/url
wait_s 60 test -s "$URLF" || fail "telem_agg wrote no URL"
U=$(cat "$URLF")
[[ $U =~ ^http://127\.0\.0\.1:[0-9]+/$ ]] || fail "telem_agg's URL: $U"
# The job's token: the page's requests and the browser's URL carry it.
AGG_TOKEN=$(cat "$TELEM_RUNDIR/keys/agg.token") || fail "no job token"
export AGG_TOKEN
# The collector map: one line per device, "node N device I -> ...".
wait_s 60 grep -qx ready "$T/job.out" || fail "the collectors did not start"
metric=$(sed -nE 's/^group .* metric ([^ ]+) .*/\1/p' "$T/job.out")
labels=$(awk '$1 == "node" && $3 == "device" { print $2 "/" $4 }' "$T/job.out" \
         | sort | paste -sd, -)
[ -n "$metric" ] && [ "$labels" = "n1/0,n2/0" ] \
    || fail "collector map: $(cat "$T/job.out")"
wait_s 60 page job "$U" || fail "/telem/job: $(page job "$U" 2>&1)"
page job "$U" >"$T/event.txt"
wait_s 60 page series "$U" "$metric" "$labels" \
    || fail "/api/query: $(page series "$U" "$metric" "$labels" 2>&1)"
page snapshot "$U" "$T/snap-n1.json" \
    || fail "/telem/snapshot: $(page snapshot "$U" "$T/snap-n1.json" 2>&1)"
agg_pids() {
    ps -eo pid=,args= | R="--rundir $TELEM_RUNDIR " \
        awk '$2 ~ /\/telem_agg$/ && index($0 " ", ENVIRON["R"]) { print $1 }'
}
[ -n "$(agg_pids)" ] || fail "no telem_agg process of this job"

# retry WHAT CMD...: runs CMD until it succeeds; once PAGE_END (in
# $SECONDS) has passed, fails the test with WHAT and the last check's words.
retry() {
    local what=$1
    shift
    until "$@"; do
        ((SECONDS < PAGE_END)) \
            || fail "$what: $(cat "$T/check.out"); chromium's last words:" \
                    "$(grep -v dbus "$T/chromium.out" | tail -n 5)"
        sleep 0.2
    done
}
# dom_ok HTML MODE URL [browser flags]: the page's DOM holds what it must.
dom_ok() {
    local html=$1 mode=$2 url=$3
    shift 3
    browse "$html" "$@" --virtual-time-budget=3000 --dump-dom "$url" \
        || { echo "chromium exited $?" >"$T/check.out"; return 1; }
    page dom "$html" "$mode" "$metric" "$labels" "$T/event.txt" \
        "$T/snap-n1.json" >"$T/check.out" 2>&1
}
# shot_ok PNG URL [browser flags]: a screenshot of the page that is not blank.
shot_ok() {
    local shot=$1 url=$2
    shift 2
    rm -f "$shot"
    browse "$T/shot.out" "$@" --virtual-time-budget=3000 \
        --window-size=1280,1600 --screenshot="$shot" "$url" \
        || { echo "chromium exited $?" >"$T/check.out"; return 1; }
    page png "$shot" 1280 1600 2 >"$T/check.out" 2>&1
}
# load_until HTML PNG MODE URL [browser flags]: the page's DOM until it holds
# what it must, then a screenshot until it is not blank, within 60 s.
load_until() {
    local html=$1 shot=$2 mode=$3 url=$4 t0=$SECONDS
    shift 4
    PAGE_END=$((SECONDS + 60))
    retry "$mode page $url" dom_ok "$html" "$mode" "$url" "$@"
    retry "$mode page's screenshot" shot_ok "$shot" "$url" "$@"
    echo "$mode page: $(cat "$T/check.out") ($((SECONDS - t0)) s)"
}

# ---- the live dashboard ------------------------------------------------------------
load_until "$T/live.html" "$T/live.png" live "$U?token=$AGG_TOKEN"

# ---- the report, the job's end, the report offline ---------------------------------
rc=0
"$C" report --help >/dev/null 2>&1 || rc=$?
if [ "$rc" = 0 ]; then
    "$C" report -o "$T/job.html" >"$T/report.out" 2>"$T/report.log" \
        || fail "telem_client report: $(cat "$T/report.out" "$T/report.log")"
else
    echo "telem_client report is not built here (exit $rc for --help):" \
         "the report part is left out"
fi
agg=$(agg_pids)
touch "$OUT/go"
wait_s 60 eval '! kill -0 "$LPID"' || fail "the job did not end"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "telem_launch exited $rc"
left=$(agg_pids)
for p in $agg; do
    if kill -0 "$p" 2>/dev/null; then left+=" $p"; fi
done
[ -z "${left// /}" ] || fail "telem_agg left running after the job: $left"
[ ! -e "$URLF" ] || fail "telem_agg's URL file outlived it"
if [ -f "$T/job.html" ]; then
    load_until "$T/report-dom.html" "$T/report.png" report "file://$T/job.html" \
        --host-resolver-rules="MAP * ~NOTFOUND"
fi
echo "it_browser: ok"
