"""Checks of it_browser_rows.sh: the job's series over telem_agg's HTTP API,
the rendered page's rows (DOM dumped by headless Chromium), a screenshot,
and the XID table of telem_rows.js against detectors/det_gpu_health_rules.c.

    browser_rows.py ready URL WANT_JSON      the job has recorded what the
                                             page must show; WANT_JSON gets
                                             the facts the other checks use
    browser_rows.py dom HTML WANT_JSON PSI   the rows of the dumped DOM
    browser_rows.py png PNG                  the screenshot shows the rows
    browser_rows.py xidtable TOP             the XID tables agree (C, JS, docs)
Standard library only; exits with the reason on failure."""
import json
import operator
import os
import re
import struct
import sys
import urllib.request
import zlib
from html.parser import HTMLParser
from itertools import accumulate


def fail(why):
    sys.exit(why)


TOKEN = os.environ.get("AGG_TOKEN", "")
AUTH = {"Authorization": "Bearer " + TOKEN} if TOKEN else {}
HOSTS = ["n1", "n2"]
IB_DEVICES = ["mlx5_0", "mlx5_1"]                # tests/data/samplers_hw
XID_COLOR = (0x6a, 0x1b, 0x9a)                 # telem_rows.js XID_COLOR


def get(url, body=None):
    req = urllib.request.Request(url, data=None if body is None else
                                 json.dumps(body).encode(),
                                 headers=dict(AUTH, **{"Content-Type":
                                                       "application/json"}))
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def query(url, metric):
    try:
        return get(url + "api/query?arrays=true", {
            "start": "15m-ago", "msResolution": True,
            "queries": [{"metric": metric, "aggregator": "none"}]})
    except urllib.error.HTTPError:
        return []


def hosts_with_points(res):
    return sorted({s["tags"].get("host") for s in res if s["dps"]})


# Metrics of the Grafana rows that every node of this job should answer.
GRAFANA_ROWS = ["cpu_core_percent", "pressure_cpu_some_percent",
                "pressure_memory_some_percent", "pressure_io_some_percent",
                "pressure_cpu_full_percent", "pressure_memory_full_percent",
                "pressure_io_full_percent", "gpu_ecc_corrected_errors_total",
                "gpu_ecc_uncorrected_errors_total",
                "gpu_remapped_rows_correctable",
                "gpu_remapped_rows_uncorrectable",
                "gpu_remapped_rows_pending", "gpu_remapped_rows_failure",
                "gpu_clocks_event", "gpu_power_w", "gpu_power_limit_w",
                "gpu_temperature_c", "ib_state", "ib_phys_state",
                "ib_symbol_error_total", "ib_port_xmit_data_bytes_total",
                "ib_port_rcv_data_bytes_total"]


def rising(res, host, device):
    """The series of host's device has three points or more and grew."""
    return any(s["tags"].get("host") == host
               and s["tags"].get("device") == device and len(s["dps"]) >= 3
               and s["dps"][-1][1] > s["dps"][0][1] for s in res)


def xid_rise_ms(url):
    """When n2's GPU 0 counted its XID 79: the first point above 0 (the
    page's rule: the series' first point counts from 0), or None."""
    for s in query(url, "gpu_xid_total"):
        t = s["tags"]
        if (t.get("host"), t.get("gpu"), t.get("xid")) == ("n2", "0", "79"):
            for ms, v in s["dps"]:
                if v > 0:
                    return ms
    return None


def ready(url, out):
    cores = query(url, "cpu_core_percent")
    if hosts_with_points(cores) != HOSTS:
        fail("cpu_core_percent from %s" % hosts_with_points(cores))
    xid_ms = xid_rise_ms(url)
    if xid_ms is None:
        fail("no XID 79 of n2's GPU 0 yet: %s"
             % [s["tags"] for s in query(url, "gpu_xid_total") if s["dps"]])
    ecc = query(url, "gpu_ecc_corrected_errors_total")
    if not any(s["tags"].get("host") == "n1" and s["tags"].get("gpu") == "1"
               and s["dps"] and s["dps"][-1][1] == 7 for s in ecc):
        fail("n1's GPU 1 has not counted 7 corrected ECC errors yet")
    state = query(url, "ib_state")
    ports = sorted((s["tags"].get("host"), s["tags"].get("device"))
                   for s in state if s["dps"])
    if ports != [(h, d) for h in HOSTS for d in IB_DEVICES]:
        fail("ib_state of %s" % ports)
    for m, hosts in (("ib_port_xmit_data_bytes_total", HOSTS),
                     ("ib_port_rcv_data_bytes_total", HOSTS),
                     ("ib_symbol_error_total", ["n2"])):
        res = query(url, m)
        for h in hosts:
            if not rising(res, h, "mlx5_0"):
                fail("%s of %s's mlx5_0 has not grown yet" % (m, h))
    per = {}
    for s in cores:
        if s["dps"]:
            per.setdefault(s["tags"]["host"], set()).add(s["tags"]["cpu"])
    graf = [m for m in GRAFANA_ROWS if hosts_with_points(query(url, m)) == HOSTS]
    json.dump({"cores": {h: len(c) for h, c in per.items()},
               "grafana": graf, "xid_ms": xid_ms}, open(out, "w"))


# ---- the DOM ------------------------------------------------------------------

class Node:
    def __init__(self, tag, attrs):
        self.tag, self.attrs, self.kids = tag, dict(attrs), []

    def cls(self):
        return (self.attrs.get("class") or "").split()

    def own_text(self):
        return "".join(k for k in self.kids if isinstance(k, str))

    def text(self):
        return "".join(k if isinstance(k, str) else k.text() for k in self.kids)

    def walk(self):
        yield self
        for k in self.kids:
            if isinstance(k, Node):
                yield from k.walk()

    def find(self, pred):
        return [n for n in self.walk() if pred(n)]


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "param", "source", "track", "wbr"}


class Tree(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", [])
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs)
        self.stack[-1].kids.append(n)
        if tag not in VOID:
            self.stack.append(n)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].kids.append(data)


def by_class(root, c):
    return root.find(lambda n: c in n.cls())


def section(root, sid):
    s = root.find(lambda n: n.attrs.get("id") == sid)
    if len(s) != 1:
        fail("section %s: %d found" % (sid, len(s)))
    return s[0]


def empty_line(sec):
    return [p.text() for p in sec.find(lambda n: n.tag == "p" and
                                       "telem-empty" in n.cls())]


def charts(sec, keys):
    """The charts `keys` of sec, each drawn (a canvas): {key: [labels]}."""
    got = chart_boxes(sec)
    out = {}
    for k in keys:
        c = got.get(k)
        if c is None or not c.find(lambda n: n.tag == "canvas"):
            fail("chart %s not drawn (charts: %s)" % (k, sorted(got)))
        out[k] = sorted(n.text() for n in by_class(c, "u-label")
                        if n.text() != "Time")
    return out


def chart_boxes(sec):
    return {c.attrs.get("data-metric"): c for c in by_class(sec, "telem-chart")
            if c.attrs.get("data-metric")}


def y_range(box):
    """The y scale the chart drew (data-y-range "min,max")."""
    try:
        lo, hi = map(float, box.attrs.get("data-y-range", "").split(","))
    except ValueError:
        fail("chart %s: no y range drawn (%r)" % (box.attrs.get("data-metric"),
                                                 box.attrs.get("data-y-range")))
    return lo, hi


def xid_marks(gpu, keys, xid_ms):
    """Each chart of keys marks XID 79 of n2/gpu0 at xid_ms, its label
    beside the line, not over it."""
    boxes = chart_boxes(gpu)
    for k in keys:
        try:
            marks = json.loads(boxes[k].attrs.get("data-marks", ""))
        except ValueError:
            fail("chart %s: no marks drawn" % k)
        m = [x for x in marks if x.get("label") == "XID 79 n2/gpu0"]
        if len(m) != 1:
            fail("chart %s: XID 79 of n2/gpu0 marked %d times: %s"
                 % (k, len(m), marks))
        m = m[0]
        if abs(m["t"] * 1000 - xid_ms) > 1:
            fail("chart %s: XID marked at %.3f s, its counter rose at %d ms"
                 % (k, m["t"], xid_ms))
        if m["left"] <= m["x"] <= m["right"]:
            fail("chart %s: the XID label (x %.1f-%.1f) covers its line at %.1f"
                 % (k, m["left"], m["right"], m["x"]))


def dom(path, want_file, psi):
    want = json.load(open(want_file))
    t = Tree()
    t.feed(open(path, encoding="utf-8").read())
    root = t.root
    if by_class(root, "telem-error"):
        fail("page error: %s" % [n.text() for n in by_class(root, "telem-error")])
    cores = section(root, "telem-cpu-cores")
    heat = {h.attrs.get("data-node"): h for h in by_class(cores, "telem-heatmap")}
    got = {n: int(h.attrs.get("data-cores", -1)) for n, h in heat.items()}
    if got != want["cores"]:
        fail("heat maps (node: cores) %s, recorded %s" % (got, want["cores"]))
    if not all(h.find(lambda n: n.tag == "canvas") for h in heat.values()):
        fail("a heat map without its canvas")
    pres = section(root, "telem-pressure")
    if psi == "1":
        lines = charts(pres, ["pressure_cpu", "pressure_memory", "pressure_io"])
        if "n1 some" not in lines["pressure_io"]:
            fail("pressure io lines: %s" % lines["pressure_io"])
    elif not any(x.startswith("no pressure") for x in empty_line(pres)):
        fail("no PSI here, and the pressure row does not say so")
    ib = section(root, "telem-ib")
    lines = charts(ib, ["ib_state", "ib_errors", "ib_data"])
    ports = ["%s/%s:1" % (h, d) for h in HOSTS for d in IB_DEVICES]
    if lines["ib_state"] != ports:
        fail("InfiniBand state lines: %s" % lines["ib_state"])
    data = ["%s/mlx5_0:1 %s" % (h, d) for h in HOSTS for d in ("rx", "tx")]
    if lines["ib_data"] != data:
        fail("InfiniBand data lines: %s" % lines["ib_data"])
    if lines["ib_errors"] != ["3 other series: all 0", "n2/mlx5_0:1"]:
        fail("InfiniBand error lines: %s" % lines["ib_errors"])
    boxes = chart_boxes(ib)
    lo, hi = y_range(boxes["ib_state"])
    if not lo <= 1 < 4 <= hi:
        fail("InfiniBand state axis %g-%g leaves out 1 (down) or 4 (active)"
             % (lo, hi))
    if y_range(boxes["ib_data"])[1] < 1e6:
        fail("InfiniBand data rate axis %s: no traffic drawn"
             % (y_range(boxes["ib_data"]),))
    gpu = section(root, "telem-gpu-health")
    keys = ["gpu_ecc", "gpu_remapped_rows", "gpu_throttle", "gpu_power",
            "gpu_temperature"]
    lines = charts(gpu, keys)
    if lines["gpu_throttle"] != ["n1/gpu1 hw_thermal_slowdown"]:
        fail("throttle lines: %s" % lines["gpu_throttle"])
    if lines["gpu_ecc"] != ["7 other series: all 0", "n1/gpu1 corrected"]:
        fail("ECC lines: %s" % lines["gpu_ecc"])
    if lines["gpu_remapped_rows"] != ["16 series: all 0"]:
        fail("remapped rows lines: %s" % lines["gpu_remapped_rows"])
    if lines["gpu_power"] != ["4 limits: all 300"] + ["%s/gpu%d" % (h, i)
                                                       for h in HOSTS
                                                       for i in (0, 1)]:
        fail("power lines: %s" % lines["gpu_power"])
    rr = y_range(chart_boxes(gpu)["gpu_remapped_rows"])
    if rr != (0, 1):
        fail("remapped rows (all 0) drawn on a %g-%g axis, not 0-1" % rr)
    xid_marks(gpu, keys, want["xid_ms"])
    xids = [(li.attrs.get("data-xid"), li.text()) for li in by_class(gpu, "telem-xid")]
    if not any(x == "79" and "n2/gpu0" in txt
               and "XID 79: GPU has fallen off the bus" in txt for x, txt in xids):
        fail("XID 79 of n2/gpu0 not listed: %s" % xids)
    print("heat maps %s; InfiniBand ports %s; GPU charts %s; XIDs %s"
          % (got, ports, sorted(lines), [txt for _, txt in xids]))


# ---- the screenshot -----------------------------------------------------------

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
        elif f == 1:
            out = bytearray(stride)
            for c in range(bpp):
                out[c::bpp] = bytes(map(m, accumulate(r[c::bpp])))
            cur = bytes(out)
        elif f == 2:
            cur = bytes(map(m, map(operator.add, r, prev)))
        elif f in (3, 4):
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


def png(path):
    """The XID markers' colour is drawn (five GPU charts carry them) and the
    heat maps' warm colours are there."""
    w, h, bpp, rows = png_rows(path)
    count = {}
    for r in rows:
        for px in zip(r[0::bpp], r[1::bpp], r[2::bpp]):
            count[px] = count.get(px, 0) + 1
    near = sum(n for px, n in count.items()
               if max(abs(px[k] - XID_COLOR[k]) for k in range(3)) <= 40)
    warm = sum(n for px, n in count.items()
               if px[0] > 200 and px[0] - px[2] > 40 and px[1] < 235)
    print("%dx%d, %d colours, XID marker pixels %d, heat-map pixels %d"
          % (w, h, len(count), near, warm))
    if near < 200 or warm < 200:
        fail("%s: XID markers or heat maps not drawn" % path)


def xidtable(top):
    c = open(os.path.join(top, "detectors/det_gpu_health_rules.c")).read()
    js = open(os.path.join(top, "analysis/web/www/telem_rows.js")).read()
    rows = re.findall(r'\{\s*(\d+),\s*(\d),\s*"([^"]*)"\s*\}', c)
    ct = {int(k): v for k, _, v in rows}
    block = re.search(r"XID_MEANINGS = \{(.*?)\};", js, re.S)
    jt = {int(k): v for k, v in re.findall(r'(\d+): "([^"]*)"', block.group(1))} \
        if block else {}
    if not ct or ct != jt:
        fail("XID tables differ: C %s, telem_rows.js %s" % (ct, jt))
    # docs/detectors.md's table: | XID | meaning | NVIDIA's action | act/warn |
    doc = open(os.path.join(top, "docs/detectors.md")).read()
    dt = {int(k): (m, g) for k, m, g in
          re.findall(r"^\| (\d+) \| ([^|]*) \| [^|]* \| ([^|]*) \|$", doc, re.M)}
    cls = {"0": "warn", "1": "act", "2": "act where"}
    want = {int(k): (v, cls[f]) for k, f, v in rows}
    got = {k: (m, "act where" if g.startswith("act where") else g.split()[0])
           for k, (m, g) in dt.items()}
    if want != got:
        fail("XID tables of C and docs/detectors.md differ in: %s"
             % sorted(set(want.items()) ^ set(got.items())))
    print("XID tables agree: %d codes (C, telem_rows.js, docs/detectors.md)"
          % len(ct))


if __name__ == "__main__":
    {"ready": ready, "dom": dom, "png": png,
     "xidtable": xidtable}[sys.argv[1]](*sys.argv[2:])
