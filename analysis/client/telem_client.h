/* telem_client.h - private to the telem_client tool: its output formats and
 * the pieces its modes share.
 *
 * Every mode produces rows of named cells; a telem_client_fmt_t writes them
 * as a Markdown table, aligned plain text, or a JSON/YAML document
 *   {"<key>": [ {row}, ... ], "missing": ["node", ...]}
 * whose key names the rows ("series", "metrics", "nodes", "changes").
 * Floats are always written with "%.17g".  Rows are streamed (tracking)
 * and telem_client_fmt_end() closes the document, so output stopped by a
 * signal is still a valid document.
 *
 * With --tau, -l, -v, -g, -t and -T write tau_metric_proxy's documents
 * instead (telem_client_tau.c): lists of {name, doc, type} and
 * {name, ts, value} with names in Prometheus syntax.
 *
 * Files and the order they call in (each calls only those below it):
 *   telem_client.c         main: command line, one-shot modes
 *   telem_client_track.c   telem_client_track(): tracking mode (-t, -T)
 *   telem_client_dump.c    telem_client_dump(): a dump file (ac_dump.h)
 *   telem_client_report_dump.c  telem_client_report_dump(): the report
 *                          from dump files (telem_hist.h)
 *   telem_client_report.c  telem_client_report(): the HTML job report
 *   telem_client_snapshot.c  telem_client_snapshot(): system snapshots
 *   telem_client_tau.c     telem_client_tau_*: tau_metric_proxy's shapes
 *   telem_client_result.c  telem_client_result_*: selectors, missing
 *                          nodes, exit codes
 *   telem_client_fmt.c     telem_client_fmt_*: the output formats
 * Single-threaded, like the tool.
 */
#ifndef TELEM_CLIENT_H
#define TELEM_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "ac.h"
#include "telem_hist.h"
#include "telem_promname.h"

/* ---- formats (telem_client_fmt.c) ---- */

typedef enum {
    TELEM_CLIENT_FMT_MD = 0,
    TELEM_CLIENT_FMT_JSON,
    TELEM_CLIENT_FMT_YAML,
    TELEM_CLIENT_FMT_TXT
} telem_client_fmt_kind_t;

typedef struct telem_client_fmt telem_client_fmt_t;

/* "md", "json", "yaml", "txt" -> kind.  Returns 0 or TELEM_EINVAL. */
int telem_client_fmt_parse(const char *name, telem_client_fmt_kind_t *kind);

/* A writer to `out` (not closed by it) for rows with the given column names
 * under `key` (json/yaml); strings are used by pointer: keep them alive.
 * Column `points_col` (-1: none) holds telem_client_fmt_points() cells;
 * md and txt write such a row as one line per point, with columns
 * "time_ns" and "value" in its place.  NULL when out of memory. */
telem_client_fmt_t *telem_client_fmt_new(telem_client_fmt_kind_t kind,
                                         FILE *out, const char *key,
                                         const char *const *cols,
                                         size_t ncols, int points_col);

/* Cells of the current row, in column order. */
/* s NULL writes null. */
void telem_client_fmt_str(telem_client_fmt_t *f, const char *s);
void telem_client_fmt_i64(telem_client_fmt_t *f, int64_t v);
void telem_client_fmt_u64(telem_client_fmt_t *f, uint64_t v);
void telem_client_fmt_dbl(telem_client_fmt_t *f, double v);
void telem_client_fmt_null(telem_client_fmt_t *f);
void telem_client_fmt_tags(telem_client_fmt_t *f, const telem_tag_t *tags,
                           uint32_t n);
void telem_client_fmt_list(telem_client_fmt_t *f, const char *const *items,
                           size_t n);
/* ts and v must live until telem_client_fmt_row_end(). */
void telem_client_fmt_points(telem_client_fmt_t *f, const int64_t *ts,
                             const double *v, uint32_t n);

/* Ends the row. */
void telem_client_fmt_row_end(telem_client_fmt_t *f);

/* Writes what is buffered (txt aligns the rows seen so far) and flushes
 * the stream.  Returns 0 or TELEM_EIO if a write failed. */
int telem_client_fmt_flush(telem_client_fmt_t *f);

/* Closes the document, with the names of the nodes that did not answer
 * (json/yaml; md and txt leave them to stderr), and flushes.  Returns 0 or
 * TELEM_EIO.  Rows after it are ignored. */
int telem_client_fmt_end(telem_client_fmt_t *f, const char *const *missing,
                         size_t nmissing);

void telem_client_fmt_destroy(telem_client_fmt_t **f_p);

/* s as valid UTF-8 (a bad byte becomes U+FFFD), for JSON; the caller
 * frees it.  NULL when out of memory. */
char *telem_client_fmt_utf8(const char *s);

/* Writes s to out as a YAML double-quoted scalar. */
void telem_client_fmt_yaml_quote(FILE *out, const char *s);

/* ---- options (filled by telem_client.c, read by the modes) ---- */

/* What the command line asked for. */
typedef struct {
    const char *nodefile;
    int timeout_ms;          /* 0: not given */
    telem_client_fmt_kind_t fmt;
    FILE *out;
    const char **metrics;    /* -g, -T, query: the metric names to ask */
    size_t nmetrics;
    /* -g, -T: what was asked, metric{labels} parsed (telem_promname.h);
     * a series is shown when it matches one (telem_client_result_
     * selected()).  NULL for query. */
    const telem_promname_t *sels;
    size_t nsels;
    int tau;                 /* --tau: tau_metric_proxy's documents */
    const char *unix_path;   /* -u: the node's directory or socket */
    telem_tag_t tags[TELEM_TAGS_MAX];
    size_t ntags;
    double hz;               /* -F */
    double duration_s;       /* -d; 0 = until stopped */
} telem_client_opts_t;

/* ---- results (telem_client_result.c) ---- */

/* The next element of a list "a,b{k=\"x,y\"},c" at *p: it ends at a ','
 * outside braces and quotes.  NUL-terminates it in place and moves *p
 * past it; NULL at the end. */
char *telem_client_result_next_item(char **p);

/* Parses one element, a metric name (any telem name) optionally followed
 * by labels in Prometheus syntax (values quoted or not, host and pid
 * allowed), into *sel, whose metric then points into item (cut at its
 * '{').  Returns 0 or -1. */
int telem_client_result_selector(char *item, telem_promname_t *sel);

/* 1 if series s is one that o's selectors ask for (always, without
 * selectors): its metric is a selector's and it has every label that
 * selector names, with the same value. */
int telem_client_result_selected(const telem_client_opts_t *o,
                                 const telem_series_t *s);

/* Names on stderr every selector of o that no series of r matches
 * (`latest`: "no series for", else "no points of ... in the time range")
 * and returns how many. */
size_t telem_client_result_absent(const telem_client_opts_t *o,
                                  const ac_result_t *r, int latest);

/* Prints the nodes of a query result that are missing to stderr. */
void telem_client_result_missing_report(const ac_result_t *r);

/* The missing nodes' names of r, as an array the caller frees (the names
 * belong to r); *n receives the count.  NULL when there are none. */
const char **telem_client_result_missing_names(const ac_result_t *r,
                                               size_t *n);

/* Maps an ac_* return code to the process exit code (0, 3 partial, 1). */
int telem_client_result_exit_code(int rc);

/* ---- tracking (telem_client_track.c) ---- */

/* Tracking (-t, -T): runs until -d passes or SIGINT/SIGTERM arrives (it
 * installs handlers for both that only end the loop).  Returns the exit
 * code. */
int telem_client_track(ac_t *ac, const telem_client_opts_t *o);

/* ---- tau_metric_proxy's shapes (telem_client_tau.c) ------------------- */

typedef struct telem_client_tau telem_client_tau_t;

/* Writes s's name in tau's syntax, metric{label="value",...}, into buf:
 * every tag but host (and but host only when keep_host is 0).  Returns
 * the length or TELEM_ETOOBIG (then a truncated name). */
int telem_client_tau_name(char *buf, size_t size, const telem_series_t *s,
                          int keep_host);

/* A document of {name, ts, value} rows in tau's tracking shape: JSON, a
 * list of ticks, each the list of the rows of one tick with changes; md,
 * txt and yaml, one row after the other.  NULL when out of memory. */
telem_client_tau_t *telem_client_tau_track_new(telem_client_fmt_kind_t kind,
                                               FILE *out);

/* One row of the current tick: the series' name, ts (ns, written as
 * fractional seconds), value. */
void telem_client_tau_value(telem_client_tau_t *t, const char *name,
                            int64_t ts_ns, double value);

/* Ends the current tick (nothing is written for a tick without rows). */
void telem_client_tau_tick_end(telem_client_tau_t *t);

/* Flushes; closes the document first when `end`.  Returns 0 or
 * TELEM_EIO if a write failed. */
int telem_client_tau_flush(telem_client_tau_t *t, int end);

void telem_client_tau_destroy(telem_client_tau_t **t_p);

/* --tau -l: one {name, doc, type} row per series; -v / -g: one
 * {name, ts, value} row per series (newest point).  Return the exit
 * code. */
int telem_client_tau_list(ac_t *ac, const telem_client_opts_t *o);
int telem_client_tau_values(ac_t *ac, const telem_client_opts_t *o);

/* ---- snapshot (telem_client_snapshot.c) ------------------------------- */

/* `snapshot [NODE]`: every node's system snapshot (node < 0) or node
 * index `node`'s, in o->fmt (json/yaml: {"snapshots": [{node, snapshot}],
 * "missing"}; txt: an lscpu-like summary per node; md: a table of node,
 * field, value).  Returns the exit code (0, 3 some nodes missing, 1). */
int telem_client_snapshot(ac_t *ac, const telem_client_opts_t *o, long node);

/* ---- report (telem_client_report.c) ----------------------------------- */

/* `report`: gathers the job data object of telem_web.h (the run directory
 * `rundir`, NULL: the default; series since start_ns as ac_query() reads
 * it, from the node file o->nodefile, else $TELEM_NODEFILE, else
 * <rundir>/nodes) and writes the HTML report to `path` atomically.  Prints
 * a summary line on stdout, warnings on stderr.  Returns the exit code: 0,
 * 3 (written, but some nodes did not answer) or 1 (not written). */
int telem_client_report(const telem_client_opts_t *o, const char *rundir,
                        const char *path, int64_t start_ns);

/* Shared by both reports: 1 when metric m is one the report charts (a
 * collector metric cg_*_seconds, one of the node metrics, or a metric of
 * the rows below them: cpu_core_percent, pressure_*_percent, ib_*,
 * gpu_*). */
int telem_client_report_charted(const char *m);

/* One series as an OpenTSDB query result with ms times and [ms, v]. */
json_t *telem_client_report_series_json(const telem_series_t *s);

/* Writes the report `data` to `path` atomically and prints the summary
 * line.  Returns the exit code (0, 3 with missing nodes, 1). */
int telem_client_report_write(const char *path, const json_t *data,
                              const char *title);

/* ---- report from dumps (telem_client_report_dump.c) -------------------- */

#define TELEM_CLIENT_DUMPS_MAX 64

/* `report --dump`: the same report from the n dump (or segment) files
 * `dumps`, merged without duplicates (telem_hist.h); restarts and events
 * from `rundir` when given, else those the dumps hold.  Series since start_ns (0: all).  A damaged
 * file gives a warning and what could be read; a file that is not a dump
 * is an error.  Returns the exit code (0 or 1). */
int telem_client_report_dump(const char *const *dumps, size_t n,
                             const char *rundir, const char *path,
                             int64_t start_ns);

/* The n dump (or segment) files in one history (telem_hist.h); a damaged
 * file gives a warning on stderr ("... `what` shows what could be read").
 * NULL after saying why on stderr (a file that is not a dump). */
telem_hist_t *telem_client_hist_open(const char *const *dumps, size_t n,
                                     const char *what);

/* `snapshot --dump FILE... [NODE]`: the system snapshots the dump files
 * hold (each node's newest), or NODE's, written as telem_client_snapshot()
 * writes them.  Returns the exit code (0, 3 some node has none, 1). */
int telem_client_snapshot_dump(const char *const *dumps, size_t ndumps,
                               const telem_client_opts_t *o,
                               const char *node);

/* ---- dump (telem_client_dump.c) --------------------------------------- */

/* `dump`: ac_dump() of o's metrics and tags over [start_ns, end_ns]
 * (ac_dump.h's conventions) into `path`, with the events and restarts of
 * run directory `rundir` (NULL: none); progress on stderr, a summary
 * on stdout.  Returns the exit code: 0, 3 (some node missing) or 1. */
int telem_client_dump(ac_t *ac, const telem_client_opts_t *o,
                      const char *path, const char *rundir, int64_t start_ns,
                      int64_t end_ns);


#endif
