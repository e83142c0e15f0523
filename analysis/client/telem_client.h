/* telem_client.h - private to the telem_client tool: its output formats and
 * the pieces its modes share.
 *
 * Every mode produces rows of named cells; a tc_fmt_t writes them as a
 * Markdown table, aligned plain text, or a JSON/YAML document
 *   {"<key>": [ {row}, ... ], "missing": ["node", ...]}
 * whose key names the rows ("series", "metrics", "nodes", "changes").
 * Floats are always written with "%.17g".  Rows are streamed (tracking)
 * and tc_fmt_end() closes the document, so output stopped by a signal is
 * still a valid document.
 */
#ifndef TELEM_CLIENT_H
#define TELEM_CLIENT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ac.h"

/* ---- formats (telem_client_fmt.c) ---- */

typedef enum {
    TC_FMT_MD = 0,
    TC_FMT_JSON,
    TC_FMT_YAML,
    TC_FMT_TXT
} tc_fmt_kind_t;

typedef struct tc_fmt tc_fmt_t;

/* "md", "json", "yaml", "txt" -> kind.  Returns 0 or TELEM_EINVAL. */
int tc_fmt_parse(const char *name, tc_fmt_kind_t *kind);

/* A writer to `out` (not closed by it) for rows with the given column names
 * under `key` (json/yaml); strings are used by pointer: keep them alive.
 * Column `points_col` (-1: none) holds tc_fmt_points() cells; md and txt
 * write such a row as one line per point, with columns "time_ns" and
 * "value" in its place.  NULL when out of memory. */
tc_fmt_t *tc_fmt_new(tc_fmt_kind_t kind, FILE *out, const char *key,
                     const char *const *cols, size_t ncols, int points_col);

/* Cells of the current row, in column order. */
void tc_fmt_str(tc_fmt_t *f, const char *s);     /* NULL = null */
void tc_fmt_i64(tc_fmt_t *f, int64_t v);
void tc_fmt_u64(tc_fmt_t *f, uint64_t v);
void tc_fmt_dbl(tc_fmt_t *f, double v);
void tc_fmt_null(tc_fmt_t *f);
void tc_fmt_tags(tc_fmt_t *f, const telem_tag_t *tags, uint32_t n);
void tc_fmt_list(tc_fmt_t *f, const char *const *items, size_t n);
void tc_fmt_points(tc_fmt_t *f, const int64_t *ts, const double *v,
                   uint32_t n);  /* arrays must live until tc_fmt_row_end */

/* Ends the row. */
void tc_fmt_row_end(tc_fmt_t *f);

/* Writes what is buffered (txt aligns the rows seen so far) and flushes
 * the stream.  Returns 0 or TELEM_EIO if a write failed. */
int tc_fmt_flush(tc_fmt_t *f);

/* Closes the document, with the names of the nodes that did not answer
 * (json/yaml; md and txt leave them to stderr), and flushes.  Returns 0 or
 * TELEM_EIO.  Rows after it are ignored. */
int tc_fmt_end(tc_fmt_t *f, const char *const *missing, size_t nmissing);

void tc_fmt_destroy(tc_fmt_t **f_p);

/* ---- shared by the modes (telem_client.c, telem_client_track.c) ---- */

/* What the command line asked for. */
typedef struct {
    const char *nodefile;
    int timeout_ms;          /* 0: not given */
    tc_fmt_kind_t fmt;
    FILE *out;
    const char **metrics;    /* -g, -T, query */
    size_t nmetrics;
    telem_tag_t tags[TELEM_TAGS_MAX];
    size_t ntags;
    double hz;               /* -F */
    double duration_s;       /* -d; 0 = until stopped */
} tc_opts_t;

/* Set by SIGINT/SIGTERM in tracking mode; the loop checks it. */
extern volatile sig_atomic_t tc_stop;

/* Prints the nodes of a query result that are missing to stderr. */
void tc_report_missing(const ac_result_t *r);

/* The missing nodes' names of r, as an array the caller frees (the names
 * belong to r); *n receives the count.  NULL when there are none. */
const char **tc_missing_names(const ac_result_t *r, size_t *n);

/* Maps an ac_* return code to the process exit code (0, 3 partial, 1). */
int tc_exit_code(int rc);

/* Tracking (-t, -T): runs until -d passes or tc_stop is set.  Returns the
 * exit code. */
int tc_track(ac_t *ac, const tc_opts_t *o);

#endif
