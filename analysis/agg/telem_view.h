/* telem_view.h - PRIVATE to telem_view: what its main (telem_view.c)
 * and its export (telem_view_export.c) share. */
#ifndef TELEM_VIEW_H
#define TELEM_VIEW_H

#include <stdint.h>
#include <stdio.h>

#include "telem_hist.h"

typedef struct {
    int json;                      /* 0: CSV */
    const char *const *metrics;    /* NULL: every metric */
    size_t nmetrics;
    const telem_tag_t *tags;       /* exact filters; "*" = present */
    size_t ntags;
    int64_t start_ns;              /* 0: the history's beginning */
    int64_t end_ns;                /* 0: its end */
} telem_view_export_t;

/* Writes the selected points of h to out (telem_view_export.c documents
 * the formats); *series and *points receive the counts written.
 * Returns 0, TELEM_EIO (out failed), TELEM_EINVAL (bad selection) or
 * TELEM_ENOMEM. */
int telem_view_export(telem_hist_t *h, const telem_view_export_t *x,
                      FILE *out, uint64_t *series, uint64_t *points);

#endif
