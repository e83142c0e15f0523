#!/usr/bin/env python3
"""fanin_fit.py - the fan-in curves of bench/fanin.sh: the per-size table,
a straight line through each operation's medians (numpy's least squares,
cost = a + b * nodes), the extrapolation to 1,024 and 10,000 nodes, FIGURE
lines against telem's targets, and the picture (docs/img/fanin.svg).

Input: the RESULT, IDLE and CONN lines bench_fanin prints (one file, any
order, several runs of one size allowed: their p50s are combined by
median).  With relays (bench_fanin --relays K) the query, watch and agg
operations also come as query/rK, watch/rK and agg/rK (the same operation
through relays of K nodes, measured in the same job, rounds alternating
with the direct path); each is fitted and extrapolated on its own, and
drawn dashed beside the direct curve.  CONN lines give the TCP
connections each fan-out process held, direct and through relays.
RESTART lines give each restart's split (the launcher's stop, re-form and
start), the launcher's own CPU, request -> running everywhere, and the
machine's busy CPU over the restart with its core count: that CPU over
the cores is the least wall time the restart could take on this machine.

Usage: fanin_fit.py RESULTS [--svg FILE] [--load "L1 L5 L15"] [--where TEXT]
Exit status 2 on bad usage or a malformed input line.
"""
import argparse
import sys

import numpy as np

OPS = [  # op, what, whose CPU
    ("query", "ac_query, newest point of 10 series a node", "this process"),
    ("watch", "watcher round, slowgpu, 8 devices a node", "this process"),
    ("agg", "telem_agg /api/query sum:1m-avg, 1 h", "telem_agg"),
    ("restart", "restart: launcher's stop+re-form+start", "telem_launch"),
    ("rst-all", "restart: request -> running everywhere", "-"),
    ("startup", "job start: exec -> running everywhere", "-"),
]


def die(msg):
    print(msg, file=sys.stderr)
    sys.exit(2)


RELAYED = ("query", "watch", "agg")


def variants(rows):
    """The relay tags present ("r16", ...), by K."""
    tags = {op.split("/", 1)[1] for _, op in rows if "/" in op}
    return sorted(tags, key=lambda t: int(t[1:]))


def parse(path):
    """rows[(n, op)] -> list of (p50, p99, cpu, samples, bad); idle[n];
    conn[(n, tag)] -> (relays, self direct, self relayed, agg direct,
    agg relayed, relays' CPU ms a round)."""
    rows, idle, conn, rst = {}, {}, {}, {}
    with open(path) as f:
        for ln, line in enumerate(f, 1):
            w = line.rstrip("\n").split("\t")
            try:
                if w[0] == "RESULT" and len(w) == 8:
                    key = (int(w[1]), w[2])
                    base, _, tag = w[2].partition("/")
                    if tag and (base not in RELAYED or tag[:1] != "r"
                                or not tag[1:].isdigit()):
                        raise ValueError("unknown operation %r" % w[2])
                    rows.setdefault(key, []).append(
                        tuple(float(x) for x in w[3:6]) + (int(w[6]), int(w[7])))
                elif w[0] == "IDLE" and len(w) == 5:
                    idle[int(w[1])] = tuple(float(x) for x in w[2:5])
                elif w[0] == "CONN" and len(w) == 9:
                    if w[2][:1] != "r" or not w[2][1:].isdigit():
                        raise ValueError("bad relay tag %r" % w[2])
                    conn[(int(w[1]), w[2])] = tuple(
                        int(x) for x in w[3:8]) + (float(w[8]),)
                elif w[0] == "RESTART" and len(w) == 11:
                    rst.setdefault(int(w[1]), []).append(
                        tuple(float(x) for x in w[3:10]) + (int(w[10]),))
                elif line.strip():
                    raise ValueError("not a RESULT, IDLE, CONN or RESTART "
                                     "line")
            except (ValueError, IndexError) as e:
                die("fanin_fit.py: %s:%d: malformed line (%s): %r"
                         % (path, ln, e, line[:80]))
    if not rows:
        die("fanin_fit.py: %s holds no RESULT line" % path)
    return rows, idle, conn, rst


# RESTART columns after the size and the restart's number.
RST = ("launcher", "stop", "re-form", "start", "launcher CPU",
       "request -> running", "machine busy CPU")


def restart_table(rst, sizes):
    """Medians of each restart's split per size, the machine's busy CPU
    during it and the floor that puts on the wall time here; returns
    {n: {column: median, 'floor': ms, 'ncpu': k}}."""
    out = {}
    if not rst:
        return out
    print("\nRestarts, medians (ms): the launcher's split, its own CPU, "
          "request -> running everywhere, the machine's busy CPU during it "
          "and that over the cores (the least wall time every node's share "
          "of the work allows on this machine):")
    print("  %5s %9s %7s %8s %7s %9s %10s %11s %8s %9s" % (
        "nodes", "launcher", "stop", "re-form", "start", "its CPU",
        "req->run", "busy CPU", "floor", "req/floor"))
    for n in sizes:
        if n not in rst:
            continue
        m = {c: float(np.median([r[i] for r in rst[n]]))
             for i, c in enumerate(RST)}
        m["ncpu"] = rst[n][0][7]
        m["floor"] = m["machine busy CPU"] / max(m["ncpu"], 1)
        out[n] = m
        print("  %5d %9.0f %7.0f %8.0f %7.0f %9.1f %10.0f %11.0f %8.0f %9.2f"
              % (n, m["launcher"], m["stop"], m["re-form"], m["start"],
                 m["launcher CPU"], m["request -> running"],
                 m["machine busy CPU"], m["floor"],
                 m["request -> running"] / m["floor"] if m["floor"] else 0))
    return out


def all_ops(rows):
    """(op, what, whose) for the direct operations, then each relayed one."""
    out = list(OPS)
    for tag in variants(rows):
        for op, what, whose in OPS:
            if op in RELAYED:
                out.append(("%s/%s" % (op, tag), "%s, relays of %s" % (
                    what, tag[1:]), whose))
    return out


def med(rows, n, op, i):
    v = [r[i] for r in rows.get((n, op), [])]
    return float(np.median(v)) if v else None


def fit(xs, ys):
    """(a, b) of y = a + b x by least squares; b None with < 2 points."""
    if len(xs) < 2:
        return (ys[0] if ys else 0.0), None
    b, a = np.polyfit(np.array(xs, float), np.array(ys, float), 1)
    return float(a), float(b)


def table(rows, idle, conn, sizes):
    print("Per size (p50 / p99 wall ms; CPU ms per operation of the process "
          "that fans out):")
    print("  %-8s %s" % ("nodes", "".join(" %25d" % n for n in sizes)))
    for op, what, _ in all_ops(rows):
        cells = []
        for n in sizes:
            p50, p99, cpu = (med(rows, n, op, i) for i in range(3))
            cells.append(" %25s" % ("-" if p50 is None else
                                   "%.1f/%.1f cpu %.1f" % (p50, p99, cpu)))
        print("  %-8s %s   %s" % (op, "".join(cells), what))
    if idle:
        print("  idle job, % of a core: telemd each / telem_dictd each / "
              "launcher: " + "; ".join(
                  "%d: %.3f/%.3f/%.1f" % ((n,) + idle[n])
                  for n in sizes if n in idle))
    if conn:
        print("\nTCP connections held (direct / through relays) and the "
              "relays' CPU:")
        for (n, tag), c in sorted(conn.items()):
            print("  %4d nodes, %3d relays of %s: bench_fanin %d / %d, "
                  "telem_agg %d / %d; relays %.2f ms CPU a round (all)"
                  % (n, c[0], tag[1:], c[1], c[2], c[3], c[4], c[5]))


def slopes(rows, sizes):
    """fits[op] = {'wall': (a, b), 'cpu': (a, b)} over p50 and CPU."""
    fits = {}
    print("\nStraight lines through the medians (ms = a + b * nodes), "
          "extrapolated on paper:")
    print("  %-9s %10s %12s %10s %12s %12s %12s" % (
        "op", "wall a", "wall b/node", "cpu a", "cpu b/node",
        "wall@1024", "wall@10000"))
    for op, _, _ in all_ops(rows):
        xs = [n for n in sizes if med(rows, n, op, 0) is not None]
        if not xs:
            continue
        w = fit(xs, [med(rows, n, op, 0) for n in xs])
        c = fit(xs, [med(rows, n, op, 2) for n in xs])
        fits[op] = {"wall": w, "cpu": c, "sizes": xs}
        at = (lambda f, n: f[0] + (f[1] or 0.0) * n)
        print("  %-9s %10.2f %12.4f %10.2f %12.4f %12.1f %12.1f" % (
            op, w[0], w[1] or 0.0, c[0], c[1] or 0.0, at(w, 1024),
            at(w, 10000)))
    return fits


def at(fits, op, kind, n):
    f = fits.get(op, {}).get(kind)
    return None if f is None else f[0] + (f[1] or 0.0) * n


WHERE = ""    # --where: appended to every FIGURE name


def figure(name, target, measured, peer, limit, unit="ms"):
    name += WHERE
    if measured is None:
        print("FIGURE\t%s\t%s\t-\t%s\t-\t-" % (name, target, peer))
        return
    ratio = measured / limit
    print("FIGURE\t%s\t%s\t%.3g %s\t%s\t%.2f of target\t%s" % (
        name, target, measured, unit, peer, ratio,
        "met" if ratio <= 1.0 else "missed"))


def path_figures(fits, sizes, tag):
    """The three fan-out targets for the direct path (tag "") or the path
    through relays of K nodes (tag "rK")."""
    sfx = "/" + tag if tag else ""
    how = "through relays of %s nodes" % tag[1:] if tag else "direct"
    over = "fit over %s nodes" % ",".join(
        map(str, fits.get("watch" + sfx, {}).get("sizes", sizes)))
    figure("watcher round, 1,024 nodes x 8 devices, %s, p50 (extrapolated)"
           % how, "<= 500 ms", at(fits, "watch" + sfx, "wall", 1024),
           over, 500.0)
    cpu = at(fits, "watch" + sfx, "cpu", 1024)
    figure("watcher round CPU at a 1 s period, 1,024 nodes, %s "
           "(extrapolated)" % how, "<= 0.5 core",
           None if cpu is None else cpu / 1000.0,
           "fan-out process's own CPU", 0.5, "core")
    figure("Grafana panel query, 1,024 nodes, %s, p50 (extrapolated)" % how,
           "<= 2 s", at(fits, "agg" + sfx, "wall", 1024),
           "telem_agg, sum:1m-avg", 2000.0)


def report(name, measured, peer, ratio):
    """A FIGURE line without a target (the summary's verdict is "-")."""
    name += WHERE
    print("FIGURE\t%s\t(reported)\t%s\t%s\t%s\t-" % (
        name, measured, peer, ratio))


def restart_figures(rm, sizes):
    """The launcher's own CPU per restart fitted over the sizes (the part
    of a restart that no number of nodes runs in parallel), and the
    largest size's restart against this machine's floor."""
    if not rm:
        return
    xs = sorted(rm)
    a, b = fit(xs, [rm[n]["launcher CPU"] for n in xs])
    cpu1024 = a + (b or 0.0) * 1024
    figure("launcher's own CPU a restart at 1,024 nodes (fit over %s "
           "nodes; its serial share of a restart)" % ",".join(map(str, xs)),
           "<= 1 s", cpu1024, "launcher process, all threads", 1000.0)
    big = max(xs)
    m = rm[big]
    report("restart at %d nodes, request -> running everywhere, against "
           "this machine's floor" % big,
           "%.0f ms" % m["request -> running"],
           "floor %.0f ms (%.0f CPU-ms of every process / %d cores)"
           % (m["floor"], m["machine busy CPU"], m["ncpu"]),
           "%.2f of floor" % (m["request -> running"] / m["floor"]
                               if m["floor"] else 0.0))


def figures(rows, fits, sizes, rm=None):
    print()
    big = max(sizes)
    path_figures(fits, sizes, "")
    for tag in variants(rows):
        path_figures(fits, sizes, tag)
    figure("restart, 1,024 nodes (launcher's stop+re-form+start, "
           "extrapolated)", "<= 1 s", at(fits, "restart", "wall", 1024),
           "-", 1000.0)
    figure("restart measured at %d nodes, p50" % big, "<= 100 ms",
           med(rows, big, "restart", 0), "launcher's own split", 100.0)
    restart_figures(rm, sizes)


def svg(rows, fits, sizes, path, load):
    import matplotlib
    matplotlib.use("agg")   # writes .svg (and .png) by the extension
    import matplotlib.pyplot as plt
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.4))
    xs = np.array(sizes, float)
    line = np.linspace(min(sizes), max(sizes), 50)
    color = {}
    marks = ["s", "^", "v", "D"]
    for op, what, _ in all_ops(rows):
        if op not in fits:
            continue
        base, _, tag = op.partition("/")
        p50 = [med(rows, n, op, 0) for n in fits[op]["sizes"]]
        a, b = fits[op]["wall"]
        mk = marks[variants(rows).index(tag) % 4] if tag else "o"
        h = ax.plot(fits[op]["sizes"], p50, mk, color=color.get(base),
                    label=what)[0]
        color.setdefault(base, h.get_color())
        if b is not None:
            y = a + b * line
            ax.plot(line[y > 0], y[y > 0], "--" if tag else "-",
                    color=h.get_color(), lw=0.8)
    ax.set_xlabel("nodes (network namespaces on one 2-core machine)")
    ax.set_ylabel("wall time, p50 (ms)")
    ax.set_yscale("log")
    ax.set_xscale("log")
    ax.set_title("Fan-in latency, with least-squares lines "
                 "(dashed: through relays)", fontsize=9)
    ax.legend(fontsize=6, loc="upper left")
    for op, what, whose in [o for o in all_ops(rows)
                            if o[0].partition("/")[0] in RELAYED
                            or o[0] == "restart"]:
        if op not in fits:
            continue
        base, _, tag = op.partition("/")
        cpu = [med(rows, n, op, 2) for n in fits[op]["sizes"]]
        mk = marks[variants(rows).index(tag) % 4] if tag else "o"
        h = bx.plot(fits[op]["sizes"], cpu, mk + ("--" if tag else "-"),
                    color=color.get(base), label="%s (%s)" % (op, whose))[0]
        color.setdefault(base, h.get_color())
    bx.set_xlabel("nodes")
    bx.set_ylabel("CPU per operation (ms)")
    bx.set_yscale("log")
    bx.set_xscale("log")
    bx.set_title("CPU of the process that fans out (dashed: through "
                 "relays)", fontsize=9)
    bx.legend(fontsize=6, loc="upper left")
    for a_ in (ax, bx):
        a_.set_xticks(xs)
        a_.set_xticklabels([str(int(x)) for x in xs])
        a_.minorticks_off()
        a_.grid(alpha=0.3)
    fig.suptitle("bench/fanin.sh: nproc 2 (relays share the same 2 cores), "
                 "load at start %s" % load,
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    print("\npicture: %s" % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--svg")
    ap.add_argument("--load", default="?")
    ap.add_argument("--where", default="",
                    help="said after every FIGURE name, e.g. 'under Slurm'")
    try:
        a = ap.parse_args()
    except SystemExit as e:
        sys.exit(2 if e.code else 0)
    global WHERE
    WHERE = ", " + a.where if a.where else ""
    rows, idle, conn, rst = parse(a.results)
    sizes = sorted({n for n, _ in rows})
    table(rows, idle, conn, sizes)
    rm = restart_table(rst, sizes)
    fits = slopes(rows, sizes)
    figures(rows, fits, sizes, rm)
    if a.svg:
        svg(rows, fits, sizes, a.svg, a.load)


if __name__ == "__main__":
    main()
