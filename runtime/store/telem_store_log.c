/* telem_store_log.c - what the flush log needs from the store: handing out
 * blocks not yet flushed, taking blocks back on reload, walking metas.
 *
 * The rules are telem_chunk.h's: sequence numbers per series, versions of
 * the open block (same first_seq, the last one wins whole), stale chunks
 * (below the start of the newest block, and no version of one held).  A
 * closed block goes to the log and comes back byte for byte: flush seals
 * a block before handing it out, load copies it verbatim, so memory and
 * log hold the same bytes and nothing is encoded twice.
 *
 * Points replaced by a newer version of their block count in `evicted`
 * (overwritten), the points of loaded blocks in `loaded`, so npoints ==
 * appended + loaded - expired - evicted holds.
 */
#include <stdlib.h>
#include <string.h>

#include "telem_store_int.h"

/* --- flush ------------------------------------------------------------------- */

static int
s_flush_series(telem_store_t *self, const tstore_metric_t *m,
               tstore_series_t *s, telem_store_chunk_fn fn, void *arg)
{
    tstore_points_t *p = &s->pts;
    telem_chunk_t c = { .key = s->key.bytes, .key_len = s->key.len,
                        .metric = m->name, .tags = s->tags,
                        .ntags = s->ntags, .counter = s->counter };
    tstore_points_seal(self, s, UINT64_MAX);
    for (uint32_t i = 0; i < p->nblk; i++) {
        if (p->blk[i].flushed)
            continue;
        c.first_seq = p->blk[i].first_seq;
        c.block = p->buf + p->blk[i].off;
        c.block_len = tstore_block_size(p, i);
        c.closed = 1;
        int rc = fn(arg, &c);
        if (rc)
            return rc;
        p->blk[i].flushed = 1;
    }
    if (!p->w || telem_block_writer_count(p->w) == 0 || !p->open_dirty)
        return 0;
    const unsigned char *buf;
    int rc = tstore_open_snapshot(self, s, &buf, &c.block_len);
    if (rc)
        return rc;
    c.block = buf;
    c.first_seq = p->open_seq;
    c.closed = 0;
    rc = fn(arg, &c);
    if (rc)
        return rc;
    p->open_flushed = true;
    p->open_dirty = false;
    return 0;
}

int
telem_store_flush(telem_store_t *self, telem_store_chunk_fn fn, void *arg)
{
    if (!self || !fn)
        return TELEM_EINVAL;
    for (tstore_metric_t *m = self->metrics; m; m = m->next)
        for (tstore_series_t *s = m->series; s; s = s->next) {
            int rc = s_flush_series(self, m, s, fn, arg);
            if (rc)
                return rc;
        }
    return 0;
}

int
telem_store_meta_walk(const telem_store_t *self,
                      int (*fn)(void *arg, const telem_meta_t *m), void *arg)
{
    if (!self || !fn)
        return TELEM_EINVAL;
    for (const tstore_metric_t *m = self->metrics; m; m = m->next) {
        if (!m->has_meta)
            continue;
        int rc = fn(arg, &m->meta);
        if (rc)
            return rc;
    }
    return 0;
}

/* --- load --------------------------------------------------------------------- */

/* Splits a canonical key into its metric and tags (pointing into the
 * key) and checks it is canonical: NUL-terminated names within
 * TELEM_NAME_MAX, keys non-empty, strictly sorted. */
static int
s_key_parse(const char *key, uint32_t len, uint32_t *mlen, telem_tag_t *tags,
            uint32_t *ntags)
{
    if (!key || len < 2 || key[len - 1] != '\0')
        return TELEM_EPROTO;
    const char *p = key, *end = key + len;
    const char *str[1 + 2 * TELEM_TAGS_MAX];
    uint32_t n = 0;
    while (p < end) {
        if (n == 1 + 2 * TELEM_TAGS_MAX)
            return TELEM_EPROTO;
        size_t l = strlen(p);      /* stops at the final NUL at worst */
        if (l > TELEM_NAME_MAX || (l == 0 && (n == 0 || n % 2 == 1)))
            return TELEM_EPROTO;
        str[n++] = p;
        p += l + 1;
    }
    if (n % 2 == 0)
        return TELEM_EPROTO;
    *mlen = (uint32_t) strlen(key);
    *ntags = (n - 1) / 2;
    for (uint32_t i = 0; i < *ntags; i++) {
        tags[i].key = str[1 + 2 * i];
        tags[i].value = str[2 + 2 * i];
        if (i > 0 && strcmp(tags[i - 1].key, tags[i].key) >= 0)
            return TELEM_EPROTO;
    }
    return 0;
}

/* Decodes a checked block into the rebuild scratch. */
static int
s_decode(telem_store_t *self, const telem_chunk_t *c,
         const telem_block_info_t *info)
{
    int rc = tstore_scratch_room(self, info->npoints);
    return rc ? rc : telem_block_decode(c->block, c->block_len, self->o_ts,
                                        self->o_val, info->npoints, NULL);
}

/* The series' counter total from the chunk when it is its newest. */
static void
s_counter_total(telem_store_t *self, tstore_series_t *s,
                const telem_chunk_t *c, const telem_block_info_t *info)
{
    if (s->counter && c->first_seq + info->npoints >= s->pts.next_seq
        && s_decode(self, c, info) == 0)
        s->total = self->o_val[info->npoints - 1];
}

/* Takes a new block (not a version of one held). */
static int
s_load_new(telem_store_t *self, tstore_series_t *s, const telem_chunk_t *c,
           const telem_block_info_t *info, int64_t horizon)
{
    tstore_points_t *p = &s->pts;
    uint32_t open_n = p->w ? telem_block_writer_count(p->w) : 0;
    int rc = 0;
    if (open_n > 0 && c->first_seq >= p->open_seq + open_n)
        rc = tstore_points_close(self, s);
    else if (open_n > 0) {
        rc = tstore_points_set_open(self, s, NULL, NULL, 0, p->open_seq);
        self->evicted += open_n;
    }
    if (rc)
        return rc;
    if (info->last_ts < horizon) {
        if (p->next_seq < c->first_seq + info->npoints)
            p->next_seq = c->first_seq + info->npoints;
        p->open_seq = p->next_seq;
        return 0;
    }
    if (c->closed || info->npoints > self->wopts.max_points)
        rc = tstore_points_add_block(self, s, c->block, c->block_len, info,
                                     c->first_seq, true, true);
    else if ((rc = s_decode(self, c, info)) == 0)
        rc = tstore_points_set_open(self, s, self->o_ts, self->o_val,
                                    info->npoints, c->first_seq);
    if (!rc)
        self->loaded += info->npoints;
    return rc;
}

/* Takes a version of the open block. */
static int
s_load_open_version(telem_store_t *self, tstore_series_t *s,
                    const telem_chunk_t *c, const telem_block_info_t *info,
                    int64_t horizon)
{
    tstore_points_t *p = &s->pts;
    uint32_t open_n = telem_block_writer_count(p->w);
    int rc = tstore_points_set_open(self, s, NULL, NULL, 0, c->first_seq);
    if (rc)
        return rc;
    self->evicted += open_n;
    return s_load_new(self, s, c, info, horizon);
}

static int
s_load_into(telem_store_t *self, tstore_series_t *s, const telem_chunk_t *c,
            const telem_block_info_t *info, int64_t horizon)
{
    tstore_points_t *p = &s->pts;
    for (uint32_t i = 0; i < p->nblk; i++)
        if (p->blk[i].first_seq == c->first_seq) {
            uint32_t old = p->blk[i].npoints;
            int rc = tstore_points_replace_block(self, s, i, c->block,
                                                 c->block_len, info);
            if (!rc) {
                self->evicted += old;
                self->loaded += info->npoints;
            }
            return rc;
        }
    uint32_t open_n = p->w ? telem_block_writer_count(p->w) : 0;
    if (open_n > 0 && c->first_seq == p->open_seq)
        return s_load_open_version(self, s, c, info, horizon);
    uint64_t newest = open_n ? p->open_seq
                      : p->nblk ? p->blk[p->nblk - 1].first_seq : 0;
    if (c->first_seq < newest
        || c->first_seq + info->npoints <= p->next_seq) {
        self->stale++;
        return 1;
    }
    return s_load_new(self, s, c, info, horizon);
}

/* Checks the chunk's key and block; the store's scratch tag set receives
 * the key's tags, *info the block's header. */
static int
s_load_check(telem_store_t *self, const telem_chunk_t *c, uint32_t *mlen,
             telem_block_info_t *info)
{
    telem_tag_t tags[TELEM_TAGS_MAX];
    uint32_t ntags;
    int rc = s_key_parse(c->key, c->key_len, mlen, tags, &ntags);
    if (rc)
        return rc;
    if (telem_series_tags_set(&self->scratch, tags, ntags) != 0
        || self->scratch.ntags != ntags
        || self->scratch.len + *mlen + 1 != c->key_len)
        return TELEM_EPROTO;
    if (!c->block)
        return TELEM_EPROTO;
    rc = telem_block_info(c->block, c->block_len, info);
    if (rc)
        return rc;
    if (info->size != c->block_len
        || c->first_seq > UINT64_MAX - info->npoints)
        return TELEM_EPROTO;
    return 0;
}

int
telem_store_load(telem_store_t *self, const telem_chunk_t *c, int64_t now_ns)
{
    if (!self || !c)
        return TELEM_EINVAL;
    uint32_t mlen;
    telem_block_info_t info;
    int rc = s_load_check(self, c, &mlen, &info);
    tstore_series_t *s = NULL;
    if (!rc)
        rc = tstore_series_get(self, c->key, mlen, &self->scratch, &s);
    if (!rc && c->counter)
        rc = tstore_series_make_counter(self, s);
    if (rc)
        return rc;
    rc = s_load_into(self, s, c, &info, tstore_horizon(self, now_ns));
    if (rc == 1)
        return 0;                       /* stale: counted */
    if (rc)
        return rc;
    s_counter_total(self, s, c, &info);
    if (info.last_ts > s->last_ts)
        s->last_ts = info.last_ts;
    return 0;
}
