/* telem_proto_dec.c - the decoder: its object, the string arena and typed
 * vectors, error reasons, table-driven map decoding, and the dispatch of
 * telem_proto_decode() over the registered message families.
 *
 * The decoder keeps its memory between calls (a fresh allocation per
 * frame would dominate the ingest path): one string arena reserved at the
 * frame size (a string of n bytes costs at least n+1 on the wire, so it
 * never moves during a decode) and typed vectors for samples, tags,
 * series, metric names and points.  Tags and points live in vectors that
 * may grow mid-decode, so messages point into them only in a final fix-up
 * pass.  Vectors that a past large frame left far bigger than the current
 * one are released.
 *
 * Message types are not listed here: each family (telem_proto_ingest.c,
 * telem_proto_req.c, ...) exports a tp_family_t of {type, name, decode fn,
 * struct size}, and s_families below names the families.  Message fields
 * are described by tables (telem_proto_int.h) shared with the encoders;
 * only arrays and nested maps have hand-written code.
 */
#include "telem_proto_int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_KEEP_BYTES (1u << 20)   /* vectors above this may be released */

_Static_assert(sizeof(telem_metric_type_t) == sizeof(int32_t), "enum size");
_Static_assert(sizeof(telem_ctl_op_t) == sizeof(int32_t), "enum size");

/* Every message family.  Add a family here (and its declaration in
 * telem_proto_int.h); tp_families_check() guards the numbering. */
static const tp_family_t *const s_families[] = {
    &tp_ingest_family,
    &tp_request_family,
    &tp_dict_family,
    &tp_watch_family,
};
#define S_NFAMILIES (sizeof s_families / sizeof s_families[0])

/* Element sizes of the decoder's vectors, in TP_VEC_* order. */
static const size_t s_vec_elem[TP_VEC_COUNT] = {
    [TP_VEC_STR] = 1,
    [TP_VEC_SAMPLES] = sizeof(telem_sample_t),
    [TP_VEC_TAGS] = sizeof(telem_tag_t),
    [TP_VEC_SERIES] = sizeof(telem_series_t),
    [TP_VEC_METRICS] = sizeof(const char *),
    [TP_VEC_TS] = sizeof(int64_t),
    [TP_VEC_VALS] = sizeof(double),
    [TP_VEC_DICT] = sizeof(telem_dict_op_t) > sizeof(telem_dict_res_t)
                    ? sizeof(telem_dict_op_t) : sizeof(telem_dict_res_t),
    [TP_VEC_WATCH] = 1,
};

/* ------------------------------------------------------- memory, errors */

int
tp_reserve(tp_vec_t *v, size_t n, size_t sz)
{
    if (n <= v->cap)
        return 0;
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

/* Releases a vector that a past large frame left far bigger than this one
 * can need, so one huge message does not pin its memory forever. */
static void
s_trim(tp_vec_t *v, size_t sz, size_t frame)
{
    if (v->cap * sz > S_KEEP_BYTES && v->cap * sz / 16 > frame) {
        free(v->p);
        v->p = NULL;
        v->cap = 0;
    }
}

int
tp_fail(telem_decoder_t *d, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    return rc;
}

int
tp_wrap(telem_decoder_t *d, int rc, const char *fmt, ...)
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
tp_take_str(telem_decoder_t *d, telem_rd_t *r, size_t max, bool nonempty,
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
s_dec_field(telem_decoder_t *d, telem_rd_t *r, const tp_field_t *f, void *base)
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
tp_dec_map(telem_decoder_t *d, telem_rd_t *r, uint32_t nkeys,
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
tp_dec_tags(telem_decoder_t *d, telem_rd_t *r, uint32_t *n)
{
    int rc = tp_rd_count(r, true, TP_MIN_TAG, n);
    if (rc)
        return tp_fail(d, rc, "tags %s", r->why);
    if (*n > TELEM_TAGS_MAX)
        return tp_fail(d, TELEM_ETOOBIG, "%u tags, the limit is %d", *n,
                       TELEM_TAGS_MAX);
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

/* -------------------------------------------------------------- dispatch */

const tp_type_t *
tp_type_find(int64_t type)
{
    for (size_t f = 0; f < S_NFAMILIES; f++)
        for (size_t i = 0; i < s_families[f]->ntypes; i++)
            if (s_families[f]->types[i].type == type)
                return &s_families[f]->types[i];
    return NULL;
}

const tp_family_t *const *
tp_families(size_t *n)
{
    *n = S_NFAMILIES;
    return s_families;
}

/* How many times `type` is registered in fams. */
static size_t
s_count_type(const tp_family_t *const *fams, size_t nfams, int type)
{
    size_t k = 0;
    for (size_t f = 0; f < nfams; f++)
        for (size_t i = 0; i < fams[f]->ntypes; i++)
            k += fams[f]->types[i].type == type;
    return k;
}

int
tp_families_check(const tp_family_t *const *fams, size_t nfams, char *why,
                  size_t whylen)
{
    char dummy[8];
    if (!why)
        why = dummy, whylen = sizeof dummy;
    for (size_t f = 0; f < nfams; f++) {
        const tp_family_t *fam = fams[f];
        for (size_t i = 0; i < fam->ntypes; i++) {
            const tp_type_t *t = &fam->types[i];
            const char *bad = t->type <= 0 || t->type > TP_TYPE_MAX ? "out of range"
                            : !t->name || !t->decode ? "without a name or decoder"
                            : t->size > sizeof(((telem_msg_t *) 0)->u) ? "too big"
                            : s_count_type(fams, nfams, t->type) > 1
                                ? "registered twice" : NULL;
            if (bad) {
                snprintf(why, whylen, "family %s: type %d %s", fam->name,
                         t->type, bad);
                return TELEM_EINVAL;
            }
        }
    }
    return 0;
}

const char *
telem_msg_type_name(int type)
{
    const tp_type_t *t = tp_type_find(type);
    return t ? t->name : "unknown";
}

/* Finds "v" and "t" wherever they are in the top map (senders put them
 * first, so this usually reads two pairs) and checks the version. */
static int
s_find_vt(telem_decoder_t *d, telem_rd_t r, uint32_t nkeys, int64_t *type)
{
    int64_t v = 0;
    int have = 0, rc;
    for (uint32_t i = 0; i < nkeys && have != 3; i++) {
        const uint8_t *k;
        uint32_t klen;
        if ((rc = tp_rd_bytes(&r, false, &k, &klen)) != 0)
            return tp_fail(d, rc, "key %u %s", i, r.why);
        int which = klen == 1 && *k == 'v' ? 1 : klen == 1 && *k == 't' ? 2 : 0;
        if (which == 1)
            rc = tp_rd_i64(&r, &v);
        else if (which == 2)
            rc = tp_rd_i64(&r, type);
        else
            rc = tp_rd_skip(&r);
        if (rc)
            return tp_fail(d, rc, "%s %s",
                           which ? (which == 1 ? "v" : "t") : "value", r.why);
        have |= which;
    }
    if (!(have & 1))
        return tp_fail(d, TELEM_EPROTO, "missing \"v\"");
    if (v != TELEM_PROTO_VERSION)
        return tp_fail(d, TELEM_EVERSION, "version %lld, this build speaks %d",
                       (long long) v, TELEM_PROTO_VERSION);
    if (!(have & 2))
        return tp_fail(d, TELEM_EPROTO, "missing \"t\"");
    return 0;
}

/* Per-frame reset: the string arena must hold every string of the frame
 * without moving, which size+1 bytes always does. */
static int
s_begin(telem_decoder_t *d, size_t size)
{
    for (int i = 0; i < TP_VEC_COUNT; i++)
        s_trim(&d->vec[i], s_vec_elem[i], size);
    d->nstr = d->ntags = d->npts = 0;
    d->mark[0] = d->mark[1] = 0;
    d->last_raw = NULL;
    d->last_len = 0;
    d->last_copy = NULL;
    return tp_reserve(&d->vec[TP_VEC_STR], size + 1, 1);
}

int
telem_proto_decode(telem_decoder_t *d, const void *data, size_t size,
                   telem_msg_t *out)
{
    if (!d || !out || (!data && size))
        return TELEM_EINVAL;
    if (size == 0)
        return tp_fail(d, TELEM_EPROTO, "empty frame");
    if (size > TELEM_PROTO_MAX_MSG)
        return tp_fail(d, TELEM_ETOOBIG, "frame of %zu bytes, the limit is %u",
                       size, TELEM_PROTO_MAX_MSG);
    if (s_begin(d, size) != 0)
        return tp_fail(d, TELEM_ENOMEM, "out of memory");
    telem_rd_t r = { data, (const uint8_t *) data + size, NULL };
    uint32_t nkeys;
    int64_t type = 0;
    int rc = tp_rd_count(&r, true, 2, &nkeys);
    if (rc)
        return tp_fail(d, rc, "top level %s", r.why);
    if ((rc = s_find_vt(d, r, nkeys, &type)) != 0)
        return rc;
    const tp_type_t *t = tp_type_find(type);
    if (!t)
        return tp_fail(d, TELEM_EPROTO, "unknown message type %lld", (long long) type);
    assert(t->size <= sizeof out->u);
    memset(out, 0, sizeof *out);
    out->type = (telem_msg_type_t) type;
    if ((rc = t->decode(d, &r, nkeys, &out->u)) != 0)
        return tp_wrap(d, rc, "%s", t->name);
    if (r.p != r.end)
        return tp_fail(d, TELEM_EPROTO, "%s: %zu trailing bytes after the map",
                       t->name, tp_left(&r));
    return 0;
}

const char *
telem_decoder_error(const telem_decoder_t *d)
{
    return d ? d->err : "no decoder";
}

telem_decoder_t *
telem_decoder_new(void)
{
    telem_decoder_t *d = calloc(1, sizeof *d);
    if (d)
        snprintf(d->err, sizeof d->err, "no error");
    return d;
}

void
telem_decoder_destroy(telem_decoder_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_decoder_t *d = *self_p;
    for (int i = 0; i < TP_VEC_COUNT; i++)
        free(d->vec[i].p);
    free(d);
    *self_p = NULL;
}
