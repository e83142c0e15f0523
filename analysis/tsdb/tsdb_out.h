/* tsdb_out.h - the results of an /api/query and their JSON text.
 *
 * tsdb_exec writes each group's answer here as a small JSON object (its
 * "metric", "tags", "aggregateTags", "query", later "globalAnnotations")
 * and the group's points as two plain arrays, already in the answer's
 * form: times in seconds or milliseconds, inside [start, end], one point
 * per key in the object form.  The text is written straight from those
 * arrays into one buffer (tsdb_results_dump): a point costs an integer
 * and a number written by hand, not a JSON node built, hashed and
 * printed.  tsdb_results_json gives the same answer as a jansson tree
 * (the tests compare the two).
 *
 * Numbers: a value is written as a JSON real that reads back as exactly
 * the same double (tsdb_fmt_double); NaN and the infinities as OpenTSDB
 * (Jackson) writes them, "NaN", "Infinity", "-Infinity", or null under
 * the "null" fill policy.
 *
 * Not thread-safe: one set of results belongs to one thread at a time. */
#ifndef TSDB_OUT_H
#define TSDB_OUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsdb_results tsdb_results_t;

/* How a result's dps are written. */
enum {
    TSDB_OUT_ARRAYS = 1,       /* [[t, v], ..] instead of {"t": v, ..} */
    TSDB_OUT_NAN_NULL = 2      /* NaN is null (the "null" fill policy) */
};

/* A new, empty set of results; NULL when out of memory. */
tsdb_results_t *tsdb_results_new(void);

/* Destroys *self_p (NULL or *self_p NULL is fine) and nulls it. */
void tsdb_results_destroy(tsdb_results_t **self_p);

/* Appends one result.  Takes ownership of *head_p (a JSON object with
 * the members before "dps") and of *ts_p and *v_p (malloc'd arrays of n
 * points, times as they are to be written), and nulls them, whatever
 * happens.  Returns 0 or TELEM_ENOMEM (the result is dropped). */
int tsdb_results_add(tsdb_results_t *self, json_t **head_p, int64_t **ts_p,
                     double **v_p, size_t n, int flags);

/* How many results there are. */
size_t tsdb_results_count(const tsdb_results_t *self);

/* Sets member `key` of every result's head to `value` (borrowed; each
 * result holds a reference).  Returns 0 or TELEM_ENOMEM. */
int tsdb_results_set(tsdb_results_t *self, const char *key, json_t *value);

/* The results as compact JSON text, an array of objects, each with its
 * head's members in order and then "dps".  Returns a malloc'd,
 * NUL-terminated text (the caller frees it) with its length in *len, or
 * NULL when out of memory. */
char *tsdb_results_dump(const tsdb_results_t *self, size_t *len);

/* The results as a new JSON array (the same answer as the text); NULL
 * when out of memory. */
json_t *tsdb_results_json(const tsdb_results_t *self);

/* Writes v (finite) as a JSON number into buf (at least
 * TSDB_FMT_DOUBLE_MAX bytes), NUL-terminated, and returns its length.
 * The text always reads back as exactly v; it has a '.' or an exponent,
 * so that it reads as a real ("5.0").  A value with at most nine decimal
 * places (what a counter, a percentage or a time in whole nanoseconds
 * gives) is written in its shortest such form ("0.1", "37.25",
 * "0.001234567"), without printf; any other in printf's "%.17g". */
#define TSDB_FMT_DOUBLE_MAX 32
size_t tsdb_fmt_double(char *buf, double v);

#ifdef __cplusplus
}
#endif

#endif
