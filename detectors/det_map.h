/* det_map.h - a small string-keyed hash map for the built-in detectors'
 * per-device and per-node state (internal).
 *
 * Open addressing with linear probing over a power-of-two table; keys are
 * copied.  Thread safety: none; one owner.
 */
#ifndef DET_MAP_H
#define DET_MAP_H

#include <stddef.h>

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

#endif
