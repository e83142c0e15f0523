#!/usr/bin/env python3
"""prom_client.py - the HTTP side of tests/it_prometheus.sh: requests to
telemd's /metrics, malformed and hostile HTTP, the OpenMetrics parser of
Prometheus's Python client, and questions to a real Prometheus server's
HTTP API, so the shell script only manages processes.

    prom_client.py get URL OUT [--om] [--gzip]
        GET URL; prints "STATUS<TAB>Content-Type<TAB>Content-Encoding" and
        writes the body (gunzipped when it came compressed) to OUT
    prom_client.py om FILE
        parses FILE with prometheus_client's strict OpenMetrics parser
        (exit 77 when that module is missing); prints the families
    prom_client.py hostile URL
        wrong methods, unknown paths, a 64 KiB header, a header flood,
        garbage request lines, a half request left open, an unknown HTTP
        version; then /metrics must still answer 200
    prom_client.py free-port
        prints a TCP port free on 127.0.0.1 at this moment
    prom_client.py ready PROM SECONDS
        waits until Prometheus at PROM answers /-/ready
    prom_client.py expect PROM SECONDS JSON
        JSON is a list of {"query": PromQL, "labels": {...}, "value": V}:
        polls /api/v1/query until, for every item, one series of the
        answer has at least those labels with exactly those values and the
        value V (compared as floats), or SECONDS pass
    prom_client.py targets PROM SECONDS JSON
        JSON is {"up": [labels...], "absent": [labels...]}: polls
        /api/v1/targets until every "up" label set is an active target
        with health "up" and no error, and no "absent" set is a target

Every wait is on behaviour, bounded by its SECONDS only to fail instead of
hanging.  Exit status 0 when every check held; what failed goes to stderr.
Only the standard library is used, except for the optional OpenMetrics
parser (Debian's python3-prometheus-client).
"""
import gzip
import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse

OM_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/"
             "openmetrics-text;version=0.0.1;q=0.75,text/plain;"
             "version=0.0.4;q=0.5,*/*;q=0.1")


def fail(msg):
    print("FAIL " + msg, file=sys.stderr)
    sys.exit(1)


def request(url, method="GET", headers=None, timeout=10):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    path = u.path + ("?" + u.query if u.query else "")
    conn.request(method, path or "/", headers=headers or {})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, resp.getheader("Content-Type") or "", \
        resp.getheader("Content-Encoding") or "", body


def cmd_get(url, out, *flags):
    headers = {"Accept-Encoding": "gzip" if "--gzip" in flags else "identity"}
    if "--om" in flags:
        headers["Accept"] = OM_ACCEPT
    status, ctype, enc, body = request(url, headers=headers)
    if enc == "gzip":
        body = gzip.decompress(body)
    with open(out, "wb") as f:
        f.write(body)
    print("%d\t%s\t%s" % (status, ctype, enc))


def cmd_om(path):
    try:
        from prometheus_client.openmetrics import parser
    except ImportError:
        print("prometheus_client is not installed")
        sys.exit(77)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for fam in parser.text_string_to_metric_families(text):
        print(fam.name, fam.type, fam.unit, len(fam.samples))


def raw(url, data, timeout=10, keep_open=False):
    """Sends bytes on a new connection; returns what came back (b"" when
    the server closed without an answer)."""
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=timeout)
    try:
        s.sendall(data)
    except OSError:
        pass                      # the server may close before reading all
    if keep_open:
        return s
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
            if b"\r\n\r\n" in got and b"Content-Length: " in got:
                head, _, rest = got.partition(b"\r\n\r\n")
                n = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                if len(rest) >= n:
                    break
    except OSError:
        pass
    s.close()
    return got


def status_of(answer):
    if not answer.startswith(b"HTTP/1."):
        return 0
    return int(answer.split(b" ")[1])


def cmd_hostile(url):
    u = urllib.parse.urlsplit(url)
    root = "http://%s:%d" % (u.hostname, u.port)
    problems = []

    def want(name, got, ok):
        if got not in ok:
            problems.append("%s: got %r, want one of %r" % (name, got, ok))

    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "BREW"):
        st, _, _, _ = request(url, method=method)
        want(method + " /metrics", st, (405,))
    for path in ("/", "/metrics/", "/metricsx", "/api/v1/query", "/../etc",
                 "/%00", "/%2e%2e/metrics"):
        st, _, _, _ = request(root + path)
        want("GET " + path, st, (404, 400))
    big = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + \
        b"\r\n\r\n"
    want("64 KiB header", status_of(raw(url, big)), (0, 400, 413, 431))
    flood = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + \
        b"".join(b"X-H%d: v\r\n" % i for i in range(5000)) + b"\r\n"
    want("5000 headers", status_of(raw(url, flood)), (0, 400, 413, 431))
    # Requests the server may leave unanswered until its idle timeout:
    # sent at once, each answered or closed in its own time.
    junk = (b"\x00\x01\x02\r\n\r\n", b"GET\r\n\r\n",
            b"GET /metrics HTTP/9.9\r\n\r\n", b"\r\n\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nBad header line\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n")
    answers = [None] * len(junk)

    def send(i):
        answers[i] = raw(url, junk[i], timeout=30)
    threads = [threading.Thread(target=send, args=(i,))
               for i in range(len(junk))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for data, answer in zip(junk, answers):
        want("junk %r" % data[:24], status_of(answer), (0, 400, 505))
    stalled = raw(url, b"GET /metrics HTTP/1.1\r\nHost: x\r\n",
                  keep_open=True)
    st, ctype, _, body = request(url, headers={"Accept-Encoding": "identity"})
    want("GET /metrics beside a stalled client", st, (200,))
    stalled.close()
    if b"# TYPE " not in body or not ctype.startswith("text/plain"):
        problems.append("/metrics after the hostile requests: %r" % ctype)
    if problems:
        fail("; ".join(problems))


def cmd_free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
    s.close()


def api(prom, path):
    st, _, _, body = request(prom + path, timeout=5)
    if st != 200:
        raise OSError("HTTP %d" % st)
    return json.loads(body)


def poll(seconds, step):
    """Calls step() until it returns None (done) or time runs out; returns
    the last non-None value (what was still missing)."""
    end = time.monotonic() + seconds
    last = "nothing asked yet"
    while time.monotonic() < end:
        try:
            last = step()
        except (OSError, ValueError, http.client.HTTPException) as e:
            last = "request failed: %s" % e
        if last is None:
            return None
        time.sleep(0.2)
    return last


def cmd_ready(prom, seconds):
    def step():
        st, _, _, _ = request(prom + "/-/ready", timeout=2)
        return None if st == 200 else "status %d" % st
    missing = poll(float(seconds), step)
    if missing:
        fail("Prometheus not ready: %s" % missing)


def has_labels(metric, labels):
    return all(metric.get(k) == v for k, v in labels.items())


def cmd_expect(prom, seconds, spec):
    items = json.loads(spec)

    def step():
        for it in items:
            q = urllib.parse.quote(it["query"])
            res = api(prom, "/api/v1/query?query=" + q)["data"]["result"]
            ok = [r for r in res if has_labels(r["metric"], it["labels"])
                  and float(r["value"][1]) == float(it["value"])]
            if not ok:
                return "%s %s = %r; the answer: %s" % (
                    it["query"], json.dumps(it["labels"]), it["value"],
                    json.dumps(res))
        return None
    missing = poll(float(seconds), step)
    if missing:
        fail("Prometheus never answered as expected: " + missing)


def cmd_targets(prom, seconds, spec):
    want = json.loads(spec)

    def step():
        active = api(prom, "/api/v1/targets")["data"]["activeTargets"]
        for labels in want.get("up", []):
            t = [a for a in active if has_labels(a["labels"], labels)]
            if not t or t[0]["health"] != "up" or t[0]["lastError"]:
                return "target %s: %s" % (json.dumps(labels), json.dumps(t))
        for labels in want.get("absent", []):
            if any(has_labels(a["labels"], labels) for a in active):
                return "target %s still scraped" % json.dumps(labels)
        return None
    missing = poll(float(seconds), step)
    if missing:
        fail("Prometheus's targets: " + missing)


def main(argv):
    cmds = {"get": cmd_get, "om": cmd_om, "hostile": cmd_hostile,
            "free-port": cmd_free_port, "ready": cmd_ready,
            "expect": cmd_expect, "targets": cmd_targets}
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    cmds[argv[1]](*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
