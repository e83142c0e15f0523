/* telemd_reply.c - a query's reply under construction in telemd
 * (telemd_reply.h): deep copies of the series a store or history walk
 * hands out, up to a byte budget.
 *
 * Split from telemd_agent.c: the copying and the size estimate are one
 * concern, apart from what the agent does with requests.
 */
#include "telemd_reply.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"

/* Deep copy of one series for a reply under construction. */
typedef struct {
    telem_series_t s;
    void *mem;                         /* one block: tags, strings, points */
} s_series_copy_t;

struct telemd_reply {
    s_series_copy_t *items;
    uint32_t n;
    size_t cap;
    size_t bytes;                      /* estimate of the encoded size */
    int truncated;
    size_t budget;                     /* bound on bytes */
};

telemd_reply_t *
telemd_reply_new(size_t budget)
{
    telemd_reply_t *r = calloc(1, sizeof *r);
    if (r)
        r->budget = budget;
    return r;
}

void
telemd_reply_reset(telemd_reply_t *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        free(r->items[i].mem);
    r->n = 0;
    r->bytes = 0;
    r->truncated = 0;
}

void
telemd_reply_destroy(telemd_reply_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telemd_reply_reset(*self_p);
    free((*self_p)->items);
    free(*self_p);
    *self_p = NULL;
}

uint32_t
telemd_reply_count(const telemd_reply_t *r)
{
    return r->n;
}

const telem_series_t *
telemd_reply_series(const telemd_reply_t *r, uint32_t i)
{
    return &r->items[i].s;
}

int
telemd_reply_truncated(const telemd_reply_t *r)
{
    return r->truncated;
}

static size_t
s_series_bytes(const telem_series_t *s)
{
    size_t n = strlen(s->metric) + strlen(s->unit) + strlen(s->doc) + 64;
    for (uint32_t i = 0; i < s->ntags; i++)
        n += strlen(s->tags[i].key) + strlen(s->tags[i].value) + 4;
    return n + (size_t) s->npoints * 16;
}

static char *
s_put_str(char **cursor, const char *str)
{
    size_t len = strlen(str) + 1;
    char *out = memcpy(*cursor, str, len);
    *cursor += len;
    return out;
}

int
telemd_series_copy(const telem_series_t *s, telem_series_t *out, void **mem_out)
{
    size_t strs = strlen(s->metric) + strlen(s->unit) + strlen(s->doc) + 3;
    for (uint32_t i = 0; i < s->ntags; i++)
        strs += strlen(s->tags[i].key) + strlen(s->tags[i].value) + 2;
    size_t pts = (size_t) s->npoints * (sizeof(int64_t) + sizeof(double));
    size_t tags = (size_t) s->ntags * sizeof(telem_tag_t);
    char *mem = malloc(pts + tags + strs + 1);
    if (!mem)
        return TELEM_ENOMEM;
    *mem_out = mem;
    *out = *s;
    int64_t *ts = (int64_t *) mem;
    double *vals = (double *) (mem + (size_t) s->npoints * sizeof(int64_t));
    if (s->npoints) {
        memcpy(ts, s->ts, (size_t) s->npoints * sizeof(int64_t));
        memcpy(vals, s->values, (size_t) s->npoints * sizeof(double));
    }
    out->ts = ts;
    out->values = vals;
    telem_tag_t *t = (telem_tag_t *) (mem + pts);
    char *cursor = mem + pts + tags;
    for (uint32_t i = 0; i < s->ntags; i++) {
        t[i].key = s_put_str(&cursor, s->tags[i].key);
        t[i].value = s_put_str(&cursor, s->tags[i].value);
    }
    out->tags = t;
    out->metric = s_put_str(&cursor, s->metric);
    out->unit = s_put_str(&cursor, s->unit);
    out->doc = s_put_str(&cursor, s->doc);
    return 0;
}

int
telemd_reply_collect(void *arg, const telem_series_t *s)
{
    telemd_reply_t *r = arg;
    size_t bytes = s_series_bytes(s);
    if (r->bytes + bytes > r->budget) {
        r->truncated = 1;
        return 1;
    }
    if (telem_grow((void **) &r->items, &r->cap, (size_t) r->n + 1,
                   sizeof *r->items, 64))
        return TELEM_ENOMEM;
    int rc = telemd_series_copy(s, &r->items[r->n].s, &r->items[r->n].mem);
    if (rc)
        return rc;
    r->n++;
    r->bytes += bytes;
    return 0;
}
