/* det_ents.c - entity tables of the built-in detectors (det_ents.h).
 *
 * Entities are kept in an array indexed through a det_map of their keys;
 * this file calls det_map.c and det_util.c, neither calls back.
 */
#include "det_ents.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det_util.h"
#include "telem_error.h"
#include "telem_grow.h"

long
det_ents_get(det_ents_t *t, const char *node, const char *device,
             int64_t now)
{
    char key[2 * 256 + 8];
    if (!device)
        device = "";
    if (!det_util_key(key, sizeof key, node, device, NULL))
        return -1;
    if (!t->map && !(t->map = det_map_new()))
        return -1;
    long i = det_map_get(t->map, key);
    if (i >= 0)
        return i;
    if (telem_grow((void **) &t->v, &t->cap, t->n + 1, sizeof *t->v, 16))
        return -1;
    det_ents_entry_t *e = &t->v[t->n];
    memset(e, 0, sizeof *e);
    size_t kl = strlen(key) + 1, nl = strlen(node) + 1, dl = strlen(device) + 1;
    if (!(e->key = malloc(kl + nl + dl)) ||
        det_map_put(t->map, key, (long) t->n)) {
        free(e->key);
        return -1;
    }
    memcpy(e->key, key, kl);
    e->node = memcpy(e->key + kl, node, nl);
    e->device = memcpy(e->key + kl + nl, device, dl);
    e->last_ts = now;
    return (long) t->n++;
}

int
det_ents_prune(det_ents_t *t, uint64_t keep_run)
{
    size_t stale = 0, k = 0;
    for (size_t i = 0; i < t->n; i++)
        stale += t->v[i].seen_run < keep_run;
    if (t->n < 1024 || 2 * stale < t->n)
        return 0;
    det_map_clear(t->map);
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].seen_run < keep_run) {
            free(t->v[i].key);
            continue;
        }
        t->v[k] = t->v[i];
        if (det_map_put(t->map, t->v[k].key, (long) k))
            return TELEM_ENOMEM;
        k++;
    }
    t->n = k;
    return 0;
}

void
det_ents_free(det_ents_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].key);
    free(t->v);
    det_map_destroy(&t->map);
    memset(t, 0, sizeof *t);
}

void *
det_ents_state_new(void)
{
    return calloc(1, sizeof(det_ents_state_t));
}

void
det_ents_state_destroy(void **state)
{
    det_ents_state_t *st = *state;
    det_ents_free(&st->ents);
    free(st);
    *state = NULL;
}

size_t
det_ents_active_list(const det_ents_t *t, char *buf, size_t size)
{
    size_t len = 0, shown = 0, total = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < t->n; i++) {
        const det_ents_entry_t *e = &t->v[i];
        if (!e->active)
            continue;
        total++;
        if (len + strlen(e->node) + strlen(e->device) + 8 >= size)
            continue;
        len += (size_t) snprintf(buf + len, size - len, "%s%s%s%s",
                                 shown++ ? ", " : "", e->node,
                                 *e->device ? "/" : "", e->device);
    }
    if (total > shown)
        snprintf(buf + len, size - len, " and %zu more", total - shown);
    return total;
}

