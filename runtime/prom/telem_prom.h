/* telem_prom.h - Prometheus exposition of a node's latest samples: the
 * text format 0.0.4 and OpenMetrics 1.0, content negotiation and gzip.
 *
 * telemd serves GET /metrics with it (docs/prometheus.md).  The work is
 * split in two steps so that the node's store, which belongs to telemd's
 * actor thread, is held only for a copy:
 *
 *   1. the snapshot (on the store's thread): telem_prom_snap_add() copies
 *      the newest point of each series, with its metric's type, unit and
 *      doc, into one growing block of bytes; telem_prom_snap_take() hands
 *      that block over.  The block holds no pointers (offsets only), so it
 *      can travel as the bytes of a message and be read anywhere;
 *   2. the render (on any thread): telem_prom_render() groups the block's
 *      series by metric family, maps names to Prometheus's character set,
 *      escapes, and writes the text of one format.
 *
 * What the render writes, in both formats:
 *   - one family per metric, all its series together, families in byte
 *     order of their exposed names and series in byte order of their
 *     label text, so equal input gives equal output;
 *   - "# HELP" from the metric's doc (telem_describe); a metric without a
 *     doc gets "telem metric <original name>", so no family lacks help;
 *   - "# TYPE": gauge, counter, or untyped (OpenMetrics: unknown) for a
 *     metric nobody described;
 *   - counters: exposed with the suffix "_total", added unless the name
 *     already ends with it.  Text 0.0.4 names the family with the suffix
 *     ("# TYPE x_total counter"), OpenMetrics without it ("# TYPE x
 *     counter", samples "x_total");
 *   - OpenMetrics only: "# UNIT" when the metric's unit is a plain word of
 *     [A-Za-z0-9_] and the family name ends with "_<unit>" (the format
 *     requires that suffix; other units are left out), and "# EOF" last;
 *   - metric names: every byte outside [A-Za-z0-9_] becomes '_' (so '.',
 *     '-', ':', '/', spaces and each byte of a multi-byte character), and a
 *     name starting with a digit gets a leading '_';
 *   - label names (tag keys): the same mapping; a name that then starts
 *     with "__" (reserved by Prometheus) gets a leading 'x'.  A label whose
 *     value is empty is left out (Prometheus treats it as absent); a
 *     second label of a series mapped to a name already used in it is
 *     left out;
 *   - label values and HELP text: '\\' -> "\\\\", newline -> "\\n", and in
 *     label values (and OpenMetrics HELP) '"' -> "\\\""; bytes that are not
 *     valid UTF-8 become U+FFFD;
 *   - values with "%.17g" (they read back to the same double), "NaN",
 *     "+Inf", "-Inf";
 *   - timestamps only when asked (opts.timestamps): milliseconds in text
 *     0.0.4, seconds with three decimals in OpenMetrics.  Without them the
 *     scraper stamps each sample with the scrape's time, which is what
 *     Prometheus prefers for the latest value of a series.
 * Series that cannot be exposed as they are - a family name that two
 * metrics of different types map to, a counter's "_total" sample name
 * that is also another family's name, two series of a family with equal
 * labels once mapped - are left out, keeping the first in byte order of
 * the original names, and counted in stats.skipped.
 *
 * Error convention: 0 or a negative telem_err_t.  Nothing here logs.
 * Thread safety: a snapshot builder belongs to one thread at a time; every
 * other function touches only its arguments and may run on any thread,
 * several at once.
 */
#ifndef TELEM_PROM_H
#define TELEM_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "telem_error.h"
#include "telem_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- the snapshot --------------------------------------------------------- */

typedef struct telem_prom_snap telem_prom_snap_t;

/* An empty builder, or NULL when out of memory. */
telem_prom_snap_t *telem_prom_snap_new(void);

/* Frees the builder and what it holds; accepts NULL and nulls *self_p. */
void telem_prom_snap_destroy(telem_prom_snap_t **self_p);

/* Copies the newest point of `s` (its last point; a series without points
 * is skipped and 0 returned) with its metric, tags, type, unit and doc.
 * `described` false marks a metric nobody described: it is exposed as
 * untyped whatever s->type says.  Returns 0, TELEM_EINVAL (NULL argument,
 * a NULL string, more than 255 tags) or TELEM_ENOMEM (the builder keeps
 * what it had). */
int telem_prom_snap_add(telem_prom_snap_t *self, const telem_series_t *s,
                        bool described);

/* Series added since the builder was made or last taken. */
size_t telem_prom_snap_count(const telem_prom_snap_t *self);

/* Hands over the snapshot as one malloc'd block (*block_p, *len; free()
 * it, or give it to telem_prom_render) and leaves the builder empty.
 * Returns 0 or TELEM_ENOMEM (nothing handed over, the builder unchanged). */
int telem_prom_snap_take(telem_prom_snap_t *self, void **block_p,
                         size_t *len);

/* --- the render ----------------------------------------------------------- */

typedef enum {
    TELEM_PROM_TEXT = 0,            /* text/plain; version=0.0.4 */
    TELEM_PROM_OPENMETRICS = 1      /* application/openmetrics-text 1.0.0 */
} telem_prom_format_t;

typedef struct {
    telem_prom_format_t format;
    bool timestamps;                /* write each sample's timestamp */
} telem_prom_opts_t;

typedef struct {
    size_t families;                /* families written */
    size_t series;                  /* sample lines written */
    size_t skipped;                 /* series left out (see above) */
} telem_prom_stats_t;

/* Renders a block from telem_prom_snap_take() (only read; the caller
 * keeps it) as described at the top.  opts NULL: text 0.0.4 without
 * timestamps.  On success *out_p is a malloc'd, NUL-terminated text the
 * caller frees, *out_len its length without the NUL, and *stats (NULL
 * allowed) what was written.  Returns 0, TELEM_EINVAL (NULL argument, or
 * a block that is not a snapshot: cut, or with records out of bounds) or
 * TELEM_ENOMEM; *out_p is NULL on failure. */
int telem_prom_render(const void *block, size_t len,
                      const telem_prom_opts_t *opts, char **out_p,
                      size_t *out_len, telem_prom_stats_t *stats);

/* --- names ---------------------------------------------------------------- */

/* Writes the Prometheus name of metric `name` (the mapping above) to
 * out[0..size) with its NUL.  Returns its length, or TELEM_ETOOBIG when it
 * does not fit (out then holds "" when size > 0), TELEM_EINVAL for a NULL
 * or empty name. */
int telem_prom_metric_name(const char *name, char *out, size_t size);

/* The same for a label name (tag key). */
int telem_prom_label_name(const char *key, char *out, size_t size);

/* --- HTTP: negotiation and compression ------------------------------------ */

/* The format an Accept header asks for: OpenMetrics when it lists
 * application/openmetrics-text (no version, 1.0.0 or 0.0.1) with a
 * quality above 0 and at least that of the best text/plain, text/ * or
 * * / * range it lists; text 0.0.4 otherwise (also for NULL or ""). */
telem_prom_format_t telem_prom_negotiate(const char *accept);

/* The Content-Type of a format's answer (a static string). */
const char *telem_prom_content_type(telem_prom_format_t format);

/* True when an Accept-Encoding header allows gzip: "gzip" (or "x-gzip")
 * or "*" with a quality above 0, gzip not refused with q=0. */
bool telem_prom_gzip_accepted(const char *accept_encoding);

/* Compresses in[0..len) into a gzip member (zlib, fastest level: text
 * metrics compress about ten to one at that level already).  *out_p is
 * malloc'd (the caller frees it), *out_len its size.  Returns 0,
 * TELEM_EINVAL (NULL argument) or TELEM_ENOMEM. */
int telem_prom_gzip(const char *in, size_t len, char **out_p,
                    size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif
