/* det_util.h - helpers shared by the built-in detectors (internal).
 *
 * Leave-one-out median and MAD in O(n log n) for a whole round of devices,
 * a small string-keyed hash map for per-device and per-node state, tag
 * lookup on a series, and a bounded sentence builder.  No detector state
 * lives here; every function works on what the caller passes.
 */
#ifndef DET_UTIL_H
#define DET_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "det.h"

#define DET_MAD_SCALE 1.482602218505602   /* MAD -> sigma for normal data */

/* Reusable buffers for det_loo(); zero-initialise, free with
 * det_scratch_free(). */
typedef struct {
    double *sorted;
    double *dev[3];
    double dev_med[3];
    size_t *perm;
    size_t *rank;
    size_t cap;
} det_scratch_t;

void det_scratch_free(det_scratch_t *s);

/* Median of sorted[0..n) with element `skip` left out (skip >= n: none
 * left out).  NAN when nothing is left. */
double det_median_skip(const double *sorted, size_t n, size_t skip);

/* For each i in x[0..n): med[i] = median of the other n-1 values, mad[i] =
 * their median absolute deviation around med[i] (unscaled).  Exact, in
 * O(n log n): removing one value shifts the middle of the sorted array by
 * at most one place, so med[] takes at most three distinct values and each
 * needs one sorted array of deviations.  n < 2 gives NAN.  Returns 0 or
 * TELEM_ENOMEM. */
int det_loo(det_scratch_t *s, const double *x, size_t n, double *med,
            double *mad);

/* Value of tag `key` on a series, or NULL. */
const char *det_tag(const det_series_t *s, const char *key);

/* A string -> long hash map (keys copied). */
typedef struct det_map det_map_t;
det_map_t *det_map_new(void);
void det_map_destroy(det_map_t **self_p);
/* Value of `key`, or -1. */
long det_map_get(const det_map_t *self, const char *key);
/* Sets key -> val (val >= 0).  Returns 0 or TELEM_ENOMEM. */
int det_map_put(det_map_t *self, const char *key, long val);
void det_map_clear(det_map_t *self);
size_t det_map_count(const det_map_t *self);

/* A table of named entities (a node, or a node and a tag value) with the
 * little state threshold and heartbeat keep about each. */
typedef struct {
    char *key;                 /* owns node and device too */
    const char *node;
    const char *device;        /* "" for a whole node */
    uint64_t seen_run;         /* last run whose data named it */
    uint64_t hold_run;         /* last run its condition held */
    int64_t last_ts;           /* newest data time seen */
    int64_t t0;                /* detector-specific time */
    double value;              /* detector-specific figure */
    double held;               /* detector-specific figure */
    int answered;
    int active;                /* reported, not cleared since */
} det_ent_t;

typedef struct {
    det_ent_t *v;
    size_t n, cap;
    det_map_t *map;
} det_ents_t;

/* Index of the entity (node, device), created with last_ts = now if new;
 * -1 when out of memory. */
long det_ents_get(det_ents_t *t, const char *node, const char *device,
                  int64_t now);
/* Forgets entities whose seen_run is older than `keep_run`, once they are
 * the majority of a table of 1024 or more.  0 or TELEM_ENOMEM. */
int det_ents_prune(det_ents_t *t, uint64_t keep_run);
void det_ents_free(det_ents_t *t);

/* The whole state of a detector that keeps an entity table and counts its
 * runs (heartbeat, threshold, proc-threshold); the two functions are its
 * vtable's create (0 or TELEM_ENOMEM) and destroy. */
typedef struct {
    det_ents_t ents;
    uint64_t run;
} det_ents_state_t;

int det_ents_state_create(void **state);
void det_ents_state_destroy(void **state);

/* Writes the active entities as "n1, n2/gpu0" into buf ("" when none),
 * ending " and N more" where buf is too small for all.  Returns how many
 * are active. */
size_t det_ents_active_list(const det_ents_t *t, char *buf, size_t size);

/* A check for a string parameter that must be set: 0, or TELEM_EINVAL with
 * "NAME must not be empty" in why. */
int det_params_nonempty(const det_params_t *p, size_t i, const char *name,
                        char *why, size_t why_size);

/* Writes "a\x1fb\x1fc" (parts joined by the unit separator, which no name
 * holds) into buf.  Returns buf, or NULL if it does not fit. */
char *det_key(char *buf, size_t size, const char *a, const char *b,
              const char *c);

/* Formats a duration in seconds for sentences: "850 ms", "12.5 s". */
void det_fmt_seconds(char *buf, size_t size, double s);

#endif
