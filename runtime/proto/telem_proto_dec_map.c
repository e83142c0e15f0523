/* telem_proto_dec_map.c - the decoding helpers every message family
 * uses: growing the decoder's typed vectors, copying strings into its
 * arena, recording the reason for a failure, and decoding a map through a
 * field table (telem_proto_int.h) or a tags map.
 *
 * Call order: called by the families (telem_proto_ingest.c, _req.c,
 * _dict.c, _watch.c) and by telem_proto_dec.c; calls only the reader
 * (telem_proto_rd.c), never the families or the dispatch.
 */
#include "telem_proto_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- memory, errors */

int
tp_reserve(tp_vec_t *v, size_t n, size_t sz)
{
    if (n <= v->cap)
        return 0;
    /* Not telem_grow(): when doubling is not enough this jumps to exactly
     * n, so the string arena reserved at a frame's size (up to 64 MiB)
     * is not rounded up to twice that. */
    size_t cap = v->cap ? v->cap * 2 : 16;
    if (cap < n)
        cap = n;
    if (cap > SIZE_MAX / sz)
        return TELEM_ENOMEM;
    void *p = realloc(v->p, cap * sz);
    if (!p)
        return TELEM_ENOMEM;
    v->p = p;
    v->cap = cap;
    return 0;
}

int
tp_fail(telem_proto_decoder_t *d, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    return rc;
}

int
tp_wrap(telem_proto_decoder_t *d, int rc, const char *fmt, ...)
{
    char pre[64];
    char old[sizeof d->err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, d->err, sizeof old);
    snprintf(d->err, sizeof d->err, "%s: %.*s", pre,
             (int) (sizeof d->err - sizeof pre - 3), old);
    return rc;
}

int
tp_take_str(telem_proto_decoder_t *d, telem_rd_t *r, size_t max, bool nonempty,
            const char **out)
{
    const uint8_t *s;
    uint32_t len;
    int rc = tp_rd_bytes(r, false, &s, &len);
    if (rc)
        return rc;
    if (len > max)
        return tp_bad(r, TELEM_ETOOBIG, "is too long");
    if (nonempty && len == 0)
        return tp_bad(r, TELEM_EPROTO, "is empty");
    if (memchr(s, 0, len))
        return tp_bad(r, TELEM_EPROTO, "contains a NUL byte");
    tp_vec_t *a = &d->vec[TP_VEC_STR];
    if (d->nstr + len + 1 > a->cap)
        return tp_bad(r, TELEM_EPROTO, "overflows the string arena");
    char *c = (char *) a->p + d->nstr;
    memcpy(c, s, len);
    c[len] = '\0';
    d->nstr += len + 1;
    *out = c;
    return 0;
}

/* ------------------------------------------------------------ map tables */

static size_t
s_str_max(int kind)
{
    return kind == TP_K_TEXT ? TELEM_TEXT_MAX : TELEM_NAME_MAX;
}

/* Stores a checked 32-bit or 8-bit value of field f at p. */
static int
s_store_small(telem_rd_t *r, const tp_field_t *f, char *p, int64_t i)
{
    if (f->kind != TP_K_BOOL8 && f->kind != TP_K_BOOL32 &&
        (i < f->min || i > f->max))
        return tp_bad(r, TELEM_EPROTO, "is out of range");
    if (f->kind == TP_K_BOOL8) {
        uint8_t b = (uint8_t) i;
        memcpy(p, &b, 1);
    } else if (f->kind == TP_K_U32) {
        uint32_t w = (uint32_t) i;
        memcpy(p, &w, 4);
    } else {
        int32_t w = (int32_t) i;
        memcpy(p, &w, 4);
    }
    return 0;
}

static int
s_dec_field(telem_proto_decoder_t *d, telem_rd_t *r, const tp_field_t *f,
            void *base)
{
    char *p = (char *) base + f->off;
    int64_t i = 0;
    uint64_t u;
    int rc;
    switch (f->kind) {
    case TP_K_NAME: case TP_K_STR: case TP_K_TEXT:
        return tp_take_str(d, r, s_str_max(f->kind), f->kind == TP_K_NAME,
                           (const char **) (void *) p);
    case TP_K_U64:
        if ((rc = tp_rd_u64(r, &u)) == 0)
            memcpy(p, &u, sizeof u);
        return rc;
    case TP_K_I64:
        if ((rc = tp_rd_i64(r, &i)) == 0)
            memcpy(p, &i, sizeof i);
        return rc;
    case TP_K_BOOL8: case TP_K_BOOL32:
        rc = tp_rd_bool(r, &i);
        break;
    case TP_K_I32: case TP_K_U32:
        rc = tp_rd_i64(r, &i);
        break;
    default:
        return tp_rd_skip(r);
    }
    return rc ? rc : s_store_small(r, f, p, i);
}

static int
s_lookup(const tp_field_t *tab, int ntab, const uint8_t *k, uint32_t klen)
{
    for (int i = 0; i < ntab; i++)
        if (tab[i].klen == klen && memcmp(tab[i].key, k, klen) == 0)
            return i;
    return -1;
}

int
tp_dec_map(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t nkeys,
           const tp_field_t *tab, int ntab, void *base, tp_custom_fn custom)
{
    uint32_t seen = 0;
    for (int j = 0; j < ntab; j++)
        if (tab[j].kind == TP_K_NAME || tab[j].kind == TP_K_STR ||
            tab[j].kind == TP_K_TEXT)
            *(const char **) (void *) ((char *) base + tab[j].off) = "";
    for (uint32_t i = 0; i < nkeys; i++) {
        const uint8_t *k;
        uint32_t klen;
        int rc = tp_rd_bytes(r, false, &k, &klen);
        if (rc)
            return tp_fail(d, rc, "key %u %s", i, r->why);
        int j = s_lookup(tab, ntab, k, klen);
        if (j < 0) {
            if ((rc = tp_rd_skip(r)) != 0)
                return tp_fail(d, rc, "value of key %u %s", i, r->why);
            continue;
        }
        if (seen & (1u << j))
            return tp_fail(d, TELEM_EPROTO, "duplicate key \"%s\"", tab[j].key);
        seen |= 1u << j;
        if (tab[j].kind == TP_K_X) {
            if ((rc = custom(d, r, j, base)) != 0)
                return rc;
        } else if ((rc = s_dec_field(d, r, &tab[j], base)) != 0) {
            return tp_fail(d, rc, "%s %s", tab[j].key, r->why);
        }
    }
    for (int j = 0; j < ntab; j++)
        if (tab[j].req && !(seen & (1u << j)))
            return tp_fail(d, TELEM_EPROTO, "missing \"%s\"", tab[j].key);
    return 0;
}

int
tp_dec_tags(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t *n)
{
    int rc = tp_rd_count(r, true, TP_MIN_TAG, n);
    if (rc)
        return tp_fail(d, rc, "tags %s", r->why);
    if (*n > TELEM_TAGS_MAX)
        return tp_fail(d, TELEM_ETOOBIG, "%u tags, the limit is %d", *n,
                       TELEM_TAGS_MAX);
    if (*n == 0)
        return 0;   /* the vector may not exist yet: no NULL + 0 */
    tp_vec_t *v = &d->vec[TP_VEC_TAGS];
    if ((rc = tp_reserve(v, d->ntags + *n, sizeof(telem_tag_t))) != 0)
        return tp_fail(d, rc, "out of memory");
    telem_tag_t *t = (telem_tag_t *) v->p + d->ntags;
    for (uint32_t i = 0; i < *n; i++) {
        if ((rc = tp_take_str(d, r, TELEM_NAME_MAX, true, &t[i].key)) != 0)
            return tp_fail(d, rc, "tag %u key %s", i, r->why);
        if ((rc = tp_take_str(d, r, TELEM_NAME_MAX, true, &t[i].value)) != 0)
            return tp_fail(d, rc, "tag \"%s\" value %s", t[i].key, r->why);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(t[j].key, t[i].key) == 0)
                return tp_fail(d, TELEM_EPROTO, "duplicate tag \"%s\"", t[i].key);
    }
    d->ntags += *n;
    return 0;
}
