#!/usr/bin/env python3
"""agg_client.py - the HTTP side of tests/it_agg.sh: requests to a running
telem_agg and golden checks of its answers (exact JSON where the answer is
deterministic), in one place so the shell script only manages processes.

    agg_client.py golden URL T0        put the data set, then check every
                                       endpoint, OpenTSDB's query semantics,
                                       Grafana's request shapes and errors
    agg_client.py dead URL NODE MS     a stopped node: a partial answer in
                                       time, the node named in the header
    agg_client.py reboot-none URL MS   /api/reboot with no launcher: 503
    agg_client.py token URL TOKEN      401 without or with a wrong token
    agg_client.py tokenless URL        no token: put and reboot 403, reads
    agg_client.py url-token URL TOKEN  401 without the token; ?token=TOKEN
                                       opens the dashboard
    agg_client.py big URL              a 5000-byte body: 413
    agg_client.py job URL NODES        GET / and /telem/job of a launched job
    agg_client.py reboot URL NODE      /api/reboot: the launcher accepts
    agg_client.py alive URL            still answers /api/version
    agg_client.py dashboard URL BOARD SOURCE WANT HOSTS
                                       every panel of the Grafana dashboard
                                       BOARD names SOURCE's uid and gets an
                                       answer to the request Grafana sends;
                                       the metrics WANT (a,b) have results,
                                       those with a host tag from each of
                                       HOSTS (a,b)

T0 is a time in seconds on a whole hour, inside the nodes' retention
window.  Requests carry the bearer token in the file $TELEM_AGG_TOKEN_FILE
when it is set (a telem_agg started with --token-file, as telem_launch
starts it), unless a check gives its own.  Exit status 0 when every check held; failures are listed on
stderr.  Only the standard library is used (python3 is one of the packages
examples/setup.sh installs).
"""
import http.client
import json
import os
import re
import socket
import sys
import time
import urllib.parse

FAILURES = []


def check(name, got, want):
    if got != want:
        FAILURES.append(name)
        print("FAIL %s\n  got:  %s\n  want: %s" % (name, json.dumps(got),
                                                   json.dumps(want)),
              file=sys.stderr)


def truth(name, cond, detail=""):
    if not cond:
        FAILURES.append(name)
        print("FAIL %s %s" % (name, detail), file=sys.stderr)


def default_token():
    """The token in $TELEM_AGG_TOKEN_FILE, else None."""
    path = os.environ.get("TELEM_AGG_TOKEN_FILE")
    if not path:
        return None
    with open(path) as f:
        return f.read().strip()


class Agg:
    """A client of one telem_agg (a new connection per request).  token
    None: the default token (above); "": none."""

    def __init__(self, url, token=None, timeout=30):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.token = default_token() if token is None else token
        self.timeout = timeout

    def req(self, method, path, body=None, headers=None):
        """(status, headers as a dict with lower-case names, raw body)."""
        c = http.client.HTTPConnection(self.host, self.port,
                                       timeout=self.timeout)
        h = dict(headers or {})
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, hdrs, data

    def json(self, method, path, body=None, want=200):
        status, hdrs, data = self.req(method, path, body)
        check("%s %s status (body %s)" % (method, path, data[:300]),
              status, want)
        try:
            return json.loads(data) if data else None
        except ValueError:
            truth("%s %s: JSON answer" % (method, path), False, data[:300])
            return None

    def query(self, body, want=200, args=""):
        return self.json("POST", "/api/query" + args, body, want)

    def get(self, path, want=200, **args):
        return self.json("GET", path + "?" + urllib.parse.urlencode(args),
                         want=want)


# ---- the data set --------------------------------------------------------

def points(t0):
    """Every point the golden checks rely on: (host, metric, ts, value,
    tags).  ts is in seconds, or in ms when above 1e10."""
    p = []
    # it.cpu: two misaligned series for the aggregators.
    for dt, v in ((0, 1), (10, 3), (20, 5)):
        p.append(("n1", "it.cpu", t0 + dt, v, {"dev": "a"}))
    for dt, v in ((5, 10), (15, 20), (25, 30)):
        p.append(("n2", "it.cpu", t0 + dt, v, {"dev": "b"}))
    # it.f: one point per node, a tag value per filter case.
    for host, svc, v in (("n1", "web01", 1), ("n2", "Web02", 2),
                         ("n3", "db01", 4)):
        p.append((host, "it.f", t0, v, {"svc": svc}))
    # it.ds: gaps for the fill policies (10 s buckets).
    for dt, v in ((0, 2), (5, 4), (30, 6)):
        p.append(("n1", "it.ds", t0 + dt, v, {"k": "v"}))
    # it.ctr: a counter that resets at +20.
    for dt, v in ((0, 10), (10, 30), (20, 5), (30, 25)):
        p.append(("n1", "it.ctr", t0 + dt, v, {"k": "c"}))
    # it.ms: two points 1.5 s apart, in ms.
    for dms, v in ((250, 1), (1750, 2)):
        p.append(("n3", "it.ms", t0 * 1000 + dms, v, {"k": "m"}))
    return p


def put_all(agg, pts):
    body = [{"metric": m, "timestamp": ts, "value": v,
             "tags": dict(tags, host=host)} for host, m, ts, v, tags in pts]
    status, _, data = agg.req("POST", "/api/put", body)
    check("put the data set (%s)" % data[:300], status, 204)


def dps(t0, pairs, ms=False):
    """{"time": value} as telem_agg writes dps (keys in s or ms)."""
    return {str((t0 + dt) * (1000 if ms else 1)): v for dt, v in pairs}


def result(metric, tags, agg_tags, d, **extra):
    r = {"metric": metric, "tags": tags, "aggregateTags": agg_tags,
         "dps": d}
    r.update(extra)
    return r


# ---- /api/query semantics ---------------------------------------------------

def check_aggregators(agg, t0):
    cpu = [0, 5, 10, 15, 20, 25]
    want = {
        "sum": [1, 12, 18, 24, 30, 30],
        "min": [1, 2, 3, 4, 5, 30],
        "max": [1, 10, 15, 20, 25, 30],
        "avg": [1, 6, 9, 12, 15, 30],
        "dev": [0, 4, 6, 8, 10, 0],
        "count": [1, 2, 2, 2, 2, 1],
        "zimsum": [1, 10, 3, 20, 5, 30],
        "mimmin": [1, 10, 3, 20, 5, 30],
        "mimmax": [1, 10, 3, 20, 5, 30],
    }
    for a, vals in want.items():
        got = agg.query({"start": t0, "end": t0 + 60, "queries": [
            {"metric": "it.cpu", "aggregator": a}]})
        check("aggregator " + a, got, [result(
            "it.cpu", {}, ["dev", "host"], dps(t0, zip(cpu, vals)))])
        q = urllib.parse.quote("%s:it.cpu" % a)
        got = agg.json("GET", "/api/query?start=%d&end=%d&m=%s"
                       % (t0, t0 + 60, q))
        check("aggregator %s (GET)" % a, got, [result(
            "it.cpu", {}, ["dev", "host"], dps(t0, zip(cpu, vals)))])
    got = agg.query({"start": t0, "end": t0 + 60, "queries": [
        {"metric": "it.cpu", "aggregator": "none"}]})
    check("aggregator none", got, [
        result("it.cpu", {"dev": "a", "host": "n1"}, [],
               dps(t0, [(0, 1), (10, 3), (20, 5)])),
        result("it.cpu", {"dev": "b", "host": "n2"}, [],
               dps(t0, [(5, 10), (15, 20), (25, 30)]))])


# Each filter on it.f's svc: the matching hosts.
FILTERS = [
    ("literal_or", "web01|db01", ["n1", "n3"]),
    ("iliteral_or", "WEB01|web02", ["n1", "n2"]),
    ("wildcard", "web*", ["n1"]),
    ("iwildcard", "WEB*", ["n1", "n2"]),
    ("regexp", "(web|db)01", ["n1", "n3"]),
    ("not_literal_or", "web01", ["n2", "n3"]),
    ("not_iliteral_or", "WEB01|web02", ["n3"]),
]
F_SVC = {"n1": ("web01", 1), "n2": ("Web02", 2), "n3": ("db01", 4)}


def filter_want(t0, hosts, group):
    if group:   # one result per svc value, in byte order of the values
        by = sorted(hosts, key=lambda h: F_SVC[h][0])
        return [result("it.f", {"host": h, "svc": F_SVC[h][0]}, [],
                       dps(t0, [(0, F_SVC[h][1])])) for h in by]
    total = sum(F_SVC[h][1] for h in hosts)
    if len(hosts) == 1:
        h = hosts[0]
        return [result("it.f", {"host": h, "svc": F_SVC[h][0]}, [],
                       dps(t0, [(0, total)]))]
    return [result("it.f", {}, ["host", "svc"], dps(t0, [(0, total)]))]


def check_filters(agg, t0):
    for ftype, expr, hosts in FILTERS:
        for group in (False, True):
            name = "filter %s(%s) groupBy %s" % (ftype, expr, group)
            got = agg.query({"start": t0, "end": t0 + 60, "queries": [{
                "metric": "it.f", "aggregator": "sum", "filters": [{
                    "type": ftype, "tagk": "svc", "filter": expr,
                    "groupBy": group}]}]})
            check(name, got, filter_want(t0, hosts, group))
            f = "svc=%s(%s)" % (ftype, expr)
            m = "sum:it.f{%s}" % f if group else "sum:it.f{}{%s}" % f
            got = agg.json("GET", "/api/query?start=%d&end=%d&m=%s" % (
                t0, t0 + 60, urllib.parse.quote(m)))
            check(name + " (GET)", got, filter_want(t0, hosts, group))
    # The older "tags" form: grouped filters.
    got = agg.query({"start": t0, "end": t0 + 60, "queries": [{
        "metric": "it.f", "aggregator": "sum",
        "tags": {"svc": "web01|db01"}}]})
    check("tags svc=web01|db01", got, filter_want(t0, ["n1", "n3"], True))
    got = agg.query({"start": t0, "end": t0 + 60, "queries": [{
        "metric": "it.f", "aggregator": "sum", "tags": {"svc": "*"}}]})
    check("tags svc=*", got, filter_want(t0, ["n1", "n2", "n3"], True))
    got = agg.json("GET", "/api/query?start=%d&end=%d&m=%s" % (
        t0, t0 + 60, urllib.parse.quote("sum:it.f{host=n2}")))
    check("GET tags host=n2", got, filter_want(t0, ["n2"], True))


def check_downsample(agg, t0):
    def ds(spec, end=59):
        return agg.query({"start": t0, "end": t0 + end, "queries": [{
            "metric": "it.ds", "aggregator": "sum", "downsample": spec}]})

    def want(pairs):
        return [result("it.ds", {"host": "n1", "k": "v"}, [],
                       dps(t0, pairs))]
    gaps = [10, 20, 40, 50]
    check("downsample 10s-avg", ds("10s-avg"), want([(0, 3), (30, 6)]))
    check("downsample 10s-avg-none", ds("10s-avg-none"),
          want([(0, 3), (30, 6)]))
    for fill, v in (("nan", "NaN"), ("null", None), ("zero", 0)):
        pairs = [(0, 3), (30, 6)] + [(g, v) for g in gaps]
        check("downsample 10s-avg-" + fill, ds("10s-avg-" + fill),
              want(sorted(pairs)))
    for fn, a, b in (("sum", 6, 6), ("count", 2, 1), ("min", 2, 6),
                     ("max", 4, 6), ("first", 2, 6), ("last", 4, 6),
                     ("dev", 1, 0)):
        check("downsample 10s-" + fn, ds("10s-" + fn), want([(0, a),
                                                             (30, b)]))
    check("downsample 0all-sum", ds("0all-sum"), want([(0, 12)]))


def check_rate(agg, t0):
    def rate(opts, get_m=None):
        q = {"metric": "it.ctr", "aggregator": "sum", "rate": True}
        if opts is not None:
            q["rateOptions"] = opts
        got = agg.query({"start": t0, "end": t0 + 60, "queries": [q]})
        if get_m:
            again = agg.json("GET", "/api/query?start=%d&end=%d&m=%s" % (
                t0, t0 + 60, urllib.parse.quote(get_m)))
            check("rate GET %s" % get_m, again, got)
        return got

    def want(pairs):
        return [result("it.ctr", {"host": "n1", "k": "c"}, [],
                       dps(t0, pairs))]
    check("rate", rate(None, "sum:rate:it.ctr"),
          want([(10, 2), (20, -2.5), (30, 2)]))
    check("rate counter max 100", rate({"counter": True, "counterMax": 100},
                                       "sum:rate{counter,100}:it.ctr"),
          want([(10, 2), (20, 7.5), (30, 2)]))
    check("rate counter reset 5", rate({"counter": True, "counterMax": 100,
                                        "resetValue": 5},
                                       "sum:rate{counter,100,5}:it.ctr"),
          want([(10, 2), (20, 0), (30, 2)]))
    check("rate dropResets", rate({"counter": True, "dropResets": True},
                                  "sum:rate{dropcounter}:it.ctr"),
          want([(10, 2), (30, 2)]))


def check_times(agg, t0):
    base = {"start": t0, "end": t0 + 60, "queries": [
        {"metric": "it.ms", "aggregator": "sum"}]}
    tags = {"host": "n3", "k": "m"}
    check("msResolution false", agg.query(base),
          [result("it.ms", tags, [], dps(t0, [(0, 1), (1, 2)]))])
    check("msResolution true", agg.query(dict(base, msResolution=True)), [
        result("it.ms", tags, [], {str(t0 * 1000 + 250): 1,
                                   str(t0 * 1000 + 1750): 2})])
    got = agg.json("GET", "/api/query?start=%d&end=%d&ms=true&m=sum:it.ms"
                   % (t0, t0 + 60))
    check("GET ms=true", got, [result("it.ms", tags, [], {
        str(t0 * 1000 + 250): 1, str(t0 * 1000 + 1750): 2})])
    check("arrays=true", agg.query(dict(base, msResolution=True),
                                   args="?arrays=true"),
          [result("it.ms", tags, [], [[t0 * 1000 + 250, 1],
                                      [t0 * 1000 + 1750, 2]])])
    # Relative start: points placed relative to now.
    now = int(time.time())
    put_all(agg, [("n2", "it.rel", now - 600, 1, {"k": "r"}),
                  ("n2", "it.rel", now - 30, 2, {"k": "r"})])
    q = {"metric": "it.rel", "aggregator": "sum"}
    want1 = [result("it.rel", {"host": "n2", "k": "r"}, [],
                    {str(now - 600): 1, str(now - 30): 2})]
    check("start 1h-ago", agg.query({"start": "1h-ago", "queries": [q]}),
          want1)
    check("start 5m-ago", agg.query({"start": "5m-ago", "queries": [q]}),
          [result("it.rel", {"host": "n2", "k": "r"}, [],
                  {str(now - 30): 2})])
    got = agg.json("GET", "/api/query?start=1h-ago&m=sum:it.rel")
    check("GET start 1h-ago", got, want1)


def check_show_query(agg, t0):
    got = agg.query({"start": t0, "end": t0 + 60, "showQuery": True,
                     "queries": [
                         {"metric": "it.ds", "aggregator": "max"},
                         {"metric": "it.ctr", "aggregator": "sum",
                          "downsample": "10s-last", "filters": [{
                              "type": "literal_or", "tagk": "host",
                              "filter": "n1", "groupBy": False}]}]})
    check("showQuery results", [len(got or [])], [2])
    for i, r in enumerate(got or []):
        q = r.get("query", {})
        check("showQuery index %d" % i, q.get("index"), i)
        check("showQuery metric %d" % i, q.get("metric"),
              ["it.ds", "it.ctr"][i])
    if got and len(got) == 2:
        q = got[1]["query"]
        check("showQuery echo", {k: q.get(k) for k in (
            "aggregator", "downsample", "rate", "explicitTags")},
            {"aggregator": "sum", "downsample": "10s-last", "rate": False,
             "explicitTags": False})
        check("showQuery filters", [{k: f.get(k) for k in (
            "type", "tagk", "filter")} for f in q.get("filters", [])],
            [{"type": "literal_or", "tagk": "host", "filter": "n1"}])


# ---- Grafana's requests (its OpenTSDB data source) ----------------------

def check_grafana(agg, t0):
    # "Save & test"
    got = agg.get("/api/suggest", type="metrics", q="cpu", max=1000)
    check("grafana test", isinstance(got, list), True)
    check("suggest metrics it.", agg.get("/api/suggest", type="metrics",
                                        q="it.", max=1000),
          ["it.cpu", "it.ctr", "it.ds", "it.f", "it.ms", "it.rel"])
    check("suggest metrics it.c max 1", agg.get(
        "/api/suggest", type="metrics", q="it.c", max=1), ["it.cpu"])
    check("suggest tagk", agg.get("/api/suggest", type="tagk", q="s"),
          ["svc"])
    check("suggest tagv", agg.get("/api/suggest", type="tagv", q="web"),
          ["web01"])
    for ms in (False, True):
        got = agg.query({
            "start": t0 * 1000, "end": (t0 + 60) * 1000, "queries": [{
                "metric": "it.cpu", "aggregator": "avg",
                "downsample": "1s-avg", "filters": [{
                    "type": "literal_or", "tagk": "host", "filter": "n1|n2",
                    "groupBy": True}]}],
            "msResolution": ms, "globalAnnotations": True,
            "showQuery": True})
        name = "grafana panel msResolution %s" % ms
        check(name + " results", len(got or []), 2)
        for r in got or []:
            check(name + " index", r.get("query", {}).get("index"), 0)
            check(name + " annotations", r.get("globalAnnotations"), [])
            keys = list(r.get("dps", {}))
            truth(name + " keys", all(k.isdigit() for k in keys), keys)
        want = [dps(t0, [(0, 1), (10, 3), (20, 5)], ms),
                dps(t0, [(5, 10), (15, 20), (25, 30)], ms)]
        check(name + " dps", [r.get("dps") for r in got or []], want)
        check(name + " tags", [r.get("tags") for r in got or []],
              [{"dev": "a", "host": "n1"}, {"dev": "b", "host": "n2"}])
    # Template variables: tag values, then tag names.
    got = agg.get("/api/search/lookup", m="it.cpu{host=*}", limit=1000)
    check("lookup host values", sorted(r["tags"]["host"]
                                       for r in got["results"]),
          ["n1", "n2"])
    check("lookup fields", {k: got[k] for k in (
        "type", "metric", "tags", "limit", "startIndex", "totalResults")},
        {"type": "LOOKUP", "metric": "it.cpu", "tags": [
            {"key": "host", "value": "*"}], "limit": 1000, "startIndex": 0,
         "totalResults": 2})
    got = agg.get("/api/search/lookup", m="it.f", limit=1000)
    check("lookup tag names", sorted({k for r in got["results"]
                                      for k in r["tags"]}),
          ["host", "svc"])
    got = agg.get("/api/search/lookup", m="it.f{svc=Web02}")
    check("lookup svc=Web02", [(r["metric"], r["tags"])
                               for r in got["results"]],
          [("it.f", {"host": "n2", "svc": "Web02"})])
    got = agg.get("/api/search/lookup", m="{svc=*}", limit=2)
    check("lookup no metric, limit 2", (len(got["results"]),
                                        got["totalResults"]), (2, 3))
    got = agg.get("/api/aggregators")
    check("aggregators", sorted(got), sorted([
        "sum", "min", "max", "avg", "dev", "count", "zimsum", "mimmin",
        "mimmax", "none"]))
    got = agg.get("/api/config/filters")
    check("config/filters", sorted(got), sorted(f[0] for f in FILTERS))
    truth("config/filters entries", all(
        set(v) == {"examples", "description"} for v in got.values()))
    got = agg.get("/api/version")
    check("version", got.get("version"), "2.4.0")


# ---- errors ---------------------------------------------------------------

def error_of(agg, method, path, body, want_status, name):
    status, hdrs, data = agg.req(method, path, body)
    check(name + " status", status, want_status)
    try:
        e = json.loads(data)["error"]
    except (ValueError, KeyError, TypeError):
        truth(name + " error object", False, data[:300])
        return {}
    check(name + " code", e.get("code"), want_status)
    truth(name + " message", isinstance(e.get("message"), str)
          and e["message"], data[:300])
    return e


def check_errors(agg, t0):
    q = {"metric": "it.cpu", "aggregator": "sum"}
    bad = [
        ("malformed JSON", '{"start": ', 400),
        ("not an object", "[1, 2]", 400),
        ("empty body", "", 400),
        ("start a bool", {"start": True, "queries": [q]}, 400),
        ("queries a string", {"start": t0, "queries": "x"}, 400),
        ("metric a number", {"start": t0, "queries": [
            {"metric": 5, "aggregator": "sum"}]}, 400),
        ("unknown field", {"start": t0, "queries": [q], "bogus": 1}, 400),
        ("unknown sub-query field", {"start": t0, "queries": [
            dict(q, bogus=1)]}, 400),
        ("empty queries", {"start": t0, "queries": []}, 400),
        ("no start", {"queries": [q]}, 400),
        ("bad aggregator", {"start": t0, "queries": [
            {"metric": "it.cpu", "aggregator": "median"}]}, 400),
        ("bad downsample", {"start": t0, "queries": [
            dict(q, downsample="banana")]}, 400),
        ("bad filter type", {"start": t0, "queries": [dict(q, filters=[
            {"type": "fuzzy", "tagk": "host", "filter": "x"}])]}, 400),
        ("end before start", {"start": t0, "end": t0 - 10,
                              "queries": [q]}, 400),
    ]
    for name, body, status in bad:
        e = error_of(agg, "POST", "/api/query", body, status, name)
        if name == "unknown field":
            truth(name + " names it", "bogus" in json.dumps(e), e)
        if name == "bad aggregator":
            check(name + " sentence", e.get("message"),
                  "No such aggregation function: median")
    e = error_of(agg, "POST", "/api/query", {"start": t0, "queries": [
        {"metric": "x.none", "aggregator": "sum"}]}, 400, "unknown metric")
    check("unknown metric sentence", e.get("message"),
          "No such name for 'metrics': 'x.none'")
    e = error_of(agg, "GET", "/api/query?start=%d&m=sum:x.none" % t0, None,
                 400, "unknown metric (GET)")
    check("unknown metric sentence (GET)", e.get("message"),
          "No such name for 'metrics': 'x.none'")
    error_of(agg, "GET", "/api/query?start=%d" % t0, None, 400, "GET no m")
    error_of(agg, "GET", "/api/query?m=sum:it.cpu", None, 400,
             "GET no start")
    e = error_of(agg, "GET", "/api/search/lookup?m=x.none", None, 404,
                 "lookup unknown metric")
    check("lookup unknown sentence", e.get("message"),
          "Unable to resolve one or more UIDs")
    error_of(agg, "GET", "/api/search/lookup?m=it.f%7Bnokey%3D*%7D", None,
             404, "lookup unknown tag key")
    error_of(agg, "GET", "/api/search/lookup", None, 400, "lookup no m")
    error_of(agg, "GET", "/api/search/lookup?m=it.f%7Bsvc", None, 400,
             "lookup bad m")
    error_of(agg, "GET", "/api/suggest", None, 400, "suggest no type")
    error_of(agg, "GET", "/api/suggest?type=bogus", None, 400,
             "suggest bad type")
    error_of(agg, "GET", "/api/suggest?type=metrics&max=x", None, 400,
             "suggest bad max")
    error_of(agg, "POST", "/api/suggest", "{", 400, "suggest bad JSON")
    error_of(agg, "GET", "/api/nothing", None, 404, "unknown endpoint")
    error_of(agg, "GET", "/nothing.html", None, 404, "unknown file")
    error_of(agg, "DELETE", "/api/query", None, 405, "DELETE query")
    error_of(agg, "GET", "/api/put", None, 405, "GET put")
    error_of(agg, "GET", "/api/reboot", None, 405, "GET reboot")
    error_of(agg, "POST", "/telem/job", "{}", 405, "POST job")
    error_of(agg, "POST", "/", "{}", 405, "POST /")
    error_of(agg, "POST", "/api/put", "not json", 400, "put bad JSON")
    error_of(agg, "POST", "/api/put", "[]", 400, "put no points")
    error_of(agg, "POST", "/api/reboot", '{"hostnames": []}', 400,
             "reboot no names")
    error_of(agg, "POST", "/api/reboot", '{"hostnames": [3]}', 400,
             "reboot bad name")
    status, hdrs, _ = agg.req("DELETE", "/api/query")
    check("405 Allow", hdrs.get("allow"), "GET, POST")


def check_put(agg, t0):
    good = {"metric": "it.put", "timestamp": t0 + 1, "value": "7.5",
            "tags": {"host": "n2", "x": "y"}}
    bad = [
        {"metric": "it.put", "timestamp": t0, "value": 1, "tags": {}},
        {"metric": "it.put", "timestamp": t0, "value": "abc",
         "tags": {"host": "n1"}},
        {"metric": "it.put", "timestamp": t0, "value": 1,
         "tags": {"host": "nosuch"}},
        {"metric": "", "timestamp": t0, "value": 1, "tags": {"host": "n1"}},
        {"metric": "it.put", "timestamp": "x", "value": 1,
         "tags": {"host": "n1"}},
        # past int64 ns (the year 2262), in seconds and in ms: their ns
        # overflowed and the point was stored at a wrapped time
        {"metric": "it.put", "timestamp": 9999999999, "value": 1,
         "tags": {"host": "n1"}},
        {"metric": "it.put", "timestamp": 9300000000000, "value": 1,
         "tags": {"host": "n1"}},
    ]
    status, _, data = agg.req("POST", "/api/put?details", bad + [good])
    check("put details status", status, 400)
    got = json.loads(data)
    check("put details counts", (got.get("success"), got.get("failed")),
          (1, len(bad)))
    check("put details datapoints", [e.get("datapoint")
                                     for e in got.get("errors", [])], bad)
    truth("put details sentences", all(
        isinstance(e.get("error"), str) and e["error"]
        for e in got.get("errors", [])), got)
    status, _, data = agg.req("POST", "/api/put", bad[:1])
    check("put without details", status, 400)
    status, _, data = agg.req("POST", "/api/put?summary", good)
    check("put summary", (status, json.loads(data)),
          (200, {"success": 1, "failed": 0}))
    got = agg.query({"start": t0, "end": t0 + 60, "queries": [
        {"metric": "it.put", "aggregator": "sum"}]})
    check("put visible", got, [result("it.put", {"host": "n2", "x": "y"},
                                      [], dps(t0, [(1, 7.5)]))])


def check_slow_client(agg, t0):
    """A client that sends half a request and stalls must not hold up a
    normal request."""
    s = socket.create_connection((agg.host, agg.port), timeout=30)
    auth = ("Authorization: Bearer %s\r\n" % agg.token).encode() \
        if agg.token else b""
    s.sendall(b"POST /api/query HTTP/1.1\r\nHost: x\r\n" + auth +
              b"Content-Type: application/json\r\nContent-Length: 500\r\n"
              b"\r\n{\"start\": ")
    t = time.monotonic()
    got = agg.get("/api/version")
    check("request beside a stalled client", (got or {}).get("version"),
          "2.4.0")
    got = agg.query({"start": t0, "end": t0 + 60, "queries": [
        {"metric": "it.ds", "aggregator": "sum", "downsample": "0all-sum"}]})
    check("query beside a stalled client", got, [result(
        "it.ds", {"host": "n1", "k": "v"}, [], dps(t0, [(0, 12)]))])
    truth("beside a stalled client in time", time.monotonic() - t < 20)
    s.close()


def golden(url, t0):
    agg = Agg(url)
    put_all(agg, points(t0))
    check_aggregators(agg, t0)
    check_filters(agg, t0)
    check_downsample(agg, t0)
    check_rate(agg, t0)
    check_times(agg, t0)
    check_show_query(agg, t0)
    check_grafana(agg, t0)
    check_put(agg, t0)
    check_errors(agg, t0)
    check_slow_client(agg, t0)
    alive(url)


# ---- the other phases -----------------------------------------------------

def dead(url, node, timeout_ms):
    agg = Agg(url)
    t = time.monotonic()
    status, hdrs, data = agg.req("POST", "/api/query", {
        "start": "1d-ago", "queries": [{"metric": "it.f", "aggregator":
                                        "none"}]})
    elapsed = time.monotonic() - t
    check("dead node status", status, 200)
    # Bounded loosely: the deadline plus a wide margin for a busy machine.
    truth("dead node answer within 10x the deadline",
          elapsed < 10 * timeout_ms / 1000.0, "%.3f s" % elapsed)
    missing = hdrs.get("x-telem-missing", "")
    truth("X-Telem-Missing names " + node, missing.startswith(node + " ")
          or (", " + node + " ") in missing, repr(missing))
    hosts = sorted(r["tags"]["host"] for r in json.loads(data))
    check("dead node: the others' series", hosts,
          sorted(h for h in ("n1", "n2", "n3") if h != node))


def reboot_none(url, timeout_ms):
    agg = Agg(url)
    t = time.monotonic()
    status, _, data = agg.req("POST", "/api/reboot", {"hostnames": ["n2"]})
    elapsed = time.monotonic() - t
    check("reboot without a launcher (%s)" % data[:200], status, 503)
    truth("reboot 503 within 10x the deadline",
          elapsed < 10 * timeout_ms / 1000.0, "%.3f s" % elapsed)


def token(url, tok):
    for name, t in (("no token", ""), ("wrong token", "x" * len(tok))):
        status, hdrs, _ = Agg(url, t).req("GET", "/api/version")
        check(name, status, 401)
        truth(name + " challenge", hdrs.get("www-authenticate", "")
              .startswith("Bearer"), hdrs)
    status, _, _ = Agg(url, tok).req("GET", "/api/version")
    check("right token", status, 200)
    status, _, _ = Agg(url, tok).req("POST", "/api/query", {
        "start": "1h-ago", "queries": [{"metric": "it.cpu", "aggregator":
                                        "sum"}]})
    check("right token query", status, 200)


def tokenless(url):
    """A telem_agg without a token reads, but never writes or restarts."""
    agg = Agg(url, "")
    for path, body in (("/api/put", {"metric": "it.tl", "timestamp": 1,
                                     "value": 1, "tags": {"host": "n1"}}),
                       ("/api/reboot", {"hostnames": ["n2"]})):
        status, _, data = agg.req("POST", path, body)
        check("%s without a token (%s)" % (path, data[:200]), status, 403)
        truth(path + " says why", b"token" in data, data[:200])
    status, _, _ = agg.req("GET", "/api/version")
    check("read without a token", status, 200)


def url_token(url, tok):
    """The launcher's telem_agg: nothing without its token; the token in
    the URL (as the tunnel line prints it) opens the dashboard."""
    agg = Agg(url, "")
    for path in ("/", "/api/version", "/telem/job"):
        status, _, _ = agg.req("GET", path)
        check("GET %s without the token" % path, status, 401)
    status, _, data = agg.req("GET", "/?token=" + tok)
    check("GET /?token=", status, 200)
    truth("the dashboard's page", b"<html" in data.lower(), data[:200])
    # What the page loads by relative URL comes without credentials.
    for path in ("/telem.js", "/telem.css", "/uPlot.min.js",
                 "/uPlot.min.css"):
        status, _, _ = agg.req("GET", path)
        check("GET %s without the token" % path, status, 200)
    status, _, _ = agg.req("GET", "/api/version?token=" + "0" * len(tok))
    check("a wrong token in the URL", status, 401)


def big(url):
    agg = Agg(url)
    pad = " " * 5000
    status, _, _ = agg.req("POST", "/api/query", '{"start": 1,' + pad + "}")
    check("5000-byte body", status, 413)
    alive(url)


def job(url, nodes):
    agg = Agg(url)
    status, hdrs, data = agg.req("GET", "/")
    check("GET / status", status, 200)
    truth("GET / is HTML", hdrs.get("content-type", "")
          .startswith("text/html") and b"<html" in data.lower(),
          hdrs.get("content-type"))
    got = agg.get("/telem/job")
    ns = (got or {}).get("job", {}).get("nodes", [])
    check("job nodes", sorted(n.get("name") for n in ns), sorted(nodes))
    truth("job node states", all(isinstance(n.get("state"), str)
                                 and n["state"] for n in ns), ns)


def reboot(url, node):
    got = Agg(url).json("POST", "/api/reboot", {"hostnames": [node]})
    check("reboot accepted", (got or {}).get("accepted"), True)


def alive(url):
    got = Agg(url).get("/api/version")
    check("still answers", (got or {}).get("version"), "2.4.0")


# ---- the provisioned dashboard, as Grafana would ask for it ----------------

def grafana_query(target, values, interval):
    """The query Grafana's OpenTSDB data source makes of a panel's target
    (convertTargetToQuery), the template variables at "All" in its 'pipe'
    format (the values joined by '|')."""
    def subst(text):
        return re.sub(r"\$(\w+)", lambda m: "|".join(values.get(m.group(1),
                                                                [])), text)
    q = {"metric": subst(target["metric"]),
         "aggregator": target.get("aggregator") or "avg"}
    if target.get("shouldComputeRate"):
        q["rate"] = True
        q["rateOptions"] = {"counter": bool(target.get("isCounter")),
                            "dropResets": True}
    if not target.get("disableDownsampling"):
        q["downsample"] = "%s-%s" % (target.get("downsampleInterval")
                                     or interval,
                                     target["downsampleAggregator"])
        fill = target.get("downsampleFillPolicy")
        if fill and fill != "none":
            q["downsample"] += "-" + fill
    if target.get("filters"):
        q["filters"] = [dict(f, filter=subst(f["filter"]))
                        for f in target["filters"]]
    else:
        q["tags"] = {k: subst(v) for k, v in target.get("tags", {}).items()}
    return q


def dashboard(url, board, source, want, hosts):
    agg = Agg(url)
    with open(source) as f:
        uid = re.search(r"^\s*uid:\s*(\S+)", f.read(), re.M).group(1)
    with open(board) as f:
        d = json.load(f)
    values, text = {}, {}
    for v in d["templating"]["list"]:
        check("variable %s uid" % v["name"], v["datasource"]["uid"], uid)
        m = re.match(r"tag_values\((.*?),\s?(.*)\)", v["query"])
        status, _, data = agg.req("GET", "/api/search/lookup?" +
                                  urllib.parse.urlencode({
                                      "m": "%s{%s=*}" % (m[1], m[2]),
                                      "limit": 1000}))
        # A metric not in this job (no collectors): OpenTSDB's 404, and
        # the variable has no values but "All".
        truth("variable %s lookup" % v["name"], status == 200 or (
            status == 404 and b"No such name" in data), (status, data))
        got = json.loads(data) if status == 200 else {}
        values[v["name"]] = sorted({r["tags"][m[2]]
                                    for r in got.get("results", [])})
        # "All" is selected: its value, else every value in 'pipe' form.
        truth("variable %s All" % v["name"], v.get("includeAll"), v)
        text[v["name"]] = [v["allValue"]] if v.get("allValue") \
            else values[v["name"]]
    check("variable host values", values.get("host"), sorted(hosts))
    for a in d["annotations"]["list"]:
        if a.get("builtIn"):
            continue
        check("annotation uid", a["datasource"]["uid"], uid)
        got = agg.query({"start": "1h-ago", "queries": [{
            "aggregator": "sum", "metric": a["target"]}],
            "globalAnnotations": True})
        truth("annotation answer", got and all(
            isinstance(r.get("globalAnnotations"), list) for r in got), got)
    seen = set()
    for p in d["panels"]:
        if p["type"] == "row":
            continue
        check("panel %s uid" % p["title"], p["datasource"]["uid"], uid)
        for t in p["targets"]:
            check("panel %s target uid" % p["title"], t["datasource"]["uid"],
                  uid)
            body = {"start": "1h-ago", "queries": [grafana_query(t, text,
                                                                 "2s")],
                    "msResolution": True, "globalAnnotations": True,
                    "showQuery": True}
            status, _, data = agg.req("POST", "/api/query", body)
            name = "panel %s (%s)" % (p["title"], t["metric"])
            if t["metric"] not in want:
                # Not in this job (no GPU, no collectors): OpenTSDB's 400.
                ok = status == 200 or (status == 400 and b"No such name"
                                       in data)
                truth(name + " answered", ok, (status, data[:300]))
                continue
            check(name + " status (%s)" % data[:300], status, 200)
            got = json.loads(data) if status == 200 else []
            truth(name + " results", got, data[:300])
            truth(name + " ms keys", all(k.isdigit() for r in got
                                         for k in r["dps"]), data[:300])
            per_host = sorted(r["tags"]["host"] for r in got
                              if "host" in r["tags"])
            # A panel grouped by more than the host (per GPU, core, port)
            # has several lines per node: every node, each at least once.
            if per_host and any(k != "host" for k in t.get("tags", {})):
                per_host = sorted(set(per_host))
            if per_host:
                check(name + " hosts", per_host, sorted(hosts))
            seen.add(t["metric"])
    check("wanted metrics answered", sorted(seen), sorted(want))


def main(argv):
    cmds = {"golden": lambda a: golden(a[0], int(a[1])),
            "dead": lambda a: dead(a[0], a[1], int(a[2])),
            "reboot-none": lambda a: reboot_none(a[0], int(a[1])),
            "token": lambda a: token(a[0], a[1]),
            "tokenless": lambda a: tokenless(a[0]),
            "url-token": lambda a: url_token(a[0], a[1]),
            "big": lambda a: big(a[0]),
            "job": lambda a: job(a[0], a[1].split(",")),
            "reboot": lambda a: reboot(a[0], a[1]),
            "alive": lambda a: alive(a[0]),
            "dashboard": lambda a: dashboard(a[0], a[1], a[2],
                                             a[3].split(","),
                                             a[4].split(","))}
    if len(argv) < 2 or argv[0] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    cmds[argv[0]](argv[1:])
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
