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
 * Files and the order they call in (each calls only those below it):
 *   telem_client.c         main: command line, one-shot modes
 *   telem_client_track.c   telem_client_track(): tracking mode (-t, -T)
 *   telem_client_report.c  telem_client_report(): the HTML job report
 *   telem_client_result.c  telem_client_result_*: missing nodes, exit codes
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

/* ---- options (filled by telem_client.c, read by the modes) ---- */

/* What the command line asked for. */
typedef struct {
    const char *nodefile;
    int timeout_ms;          /* 0: not given */
    telem_client_fmt_kind_t fmt;
    FILE *out;
    const char **metrics;    /* -g, -T, query */
    size_t nmetrics;
    telem_tag_t tags[TELEM_TAGS_MAX];
    size_t ntags;
    double hz;               /* -F */
    double duration_s;       /* -d; 0 = until stopped */
} telem_client_opts_t;

/* ---- results (telem_client_result.c) ---- */

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

/* ---- report (telem_client_report.c) ----------------------------------- */

/* `report`: gathers the job data object of telem_web.h (the run directory
 * `rundir`, NULL: the default; series since start_ns as ac_query() reads
 * it, from the node file o->nodefile, else $TELEM_NODEFILE, else
 * <rundir>/nodes) and writes the HTML report to `path` atomically.  Prints
 * a summary line on stdout, warnings on stderr.  Returns the exit code: 0,
 * 3 (written, but some nodes did not answer) or 1 (not written). */
int telem_client_report(const telem_client_opts_t *o, const char *rundir,
                        const char *path, int64_t start_ns);


#endif
