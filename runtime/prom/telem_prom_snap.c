/* telem_prom_snap.c - the snapshot of a node's latest samples: built on the
 * store's thread, one record per series appended to one block of bytes,
 * and read back by the render on another thread.
 *
 * Calls telem_prom_name.c (the buffer) only; telem_prom_render.c calls
 * tprom_block_parse() here.  The layout is in telem_prom_int.h.  Why one
 * block of offsets rather than a tree of pointers: it is built with one
 * growing allocation (no allocation per series while the store is held),
 * handed over in one piece (a message's bytes can carry it between
 * threads, and a message dropped on the way frees it whole), and read
 * back with bounds checks, so a render never trusts what it was handed.
 * A record repeats its metric's unit and doc only when the metric changes
 * (the store walks a metric's series together), so a scrape of many
 * series of one metric copies its doc once.
 */
#include "telem_prom_int.h"

#include <stdlib.h>
#include <string.h>

struct telem_prom_snap {
    tprom_buf_t buf;            /* header, then the records */
    size_t count;
    size_t last_metric;         /* offset of the last record's metric */
};

telem_prom_snap_t *
telem_prom_snap_new(void)
{
    return calloc(1, sizeof(telem_prom_snap_t));
}

void
telem_prom_snap_destroy(telem_prom_snap_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->buf.p);
    free(*self_p);
    *self_p = NULL;
}

size_t
telem_prom_snap_count(const telem_prom_snap_t *self)
{
    return self ? self->count : 0;
}

static void
s_put_str(tprom_buf_t *b, const char *s)
{
    tprom_buf_put(b, s, strlen(s) + 1);
}

static bool
s_strings_ok(const telem_series_t *s)
{
    if (!s->metric || !s->unit || !s->doc || (s->ntags && !s->tags))
        return false;
    for (uint32_t i = 0; i < s->ntags; i++)
        if (!s->tags[i].key || !s->tags[i].value)
            return false;
    return true;
}

/* Appends the record's strings and padding to b. */
static void
s_put_strings(tprom_buf_t *b, const telem_series_t *s, bool inherit)
{
    s_put_str(b, s->metric);
    if (!inherit) {
        s_put_str(b, s->unit);
        s_put_str(b, s->doc);
    }
    for (uint32_t i = 0; i < s->ntags; i++) {
        s_put_str(b, s->tags[i].key);
        s_put_str(b, s->tags[i].value);
    }
    static const char zeros[8];
    tprom_buf_put(b, zeros, (8 - b->len % 8) % 8);
}

int
telem_prom_snap_add(telem_prom_snap_t *self, const telem_series_t *s,
                    bool described)
{
    if (!self || !s || !s_strings_ok(s) || s->ntags > 255 ||
        (s->npoints && (!s->ts || !s->values)))
        return TELEM_EINVAL;
    if (s->npoints == 0)
        return 0;
    tprom_buf_t *b = &self->buf;
    size_t start = b->len;
    if (start == 0) {             /* the header, filled in at take */
        static const char zeros[TPROM_HDR_SIZE];
        tprom_buf_put(b, zeros, sizeof zeros);
        start = b->len;
    }
    bool inherit = self->count > 0 &&
                   strcmp(b->p + self->last_metric, s->metric) == 0;
    tprom_rec_t rec = {
        .type = !described ? TPROM_UNTYPED
                : s->type == TELEM_METRIC_COUNTER ? TPROM_COUNTER
                                                  : TPROM_GAUGE,
        .ntags = (uint8_t) s->ntags,
        .flags = inherit ? TPROM_REC_INHERIT : 0,
        .ts_ns = s->ts[s->npoints - 1],
        .value = s->values[s->npoints - 1],
    };
    tprom_buf_put(b, (const char *) &rec, sizeof rec);
    s_put_strings(b, s, inherit);
    if (b->failed || b->len - start > UINT32_MAX) {
        b->len = start;           /* keep what was there */
        b->failed = false;
        return TELEM_ENOMEM;
    }
    rec.size = (uint32_t) (b->len - start);
    memcpy(b->p + start, &rec, sizeof rec);
    self->last_metric = start + sizeof rec;
    self->count++;
    return 0;
}

int
telem_prom_snap_take(telem_prom_snap_t *self, void **block_p, size_t *len)
{
    if (!self || !block_p || !len)
        return TELEM_EINVAL;
    tprom_buf_t *b = &self->buf;
    if (b->len == 0) {
        static const char zeros[TPROM_HDR_SIZE];
        tprom_buf_put(b, zeros, sizeof zeros);
        if (b->failed) {
            b->failed = false;
            return TELEM_ENOMEM;
        }
    }
    uint32_t magic = TPROM_MAGIC;
    uint64_t count = self->count;
    memcpy(b->p, &magic, sizeof magic);
    memcpy(b->p + 8, &count, sizeof count);
    *block_p = b->p;
    *len = b->len;
    *self = (telem_prom_snap_t) { 0 };
    return 0;
}

/* --- reading a block back ------------------------------------------------- */

/* The string at *pos inside [.., end): its start, with *pos moved past its
 * NUL; NULL when no NUL ends it there. */
static const char *
s_take_str(const char *base, size_t *pos, size_t end)
{
    const char *s = base + *pos;
    const char *nul = memchr(s, '\0', end - *pos);
    if (!nul)
        return NULL;
    *pos = (size_t) (nul - base) + 1;
    return s;
}

/* Reads the record at base[pos..end) into *e; `prev` is the record before
 * (NULL for the first).  Returns its size, 0 when it is malformed. */
static size_t
s_parse_rec(const char *base, size_t pos, size_t end, tprom_ent_t *e,
            const tprom_ent_t *prev)
{
    tprom_rec_t rec;
    if (end - pos < sizeof rec)
        return 0;
    memcpy(&rec, base + pos, sizeof rec);
    if (rec.size < sizeof rec || rec.size % 8 || rec.size > end - pos ||
        rec.type > TPROM_UNTYPED || rec.flags > TPROM_REC_INHERIT)
        return 0;
    bool inherit = rec.flags & TPROM_REC_INHERIT;
    size_t stop = pos + rec.size, at = pos + sizeof rec;
    e->metric = s_take_str(base, &at, stop);
    if (!e->metric || (inherit && (!prev || strcmp(prev->metric, e->metric))))
        return 0;
    e->unit = inherit ? prev->unit : s_take_str(base, &at, stop);
    e->doc = inherit ? prev->doc : s_take_str(base, &at, stop);
    e->tags = base + at;
    for (uint32_t i = 0; i < 2u * rec.ntags; i++)
        if (!s_take_str(base, &at, stop))
            return 0;
    if (!e->unit || !e->doc)
        return 0;
    e->ntags = rec.ntags;
    e->type = rec.type;
    e->ts_ns = rec.ts_ns;
    e->value = rec.value;
    return rec.size;
}

int
tprom_block_parse(const void *block, size_t len, tprom_ent_t **ents_p,
                  size_t *n)
{
    const char *base = block;
    uint32_t magic;
    uint64_t count;
    *ents_p = NULL;
    *n = 0;
    if (len < TPROM_HDR_SIZE || len % 8)
        return TELEM_EINVAL;
    memcpy(&magic, base, sizeof magic);
    memcpy(&count, base + 8, sizeof count);
    /* A record takes at least 32 bytes: the count is bounded by len. */
    if (magic != TPROM_MAGIC || count > (len - TPROM_HDR_SIZE) / 32)
        return TELEM_EINVAL;
    tprom_ent_t *ents = count ? malloc(count * sizeof *ents) : NULL;
    if (count && !ents)
        return TELEM_ENOMEM;
    size_t pos = TPROM_HDR_SIZE;
    for (uint64_t i = 0; i < count; i++) {
        size_t size = s_parse_rec(base, pos, len, &ents[i],
                                  i ? &ents[i - 1] : NULL);
        if (!size) {
            free(ents);
            return TELEM_EINVAL;
        }
        pos += size;
    }
    if (pos != len) {
        free(ents);
        return TELEM_EINVAL;
    }
    *ents_p = ents;
    *n = (size_t) count;
    return 0;
}
