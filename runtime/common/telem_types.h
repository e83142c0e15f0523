/* telem_types.h - the values telem's parts share: limits on names and
 * tags, metric descriptions, series, query flags, agent control
 * operations and the agent's status.
 *
 * The codec (telem_proto.h) sends these values, the store (telem_store.h)
 * keeps and returns them and the analysis client (ac.h) hands them to its
 * callers; none of them needs another to name them.  This header holds no wire details: no message types, no encoders
 * or decoders, no batch framing, no frame-size limit (those are
 * telem_proto.h's).  Numeric values that also travel on the wire (metric
 * types, query flags, control operations) keep the numbers docs/protocol.md gives them.
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
#define TELEM_SYSINFO_MAX (1u << 20)       /* a node's system snapshot (JSON) */

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

/* Operations a node agent (telemd) accepts as control requests. */
typedef enum {
    TELEM_CTL_STATUS = 1,      /* reply carries telem_status_t */
    TELEM_CTL_SHUTDOWN = 2,    /* daemon exits after replying */
    TELEM_CTL_SET_LEVEL = 3,   /* arg = new level 0-4 */
    TELEM_CTL_SYNC = 4,        /* arg = fin_token; reply says if seen */
    TELEM_CTL_SET_WINDOW = 5,  /* arg = retention window in ns */
    TELEM_CTL_HANDOVER = 6     /* a new telemd takes over: the daemon lets
                                  its ingest connections go, reads what
                                  they still carry, flushes to its log and
                                  exits (docs/telemd.md) */
} telem_ctl_op_t;

/* A node agent's state, as reported by TELEM_CTL_STATUS. */
typedef struct {
    const char *node;
    int64_t pid;
    int32_t level;
    int64_t window_ns;
    int64_t interval_ns;       /* sampling interval */
    int64_t uptime_ns;
    uint64_t nseries;
    uint64_t npoints;
    uint64_t mem_bytes;
    uint64_t mem_cap_bytes;
    uint64_t ingested;         /* samples accepted since start */
    uint64_t dropped;          /* samples refused (caps, level) */
    uint64_t bad_messages;     /* messages refused: malformed, of a kind
                                  the socket does not take, or of too many
                                  frames */
    uint64_t push_refused;     /* pushed samples refused (counters: bad
                                  names or values, series cap) */
    uint64_t log_bytes;        /* flush log: bytes in its segments */
    uint64_t log_segments;     /* flush log: segment files */
    uint64_t flushes;          /* flushes completed since start */
    int64_t last_flush_ns;     /* realtime of the last completed flush,
                                  0: none yet (or no log) */
    uint64_t flush_errors;     /* flushes that failed */
    uint64_t denied;           /* requests refused for want of the job's
                                  key: control over plain TCP */
    uint64_t refused_peers;    /* CURVE clients the ZAP handler refused
                                  (another key, domain or mechanism) */
} telem_status_t;

#ifdef __cplusplus
}
#endif
#endif
