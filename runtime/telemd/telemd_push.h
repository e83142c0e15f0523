/* telemd_push.h - what the node agent does with pushed samples that are
 * not plain values: counter increments (telem_counter_add()), summed over
 * every process of the node into one counter series per metric and label
 * set.
 *
 * A counter increment carries the metric and its labels as the sample's
 * own tags; the batch's per-process tags (pid, rank) are not used, so
 * increments from every process of the node meet in one series, keyed by
 * host and the labels, whose value is the running total
 * (telem_store_counter_add()).  What arrives here comes from a socket and
 * is checked again: a metric name and label keys in Prometheus's syntax
 * (telem_promname.h), a finite, non-negative increment, a known kind.
 * A refused sample (those, or a counter series over the store's cap) is
 * counted and logged with a rate limit; the rest of its batch is stored.
 *
 * Not thread-safe: the agent's thread owns it, with the store.
 */
#ifndef TELEMD_PUSH_H
#define TELEMD_PUSH_H

#include <stdint.h>

#include "telem_proto.h"
#include "telem_store.h"

typedef struct telemd_push telemd_push_t;

/* Returns the pushed-sample handler of `store` (not owned; it must
 * outlive the handler) on node `node` (copied), or NULL when out of
 * memory. */
telemd_push_t *telemd_push_new(telem_store_t *store, const char *node);

/* Frees it; accepts NULL and nulls *self_p. */
void telemd_push_destroy(telemd_push_t **self_p);

/* Files one sample whose kind is not TELEM_SAMPLE_VALUE (the caller has
 * applied the node's level).  Returns 0, or the reason it was refused
 * (TELEM_EINVAL, TELEM_EFULL, TELEM_ENOMEM), counted. */
int telemd_push_sample(telemd_push_t *self, const telem_sample_t *s,
                       int64_t now_ns);

/* Samples refused since the handler was made. */
uint64_t telemd_push_refused(const telemd_push_t *self);

#endif
