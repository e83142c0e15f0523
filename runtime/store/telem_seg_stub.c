/* telem_seg_stub.c - placeholder bodies until the implementation lands. */
#include "telem_seg.h"

void
telem_seglog_config_default(telem_seglog_config_t *cfg)
{
    (void) cfg;

}

telem_seglog_t *
telem_seglog_open(const telem_seglog_config_t *cfg, int *err)
{
    (void) cfg;
    (void) err;
    return NULL;
}

void
telem_seglog_close(telem_seglog_t **self_p)
{
    (void) self_p;

}

int
telem_seglog_put_chunk(telem_seglog_t *self, const telem_chunk_t *c)
{
    (void) self;
    (void) c;
    return TELEM_EUNSUPPORTED;
}

int
telem_seglog_put_meta(telem_seglog_t *self, const telem_meta_t *m)
{
    (void) self;
    (void) m;
    return TELEM_EUNSUPPORTED;
}

int
telem_seglog_put_snapshot(telem_seglog_t *self, const char *json,
                              size_t len, int64_t created_ns)
{
    (void) self;
    (void) json;
    (void) len;
    (void) created_ns;
    return TELEM_EUNSUPPORTED;
}

int
telem_seglog_commit(telem_seglog_t *self, int64_t now_ns)
{
    (void) self;
    (void) now_ns;
    return TELEM_EUNSUPPORTED;
}

void
telem_seglog_discard(telem_seglog_t *self)
{
    (void) self;

}

const char *
telem_seglog_path(const telem_seglog_t *self)
{
    (void) self;
    return NULL;
}

void
telem_seglog_stats(const telem_seglog_t *self, telem_seglog_stats_t *out)
{
    (void) self;
    (void) out;

}

telem_dump_t *
telem_dump_open(const char *path, int *err)
{
    (void) path;
    (void) err;
    return NULL;
}

int
telem_dump_put_chunk(telem_dump_t *self, const char *node,
                         const telem_chunk_t *c)
{
    (void) self;
    (void) node;
    (void) c;
    return TELEM_EUNSUPPORTED;
}

int
telem_dump_put_meta(telem_dump_t *self, const char *node,
                        const telem_meta_t *m)
{
    (void) self;
    (void) node;
    (void) m;
    return TELEM_EUNSUPPORTED;
}

int
telem_dump_put_snapshot(telem_dump_t *self, const char *node,
                            const char *json, size_t len, int64_t created_ns)
{
    (void) self;
    (void) node;
    (void) json;
    (void) len;
    (void) created_ns;
    return TELEM_EUNSUPPORTED;
}

int
telem_dump_close(telem_dump_t **self_p)
{
    (void) self_p;
    return TELEM_EUNSUPPORTED;
}

int
telem_seg_info(const char *path, telem_seg_info_t *info)
{
    (void) path;
    (void) info;
    return TELEM_EUNSUPPORTED;
}

int
telem_seg_read(const char *path, telem_seg_rec_fn fn, void *arg,
                   telem_seg_info_t *info, telem_seg_damage_t *damage)
{
    (void) path;
    (void) fn;
    (void) arg;
    (void) info;
    (void) damage;
    return TELEM_EUNSUPPORTED;
}

int
telem_seg_read_index(const char *path, telem_seg_index_fn fn, void *arg)
{
    (void) path;
    (void) fn;
    (void) arg;
    return TELEM_EUNSUPPORTED;
}

int
telem_seg_read_at(int fd, uint64_t offset, telem_seg_rec_fn fn,
                      void *arg)
{
    (void) fd;
    (void) offset;
    (void) fn;
    (void) arg;
    return TELEM_EUNSUPPORTED;
}
