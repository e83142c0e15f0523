/* telem_hist_stub.c - placeholder bodies until the implementation lands. */
#include "telem_hist.h"

telem_hist_t *
telem_hist_new(int *err)
{
    (void) err;
    return NULL;
}

void
telem_hist_destroy(telem_hist_t **self_p)
{
    (void) self_p;

}

int
telem_hist_add_file(telem_hist_t *self, const char *path,
                        telem_seg_damage_t *damage)
{
    (void) self;
    (void) path;
    (void) damage;
    return TELEM_EUNSUPPORTED;
}

int
telem_hist_add_dir(telem_hist_t *self, const char *dir,
                       telem_seg_damage_t *damage)
{
    (void) self;
    (void) dir;
    (void) damage;
    return TELEM_EUNSUPPORTED;
}

uint32_t
telem_hist_nnodes(const telem_hist_t *self)
{
    (void) self;
    return 0;
}

const char *
telem_hist_node(const telem_hist_t *self, uint32_t i)
{
    (void) self;
    (void) i;
    return NULL;
}

int
telem_hist_snapshot(telem_hist_t *self, const char *node,
                        const char **json, size_t *len, int64_t *created_ns)
{
    (void) self;
    (void) node;
    (void) json;
    (void) len;
    (void) created_ns;
    return TELEM_EUNSUPPORTED;
}

int
telem_hist_meta_walk(const telem_hist_t *self, const char *node,
                         int (*fn)(void *arg, const char *node,
                                   const telem_meta_t *m),
                         void *arg)
{
    (void) self;
    (void) node;
    (void) fn;
    (void) arg;
    return TELEM_EUNSUPPORTED;
}

int
telem_hist_query(telem_hist_t *self, const char *node,
                     const telem_store_query_t *q, telem_hist_series_fn fn,
                     void *arg)
{
    (void) self;
    (void) node;
    (void) q;
    (void) fn;
    (void) arg;
    return TELEM_EUNSUPPORTED;
}

int
telem_hist_chunks(telem_hist_t *self, const char *node, int64_t since_ns,
                      int (*fn)(void *arg, const telem_chunk_t *c),
                      void *arg)
{
    (void) self;
    (void) node;
    (void) since_ns;
    (void) fn;
    (void) arg;
    return TELEM_EUNSUPPORTED;
}

void
telem_hist_stats(const telem_hist_t *self, telem_hist_stats_t *out)
{
    (void) self;
    (void) out;

}
