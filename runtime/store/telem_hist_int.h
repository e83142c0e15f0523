/* telem_hist_int.h - the history index's structures, shared by its
 * building half (telem_hist.c) and its reading half (telem_hist_query.c).
 * Internal to part store.
 */
#ifndef TELEM_HIST_INT_H
#define TELEM_HIST_INT_H

#include <stdint.h>

#include "telem_hist.h"
#include "telem_seg_int.h"

/* One kept block version: where its BLOCK record lies.  48 bytes. */
typedef struct {
    uint64_t offset;              /* of the record */
    uint64_t first_seq;
    int64_t first_ts;
    int64_t last_ts;
    uint32_t file;
    uint32_t size;                /* of the whole record */
    uint32_t npoints;
    uint32_t closed;
} hist_blk_t;

typedef struct {
    uint32_t node;
    uint32_t key_len;
    const char *key;              /* in the series key set, after the node */
    int counter;
    hist_blk_t *blk;
    uint32_t nblk, cap;
    int sorted;                   /* blk in (first_seq, file, offset) order */
} hist_ser_t;

typedef struct {
    char *name;
    seg_keys_t metrics;           /* metric names with NUL */
    telem_meta_t *metas;          /* strings owned */
    size_t meta_cap;
    int has_snap;
    uint32_t snap_file;
    uint64_t snap_offset;
    int64_t snap_created;
    char *snap_json;              /* read on demand */
    size_t snap_len;
} hist_node_t;

typedef struct {
    int fd;
    char *path;
} hist_file_t;

struct telem_hist {
    hist_file_t *files;
    size_t nfiles, files_cap;
    seg_keys_t node_keys;         /* node names with NUL */
    hist_node_t *nodes;
    size_t nodes_cap;
    uint32_t *node_order;         /* node numbers sorted by name */
    seg_keys_t ser_keys;          /* u32 node number, then the key */
    hist_ser_t *ser;
    size_t ser_cap;
    uint32_t *ser_order;          /* series sorted by node name, key */
    int dirty;                    /* the orders need building again */
    telem_hist_note_t *notes;     /* job events (json owned) */
    size_t nnotes, notes_cap;
    int notes_dirty;              /* to sort and merge again */
    char **graveyard;             /* replaced snapshot texts */
    size_t ngrave, grave_cap;
    telem_hist_stats_t st;
    /* query scratch */
    seg_buf_t rec;
    int64_t *ts;
    double *val;
    uint32_t *src;
    size_t pts_cap;
    int64_t *ts2;
    double *val2;
    uint32_t *src2;
    size_t pts2_cap;
};

/* Builds node_order and ser_order when dirty, and sorts every series'
 * blocks.  Returns 0 or TELEM_ENOMEM. */
int hist_prepare(telem_hist_t *self);

/* Reads the BLOCK record of b: *block, *len point into self->rec. */
int hist_block(telem_hist_t *self, const hist_blk_t *b, const void **block,
               size_t *len);

/* Keeps a copy of the ANNOTATION record r.  0 or TELEM_ENOMEM. */
int hist_note_add(telem_hist_t *self, const telem_seg_rec_t *r);

/* Frees the notes (telem_hist_destroy). */
void hist_notes_free(telem_hist_t *self);

/* The meta of metric in node, or NULL. */
const telem_meta_t *hist_meta(const telem_hist_t *self, uint32_t node,
                              const char *metric);

#endif
