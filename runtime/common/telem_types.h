/* telem_types.h - the values telem's parts share: limits on names and
 * tags, metric descriptions, series and query flags.
 *
 * The codec (telem_proto.h) sends these values and the store
 * (telem_store.h) keeps and returns them; neither needs the other to name
 * them.  This header holds no wire details: no message types, no encoders
 * or decoders, no batch framing, no frame-size limit (those are
 * telem_proto.h's).  Numeric values that also travel on the wire (metric
 * types, query flags) keep the numbers docs/protocol.md gives them.
 *
 * Ownership: every struct here only points at strings and arrays; who owns
 * them is said by the function that fills or takes the struct.
 */
#ifndef TELEM_TYPES_H
#define TELEM_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TELEM_NAME_MAX 255                 /* metric names, tag keys and values */
#define TELEM_TAGS_MAX 16                  /* tags on one sample or series */
#define TELEM_QUERY_METRICS_MAX 256        /* metric names in one query */
#define TELEM_TEXT_MAX 4096                /* doc strings, error messages */

typedef struct {
    const char *key;
    const char *value;
} telem_tag_t;

typedef enum {
    TELEM_METRIC_GAUGE = 0,
    TELEM_METRIC_COUNTER = 1
} telem_metric_type_t;

/* Description of a metric, shown by listings. */
typedef struct {
    const char *metric;
    telem_metric_type_t type;
    const char *unit;          /* "" when unitless */
    const char *doc;
} telem_meta_t;

/* What a query asks for, besides its range (flags of a query). */
enum {
    TELEM_QUERY_LIST = 1u << 0,   /* catalog only: series without points */
    TELEM_QUERY_LATEST = 1u << 1  /* only the newest point of each series */
};

/* One series of a query's answer: points are in time order. */
typedef struct {
    const char *metric;
    const telem_tag_t *tags;   /* sorted by key, include "host" */
    uint32_t ntags;
    telem_metric_type_t type;
    const char *unit;
    const char *doc;
    const int64_t *ts;
    const double *values;
    uint32_t npoints;
} telem_series_t;

#ifdef __cplusplus
}
#endif
#endif
