/* det.h - telem's detectors: pure statistics behind one plug-in interface.
 *
 * A detector looks at recent telemetry (plain arrays of timestamps and
 * values) and decides that some hardware is hurting the job: a slow device,
 * a node drowning in processes, a metric past a limit, a node that went
 * quiet.  Each decision is an event (detector, severity, nodes, devices,
 * score, the evidence it used as name/value pairs, a sentence).
 *
 * Detectors are const vtables (det_vtable_t) in the style of collectd's
 * plug-ins: a name, a doc string, a table of parameters with defaults,
 * ranges and docs, and functions to create/destroy private state, to say
 * which data the next run needs, and to run.  No detector touches a socket,
 * a clock or a file: the caller (telem_watch, a test, a benchmark) fetches
 * the data, fills a det_input_t and reads the events, which is what makes
 * every detector testable on fixed tables.
 *
 * A det_t is one configured instance of a detector: the vtable, a label
 * (the name users see, e.g. "slowgpu" or "hot-cpu"), current parameter
 * values (get/set by name while running) and a paused flag.  Detectors keep
 * state between runs (persistence over rounds, a device's own history, when
 * a node was last heard of) and report a condition once when it starts,
 * not on every run while it lasts.
 *
 * Errors are telem_err_t codes (runtime/common/telem_error.h).  Thread safety: a
 * det_t and a det_events_t are used by one thread at a time; vtables and
 * det_registry() are immutable and shared freely.
 */
#ifndef DET_H
#define DET_H

#include <stddef.h>
#include <stdint.h>

#include "telem_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DET_NEEDS_METRICS_MAX 16  /* metrics one detector may ask for */
#define DET_LABEL_MAX 63          /* length of an instance label */
#define DET_VALUE_MAX 255         /* length of a string parameter value */

/* ---- input ------------------------------------------------------------- */

typedef struct {
    const char *key;
    const char *value;
} det_tag_t;

/* One series: points in time order (realtime ns).  `node` is the node whose
 * agent returned it (normally equal to the host tag); `device` is the value
 * of the "gpu" tag or NULL for node-level series.  `tags` include "host". */
typedef struct {
    const char *node;
    const char *device;
    const char *metric;
    const det_tag_t *tags;
    size_t ntags;
    const int64_t *ts;
    const double *val;
    size_t n;
} det_series_t;

/* Everything a run sees.  `series` holds the windowed data of the metrics
 * the detectors asked for; `latest` the newest point of each series asked
 * for with det_needs_t.latest.  `nodes` is the job's node list and
 * `missing` the nodes that did not answer this time (a subset of nodes).
 * now_ns is the caller's realtime clock at the query. */
typedef struct {
    int64_t now_ns;
    const det_series_t *series;
    size_t nseries;
    const det_series_t *latest;
    size_t nlatest;
    const char *const *nodes;
    size_t nnodes;
    const char *const *missing;
    size_t nmissing;
} det_input_t;

/* What a detector's next run needs.  metrics[] with points from start_ns
 * (realtime) on; and, when latest is 1, the newest point of every series of
 * latest_metrics[] (nlatest_metrics 0: of every metric). */
typedef struct {
    const char *metrics[DET_NEEDS_METRICS_MAX];
    size_t nmetrics;
    int64_t start_ns;
    int latest;
    const char *latest_metrics[DET_NEEDS_METRICS_MAX];
    size_t nlatest_metrics;
} det_needs_t;

/* ---- events ------------------------------------------------------------ */

typedef enum {
    DET_SEV_WARN = 1,     /* worth a look; no action by default */
    DET_SEV_ACT = 2       /* the hardware should be taken out of the job */
} det_severity_t;

typedef struct {
    const char *node;
    const char *device;   /* "" for a whole node */
} det_device_t;

typedef struct {
    const char *name;
    double value;
} det_evidence_t;

/* One decision.  Strings and arrays belong to whoever made the struct;
 * det_events_add() copies them.  ts_ns is the time of the data that decided
 * (a round's timestamp, the newest point), score a detector-specific
 * magnitude (det_vtable_t.doc says which). */
typedef struct {
    const char *detector;        /* instance label; set by det_run() */
    det_severity_t severity;
    int64_t ts_ns;
    const char *const *nodes;
    size_t nnodes;
    const det_device_t *devices;
    size_t ndevices;
    double score;
    const det_evidence_t *evidence;
    size_t nevidence;
    const char *text;
} det_event_t;

typedef struct det_events det_events_t;

/* A growable list of events owning deep copies.  _new returns NULL when out
 * of memory; _destroy accepts NULL or a pointer to NULL and nulls it. */
det_events_t *det_events_new(void);
void det_events_destroy(det_events_t **self_p);

/* Copies `e` into the list.  A node named twice in e->nodes (or a device
 * twice in e->devices) is kept once; every node of e->devices is added to
 * the node list if missing.  Returns 0, TELEM_EINVAL (NULL strings, a bad
 * severity) or TELEM_ENOMEM. */
int det_events_add(det_events_t *self, const det_event_t *e);

/* Number of events, event i (NULL out of range; owned by the list, valid
 * until the next add or clear), and emptying the list. */
size_t det_events_count(const det_events_t *self);
const det_event_t *det_events_get(const det_events_t *self, size_t i);
void det_events_clear(det_events_t *self);

/* Severity as "warn" / "act" ("?" otherwise). */
const char *det_severity_name(det_severity_t sev);

/* ---- parameters -------------------------------------------------------- */

typedef enum {
    DET_PARAM_NUM = 0,    /* a finite double within [min, max] */
    DET_PARAM_STR = 1     /* a string, one of `choices` if given */
} det_param_type_t;

typedef struct {
    const char *name;
    det_param_type_t type;
    double def;                  /* NUM: default */
    double min, max;             /* NUM: inclusive range */
    int integer;                 /* NUM: must be a whole number */
    const char *def_str;         /* STR: default */
    const char *const *choices;  /* STR: NULL-terminated, or NULL = any */
    const char *doc;
    int required;                /* STR: must not be empty (det_check) */
} det_param_def_t;

/* Current values of an instance, handed to the vtable functions.  Index i
 * is parameter i of the vtable's table. */
typedef struct det_params det_params_t;
double det_params_num(const det_params_t *p, size_t i);
const char *det_params_str(const det_params_t *p, size_t i);

/* ---- the plug-in interface --------------------------------------------- */

typedef struct {
    const char *name;
    const char *doc;
    const det_param_def_t *params;
    size_t nparams;
    /* Creates the private state, or returns NULL when out of memory.  NULL
     * for a detector without state. */
    void *(*create)(void);
    void (*destroy)(void **state);
    /* Checks values that only make sense together (k <= n, say): 0, or
     * TELEM_EINVAL with a sentence in why.  May be NULL. */
    int (*check)(const det_params_t *p, char *why, size_t why_size);
    /* What the next run needs, given the state and now_ns. */
    void (*needs)(const void *state, const det_params_t *p, int64_t now_ns,
                  det_needs_t *out);
    /* Looks at `in`, updates the state, appends new events to `out`.
     * Returns 0 or TELEM_ENOMEM; bad data (NaN, gaps, unknown nodes) is
     * skipped, never an error. */
    int (*run)(void *state, const det_params_t *p, const det_input_t *in,
               det_events_t *out);
    /* Appends name/value lines about the state ("active", "devices") for
     * a status display: calls fn once per line.  May be NULL. */
    void (*describe)(const void *state, const det_params_t *p,
                     void (*fn)(void *arg, const char *key,
                                const char *value),
                     void *arg);
} det_vtable_t;

/* Every built-in detector, in a fixed order, and one by name (NULL if
 * unknown).  Static data. */
const det_vtable_t *const *det_registry(size_t *n);
const det_vtable_t *det_find(const char *name);

/* ---- instances --------------------------------------------------------- */

typedef struct det det_t;

/* Creates an instance of `vt` called `label` (NULL: the detector's name;
 * 1-DET_LABEL_MAX bytes, no control characters) with default parameters.
 * Returns NULL with *err (NULL allowed) set to TELEM_EINVAL or
 * TELEM_ENOMEM. */
det_t *det_new(const det_vtable_t *vt, const char *label, int *err);

/* Frees the instance; accepts NULL or a pointer to NULL; nulls it. */
void det_destroy(det_t **self_p);

const char *det_label(const det_t *self);
const det_vtable_t *det_vtable(const det_t *self);

/* Sets parameter `name` from text ("0.1", "cg_dgemm_seconds", ">=").
 * Nothing changes unless the value parses, is in range (or among the
 * choices) and passes the detector's check.  Returns 0, TELEM_ENOTFOUND
 * (no such parameter) or TELEM_EINVAL; why (if why_size > 0) gets a
 * sentence either way on failure.  Takes effect at the next run. */
int det_set(det_t *self, const char *name, const char *value, char *why,
            size_t why_size);

/* Checks the whole configuration: required parameters given, and the
 * detector's own check.  Returns 0 or TELEM_EINVAL with a sentence in why
 * ("threshold needs metric=NAME").  Call once settings are complete. */
int det_check(const det_t *self, char *why, size_t why_size);

/* Writes parameter `name`'s value as text (numbers with %.17g trimmed to
 * the shortest form that reads back equal).  Returns 0, TELEM_ENOTFOUND or
 * TELEM_ETOOBIG (buffer too small). */
int det_get(const det_t *self, const char *name, char *buf, size_t size);

/* Pausing: a paused instance's det_run() does nothing and returns 0.  Its
 * state is kept; after a resume it goes on from where it stopped, within
 * the window its needs ask for (slowgpu judges the rounds it missed, up to
 * its `window`). */
void det_pause(det_t *self, int paused);
int det_paused(const det_t *self);

/* Runs counted so far (paused calls excluded), events emitted so far. */
uint64_t det_runs(const det_t *self);
uint64_t det_nevents(const det_t *self);

/* The next run's needs (see det_vtable_t.needs). */
void det_needs(const det_t *self, int64_t now_ns, det_needs_t *out);

/* Runs the detector on `in`, appending its new events to `out` with
 * `detector` set to the label.  Returns 0 or TELEM_ENOMEM. */
int det_run(det_t *self, const det_input_t *in, det_events_t *out);

/* Calls fn for each state line the detector reports (see describe). */
void det_describe(const det_t *self,
                  void (*fn)(void *arg, const char *key, const char *value),
                  void *arg);

/* The built-in detectors, for det_registry(). */
extern const det_vtable_t det_slowgpu;
extern const det_vtable_t det_proc_threshold;
extern const det_vtable_t det_threshold;
extern const det_vtable_t det_heartbeat;
extern const det_vtable_t det_gpu_health;
extern const det_vtable_t det_straggler;

#ifdef __cplusplus
}
#endif
#endif
