/* telem.js - telem's job dashboard and job report: one renderer, two modes.
 *
 * Report: the page holds the job data object as JSON in a script element
 * of type application/json with id "telem-data"; this script renders it
 * once and fetches nothing.  (No tag is spelled out in this file: it is
 * inlined into that page, inside a script element of its own.)
 * Live (served by telem_agg at /): every REFRESH_MS it fetches, with
 * relative URLs on the page's own server,
 *   GET  telem/job                              the job data object
 *   GET  api/suggest?type=metrics&q=cg_&max=100 collector metrics (cg_*_seconds)
 *   POST api/query?arrays=true                  one per metric, msResolution
 * and renders the same way.  The charts cover the last WINDOW, or, when
 * the job object has "range" {start_ms, end_ms} (telem_view serving dump
 * files of a finished job), that range.  Given ?token=T in the page's URL it sends
 * "Authorization: Bearer T" with each request; the token stays in this
 * script's memory (no cookie, no storage).
 *
 * The job data object (analysis/web/telem_web.h documents it too):
 *   {
 *     "version": 1,
 *     "generated_ms": 1764000000000,
 *     "job": { "rundir": "...", "launcher_pid": 123, "restarts": 1,
 *              "nodes": [ {"name": "n1", "state": "active", "rank": 0},
 *                         {"name": "n2", "state": "down", "rank": -1} ] },
 *     "missing":  [ {"node": "n2", "why": "no reply within 1000 ms"} ],
 *     "restarts": [ {"time_ms": 1764000000000, "line": "restart 1 ..."} ],
 *     "events":   [ {"time_ms": ..., "detector": "slowgpu", "severity": "act",
 *                    "nodes": ["n2"], "devices": [{"node": "n2", "device": "0"}],
 *                    "text": "device 0 on node 'n2' is 76.9 % slower ..."} ],
 *     "series":   [ {"metric": "cg_dgemm_seconds",
 *                    "tags": {"host": "n1", "gpu": "0"}, "aggregateTags": [],
 *                    "dps": [[1764000000000, 0.0123], ...]} ]
 *   }
 * Series are OpenTSDB /api/query results with ms times and [ms, value]
 * pairs.  Any list may be missing or empty.
 *
 *   "snapshots" (optional): {"n1": the node's system snapshot document, ...}
 *     (the live page fetches GET telem/snapshot?node=N once per node)
 *
 * What it draws: a header (nodes with state badges, restarts, missing
 * nodes), one chart per collector metric (one line per host/gpu; with
 * none, one line saying so), one per node metric (one line per node), the
 * rows of telem_rows.js (per-core CPU, pressure, InfiniBand, GPU health
 * with XID events; in live mode the metrics under its PREFIXES, from
 * api/suggest, in one POST api/query), detector events and restarts as
 * vertical markers on every chart and as lists below, and per node a
 * details element (class "telem-system", data-node) summing up its system
 * snapshot.  Each chart is an element of class "telem-chart" with
 * data-metric, data-series (lines drawn), data-y-range (the y axis drawn,
 * "min,max") and data-marks (the labelled markers drawn and where, JSON;
 * see markerPlugin()).
 * Data only ever reaches the page as text (textContent), never as markup.
 * Times are shown in UTC.
 */
(function () {
  "use strict";

  var REFRESH_MS = 5000;
  var WINDOW = "15m-ago";                 // live: the charts' time range
  var NODE_METRICS = ["cpu_percent", "used_ram", "load_average",
                      "num_running_processes"];
  var CG_METRIC = /^cg_.+_seconds$/;     // not cg_*_seconds_spread
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  var MARK_COLORS = { act: "#b3261e", warn: "#e08a00", restart: "#1f5fbf" };
  var MAX_LIST = 500;                    // newest list entries shown

  // ---- small helpers ------------------------------------------------------

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function list(x) { return Array.isArray(x) ? x : []; }

  function fmtTime(ms) {
    if (typeof ms !== "number" || !isFinite(ms)) return "?";
    return new Date(ms).toISOString().replace("T", " ").slice(0, 19) + "Z";
  }

  // ---- series -> chart data ------------------------------------------------

  // The label of one series: host, and the device for collector metrics.
  function seriesLabel(s, byDevice) {
    var t = s.tags || {};
    var host = t.host || "?";
    return byDevice && t.gpu !== undefined ? host + "/" + t.gpu : host;
  }

  // Series of one metric, merged by label (a collector restarted under a new
  // pid is still the same device): [{label, dps: [[ms, v], ...]}], sorted.
  function groupSeries(series, metric, byDevice) {
    var by = {};
    list(series).forEach(function (s) {
      if (!s || s.metric !== metric) return;
      var label = seriesLabel(s, byDevice);
      by[label] = (by[label] || []).concat(list(s.dps));
    });
    return Object.keys(by).sort().map(function (label) {
      var dps = by[label].filter(function (p) {
        return Array.isArray(p) && typeof p[0] === "number";
      }).sort(function (a, b) { return a[0] - b[0]; }).filter(function (p, i, a) {
        return i === 0 || p[0] !== a[i - 1][0];  // one point per time
      });
      return { label: label, dps: dps };
    });
  }

  // uPlot's aligned data: [xs (seconds), ys1, ys2, ...].
  function alignedData(groups) {
    var tables = groups.map(function (g) {
      return [g.dps.map(function (p) { return p[0] / 1000; }),
              g.dps.map(function (p) { return p[1] === null ? null : +p[1]; })];
    });
    if (tables.length === 1) return tables[0];
    return uPlot.join(tables);
  }

  // ---- markers --------------------------------------------------------------

  // Events and restarts as [{t: seconds, color}] for the charts.
  function markers(data) {
    var out = [];
    list(data.events).forEach(function (e) {
      if (e && typeof e.time_ms === "number")
        out.push({ t: e.time_ms / 1000,
                   color: MARK_COLORS[e.severity] || "#7f7f7f" });
    });
    list(data.restarts).forEach(function (r) {
      if (r && typeof r.time_ms === "number")
        out.push({ t: r.time_ms / 1000, color: MARK_COLORS.restart });
    });
    return out;
  }

  // A uPlot plugin drawing vertical dashed lines at state.marks' times,
  // then the text of each mark's label, if it has one, beside its line: to
  // its right (to its left where the plot ends), a gap away, so that the
  // line stays whole, and one text row lower than a label it would
  // overlap.  A label has a white halo, not a box, so that the data lines
  // under it still show.  What it drew goes to the chart's element as
  // data-marks, [{label, t (s), x, left, right}] in CSS pixels, and the y
  // scale as data-y-range "min,max": the page's checks read them.
  function markerPlugin(state) {
    return { hooks: { draw: [function (u) {
      var ctx = u.ctx, top = u.bbox.top, bottom = top + u.bbox.height;
      var left = u.bbox.left, right = left + u.bbox.width, px = uPlot.pxRatio;
      var gap = 4 * px, rowH = 13 * px, placed = [], drawn = [];
      var shown = state.marks.map(function (m) {
        return { m: m, x: Math.round(u.valToPos(m.t, "x", true)) };
      }).filter(function (k) { return k.x >= left && k.x <= right; });
      ctx.save();
      ctx.lineWidth = Math.max(1, px * 1.5);
      ctx.setLineDash([6 * px, 4 * px]);
      shown.forEach(function (k) {
        ctx.strokeStyle = k.m.color;
        ctx.beginPath();
        ctx.moveTo(k.x, top);
        ctx.lineTo(k.x, bottom);
        ctx.stroke();
      });
      ctx.setLineDash([]);
      ctx.font = Math.round(10 * px) + "px sans-serif";
      ctx.textAlign = "left";            // uPlot leaves its axes' alignment
      ctx.textBaseline = "top";
      ctx.lineJoin = "round";
      ctx.lineWidth = 3 * px;
      shown.forEach(function (k) {
        if (!k.m.label) return;          // a labelled marker (an XID)
        var w = ctx.measureText(k.m.label).width;
        var lx = k.x + gap + w > right ? k.x - gap - w : k.x + gap;
        var y = top + 2 * px;
        while (placed.some(function (r) {
          return r.y === y && lx < r.x + r.w + gap && r.x < lx + w + gap;
        })) y += rowH;
        placed.push({ x: lx, y: y, w: w });
        ctx.strokeStyle = "rgba(255,255,255,0.9)";
        ctx.strokeText(k.m.label, lx, y);
        ctx.fillStyle = k.m.color;
        ctx.fillText(k.m.label, lx, y);
        drawn.push({ label: k.m.label, t: k.m.t, x: k.x / px,
                     left: lx / px, right: (lx + w) / px });
      });
      ctx.restore();
      var box = u.root.parentNode;
      if (box) {
        box.setAttribute("data-marks", JSON.stringify(drawn));
        box.setAttribute("data-y-range", u.scales.y.min + "," + u.scales.y.max);
      }
    }] } };
  }

  // The y scale: uPlot's own, except that a series of zeros only (remapped
  // rows, error counts) gets 0 to 1, not uPlot's 0 to 100.
  function yRange(u, min, max) {
    if (min == null || max == null || (min === 0 && max === 0)) return [0, 1];
    return uPlot.rangeNum(min, max, 0.1, true);
  }

  // ---- charts -------------------------------------------------------------

  // One chart per metric, kept across refreshes: {box, plot, key, state}.
  var charts = {};

  // A chart's width: up to 900 px, one to a line; small (the rows of
  // telem_rows.js), three to a line where the page is wide enough.
  function chartWidth(box, small) {
    var w = (box.parentNode ? box.parentNode.clientWidth : 0) || 960;
    return small ? Math.max(320, Math.floor((w - 28) / 3) - 12)
                 : Math.max(320, Math.min(900, w - 24));
  }

  // Axis numbers in at most 5 characters: 32500000 as 32.5M, so that the
  // y axis' labels fit its width.
  function fmtAxis(u, splits) {
    return splits.map(function (v) {
      if (v === null || v === undefined) return "";
      var a = Math.abs(v), units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e4, "k"]];
      for (var i = 0; i < units.length; i++)
        if (a >= units[i][0])
          return String(+(v / units[i][0]).toPrecision(3)) + units[i][1];
      return uPlot.fmtNum(v);
    });
  }

  // The time axis' labels (UTC, 24 h): per tick step, [step (s), label,
  // label where the year, month, day, hour, minute, second changed
  // (null: the plain one), 0 (each replaces the plain label)].  The date
  // comes once, under the first tick, and where the day changes, so that
  // no second-line date runs into the next one on a narrow chart.
  var D = "{YYYY}-{MM}-{DD}";
  var X_VALUES = [
    [86400 * 365, "{YYYY}", null, null, null, null, null, null, 0],
    [86400 * 28, "{MMM}", "{MMM}\n{YYYY}", null, null, null, null, null, 0],
    [86400, "{MM}-{DD}", "{MM}-{DD}\n{YYYY}", null, null, null, null, null, 0],
    [60, "{HH}:{mm}", "{HH}:{mm}\n" + D, null, "{HH}:{mm}\n{MM}-{DD}",
     null, null, null, 0],
    [1, ":{ss}", "{HH}:{mm}:{ss}\n" + D, null, "{HH}:{mm}:{ss}\n{MM}-{DD}",
     null, "{HH}:{mm}", null, 0],
    [0.001, ":{ss}.{fff}", "{HH}:{mm}:{ss}.{fff}\n" + D, null,
     "{HH}:{mm}:{ss}.{fff}\n{MM}-{DD}", null, "{HH}:{mm}:{ss}.{fff}", null, 0]
  ];

  function plotOpts(title, groups, state, width, small) {
    var series = [{}].concat(groups.map(function (g, i) {
      return { label: g.label, stroke: COLORS[i % COLORS.length], width: 1.5,
               spanGaps: true, points: { show: false } };
    }));
    return {
      title: title, width: width, height: small ? 200 : 240, series: series,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); },
      scales: { x: { time: true }, y: { range: yRange } },
      axes: [{ values: X_VALUES }, { values: fmtAxis }],
      plugins: [markerPlugin(state)]
    };
  }

  // Draws (or updates) the chart of `metric` (a key) inside `parent`,
  // titled `title` (default: the metric); small: see chartWidth().
  function drawChart(parent, metric, groups, marks, title, small) {
    var c = charts[metric];
    var key = groups.map(function (g) { return g.label; }).join("\n");
    if (!c || c.box.parentNode !== parent) {
      c = charts[metric] = { box: el("div", "telem-chart"), plot: null,
                             key: null, state: { marks: [] } };
      c.box.setAttribute("data-metric", metric);
      parent.appendChild(c.box);
    }
    c.state.marks = marks;
    c.box.setAttribute("data-series", String(groups.length));
    if (!groups.length) {
      if (c.plot) c.plot.destroy();
      c.plot = null;
      c.key = null;
      c.box.textContent = "";
      c.box.appendChild(el("div", "telem-empty", metric + ": no data"));
      return;
    }
    var data = alignedData(groups);
    if (c.plot && c.key === key) {
      c.plot.setData(data);
      return;
    }
    if (c.plot) c.plot.destroy();
    c.box.textContent = "";
    c.plot = new uPlot(plotOpts(title || metric, groups, c.state,
                                chartWidth(c.box, small), small),
                       data, c.box);
    c.key = key;
  }

  function section(id, title) {
    var s = document.getElementById(id);
    if (s) return s;
    s = el("section");
    s.id = id;
    s.appendChild(el("h2", null, title));
    document.getElementById("telem").appendChild(s);
    return s;
  }

  function chartBox(id, title) {
    var s = section(id, title);
    var box = s.querySelector(".telem-charts");
    if (!box) {
      box = el("div", "telem-charts");
      s.appendChild(box);
    }
    return box;
  }

  // The chart box of section id, or, when has is false, null and in its
  // place the section's one line (class "telem-empty", data-row) saying
  // why: a row without data draws no empty charts.
  function rowBox(id, title, has, why) {
    var box = chartBox(id, title);
    var note = box.parentNode.querySelector(":scope > .telem-empty");
    if (has) {
      if (note) note.remove();
      box.style.display = "";
      return box;
    }
    box.style.display = "none";
    if (!note) {
      note = el("p", "telem-empty");
      note.setAttribute("data-row", id);
      box.parentNode.insertBefore(note, box);
    }
    note.textContent = why;
    return null;
  }

  // Removes the charts of metrics no longer shown.
  function pruneCharts(keep) {
    Object.keys(charts).forEach(function (m) {
      if (keep[m]) return;
      if (charts[m].plot) charts[m].plot.destroy();
      charts[m].box.remove();
      delete charts[m];
    });
  }

  // ---- header and lists -----------------------------------------------------

  function renderHeader(data, mode, status) {
    var h = document.getElementById("telem-header");
    var job = data.job || {};
    h.textContent = "";
    h.appendChild(el("h1", null, "telem job" + (job.rundir ? " " + job.rundir : "")));
    h.appendChild(el("p", "telem-status", status || (mode === "report"
      ? "report generated " + fmtTime(data.generated_ms)
      : "live, updated " + fmtTime(data.generated_ms))));
    var nodes = el("div", "telem-nodes");
    list(job.nodes).forEach(function (n) {
      var state = String(n.state || "unknown");
      var b = el("span", "telem-node state-" + state.replace(/[^a-z]/g, ""), n.name);
      var rank = typeof n.rank === "number" && n.rank >= 0 ? ", rank " + n.rank : "";
      b.appendChild(el("span", "telem-badge", state + rank));
      nodes.appendChild(b);
    });
    h.appendChild(nodes);
    var restarts = typeof job.restarts === "number" ? job.restarts
                                                    : list(data.restarts).length;
    h.appendChild(el("p", "telem-restarts", "restarts: " + restarts
                     + (job.launcher_pid ? "; launcher pid " + job.launcher_pid : "")));
    var missing = list(data.missing);
    if (missing.length)
      h.appendChild(el("div", "telem-warn", "no data from " + missing.map(function (m) {
        return m.node + (m.why ? " (" + m.why + ")" : "");
      }).join(", ")));
  }

  function renderList(id, title, items, row) {
    var s = section(id, title);
    var ul = s.querySelector("ul");
    if (ul) ul.remove();
    var p = s.querySelector(".telem-none");
    if (p) p.remove();
    if (!items.length) {
      s.appendChild(el("p", "telem-none", "none"));
      return;
    }
    ul = el("ul", "telem-list");
    items.slice(-MAX_LIST).forEach(function (it) { ul.appendChild(row(it)); });
    s.appendChild(ul);
  }

  function eventRow(e) {
    var li = el("li");
    li.appendChild(el("span", "telem-time", fmtTime(e.time_ms)));
    li.appendChild(el("span", "telem-sev sev-" + String(e.severity || "").replace(/[^a-z]/g, ""),
                      (e.severity || "?") + " " + (e.detector || "")));
    li.appendChild(el("span", "telem-text", e.text || ""));
    return li;
  }

  function restartRow(r) {
    var li = el("li");
    li.appendChild(el("span", "telem-time", fmtTime(r.time_ms)));
    li.appendChild(el("span", "telem-sev sev-restart", "restart"));
    li.appendChild(el("span", "telem-text", r.line || ""));
    return li;
  }

  function byTime(a, b) { return (a.time_ms || 0) - (b.time_ms || 0); }

  // ---- node systems (GET /telem/snapshot?node=N) ---------------------------

  function fmtBytes(n) {
    if (typeof n !== "number" || !(n >= 0)) return "?";
    var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + " " + u[i];
  }

  // The summary fields of a snapshot document: [[label, text]].
  function systemFields(doc) {
    var cpu = doc.cpu || {}, k = doc.kernel || {}, mem = doc.memory || {};
    var os = doc.os || {};
    var cores = [];
    if (typeof cpu.sockets === "number" && typeof cpu.cores_per_socket === "number")
      cores.push(cpu.sockets * cpu.cores_per_socket + " cores");
    if (typeof cpu.threads === "number") cores.push(cpu.threads + " threads");
    var gpus = list(doc.gpus).map(function (g) {
      return (g.name || "?") + " (" + fmtBytes(g.memory_total_bytes) + ")";
    });
    return [
      ["CPU model", cpu.model_name || "?"],
      ["Cores", cores.join(", ") || "?"],
      ["Memory", fmtBytes(mem.total_bytes)],
      ["Kernel", [k.sysname, k.release].filter(Boolean).join(" ") || "?"],
      ["OS", os.pretty_name || os.name || "?"],
      ["GPUs", gpus.length ? gpus.length + ": " + gpus.join(", ") : "none"]
    ];
  }

  // One <details> per node: its CPU, cores, memory in the summary line,
  // the fields in the body; "not available" while a node has none.
  function renderSystems(job, snaps) {
    var s = section("telem-systems", "Node systems");
    var box = s.querySelector(".telem-system-list");
    if (!box) {
      box = el("div", "telem-system-list");
      s.appendChild(box);
    }
    list(job.nodes).forEach(function (n) {
      var doc = snaps[n.name];
      var d = box.querySelector('details[data-node="' + n.name + '"]');
      if (d && d.getAttribute("data-ready") === (doc ? "1" : "0")) return;
      var open = d ? d.open : false;
      var nd = el("details", "telem-system");
      nd.setAttribute("data-node", n.name);
      nd.setAttribute("data-ready", doc ? "1" : "0");
      nd.open = open;
      var f = doc ? systemFields(doc) : [];
      nd.appendChild(el("summary", null, n.name + ": " + (doc
        ? f[0][1] + ", " + f[1][1] + ", " + f[2][1] + ", " + f[5][0] + " " + f[5][1]
        : "system snapshot not available")));
      if (doc) {
        var dl = el("dl", "telem-system-fields");
        f.forEach(function (kv) {
          dl.appendChild(el("dt", null, kv[0]));
          dl.appendChild(el("dd", null, kv[1]));
        });
        nd.appendChild(dl);
      }
      if (d) box.replaceChild(nd, d); else box.appendChild(nd);
    });
  }

  // ---- the whole page -------------------------------------------------------

  // Renders data; cgMetrics: the collector metrics to chart (null: those in
  // data.series).
  function render(data, mode, cgMetrics, status) {
    data = data || {};
    renderHeader(data, mode, status);
    var marks = markers(data);
    var keep = {};
    if (!cgMetrics) {
      var seen = {};
      list(data.series).forEach(function (s) {
        if (s && CG_METRIC.test(s.metric)) seen[s.metric] = true;
      });
      cgMetrics = Object.keys(seen).sort();
    }
    var dev = rowBox("telem-devices", "Devices", cgMetrics.length,
      "no collector timings on this job (cg_*_seconds: telem_launch "
      + "--collect, or --detector slowgpu)");
    cgMetrics.forEach(function (m) {
      keep[m] = true;
      drawChart(dev, m, groupSeries(data.series, m, true), marks);
    });
    var node = chartBox("telem-node-metrics", "Nodes");
    NODE_METRICS.forEach(function (m) {
      keep[m] = true;
      drawChart(node, m, groupSeries(data.series, m, false), marks);
    });
    if (window.telemRows) {
      var rows = window.telemRows.render(data, { el: el, list: list,
        fmtTime: fmtTime, drawChart: drawChart, chartBox: chartBox,
        rowBox: rowBox, section: section }, marks);
      Object.keys(rows).forEach(function (k) { keep[k] = true; });
    }
    pruneCharts(keep);
    renderList("telem-events", "Detector events",
               list(data.events).filter(Boolean).sort(byTime), eventRow);
    renderList("telem-restart-list", "Restarts",
               list(data.restarts).filter(Boolean).sort(byTime), restartRow);
    renderSystems(data.job || {}, data.snapshots || {});
  }

  // ---- live mode --------------------------------------------------------------

  function live() {
    var token = new URLSearchParams(location.search).get("token");
    var headers = token ? { Authorization: "Bearer " + token } : {};
    var cgMetrics = [];
    var rowMetrics = [];                  // telem_rows.js's, from suggest
    var round = 0;
    var snaps = {};                       // node -> snapshot, fetched once

    function get(url, body) {
      var init = { headers: Object.assign({}, headers), cache: "no-store" };
      if (body) {
        init.method = "POST";
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(body);
      }
      return fetch(url, init).then(function (r) {
        if (!r.ok) throw new Error(url.split("?")[0] + ": HTTP " + r.status);
        return r.json();
      });
    }

    // One query per metric, so one metric that no node has yet costs only
    // its own chart.
    function query(metric, range) {
      var body = { start: WINDOW, msResolution: true,
                   queries: [{ metric: metric, aggregator: "none" }] };
      if (range && range.start_ms && range.end_ms) {
        body.start = range.start_ms;
        body.end = range.end_ms;
      }
      return get("api/query?arrays=true", body).then(list, function () { return []; });
    }

    // The rows' metrics in one request (names the nodes had at the last
    // suggest); where it fails (a name gone), one request per metric.
    function queryRows(range) {
      if (!rowMetrics.length) return Promise.resolve([]);
      var body = { start: WINDOW, msResolution: true,
                   queries: rowMetrics.map(function (m) {
                     return { metric: m, aggregator: "none" };
                   }) };
      if (range && range.start_ms && range.end_ms) {
        body.start = range.start_ms;
        body.end = range.end_ms;
      }
      return get("api/query?arrays=true", body).then(list, function () {
        return Promise.all(rowMetrics.map(function (m) { return query(m, range); }))
          .then(function (r) { return [].concat.apply([], r); });
      });
    }

    function suggestRows() {
      var rows = window.telemRows;
      if (!rows) return Promise.resolve();
      return Promise.all(rows.PREFIXES.map(function (p) {
        return get("api/suggest?type=metrics&q=" + encodeURIComponent(p)
                   + "&max=500").then(list, function () { return null; });
      })).then(function (lists) {
        if (lists.some(function (l) { return l === null; })) return;
        rowMetrics = [].concat.apply([], lists).filter(rows.wanted).sort();
      });
    }

    function refresh() {
      var suggest = round++ % 6 === 0
        ? Promise.all([
            get("api/suggest?type=metrics&q=cg_&max=100").then(function (names) {
              cgMetrics = list(names).filter(function (n) { return CG_METRIC.test(n); }).sort();
            }, function () { /* keep the last list */ }),
            suggestRows()])
        : Promise.resolve();
      var job;
      return get("telem/job").then(function (j) {
        job = j || {};
        return suggest;
      }).then(function () {
        var range = job.job && job.job.range;
        return Promise.all(cgMetrics.concat(NODE_METRICS).map(function (m) {
          return query(m, range);
        }).concat([queryRows(range)]));
      }).then(function (results) {
        job.series = [].concat.apply(list(job.series), results);
        return Promise.all(list(job.job && job.job.nodes).filter(function (n) {
          return !snaps[n.name];
        }).map(function (n) {
          return get("telem/snapshot?node=" + encodeURIComponent(n.name))
            .then(function (doc) { snaps[n.name] = doc; }, function () { /* later */ });
        })).then(function () { return results; });
      }).then(function () {
        job.snapshots = snaps;
        render(job, "live", cgMetrics, null);
      }).catch(function (err) {
        var s = document.querySelector("#telem-header .telem-status");
        if (s) {
          s.textContent = "update failed: " + err.message + " (retrying)";
          s.className = "telem-status telem-error";
        }
      }).then(function () { setTimeout(refresh, REFRESH_MS); });
    }
    refresh();
  }

  // ---- start ------------------------------------------------------------------

  function start() {
    var embedded = document.getElementById("telem-data");
    if (!embedded) {
      live();
      return;
    }
    var data;
    try {
      data = JSON.parse(embedded.textContent);
    } catch (e) {
      render({}, "report", null, "the report's data cannot be read: " + e.message);
      return;
    }
    render(data, "report", null, null);
  }

  start();
})();
