/* ac_dump_int.h - what ac_dump.c and ac_dump_main.c share: one dump in
 * progress.  ac_dump_main.c resolves the range, reads the catalog, writes
 * the metas and snapshots and closes the file; ac_dump.c pages the series
 * into blocks. */
#ifndef AC_DUMP_INT_H
#define AC_DUMP_INT_H

#include "ac_dump.h"
#include "telem_seg.h"

typedef struct {
    ac_t *ac;
    ac_dump_opts_t o;
    ac_query_t q;              /* tags, nodes, deadline of every query */
    int64_t start_ns, end_ns;  /* absolute */
    telem_dump_t *dump;
    ac_dump_stats_t st;
    char missing[1024];        /* "n2 (why), ..." */
    char *why;
    size_t why_size;
    int failed;                /* first failure already said in why */
} ac__dump_t;

/* Writes the series of `metrics` (n of them). 0 or a telem_err_t. */
int ac__dump_series(ac__dump_t *d, const char *const *metrics, size_t n);

/* Notes the nodes r names as missing (once each). */
void ac__dump_note_missing(ac__dump_t *d, const ac_result_t *r);

/* Says the first failure in why ("what: strerror") and returns rc. */
int ac__dump_fail(ac__dump_t *d, int rc, const char *what);

#endif
