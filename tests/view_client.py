#!/usr/bin/env python3
"""view_client.py - the HTTP and file side of tests/it_view.sh: telem_view
(serving dump files) against the live telem_agg on the same absolute
ranges, the export formats against the data set, and the report.

    view_client.py put AGG T0            put agg_client's data set
    view_client.py same AGG VIEW T0 S E  every request below answered
                                         alike by both (S, E: ms, a range
                                         of the node metrics)
    view_client.py offline VIEW          /api/put, /api/reboot: 501
    view_client.py csv FILE T0           the CSV export holds the data set
    view_client.py json FILE T0          the JSON export holds it too
    view_client.py job VIEW NODES S E    /telem/job: the nodes and a range
                                         covering [S, E] (ms)
    view_client.py notes AGG VIEW J      globalAnnotations since J (ms):
                                         equal, an event and a restart
    view_client.py snaps AGG VIEW NODES  /telem/snapshot alike from both
    view_client.py snapfile LIVE DUMP NODES  snapshot -f json outputs alike

Exit status 0 when every check held; failures are listed on stderr.
"""
import csv
import json
import sys
import time

from agg_client import Agg, FAILURES, check, points, put_all, truth

AGGS = ["sum", "min", "max", "avg", "dev", "count", "zimsum", "mimmin",
        "mimmax", "none"]


def requests(t0, s_ms, e_ms):
    """(name, method, path, body) of every request compared."""
    rng = {"start": t0, "end": t0 + 60}
    out = []
    for a in AGGS:
        out.append(("agg " + a, "POST", "/api/query", dict(rng, queries=[
            {"metric": "it.cpu", "aggregator": a}])))
    for ds in ("10s-avg", "10s-sum-zero", "10s-max-null", "0all-count",
               "20s-last-nan"):
        out.append(("downsample " + ds, "POST", "/api/query", dict(
            rng, queries=[{"metric": "it.ds", "aggregator": "sum",
                           "downsample": ds}])))
    for opts in (None, {"counter": True, "counterMax": 100},
                 {"counter": True, "dropResets": True}):
        q = {"metric": "it.ctr", "aggregator": "sum", "rate": True}
        if opts:
            q["rateOptions"] = opts
        out.append(("rate %s" % opts, "POST", "/api/query",
                    dict(rng, queries=[q])))
    for ftype, expr in (("literal_or", "web01|db01"), ("wildcard", "web*"),
                        ("regexp", "(web|db)01"), ("iliteral_or", "WEB01"),
                        ("not_literal_or", "web01")):
        for group in (False, True):
            out.append(("filter %s %s" % (ftype, group), "POST",
                        "/api/query", dict(rng, queries=[{
                            "metric": "it.f", "aggregator": "sum",
                            "filters": [{"type": ftype, "tagk": "svc",
                                         "filter": expr,
                                         "groupBy": group}]}])))
    out.append(("host filter", "GET", "/api/query?start=%d&end=%d&m=%s"
                % (t0, t0 + 60, "sum:it.f%7Bhost=n2%7D"), None))
    out.append(("host filter of no node", "GET",
                "/api/query?start=%d&end=%d&m=%s"
                % (t0, t0 + 60, "sum:it.f%7Bhost=nX%7D"), None))
    out.append(("ms", "POST", "/api/query?arrays=true", dict(
        rng, msResolution=True, queries=[{"metric": "it.ms",
                                          "aggregator": "sum"}])))
    out.append(("unknown metric", "POST", "/api/query", dict(
        rng, queries=[{"metric": "it.nope", "aggregator": "sum"}])))
    out.append(("two sub-queries", "POST", "/api/query", dict(
        rng, queries=[{"metric": "it.cpu", "aggregator": "max",
                       "downsample": "15s-avg"},
                      {"metric": "it.ds", "aggregator": "none"}])))
    # The dashboard's queries and Grafana's editor, on the node metrics.
    for m in ("cpu_percent", "used_ram", "load_average",
              "num_running_processes"):
        out.append(("dashboard " + m, "POST", "/api/query?arrays=true", {
            "start": s_ms, "end": e_ms, "msResolution": True,
            "queries": [{"metric": m, "aggregator": "none"}]}))
        out.append(("grafana " + m, "POST", "/api/query", {
            "start": s_ms, "end": e_ms, "queries": [{
                "metric": m, "aggregator": "avg", "downsample": "1s-avg",
                "filters": [{"type": "wildcard", "tagk": "host",
                             "filter": "*", "groupBy": True}]}]}))
    for t, q in (("metrics", "it."), ("metrics", ""), ("tagk", ""),
                 ("tagv", "n")):
        out.append(("suggest %s %s" % (t, q), "GET",
                    "/api/suggest?type=%s&q=%s&max=1000" % (t, q), None))
    for m in ("it.f%7Bsvc=*%7D", "it.cpu", "%7Bhost=n1%7D", "it.nope"):
        out.append(("lookup " + m, "GET",
                    "/api/search/lookup?m=%s&limit=1000" % m, None))
    return out


def strip(name, body):
    """The answer without what may differ between two servers."""
    if name.startswith("lookup") and isinstance(body, dict):
        body.pop("time", None)
    return body


def same(agg_url, view_url, t0, s_ms, e_ms):
    agg, view = Agg(agg_url), Agg(view_url)
    for name, method, path, body in requests(t0, s_ms, e_ms):
        a = agg.req(method, path, body)
        v = view.req(method, path, body)
        check(name + ": status", v[0], a[0])
        ja = strip(name, json.loads(a[2]) if a[2] else None)
        jv = strip(name, json.loads(v[2]) if v[2] else None)
        check(name, jv, ja)
        if name.startswith("dashboard"):
            truth(name + ": the live answer has series", ja and all(
                len(r["dps"]) for r in ja), str(ja)[:200])


def offline(view_url):
    view = Agg(view_url)
    for path, body in (("/api/put", [{"metric": "x", "timestamp": 1,
                                      "value": 1, "tags": {"host": "n1"}}]),
                       ("/api/reboot", {"hostnames": ["n1"]})):
        status, _, data = view.req("POST", path, body)
        check(path + " status", status, 501)
        err = json.loads(data).get("error", {})
        check(path + " error code", err.get("code"), 501)
        truth(path + " says why", "live job" in err.get("details", ""),
              data[:300])


def want_points(t0):
    """{(node, metric, tags): [(ts_ns, value)]} of the data set."""
    want = {}
    for host, m, ts, v, tags in points(t0):
        ns = ts * 1000000 if ts > 1e10 else ts * 1000000000
        key = (host, m, ";".join("%s=%s" % kv for kv in
                                 sorted(dict(tags, host=host).items())))
        want.setdefault(key, []).append((ns, float(v)))
    return want


def got_csv(path):
    got = {}
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    check("csv header", rows[0],
          ["node", "metric", "tags", "timestamp_ns", "value"])
    for node, m, tags, ts, v in rows[1:]:
        got.setdefault((node, m, tags), []).append((int(ts), float(v)))
    return got


def got_json(path):
    got = {}
    with open(path) as f:
        doc = json.load(f)
    for s in doc["series"]:
        tags = ";".join("%s=%s" % kv for kv in sorted(s["tags"].items()))
        got[(s["node"], s["metric"], tags)] = [
            (ts, float(v)) for ts, v in s["points"]]
    return got


def export(kind, path, t0):
    got = got_csv(path) if kind == "csv" else got_json(path)
    want = want_points(t0)
    mine = {k: v for k, v in got.items() if k[1].startswith("it.")}
    check(kind + " export: the data set, each point once", mine, want)


def job(view_url, nodes, s_ms, e_ms):
    j = Agg(view_url).json("GET", "/telem/job")
    got = sorted(n["name"] for n in j["job"]["nodes"])
    check("job nodes", got, sorted(nodes))
    r = j["job"].get("range") or {}
    truth("job range covers the data", r.get("start_ms", 1 << 62) <= s_ms
          and r.get("end_ms", 0) >= e_ms, str(r))


def notes(agg_url, view_url, j_ms):
    """globalAnnotations of the finished job: telem_agg reads them from
    the run directory, telem_view from the dump; they must be equal and
    hold the job's detector event and restart."""
    now = int(time.time() * 1000) + 1000
    body = {"start": j_ms - 60000, "end": now, "globalAnnotations": True,
            "queries": [{"aggregator": "max", "metric": "cpu_percent"}]}
    ja = Agg(agg_url).json("POST", "/api/query", body)
    jv = Agg(view_url).json("POST", "/api/query", body)
    truth("telem_agg answers series", isinstance(ja, list) and len(ja) > 0,
          str(ja)[:300])
    truth("telem_view answers series", isinstance(jv, list) and len(jv) > 0,
          str(jv)[:300])
    na = [r.get("globalAnnotations") for r in ja or []]
    nv = [r.get("globalAnnotations") for r in jv or []]
    check("globalAnnotations", nv[:1], na[:1])
    kinds = sorted({n["custom"]["kind"] for n in (na[0] if na else []) or []})
    check("the job's annotation kinds", kinds, ["event", "restart"])
    print("notes: %d annotation(s) alike: %s" % (
        len(na[0] or []) if na else 0,
        [n["description"][:40] for n in (na[0] if na else []) or []]))


def snaps(agg_url, view_url, nodes):
    """/telem/snapshot of every node: the same document from both sources;
    a node neither has: 404; no node: 400."""
    agg, view = Agg(agg_url), Agg(view_url)
    for n in nodes:
        a = agg.json("GET", "/telem/snapshot?node=" + n)
        v = view.json("GET", "/telem/snapshot?node=" + n)
        truth(n + ": a snapshot", isinstance(a, dict) and a.get("node") == n,
              str(a)[:200])
        check(n + ": the dump's snapshot", v, a)
    for src in (agg, view):
        src.json("GET", "/telem/snapshot?node=nx", want=404)
        src.json("GET", "/telem/snapshot", want=400)


def snapfile(live_path, dump_path, nodes):
    """telem_client -f json snapshot from the nodes and from the dump: the
    same documents."""
    live = json.load(open(live_path))
    dump = json.load(open(dump_path))
    get = lambda d: {r["node"]: r["snapshot"] for r in d["snapshots"]}
    check("snapshot nodes", sorted(get(dump)), sorted(nodes))
    check("snapshot --dump documents", get(dump), get(live))
    check("snapshot --dump missing", dump["missing"], [])


def main(argv):
    cmds = {"put": lambda a: put_all(Agg(a[0]), points(int(a[1]))),
            "same": lambda a: same(a[0], a[1], int(a[2]), int(a[3]),
                                   int(a[4])),
            "offline": lambda a: offline(a[0]),
            "csv": lambda a: export("csv", a[0], int(a[1])),
            "json": lambda a: export("json", a[0], int(a[1])),
            "job": lambda a: job(a[0], a[1].split(","), int(a[2]),
                                 int(a[3])),
            "notes": lambda a: notes(a[0], a[1], int(a[2])),
            "snaps": lambda a: snaps(a[0], a[1], a[2].split(",")),
            "snapfile": lambda a: snapfile(a[0], a[1], a[2].split(","))}
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
