/* telem_rows.js - the dashboard's rows below the node metrics: per-core
 * CPU, pressure, InfiniBand and GPU health.  Loaded before telem.js, which
 * calls window.telemRows.render(data, h) on every render with its helpers
 * (h: el, list, fmtTime, drawChart, chartBox, rowBox, section) and draws
 * what the job has, each line chart small, three to a line:
 *   - "CPU cores": per node a heat map of cpu_core_percent{cpu}, cores
 *     (rows) by time (columns), 0 % white to 100 % dark red; an element of
 *     class "telem-heatmap" with data-node and data-cores;
 *   - "Pressure": PSI avg10 some and full (pressure_*_percent), one chart
 *     per resource (cpu, memory, io), a line per node and kind;
 *   - "InfiniBand": port state (ib_state), the error counters' summed rate
 *     per port (ports without errors folded into one line), data rates (ib_port_{xmit,rcv}_data_bytes_total per second);
 *   - "GPU health": ECC errors and remapped rows (the lines that stayed
 *     0 folded into one, foldConst()), throttle reasons
 *     (gpu_clocks_event{reason} that were ever 1, gpu_throttled), power
 *     with its limit (equal limits folded into one line), temperature; XID events (each rise of
 *     gpu_xid_total{gpu,xid}) drawn as labelled markers on those charts and
 *     listed with the code's meaning (class "telem-xid").
 * A row whose metrics no node has says so in one line (class "telem-empty",
 * data-row) instead of drawing empty charts.  Live mode asks telem_agg for
 * the names under PREFIXES and queries those that wanted() accepts (the
 * same rule as telem_client report's, analysis/client/telem_client_report.c).
 * Data only reaches the page as text (textContent), never as markup.
 */
(function () {
  "use strict";

  // NVIDIA's XID catalog as detectors/det_gpu_health_rules.c keeps it
  // (tests/browser_rows.py xidtable checks that the two tables agree).
  var XID_MEANINGS = {
    8: "GPU stopped processing (idle timeout)",
    13: "graphics engine exception",
    31: "GPU memory page fault",
    32: "invalid or corrupted push buffer stream",
    43: "GPU stopped processing",
    45: "preemptive cleanup, due to previous errors",
    46: "GPU stopped processing (GPU timeout)",
    48: "double-bit ECC error (DBE)",
    54: "auxiliary power is not connected to the GPU board",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure",
    68: "NVDEC0 exception",
    69: "graphics engine class error",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    109: "context switch timeout error",
    110: "security fault error",
    119: "GSP RPC timeout",
    120: "GSP error",
    121: "C2C link corrected error",
    136: "link training failed",
    137: "NVLink privilege error",
    140: "unrecovered ECC error",
    143: "GPU initialization error",
    144: "NVLink SAW error",
    145: "NVLink RLW error",
    146: "NVLink TLW error",
    147: "NVLink TREX error",
    148: "NVLink NVLPW_CTRL error",
    149: "NVLink NETIR error (link fatal)",
    150: "NVLink MSE error",
    151: "key rotation error",
    154: "GPU recovery action changed",
    155: "NVLink SW defined error",
    156: "resource retirement event",
    157: "resource retirement failure",
    158: "GPU fatal timeout",
    159: "CHI non-data error",
    160: "channel retirement event",
    161: "channel retirement failure",
    167: "PCIe fatal timeout",
    169: "internal micro-controller halt (SEC2)",
    171: "uncorrectable DRAM error (detail of XID 48)",
    172: "uncorrectable SRAM error (detail of XID 48)"
  };
  var XID_COLOR = "#6a1b9a";
  var PREFIXES = ["cpu_core_percent", "pressure_", "ib_", "gpu_"];
  var IB_ERROR = /(err|error|errors|discards|downed|overrun|dropped|timeout|retrans|out_of|nak|duplicate|seq|integrity|xmit_wait)/;
  var HEAT_MIN_W = 400, HEAT_ROW = 6, HEAT_MAX_ROW = 14;

  // The metrics of these rows (telem_client report charts the same ones).
  function wanted(m) {
    if (m === "cpu_core_percent") return true;
    if (/^pressure_.+_percent$/.test(m)) return true;
    return /^(ib|gpu)_/.test(m);
  }

  // ---- series helpers ---------------------------------------------------

  function cleanDps(dps) {
    return dps.filter(function (p) {
      return Array.isArray(p) && typeof p[0] === "number";
    }).sort(function (a, b) { return a[0] - b[0]; }).filter(function (p, i, a) {
      return i === 0 || p[0] !== a[i - 1][0];
    });
  }

  // Series passing pred, merged by label(s): [{label, dps}] sorted by label.
  function groupsBy(series, pred, label, xform) {
    var by = {};
    series.forEach(function (s) {
      if (!s || !pred(s)) return;
      var l = label(s);
      by[l] = (by[l] || []).concat(Array.isArray(s.dps) ? s.dps : []);
    });
    return Object.keys(by).sort().map(function (l) {
      var dps = cleanDps(by[l]);
      return { label: l, dps: xform ? xform(dps) : dps };
    });
  }

  // A counter's rate per second; a reset (a fall) gives no point.
  function rate(dps) {
    var out = [];
    for (var i = 1; i < dps.length; i++) {
      var dt = (dps[i][0] - dps[i - 1][0]) / 1000;
      var dv = dps[i][1] - dps[i - 1][1];
      out.push([dps[i][0], dt > 0 && dv >= 0 ? dv / dt : null]);
    }
    return out;
  }

  // Sums [{dps}] point by point at equal times: one [[ms, sum]].
  function sumByTime(list) {
    var by = {};
    list.forEach(function (dps) {
      dps.forEach(function (p) {
        if (p[1] === null) return;
        by[p[0]] = (by[p[0]] || 0) + p[1];
      });
    });
    return Object.keys(by).map(Number).sort(function (a, b) { return a - b; })
      .map(function (t) { return [t, by[t]]; });
  }

  function tag(s, k) { return (s.tags || {})[k]; }
  function host(s) { return tag(s, "host") || "?"; }
  function gpu(s) { return host(s) + "/gpu" + (tag(s, "gpu") || "?"); }
  function port(s) {
    return host(s) + "/" + (tag(s, "device") || "?") + ":" + (tag(s, "port") || "?");
  }
  function named(m) { return function (s) { return s.metric === m; }; }

  // ---- rows -------------------------------------------------------------

  // One chart (key) if it has lines, small (three to a line); keep gets
  // the keys drawn.
  function chart(h, box, key, title, groups, marks, keep) {
    groups = groups.filter(function (g) { return g.dps.length; });
    if (!groups.length) return;
    keep[key] = true;
    h.drawChart(box, key, groups, marks, title, true);
  }

  // The lines of groups that kept the value v throughout, folded into one:
  // "N other <what>: all v" ("N <what>: all v" when every line did), so
  // that the legend names only the lines that differ.  For fault counters
  // (ECC errors, remapped rows, InfiniBand errors: 0 on healthy hardware)
  // and power limits (one value on every GPU of a kind).
  function foldConst(groups, v, what) {
    var same = groups.filter(function (g) {
      return g.dps.length && g.dps.every(function (p) {
        return p[1] === null || +p[1] === v;
      });
    });
    if (same.length < 2) return groups;
    var rest = groups.filter(function (g) { return same.indexOf(g) < 0; });
    return rest.concat([{
      label: same.length + (rest.length ? " other " : " ") + what + ": all " + v,
      dps: sumByTime(same.map(function (g) { return g.dps; }))
        .map(function (p) { return [p[0], v]; })
    }]);
  }

  function foldZeros(groups) { return foldConst(groups, 0, "series"); }

  // ---- CPU cores: heat maps -----------------------------------------------

  function heatColor(v) {
    if (v === null || !isFinite(v)) return "#e8eaed";
    var f = Math.max(0, Math.min(1, v / 100));
    // white -> amber -> dark red
    var r = Math.round(255 - 75 * f * f), g = Math.round(255 - 235 * f);
    var b = Math.round(255 - 225 * Math.min(1, f * 1.6));
    return "rgb(" + r + "," + g + "," + b + ")";
  }

  // cores: [{cpu, dps}] of one node; t0, t1 in ms; width in pixels.
  function drawHeat(canvas, cores, t0, t1, width) {
    var rowH = Math.max(HEAT_ROW, Math.min(HEAT_MAX_ROW, Math.floor(240 / cores.length)));
    var left = 48, top = 4, bottom = 20, w = width - left - 8;
    var hgt = rowH * cores.length;
    canvas.width = width;
    canvas.height = top + hgt + bottom;
    var ctx = canvas.getContext("2d");
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    var span = Math.max(1, t1 - t0);
    cores.forEach(function (c, i) {
      var y = top + i * rowH;
      ctx.fillStyle = heatColor(null);
      ctx.fillRect(left, y, w, rowH - (rowH > 7 ? 1 : 0));
      c.dps.forEach(function (p, k) {
        var next = k + 1 < c.dps.length ? c.dps[k + 1][0] : p[0] + 1000;
        var x0 = left + (p[0] - t0) / span * w;
        var x1 = left + (Math.min(next, t1) - t0) / span * w;
        ctx.fillStyle = heatColor(p[1] === null ? null : +p[1]);
        ctx.fillRect(Math.floor(x0), y, Math.max(1, Math.ceil(x1 - x0)),
                     rowH - (rowH > 7 ? 1 : 0));
      });
    });
    ctx.fillStyle = "#5a6472";
    ctx.font = "10px sans-serif";
    ctx.textBaseline = "middle";
    var every = Math.ceil(10 / rowH);
    cores.forEach(function (c, i) {
      if (i % every === 0)
        ctx.fillText("cpu" + c.cpu, 4, top + i * rowH + rowH / 2);
    });
    ctx.textBaseline = "top";
    var y = top + hgt + 4;
    ctx.fillText(new Date(t0).toISOString().slice(11, 19) + "Z", left, y);
    var end = new Date(t1).toISOString().slice(11, 19) + "Z";
    ctx.fillText(end, left + w - ctx.measureText(end).width, y);
  }

  function legend(h) {
    var d = h.el("div", "telem-heat-legend");
    d.appendChild(h.el("span", null, "0 %"));
    var bar = h.el("span", "telem-heat-bar");
    var stops = [0, 25, 50, 75, 100].map(function (v) { return heatColor(v); });
    bar.style.background = "linear-gradient(to right," + stops.join(",") + ")";
    d.appendChild(bar);
    d.appendChild(h.el("span", null, "100 % busy (grey: no sample)"));
    return d;
  }

  function renderCores(h, series) {
    var all = series.filter(named("cpu_core_percent"));
    var box = h.rowBox("telem-cpu-cores", "CPU cores", all.length,
      "no per-core CPU data on this job (cpu_core_percent: telemetry level 2)");
    if (!box) return;
    box.textContent = "";
    box.appendChild(legend(h));
    var t0 = Infinity, t1 = -Infinity;
    all.forEach(function (s) {
      (s.dps || []).forEach(function (p) {
        if (typeof p[0] !== "number") return;
        t0 = Math.min(t0, p[0]);
        t1 = Math.max(t1, p[0]);
      });
    });
    var hosts = {};
    all.forEach(function (s) { hosts[host(s)] = true; });
    // two to a line where the page is wide enough
    var width = Math.max(HEAT_MIN_W, Math.floor(((box.clientWidth || 960) - 14) / 2) - 12);
    Object.keys(hosts).sort().forEach(function (n) {
      var cores = groupsBy(all, function (s) { return host(s) === n; },
                           function (s) { return tag(s, "cpu") || "?"; })
        .map(function (g) { return { cpu: g.label, dps: g.dps }; })
        .sort(function (a, b) { return (+a.cpu) - (+b.cpu); });
      var c = h.el("div", "telem-chart telem-heatmap");
      c.setAttribute("data-node", n);
      c.setAttribute("data-cores", String(cores.length));
      c.appendChild(h.el("div", "telem-heat-title",
                         n + ": busy % per core (" + cores.length + " cores)"));
      var canvas = h.el("canvas");
      c.appendChild(canvas);
      box.appendChild(c);
      drawHeat(canvas, cores, t0, t1 > t0 ? t1 : t0 + 1000, width);
    });
  }

  // ---- pressure -------------------------------------------------------------

  function renderPressure(h, series, marks, keep) {
    var psi = series.filter(function (s) { return /^pressure_.+_percent$/.test(s.metric); });
    var box = h.rowBox("telem-pressure", "Pressure (PSI, share of the last 10 s stalled)",
      psi.length, "no pressure (PSI) data on this job: the kernel has no "
      + "/proc/pressure, or telemetry is below level 2");
    if (!box) return;
    ["cpu", "memory", "io"].forEach(function (r) {
      var re = new RegExp("^pressure_" + r + "_(some|full)_percent$");
      chart(h, box, "pressure_" + r, r + " pressure (%): some / full",
            groupsBy(psi, function (s) { return re.test(s.metric); },
                     function (s) { return host(s) + " " + re.exec(s.metric)[1]; }),
            marks, keep);
    });
  }

  // ---- InfiniBand ------------------------------------------------------------

  function renderIb(h, series, marks, keep) {
    var ib = series.filter(function (s) { return /^ib_/.test(s.metric); });
    var box = h.rowBox("telem-ib", "InfiniBand", ib.length,
      "no InfiniBand port on this job's nodes (/sys/class/infiniband is empty)");
    if (!box) return;
    chart(h, box, "ib_state", "port state (4 active, 1 down)",
          groupsBy(ib, named("ib_state"), port), marks, keep);
    var errs = ib.filter(function (s) {
      return /_total$/.test(s.metric) && IB_ERROR.test(s.metric);
    });
    var byPort = {};
    errs.forEach(function (s) {
      var k = port(s);
      (byPort[k] = byPort[k] || []).push(rate(cleanDps(list(s.dps))));
    });
    chart(h, box, "ib_errors", "errors per second, summed per port",
          foldZeros(Object.keys(byPort).sort().map(function (k) {
            return { label: k, dps: sumByTime(byPort[k]) };
          })), marks, keep);
    chart(h, box, "ib_data", "data rate (bytes/s)",
          groupsBy(ib, function (s) {
            return /^ib_port_(xmit|rcv)_data_bytes_total$/.test(s.metric);
          }, function (s) {
            return port(s) + (s.metric.indexOf("xmit") >= 0 ? " tx" : " rx");
          }, rate), marks, keep);
  }

  function list(x) { return Array.isArray(x) ? x : []; }

  // ---- GPU health -------------------------------------------------------------

  // Each rise of gpu_xid_total{gpu,xid}: [{time_ms, node, gpu, code, count}].
  // A series appears with its first event: its first point counts from 0.
  function xidEvents(series) {
    var out = [];
    groupsBy(series, named("gpu_xid_total"), function (s) {
      return gpu(s) + "\n" + (tag(s, "xid") || "?");
    }).forEach(function (g) {
      var prev = 0, parts = g.label.split("\n");
      g.dps.forEach(function (p) {
        if (typeof p[1] === "number" && p[1] > prev)
          out.push({ time_ms: p[0], where: parts[0], code: parts[1],
                     count: p[1] - prev });
        if (typeof p[1] === "number") prev = p[1];
      });
    });
    return out.sort(function (a, b) { return a.time_ms - b.time_ms; });
  }

  function xidText(x) {
    var meaning = XID_MEANINGS[x.code];
    return "XID " + x.code + (meaning ? ": " + meaning : " (not in telem's table)");
  }

  function renderXids(h, sec, xids) {
    var old = sec.querySelector(":scope > .telem-xid-list");
    if (old) old.remove();
    var d = h.el("div", "telem-xid-list");
    d.appendChild(h.el("h3", null, "XID events"));
    if (!xids.length) {
      d.appendChild(h.el("p", "telem-none", "none"));
    } else {
      var ul = h.el("ul", "telem-list");
      xids.forEach(function (x) {
        var li = h.el("li", "telem-xid");
        li.setAttribute("data-xid", x.code);
        li.appendChild(h.el("span", "telem-time", h.fmtTime(x.time_ms)));
        li.appendChild(h.el("span", "telem-sev sev-act", x.where));
        li.appendChild(h.el("span", "telem-text", xidText(x)
                            + (x.count > 1 ? " (" + x.count + " events)" : "")));
        ul.appendChild(li);
      });
      d.appendChild(ul);
    }
    sec.appendChild(d);
  }

  function renderGpu(h, series, marks, keep) {
    var g = series.filter(function (s) { return /^gpu_/.test(s.metric); });
    var box = h.rowBox("telem-gpu-health", "GPU health", g.length,
      "no GPU data on this job (GPUs are sampled at telemetry level 3 where "
      + "NVML, rocm_smi or Level Zero finds one)");
    var sec = h.section("telem-gpu-health", "GPU health");
    if (!box) {
      var old = sec.querySelector(":scope > .telem-xid-list");
      if (old) old.remove();
      return;
    }
    var xids = xidEvents(g);
    var xm = marks.concat(xids.map(function (x) {
      return { t: x.time_ms / 1000, color: XID_COLOR,
               label: "XID " + x.code + " " + x.where };
    }));
    var suffix = function (re) {
      return function (s) { return gpu(s) + " " + re.exec(s.metric)[1]; };
    };
    var ecc = /^gpu_ecc_(corrected|uncorrected)_errors_total$/;
    chart(h, box, "gpu_ecc", "ECC errors (volatile)",
          foldZeros(groupsBy(g, function (s) { return ecc.test(s.metric); },
                             suffix(ecc))), xm, keep);
    var rr = /^gpu_remapped_rows_(correctable|uncorrectable|pending|failure)$/;
    chart(h, box, "gpu_remapped_rows", "remapped rows (pending, failure: 0/1)",
          foldZeros(groupsBy(g, function (s) { return rr.test(s.metric); },
                             suffix(rr))), xm, keep);
    var held = {};
    g.forEach(function (s) {
      if ((s.metric === "gpu_clocks_event" || s.metric === "gpu_throttled")
          && list(s.dps).some(function (p) { return p[1] > 0; }))
        held[gpu(s) + " " + (tag(s, "reason") || "throttled")] = true;
    });
    var thr = groupsBy(g, function (s) {
      return s.metric === "gpu_clocks_event" || s.metric === "gpu_throttled";
    }, function (s) { return gpu(s) + " " + (tag(s, "reason") || "throttled"); })
      .filter(function (x) { return held[x.label]; });
    if (!thr.length)
      thr = groupsBy(g, named("gpu_clocks_event_reasons"),
                     function (s) { return gpu(s) + " reasons mask"; });
    chart(h, box, "gpu_throttle", "throttle reasons held (1)"
          + (Object.keys(held).length ? "" : ": none held"), thr, xm, keep);
    var limits = groupsBy(g, named("gpu_power_limit_w"),
                          function (s) { return gpu(s) + " limit"; });
    var lim = limits.length && limits[0].dps.length ? +limits[0].dps[0][1] : 0;
    chart(h, box, "gpu_power", "power and limit (W)",
          groupsBy(g, named("gpu_power_w"), gpu)
            .concat(foldConst(limits, lim, "limits")), xm, keep);
    chart(h, box, "gpu_temperature", "temperature (\u00b0C)",
          groupsBy(g, named("gpu_temperature_c"), gpu), xm, keep);
    renderXids(h, sec, xids);
  }

  window.telemRows = {
    PREFIXES: PREFIXES,
    wanted: wanted,
    XID_MEANINGS: XID_MEANINGS,
    // Draws the rows; returns {key: true} of the charts drawn.
    render: function (data, h, marks) {
      var series = list(data.series).filter(function (s) {
        return s && typeof s.metric === "string";
      });
      var keep = {};
      renderCores(h, series);
      renderPressure(h, series, marks, keep);
      renderIb(h, series, marks, keep);
      renderGpu(h, series, marks, keep);
      return keep;
    }
  };
})();
