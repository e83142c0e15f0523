/* agg_dump.h - PRIVATE to telem_view: the dump data source (agg_src.h)
 * over dump and segment files (telem_hist.h), and what --export needs of
 * it.
 *
 * Thread safety: the source's functions may run on several threads at
 * once (a mutex serialises the history); agg_dump_hist() is for a caller
 * that holds agg_dump_lock() or is alone (--export). */
#ifndef AGG_DUMP_H
#define AGG_DUMP_H

#include <stddef.h>

#include "agg_src.h"
#include "telem_hist.h"

typedef struct agg_dump agg_dump_t;

/* Reads the n files (dumps or segments; a directory: its *.tseg and
 * *.tdump files, else those of each NODE/log in it) into one history; a
 * damaged file
 * is logged (warning) and served as far as it reads.  NULL with a
 * sentence in why when a file cannot be read at all (missing, not a telem
 * file, a newer version) or memory runs out. */
agg_dump_t *agg_dump_new(const char *const *files, size_t n, char *why,
                         size_t why_size);

/* Accepts NULL or a pointer to NULL; nulls the pointer. */
void agg_dump_destroy(agg_dump_t **self_p);

void agg_dump_lock(agg_dump_t *self);
void agg_dump_unlock(agg_dump_t *self);
telem_hist_t *agg_dump_hist(agg_dump_t *self);

/* The source; its src argument is the agg_dump_t. */
extern const agg_src_vt_t agg_dump_vt;

#endif
