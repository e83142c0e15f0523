/* det_ents.h - entity tables for the built-in detectors (internal): the
 * little state threshold, proc-threshold and heartbeat keep about each
 * node, or node and tag value.
 *
 * Thread safety: none; one owner.
 */
#ifndef DET_ENTS_H
#define DET_ENTS_H

#include <stddef.h>
#include <stdint.h>

#include "det.h"
#include "det_map.h"

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
} det_ents_entry_t;

typedef struct {
    det_ents_entry_t *v;
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
 * vtable's create (the state, or NULL when out of memory) and destroy. */
typedef struct {
    det_ents_t ents;
    uint64_t run;
} det_ents_state_t;

void *det_ents_state_new(void);
void det_ents_state_destroy(void **state);

/* Writes the active entities as "n1, n2/gpu0" into buf ("" when none),
 * ending " and N more" where buf is too small for all.  Returns how many
 * are active. */
size_t det_ents_active_list(const det_ents_t *t, char *buf, size_t size);

#endif
