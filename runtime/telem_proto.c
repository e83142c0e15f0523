/* telem_proto.c - the wire codec: encoders and the one decoder for every
 * message telem sends (docs/protocol.md is the reference for the format).
 *
 * Encoding uses msgpack-c's packer over a reused msgpack_sbuffer whose write
 * callback enforces TELEM_PROTO_MAX_MSG.
 *
 * Decoding walks the bytes with a small bounds-checked cursor instead of
 * msgpack_unpack(): the object unpacker allocates an array as soon as it
 * reads its header, so a 5-byte header claiming 4 billion elements would
 * allocate gigabytes before the lie is noticed, and a fresh zone per frame
 * costs ~40 % on the ingest path.  The cursor checks every claimed count
 * against the bytes left (each element costs at least one byte), and the
 * decoder keeps its memory between calls: one string arena reserved at the
 * frame size (a string of n bytes costs at least n+1 on the wire, so it
 * never moves during a decode) and typed vectors for samples, tags, series,
 * metric names and points.  Tags and points live in vectors that may grow
 * mid-decode, so messages point into them only in a final fix-up pass.
 *
 * Message fields are described by tables (key, kind, offset, required,
 * range) shared by the encoder and the decoder; only arrays and nested
 * maps have hand-written code.
 */
#include "telem_proto.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

/* Bins of points are little-endian on the wire.  Hosts that are not known
 * to be little-endian (or builds with TELEM_PROTO_PORTABLE, which the tests
 * use to exercise that path) convert byte by byte. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && \
    !defined(TELEM_PROTO_PORTABLE)
#define S_LITTLE_ENDIAN 1
#else
#define S_LITTLE_ENDIAN 0
#endif

#define S_KEEP_BYTES (1u << 20)   /* vectors above this may be released */
#define S_MIN_SAMPLE 6            /* fixarray, metric (>= 2), ts, value, level */
#define S_MIN_TAG 4               /* two non-empty strings */
#define S_MIN_SERIES 15           /* fixmap, "m", metric, "ts", bin, "vl", bin */

_Static_assert(sizeof(telem_metric_type_t) == sizeof(int32_t), "enum size");
_Static_assert(sizeof(telem_ctl_op_t) == sizeof(int32_t), "enum size");

/* ---------------------------------------------------------------- tables */

typedef enum {
    K_IGN,     /* "v" and "t": checked before the body is decoded */
    K_X,       /* array or nested map: hand-written code */
    K_NAME,    /* str, 1..TELEM_NAME_MAX bytes */
    K_STR,     /* str, 0..TELEM_NAME_MAX bytes */
    K_TEXT,    /* str, 0..TELEM_TEXT_MAX bytes */
    K_I64, K_I32, K_U32, K_U64,
    K_BOOL8, K_BOOL32   /* msgpack bool (ints 0 and 1 accepted) */
} s_kind_t;

typedef struct {
    const char *key;
    uint8_t klen;
    uint8_t kind;
    uint8_t req;
    uint16_t off;
    int64_t min, max;   /* K_I32 and K_U32 */
} s_field_t;

#define F(k, kind, req, type, member, lo, hi) \
    { k, sizeof(k) - 1, kind, req, offsetof(type, member), lo, hi }
#define FV { "v", 1, K_IGN, 1, 0, 0, 0 }, { "t", 1, K_IGN, 1, 0, 0, 0 }
#define NTAB(t) ((int)(sizeof(t) / sizeof((t)[0])))

enum { B_SRC = 2, B_FIN, B_TG, B_S };
static const s_field_t s_batch_tab[] = { FV,
    F("src", K_STR, 0, telem_batch_t, source, 0, 0),
    F("fin", K_U64, 0, telem_batch_t, fin_token, 0, 0),
    F("tg", K_X, 0, telem_batch_t, tags, 0, 0),
    F("s", K_X, 0, telem_batch_t, samples, 0, 0) };

static const s_field_t s_meta_tab[] = { FV,
    F("m", K_NAME, 1, telem_meta_t, metric, 0, 0),
    F("mt", K_I32, 0, telem_meta_t, type, 0, 1),
    F("u", K_TEXT, 0, telem_meta_t, unit, 0, 0),
    F("d", K_TEXT, 0, telem_meta_t, doc, 0, 0) };

enum { Q_M = 3, Q_F };
static const s_field_t s_query_tab[] = { FV,
    F("id", K_U64, 1, telem_query_t, id, 0, 0),
    F("m", K_X, 0, telem_query_t, metrics, 0, 0),
    F("f", K_X, 0, telem_query_t, filters, 0, 0),
    F("s", K_I64, 0, telem_query_t, start_ns, 0, 0),
    F("e", K_I64, 0, telem_query_t, end_ns, 0, 0),
    F("n", K_U32, 0, telem_query_t, max_points, 0, UINT32_MAX),
    F("fl", K_U32, 0, telem_query_t, flags, 0, UINT32_MAX) };

static const s_field_t s_reply_tab[] = { FV,
    F("id", K_U64, 1, telem_query_reply_t, id, 0, 0),
    F("nd", K_NAME, 1, telem_query_reply_t, node, 0, 0),
    F("tr", K_BOOL8, 0, telem_query_reply_t, truncated, 0, 1),
    F("sr", K_X, 0, telem_query_reply_t, series, 0, 0) };

enum { S_TG = 4, S_TS, S_VL };
static const s_field_t s_series_tab[] = {
    F("m", K_NAME, 1, telem_series_t, metric, 0, 0),
    F("mt", K_I32, 0, telem_series_t, type, 0, 1),
    F("u", K_TEXT, 0, telem_series_t, unit, 0, 0),
    F("d", K_TEXT, 0, telem_series_t, doc, 0, 0),
    F("tg", K_X, 0, telem_series_t, tags, 0, 0),
    F("ts", K_X, 1, telem_series_t, ts, 0, 0),
    F("vl", K_X, 1, telem_series_t, values, 0, 0) };

static const s_field_t s_control_tab[] = { FV,
    F("id", K_U64, 1, telem_control_t, id, 0, 0),
    F("op", K_I32, 1, telem_control_t, op, 1, INT32_MAX),
    F("a", K_I64, 0, telem_control_t, arg, 0, 0) };

static const s_field_t s_creply_tab[] = { FV,
    F("id", K_U64, 1, telem_control_reply_t, id, 0, 0),
    F("op", K_I32, 1, telem_control_reply_t, op, 1, INT32_MAX),
    F("sy", K_BOOL32, 0, telem_control_reply_t, synced, 0, 1),
    F("st", K_X, 1, telem_control_reply_t, status, 0, 0) };

static const s_field_t s_status_tab[] = {
    F("nd", K_NAME, 1, telem_status_t, node, 0, 0),
    F("pid", K_I64, 0, telem_status_t, pid, 0, 0),
    F("lv", K_I32, 0, telem_status_t, level, 0, 4),
    F("win", K_I64, 0, telem_status_t, window_ns, 0, 0),
    F("ivl", K_I64, 0, telem_status_t, interval_ns, 0, 0),
    F("up", K_I64, 0, telem_status_t, uptime_ns, 0, 0),
    F("ns", K_U64, 0, telem_status_t, nseries, 0, 0),
    F("np", K_U64, 0, telem_status_t, npoints, 0, 0),
    F("mem", K_U64, 0, telem_status_t, mem_bytes, 0, 0),
    F("cap", K_U64, 0, telem_status_t, mem_cap_bytes, 0, 0),
    F("in", K_U64, 0, telem_status_t, ingested, 0, 0),
    F("dr", K_U64, 0, telem_status_t, dropped, 0, 0),
    F("bad", K_U64, 0, telem_status_t, bad_messages, 0, 0) };

static const s_field_t s_error_tab[] = { FV,
    F("id", K_U64, 1, telem_error_msg_t, id, 0, 0),
    F("c", K_I32, 1, telem_error_msg_t, code, INT32_MIN, INT32_MAX),
    F("msg", K_TEXT, 0, telem_error_msg_t, message, 0, 0) };

static size_t
s_str_max(int kind)
{
    return kind == K_TEXT ? TELEM_TEXT_MAX : TELEM_NAME_MAX;
}

/* ---------------------------------------------------------------- cursor */

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
    const char *why;    /* reason of the last failed read */
} s_rd_t;

enum { N_UINT, N_INT, N_FLOAT, N_BOOL };
typedef struct {
    int kind;           /* N_UINT: u >= 0; N_INT: i < 0 */
    uint64_t u;
    int64_t i;
    double f;
} s_num_t;

static inline size_t
s_left(const s_rd_t *r)
{
    return (size_t) (r->end - r->p);
}

static inline int
s_bad(s_rd_t *r, int rc, const char *why)
{
    r->why = why;
    return rc;
}

static inline uint64_t
s_be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Reads a length or count header: a fix form (first byte lo..lo+fixmax) or
 * the 8/16/32-bit forms marked m8/m16/m32 (0 = no such form).  Returns 1 if
 * the next object is of another type. */
static int
s_rd_hdr(s_rd_t *r, int lo, int fixmax, int m8, int m16, int m32, uint32_t *n)
{
    if (r->p >= r->end)
        return s_bad(r, TELEM_EPROTO, "is truncated");
    int b = *r->p;
    size_t w;
    if (b >= lo && b <= lo + fixmax) {
        *n = (uint32_t) (b - lo);
        r->p++;
        return 0;
    }
    if (m8 && b == m8)
        w = 1;
    else if (b == m16)
        w = 2;
    else if (b == m32)
        w = 4;
    else
        return 1;
    if (s_left(r) < 1 + w)
        return s_bad(r, TELEM_EPROTO, "is truncated");
    *n = (uint32_t) s_be(r->p + 1, w);
    r->p += 1 + w;
    return 0;
}

/* A str (bin when `bin`): points *s at its bytes inside the frame. */
static int
s_rd_bytes(s_rd_t *r, bool bin, const uint8_t **s, uint32_t *len)
{
    int rc = bin ? s_rd_hdr(r, 0, -1, 0xc4, 0xc5, 0xc6, len)
                 : s_rd_hdr(r, 0xa0, 31, 0xd9, 0xda, 0xdb, len);
    if (rc > 0)
        return s_bad(r, TELEM_EPROTO, bin ? "is not a bin" : "is not a string");
    if (rc < 0)
        return rc;
    if (s_left(r) < *len)
        return s_bad(r, TELEM_EPROTO, "is truncated");
    *s = r->p;
    r->p += *len;
    return 0;
}

/* An array (map when `map`) header whose elements need at least `min`
 * bytes each: a count the rest of the frame cannot hold is refused here,
 * before anyone allocates for it. */
static int
s_rd_count(s_rd_t *r, bool map, size_t min, uint32_t *n)
{
    int rc = map ? s_rd_hdr(r, 0x80, 15, 0, 0xde, 0xdf, n)
                 : s_rd_hdr(r, 0x90, 15, 0, 0xdc, 0xdd, n);
    if (rc > 0)
        return s_bad(r, TELEM_EPROTO, map ? "is not a map" : "is not an array");
    if (rc < 0)
        return rc;
    if ((uint64_t) *n * min > s_left(r))
        return s_bad(r, TELEM_EPROTO, "claims more elements than the frame holds");
    return 0;
}

static int
s_rd_num(s_rd_t *r, s_num_t *v)
{
    if (r->p >= r->end)
        return s_bad(r, TELEM_EPROTO, "is truncated");
    int b = *r->p;
    size_t w = b >= 0xcc && b <= 0xd3 ? (size_t) 1 << ((b - 0xcc) & 3)
             : b == 0xca ? 4 : b == 0xcb ? 8 : 0;
    if (s_left(r) < 1 + w)
        return s_bad(r, TELEM_EPROTO, "is truncated");
    uint64_t x = s_be(r->p + 1, w);
    v->kind = N_UINT;
    if (b <= 0x7f) {
        v->u = (uint64_t) b;
    } else if (b >= 0xe0) {
        v->kind = N_INT, v->i = b - 256;
    } else if (b == 0xc2 || b == 0xc3) {
        v->kind = N_BOOL, v->u = (uint64_t) (b == 0xc3);
    } else if (b >= 0xcc && b <= 0xcf) {
        v->u = x;
    } else if (b >= 0xd0 && b <= 0xd3) {
        int64_t s = w == 1 ? (int8_t) x : w == 2 ? (int16_t) x
                  : w == 4 ? (int32_t) x : (int64_t) x;
        if (s < 0)
            v->kind = N_INT, v->i = s;
        else
            v->u = (uint64_t) s;
    } else if (b == 0xca) {
        uint32_t bits = (uint32_t) x;
        float f;
        memcpy(&f, &bits, 4);
        v->kind = N_FLOAT, v->f = f;
    } else if (b == 0xcb) {
        memcpy(&v->f, &x, 8);
        v->kind = N_FLOAT;
    } else {
        return s_bad(r, TELEM_EPROTO, "is not a number");
    }
    r->p += 1 + w;
    return 0;
}

static int
s_rd_i64(s_rd_t *r, int64_t *out)
{
    s_num_t v;
    int rc = s_rd_num(r, &v);
    if (rc)
        return rc;
    if (v.kind == N_INT)
        *out = v.i;
    else if (v.kind != N_UINT)
        return s_bad(r, TELEM_EPROTO, "is not an integer");
    else if (v.u > INT64_MAX)
        return s_bad(r, TELEM_EPROTO, "is out of range");
    else
        *out = (int64_t) v.u;
    return 0;
}

static int
s_rd_u64(s_rd_t *r, uint64_t *out)
{
    s_num_t v;
    int rc = s_rd_num(r, &v);
    if (rc)
        return rc;
    if (v.kind == N_INT)
        return s_bad(r, TELEM_EPROTO, "is negative");
    if (v.kind != N_UINT)
        return s_bad(r, TELEM_EPROTO, "is not an integer");
    *out = v.u;
    return 0;
}

static int
s_rd_f64(s_rd_t *r, double *out)
{
    s_num_t v;
    int rc = s_rd_num(r, &v);
    if (rc)
        return rc;
    if (v.kind == N_BOOL)
        return s_bad(r, TELEM_EPROTO, "is not a number");
    *out = v.kind == N_FLOAT ? v.f : v.kind == N_INT ? (double) v.i : (double) v.u;
    return 0;
}

static int
s_rd_bool(s_rd_t *r, int64_t *out)
{
    s_num_t v;
    int rc = s_rd_num(r, &v);
    if (rc)
        return rc;
    if ((v.kind != N_BOOL && v.kind != N_UINT) || v.u > 1)
        return s_bad(r, TELEM_EPROTO, "is not a boolean");
    *out = (int64_t) v.u;
    return 0;
}

/* Skips one object of any type, nested ones included, without recursion:
 * `pending` counts objects still to skip and can never exceed the bytes
 * left plus one container's worth. */
static int
s_skip(s_rd_t *r)
{
    uint64_t pending = 1;
    while (pending > 0) {
        if (pending > s_left(r))
            return s_bad(r, TELEM_EPROTO, "is truncated");
        pending--;
        int b = *r->p++;
        uint64_t n = 0;   /* bytes to jump */
        if (b <= 0x7f || b >= 0xe0 || (b >= 0xc0 && b <= 0xc3 && b != 0xc1))
            continue;
        if (b <= 0x8f || (b >= 0xde && b <= 0xdf)) {
            size_t w = b <= 0x8f ? 0 : b == 0xde ? 2 : 4;
            if (s_left(r) < w)
                return s_bad(r, TELEM_EPROTO, "is truncated");
            pending += 2 * (w ? s_be(r->p, w) : (uint64_t) (b & 0x0f));
            r->p += w;
            continue;
        }
        if (b <= 0x9f || b == 0xdc || b == 0xdd) {
            size_t w = b <= 0x9f ? 0 : b == 0xdc ? 2 : 4;
            if (s_left(r) < w)
                return s_bad(r, TELEM_EPROTO, "is truncated");
            pending += w ? s_be(r->p, w) : (uint64_t) (b & 0x0f);
            r->p += w;
            continue;
        }
        if (b <= 0xbf) {
            n = (uint64_t) (b & 0x1f);
        } else if (b == 0xc1) {
            return s_bad(r, TELEM_EPROTO, "holds the reserved byte 0xc1");
        } else if ((b >= 0xc4 && b <= 0xc9) || (b >= 0xd9 && b <= 0xdb)) {
            /* bin 8/16/32, ext 8/16/32, str 8/16/32 */
            size_t w = b >= 0xd9 ? (size_t) 1 << (b - 0xd9)
                     : (size_t) 1 << ((b - 0xc4) % 3);
            if (s_left(r) < w)
                return s_bad(r, TELEM_EPROTO, "is truncated");
            n = s_be(r->p, w) + w + (b >= 0xc7 && b <= 0xc9);
        } else if (b >= 0xca && b <= 0xd3) {
            n = b == 0xca ? 4 : b == 0xcb ? 8 : (uint64_t) 1 << ((b - 0xcc) & 3);
        } else {   /* fixext 1/2/4/8/16: 0xd4-0xd8, the only bytes left */
            n = 1 + ((uint64_t) 1 << ((b - 0xd4) & 7));
        }
        if (s_left(r) < n)
            return s_bad(r, TELEM_EPROTO, "is truncated");
        r->p += n;
    }
    return 0;
}

/* --------------------------------------------------------------- decoder */

typedef struct {
    void *p;
    size_t cap;         /* elements */
} s_vec_t;

struct telem_decoder {
    s_vec_t str;        /* char: NUL-terminated copies */
    s_vec_t samples;    /* telem_sample_t */
    s_vec_t tags;       /* telem_tag_t */
    s_vec_t series;     /* telem_series_t */
    s_vec_t metrics;    /* const char * */
    s_vec_t ts;         /* int64_t, same capacity as vals */
    s_vec_t vals;       /* double */
    size_t nstr, ntags, npts;   /* used */
    size_t mark[2];             /* first tag of a block, for the fix-up */
    uint32_t nts, nvl;          /* points of the series being decoded */
    const uint8_t *last_raw;    /* last sample's metric, on the wire ... */
    uint32_t last_len;
    const char *last_copy;      /* ... and in the arena */
    char err[256];
};

static int
s_reserve(s_vec_t *v, size_t n, size_t sz)
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
s_trim(s_vec_t *v, size_t sz, size_t frame)
{
    if (v->cap * sz > S_KEEP_BYTES && v->cap * sz / 16 > frame) {
        free(v->p);
        v->p = NULL;
        v->cap = 0;
    }
}

static int
s_fail(telem_decoder_t *d, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    return rc;
}

/* Prefixes the current reason with a context, "sample 3: " + reason. */
static int
s_wrap(telem_decoder_t *d, int rc, const char *fmt, ...)
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

/* Copies a str into the arena.  max bounds the length; empty strings are
 * refused when `nonempty`.  The arena was reserved at the frame size. */
static int
s_take_str(telem_decoder_t *d, s_rd_t *r, size_t max, bool nonempty,
           const char **out)
{
    const uint8_t *s;
    uint32_t len;
    int rc = s_rd_bytes(r, false, &s, &len);
    if (rc)
        return rc;
    if (len > max)
        return s_bad(r, TELEM_ETOOBIG, "is too long");
    if (nonempty && len == 0)
        return s_bad(r, TELEM_EPROTO, "is empty");
    if (memchr(s, 0, len))
        return s_bad(r, TELEM_EPROTO, "contains a NUL byte");
    if (d->nstr + len + 1 > d->str.cap)
        return s_bad(r, TELEM_EPROTO, "overflows the string arena");
    char *c = (char *) d->str.p + d->nstr;
    memcpy(c, s, len);
    c[len] = '\0';
    d->nstr += len + 1;
    *out = c;
    return 0;
}

static int
s_dec_field(telem_decoder_t *d, s_rd_t *r, const s_field_t *f, void *base)
{
    char *p = (char *) base + f->off;
    int64_t i = 0;
    uint64_t u;
    int rc;
    switch (f->kind) {
    case K_NAME: case K_STR: case K_TEXT:
        return s_take_str(d, r, s_str_max(f->kind), f->kind == K_NAME,
                          (const char **) (void *) p);
    case K_U64:
        if ((rc = s_rd_u64(r, &u)) == 0)
            memcpy(p, &u, sizeof u);
        return rc;
    case K_I64:
        if ((rc = s_rd_i64(r, &i)) == 0)
            memcpy(p, &i, sizeof i);
        return rc;
    case K_BOOL8: case K_BOOL32:
        rc = s_rd_bool(r, &i);
        break;
    case K_I32: case K_U32:
        rc = s_rd_i64(r, &i);
        break;
    default:
        return s_skip(r);
    }
    if (rc)
        return rc;
    if (f->kind != K_BOOL8 && f->kind != K_BOOL32 && (i < f->min || i > f->max))
        return s_bad(r, TELEM_EPROTO, "is out of range");
    if (f->kind == K_BOOL8) {
        uint8_t b = (uint8_t) i;
        memcpy(p, &b, 1);
    } else if (f->kind == K_U32) {
        uint32_t w = (uint32_t) i;
        memcpy(p, &w, 4);
    } else {
        int32_t w = (int32_t) i;
        memcpy(p, &w, 4);
    }
    return 0;
}

typedef int (*s_custom_fn)(telem_decoder_t *d, s_rd_t *r, int idx, void *base);

static int
s_lookup(const s_field_t *tab, int ntab, const uint8_t *k, uint32_t klen)
{
    for (int i = 0; i < ntab; i++)
        if (tab[i].klen == klen && memcmp(tab[i].key, k, klen) == 0)
            return i;
    return -1;
}

/* Decodes the body of a map of `nkeys` pairs described by `tab` into base;
 * unknown keys are skipped, duplicates and missing required keys refused. */
static int
s_dec_map(telem_decoder_t *d, s_rd_t *r, uint32_t nkeys, const s_field_t *tab,
          int ntab, void *base, s_custom_fn custom)
{
    uint32_t seen = 0;
    for (int j = 0; j < ntab; j++)
        if (tab[j].kind == K_NAME || tab[j].kind == K_STR || tab[j].kind == K_TEXT)
            *(const char **) (void *) ((char *) base + tab[j].off) = "";
    for (uint32_t i = 0; i < nkeys; i++) {
        const uint8_t *k;
        uint32_t klen;
        int rc = s_rd_bytes(r, false, &k, &klen);
        if (rc)
            return s_fail(d, rc, "key %u %s", i, r->why);
        int j = s_lookup(tab, ntab, k, klen);
        if (j < 0) {
            if ((rc = s_skip(r)) != 0)
                return s_fail(d, rc, "value of key %u %s", i, r->why);
            continue;
        }
        if (seen & (1u << j))
            return s_fail(d, TELEM_EPROTO, "duplicate key \"%s\"", tab[j].key);
        seen |= 1u << j;
        if (tab[j].kind == K_X) {
            if ((rc = custom(d, r, j, base)) != 0)
                return rc;
        } else if ((rc = s_dec_field(d, r, &tab[j], base)) != 0) {
            return s_fail(d, rc, "%s %s", tab[j].key, r->why);
        }
    }
    for (int j = 0; j < ntab; j++)
        if (tab[j].req && !(seen & (1u << j)))
            return s_fail(d, TELEM_EPROTO, "missing \"%s\"", tab[j].key);
    return 0;
}

/* Appends a map of tags to the tag vector; *n gets their count. */
static int
s_dec_tags(telem_decoder_t *d, s_rd_t *r, uint32_t *n)
{
    int rc = s_rd_count(r, true, S_MIN_TAG, n);
    if (rc)
        return s_fail(d, rc, "tags %s", r->why);
    if (*n > TELEM_TAGS_MAX)
        return s_fail(d, TELEM_ETOOBIG, "%u tags, the limit is %d", *n, TELEM_TAGS_MAX);
    if ((rc = s_reserve(&d->tags, d->ntags + *n, sizeof(telem_tag_t))) != 0)
        return s_fail(d, rc, "out of memory");
    telem_tag_t *t = (telem_tag_t *) d->tags.p + d->ntags;
    for (uint32_t i = 0; i < *n; i++) {
        if ((rc = s_take_str(d, r, TELEM_NAME_MAX, true, &t[i].key)) != 0)
            return s_fail(d, rc, "tag %u key %s", i, r->why);
        if ((rc = s_take_str(d, r, TELEM_NAME_MAX, true, &t[i].value)) != 0)
            return s_fail(d, rc, "tag \"%s\" value %s", t[i].key, r->why);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(t[j].key, t[i].key) == 0)
                return s_fail(d, TELEM_EPROTO, "duplicate tag \"%s\"", t[i].key);
    }
    d->ntags += *n;
    return 0;
}

/* Points tag arrays at the final tag vector: blocks were appended in the
 * order messages list them, starting at *cursor. */
static void
s_fix_tags(telem_decoder_t *d, const telem_tag_t **tags, uint32_t n, size_t *cursor)
{
    *tags = n ? (const telem_tag_t *) d->tags.p + *cursor : NULL;
    *cursor += n;
}

/* Sample metric names usually repeat: reuse the last copy when the bytes
 * match, so the hot path skips a scan and a copy. */
static int
s_take_metric(telem_decoder_t *d, s_rd_t *r, const char **out)
{
    const uint8_t *p = r->p;
    if (p < r->end && *p >= 0xa1 && *p <= 0xbf && d->last_len == (uint32_t) (*p - 0xa0)
        && s_left(r) > d->last_len && memcmp(p + 1, d->last_raw, d->last_len) == 0) {
        r->p += 1 + d->last_len;
        *out = d->last_copy;
        return 0;
    }
    int rc = s_take_str(d, r, TELEM_NAME_MAX, true, out);
    if (rc)
        return rc;
    d->last_len = (uint32_t) strlen(*out);
    d->last_raw = r->p - d->last_len;
    d->last_copy = *out;
    return 0;
}

static int
s_dec_sample(telem_decoder_t *d, s_rd_t *r, telem_sample_t *s)
{
    uint32_t n;
    int64_t level;
    int rc = s_rd_count(r, false, 1, &n);
    if (rc)
        return s_fail(d, rc, "%s", r->why);
    if (n < 4)
        return s_fail(d, TELEM_EPROTO, "has %u elements, expected 4 or 5", n);
    if ((rc = s_take_metric(d, r, &s->metric)) != 0)
        return s_fail(d, rc, "metric %s", r->why);
    if ((rc = s_rd_i64(r, &s->ts_ns)) != 0)
        return s_fail(d, rc, "timestamp %s", r->why);
    if ((rc = s_rd_f64(r, &s->value)) != 0)
        return s_fail(d, rc, "value %s", r->why);
    if ((rc = s_rd_i64(r, &level)) != 0)
        return s_fail(d, rc, "level %s", r->why);
    if (level < 0 || level > 4)
        return s_fail(d, TELEM_EPROTO, "level %lld is not 0-4", (long long) level);
    s->level = (uint8_t) level;
    s->ntags = 0;
    s->tags = NULL;
    if (n >= 5 && r->p < r->end && *r->p == 0xc0)
        r->p++;
    else if (n >= 5 && (rc = s_dec_tags(d, r, &s->ntags)) != 0)
        return rc;
    for (uint32_t k = 5; k < n; k++)   /* fields of later versions */
        if ((rc = s_skip(r)) != 0)
            return s_fail(d, rc, "element %u %s", k, r->why);
    return 0;
}

static int
s_dec_samples(telem_decoder_t *d, s_rd_t *r, telem_batch_t *b)
{
    uint32_t n;
    int rc = s_rd_count(r, false, S_MIN_SAMPLE, &n);
    if (rc)
        return s_fail(d, rc, "samples %s", r->why);
    if (n > TELEM_BATCH_MAX)
        return s_fail(d, TELEM_ETOOBIG, "%u samples, the limit is %d", n, TELEM_BATCH_MAX);
    if ((rc = s_reserve(&d->samples, n, sizeof(telem_sample_t))) != 0)
        return s_fail(d, rc, "out of memory");
    telem_sample_t *s = d->samples.p;
    d->mark[1] = d->ntags;
    for (uint32_t i = 0; i < n; i++)
        if ((rc = s_dec_sample(d, r, &s[i])) != 0)
            return s_wrap(d, rc, "sample %u", i);
    b->samples = n ? s : NULL;
    b->nsamples = n;
    return 0;
}

static int
s_batch_x(telem_decoder_t *d, s_rd_t *r, int idx, void *base)
{
    telem_batch_t *b = base;
    if (idx == B_TG) {
        d->mark[0] = d->ntags;
        return s_dec_tags(d, r, &b->ntags);
    }
    return s_dec_samples(d, r, b);
}

static int
s_dec_batch(telem_decoder_t *d, s_rd_t *r, uint32_t nkeys, void *msg)
{
    telem_batch_t *b = msg;
    int rc = s_dec_map(d, r, nkeys, s_batch_tab, NTAB(s_batch_tab), b, s_batch_x);
    if (rc)
        return rc;
    size_t c = d->mark[0];
    s_fix_tags(d, &b->tags, b->ntags, &c);
    c = d->mark[1];
    telem_sample_t *s = d->samples.p;
    for (uint32_t i = 0; i < b->nsamples; i++)
        s_fix_tags(d, &s[i].tags, s[i].ntags, &c);
    return 0;
}

static int
s_dec_meta(telem_decoder_t *d, s_rd_t *r, uint32_t nkeys, void *msg)
{
    return s_dec_map(d, r, nkeys, s_meta_tab, NTAB(s_meta_tab), msg, NULL);
}

static int
s_query_x(telem_decoder_t *d, s_rd_t *r, int idx, void *base)
{
    telem_query_t *q = base;
    if (idx == Q_F) {
        d->mark[0] = d->ntags;
        int rc = s_dec_tags(d, r, &q->nfilters);
        return rc ? s_wrap(d, rc, "filters") : 0;
    }
    uint32_t n;
    int rc = s_rd_count(r, false, 2, &n);
    if (rc)
        return s_fail(d, rc, "metrics %s", r->why);
    if (n > TELEM_QUERY_METRICS_MAX)
        return s_fail(d, TELEM_ETOOBIG, "%u metrics, the limit is %d", n,
                      TELEM_QUERY_METRICS_MAX);
    if ((rc = s_reserve(&d->metrics, n, sizeof(const char *))) != 0)
        return s_fail(d, rc, "out of memory");
    const char **m = d->metrics.p;
    for (uint32_t i = 0; i < n; i++)
        if ((rc = s_take_str(d, r, TELEM_NAME_MAX, true, &m[i])) != 0)
            return s_fail(d, rc, "metric %u %s", i, r->why);
    q->metrics = n ? m : NULL;
    q->nmetrics = n;
    return 0;
}

static int
s_dec_query(telem_decoder_t *d, s_rd_t *r, uint32_t nkeys, void *msg)
{
    telem_query_t *q = msg;
    int rc = s_dec_map(d, r, nkeys, s_query_tab, NTAB(s_query_tab), q, s_query_x);
    if (rc == 0) {
        size_t c = d->mark[0];
        s_fix_tags(d, &q->filters, q->nfilters, &c);
    }
    return rc;
}

/* One bin of little-endian 8-byte words into points[d->npts ...]. */
static int
s_dec_points(telem_decoder_t *d, s_rd_t *r, bool values, uint32_t *n)
{
    const uint8_t *b;
    uint32_t len;
    int rc = s_rd_bytes(r, true, &b, &len);
    if (rc)
        return s_fail(d, rc, "%s %s", values ? "vl" : "ts", r->why);
    if (len % 8)
        return s_fail(d, TELEM_EPROTO, "%s length %u is not a multiple of 8",
                      values ? "vl" : "ts", len);
    *n = len / 8;
    if (*n == 0)
        return 0;
    if ((rc = s_reserve(&d->ts, d->npts + *n, sizeof(int64_t))) != 0 ||
        (rc = s_reserve(&d->vals, d->ts.cap, sizeof(double))) != 0)
        return s_fail(d, rc, "out of memory");
    void *dst = values ? (void *) ((double *) d->vals.p + d->npts)
                       : (void *) ((int64_t *) d->ts.p + d->npts);
#if S_LITTLE_ENDIAN
    memcpy(dst, b, len);
#else
    for (uint32_t i = 0; i < *n; i++) {
        uint64_t w = 0;
        for (int k = 7; k >= 0; k--)
            w = w << 8 | b[8 * i + (uint32_t) k];
        memcpy((char *) dst + 8 * i, &w, 8);
    }
#endif
    return 0;
}

static int
s_series_x(telem_decoder_t *d, s_rd_t *r, int idx, void *base)
{
    telem_series_t *s = base;
    if (idx == S_TG)
        return s_dec_tags(d, r, &s->ntags);
    return s_dec_points(d, r, idx == S_VL, idx == S_VL ? &d->nvl : &d->nts);
}

static int
s_dec_series(telem_decoder_t *d, s_rd_t *r, telem_series_t *s)
{
    uint32_t nkeys;
    int rc = s_rd_count(r, true, 2, &nkeys);
    if (rc)
        return s_fail(d, rc, "%s", r->why);
    memset(s, 0, sizeof *s);
    if ((rc = s_dec_map(d, r, nkeys, s_series_tab, NTAB(s_series_tab), s,
                        s_series_x)) != 0)
        return rc;
    if (d->nts != d->nvl)
        return s_fail(d, TELEM_EPROTO, "%u timestamps but %u values", d->nts, d->nvl);
    s->npoints = d->nts;
    d->npts += d->nts;
    return 0;
}

static int
s_reply_x(telem_decoder_t *d, s_rd_t *r, int idx, void *base)
{
    telem_query_reply_t *q = base;
    uint32_t n;
    (void) idx;
    int rc = s_rd_count(r, false, S_MIN_SERIES, &n);
    if (rc)
        return s_fail(d, rc, "series %s", r->why);
    if ((rc = s_reserve(&d->series, n, sizeof(telem_series_t))) != 0)
        return s_fail(d, rc, "out of memory");
    telem_series_t *s = d->series.p;
    d->mark[0] = d->ntags;
    for (uint32_t i = 0; i < n; i++) {
        d->nts = d->nvl = 0;
        if ((rc = s_dec_series(d, r, &s[i])) != 0)
            return s_wrap(d, rc, "series %u", i);
    }
    q->series = n ? s : NULL;
    q->nseries = n;
    return 0;
}

static int
s_dec_reply(telem_decoder_t *d, s_rd_t *r, uint32_t nkeys, void *msg)
{
    telem_query_reply_t *q = msg;
    int rc = s_dec_map(d, r, nkeys, s_reply_tab, NTAB(s_reply_tab), q, s_reply_x);
    if (rc)
        return rc;
    size_t c = d->mark[0], pt = 0;
    telem_series_t *s = d->series.p;
    for (uint32_t i = 0; i < q->nseries; i++) {
        s_fix_tags(d, &s[i].tags, s[i].ntags, &c);
        s[i].ts = s[i].npoints ? (const int64_t *) d->ts.p + pt : NULL;
        s[i].values = s[i].npoints ? (const double *) d->vals.p + pt : NULL;
        pt += s[i].npoints;
    }
    return 0;
}

static int
s_dec_control(telem_decoder_t *d, s_rd_t *r, uint32_t nkeys, void *msg)
{
    return s_dec_map(d, r, nkeys, s_control_tab, NTAB(s_control_tab), msg, NULL);
}

static int
s_creply_x(telem_decoder_t *d, s_rd_t *r, int idx, void *base)
{
    telem_control_reply_t *c = base;
    uint32_t n;
    (void) idx;
    int rc = s_rd_count(r, true, 2, &n);
    if (rc)
        return s_fail(d, rc, "st %s", r->why);
    rc = s_dec_map(d, r, n, s_status_tab, NTAB(s_status_tab), &c->status, NULL);
    return rc ? s_wrap(d, rc, "status") : 0;
}

static int
s_dec_creply(telem_decoder_t *d, s_rd_t *r, uint32_t nkeys, void *msg)
{
    return s_dec_map(d, r, nkeys, s_creply_tab, NTAB(s_creply_tab), msg, s_creply_x);
}

static int
s_dec_error(telem_decoder_t *d, s_rd_t *r, uint32_t nkeys, void *msg)
{
    return s_dec_map(d, r, nkeys, s_error_tab, NTAB(s_error_tab), msg, NULL);
}

typedef int (*s_dec_fn)(telem_decoder_t *d, s_rd_t *r, uint32_t nkeys, void *msg);
static const struct {
    const char *name;
    s_dec_fn decode;
} s_types[] = {
    [TELEM_MSG_BATCH] = { "batch", s_dec_batch },
    [TELEM_MSG_META] = { "meta", s_dec_meta },
    [TELEM_MSG_QUERY] = { "query", s_dec_query },
    [TELEM_MSG_QUERY_REPLY] = { "query_reply", s_dec_reply },
    [TELEM_MSG_CONTROL] = { "control", s_dec_control },
    [TELEM_MSG_CONTROL_REPLY] = { "control_reply", s_dec_creply },
    [TELEM_MSG_ERROR] = { "error", s_dec_error },
};
#define S_NTYPES ((int) (sizeof s_types / sizeof s_types[0]))

const char *
telem_msg_type_name(int type)
{
    if (type <= 0 || type >= S_NTYPES)
        return "unknown";
    return s_types[type].name;
}

/* Finds "v" and "t" wherever they are in the top map (senders put them
 * first, so this usually reads two pairs) and checks the version. */
static int
s_find_vt(telem_decoder_t *d, s_rd_t r, uint32_t nkeys, int64_t *type)
{
    int64_t v = 0;
    int have = 0, rc;
    for (uint32_t i = 0; i < nkeys && have != 3; i++) {
        const uint8_t *k;
        uint32_t klen;
        if ((rc = s_rd_bytes(&r, false, &k, &klen)) != 0)
            return s_fail(d, rc, "key %u %s", i, r.why);
        int which = klen == 1 && *k == 'v' ? 1 : klen == 1 && *k == 't' ? 2 : 0;
        if (which == 1)
            rc = s_rd_i64(&r, &v);
        else if (which == 2)
            rc = s_rd_i64(&r, type);
        else
            rc = s_skip(&r);
        if (rc)
            return s_fail(d, rc, "%s %s", which ? (which == 1 ? "v" : "t") : "value", r.why);
        have |= which;
    }
    if (!(have & 1))
        return s_fail(d, TELEM_EPROTO, "missing \"v\"");
    if (v != TELEM_PROTO_VERSION)
        return s_fail(d, TELEM_EVERSION, "version %lld, this build speaks %d",
                      (long long) v, TELEM_PROTO_VERSION);
    if (!(have & 2))
        return s_fail(d, TELEM_EPROTO, "missing \"t\"");
    if (*type <= 0 || *type >= S_NTYPES)
        return s_fail(d, TELEM_EPROTO, "unknown message type %lld", (long long) *type);
    return 0;
}

/* Per-frame reset: the string arena must hold every string of the frame
 * without moving, which size+1 bytes always does. */
static int
s_begin(telem_decoder_t *d, size_t size)
{
    s_trim(&d->str, 1, size);
    s_trim(&d->samples, sizeof(telem_sample_t), size);
    s_trim(&d->tags, sizeof(telem_tag_t), size);
    s_trim(&d->series, sizeof(telem_series_t), size);
    s_trim(&d->ts, sizeof(int64_t), size);
    s_trim(&d->vals, sizeof(double), size);
    d->nstr = d->ntags = d->npts = 0;
    d->mark[0] = d->mark[1] = 0;
    d->last_raw = NULL;
    d->last_len = 0;
    d->last_copy = NULL;
    return s_reserve(&d->str, size + 1, 1);
}

int
telem_proto_decode(telem_decoder_t *d, const void *data, size_t size,
                   telem_msg_t *out)
{
    if (!d || !out || (!data && size))
        return TELEM_EINVAL;
    if (size == 0)
        return s_fail(d, TELEM_EPROTO, "empty frame");
    if (size > TELEM_PROTO_MAX_MSG)
        return s_fail(d, TELEM_ETOOBIG, "frame of %zu bytes, the limit is %u",
                      size, TELEM_PROTO_MAX_MSG);
    if (s_begin(d, size) != 0)
        return s_fail(d, TELEM_ENOMEM, "out of memory");
    s_rd_t r = { data, (const uint8_t *) data + size, NULL };
    uint32_t nkeys;
    int64_t type = 0;
    int rc = s_rd_count(&r, true, 2, &nkeys);
    if (rc)
        return s_fail(d, rc, "top level %s", r.why);
    if ((rc = s_find_vt(d, r, nkeys, &type)) != 0)
        return rc;
    memset(out, 0, sizeof *out);
    out->type = (telem_msg_type_t) type;
    if ((rc = s_types[type].decode(d, &r, nkeys, &out->u)) != 0)
        return s_wrap(d, rc, "%s", s_types[type].name);
    if (r.p != r.end)
        return s_fail(d, TELEM_EPROTO, "%s: %zu trailing bytes after the map",
                      s_types[type].name, s_left(&r));
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
    free(d->str.p);
    free(d->samples.p);
    free(d->tags.p);
    free(d->series.p);
    free(d->metrics.p);
    free(d->ts.p);
    free(d->vals.p);
    free(d);
    *self_p = NULL;
}

/* --------------------------------------------------------------- encoder */

struct telem_encoder {
    msgpack_sbuffer buf;
    msgpack_packer pk;
    int fail;       /* a write failed: out of memory */
    bool toobig;    /* the frame passed TELEM_PROTO_MAX_MSG */
};

static int
s_write(void *data, const char *buf, size_t len)
{
    telem_encoder_t *e = data;
    if (len > TELEM_PROTO_MAX_MSG - e->buf.size) {
        e->toobig = true;
        return -1;
    }
    return msgpack_sbuffer_write(&e->buf, buf, len);
}

telem_encoder_t *
telem_encoder_new(void)
{
    telem_encoder_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    msgpack_sbuffer_init(&e->buf);
    msgpack_packer_init(&e->pk, e, s_write);
    return e;
}

void
telem_encoder_destroy(telem_encoder_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    msgpack_sbuffer_destroy(&(*self_p)->buf);
    free(*self_p);
    *self_p = NULL;
}

static void
s_put_str(telem_encoder_t *e, const char *s, size_t len)
{
    e->fail |= msgpack_pack_str_with_body(&e->pk, s, len);
}

static void
s_put_key(telem_encoder_t *e, const char *k)
{
    s_put_str(e, k, strlen(k));
}

/* Checks a string to send: NULL is "" unless it must be non-empty. */
static int
s_check_str(const char **s, size_t max, bool nonempty, size_t *len)
{
    if (!*s) {
        if (nonempty)
            return TELEM_EINVAL;
        *s = "";
    }
    *len = strnlen(*s, max + 1);
    if (*len > max)
        return TELEM_ETOOBIG;
    return nonempty && *len == 0 ? TELEM_EINVAL : 0;
}

static int
s_put_name(telem_encoder_t *e, const char *s)
{
    size_t len;
    int rc = s_check_str(&s, TELEM_NAME_MAX, true, &len);
    if (rc == 0)
        s_put_str(e, s, len);
    return rc;
}

static int
s_enc_field(telem_encoder_t *e, const s_field_t *f, const void *base)
{
    const char *p = (const char *) base + f->off;
    int64_t i32;
    if (f->kind == K_NAME || f->kind == K_STR || f->kind == K_TEXT) {
        const char *s;
        size_t len;
        memcpy(&s, p, sizeof s);
        int rc = s_check_str(&s, s_str_max(f->kind), f->kind == K_NAME, &len);
        if (rc == 0)
            s_put_str(e, s, len);
        return rc;
    }
    if (f->kind == K_U64 || f->kind == K_I64) {
        uint64_t u;
        memcpy(&u, p, 8);
        e->fail |= f->kind == K_U64 ? msgpack_pack_uint64(&e->pk, u)
                                    : msgpack_pack_int64(&e->pk, (int64_t) u);
        return 0;
    }
    if (f->kind == K_BOOL8) {
        i32 = *(const uint8_t *) p;
    } else if (f->kind == K_U32) {
        uint32_t w;
        memcpy(&w, p, 4);
        i32 = w;
    } else {
        int32_t w;
        memcpy(&w, p, 4);
        i32 = w;
    }
    if (f->kind == K_BOOL8 || f->kind == K_BOOL32)
        i32 = i32 != 0;   /* any non-zero flag is true */
    if (i32 < f->min || i32 > f->max)
        return TELEM_EINVAL;
    if (f->kind == K_BOOL8 || f->kind == K_BOOL32)
        e->fail |= i32 ? msgpack_pack_true(&e->pk) : msgpack_pack_false(&e->pk);
    else
        e->fail |= msgpack_pack_int64(&e->pk, i32);
    return 0;
}

/* Writes every plain field of a table; K_X fields are the caller's. */
static int
s_enc_fields(telem_encoder_t *e, const s_field_t *tab, int ntab, const void *base)
{
    for (int j = 0; j < ntab; j++) {
        if (tab[j].kind == K_IGN || tab[j].kind == K_X)
            continue;
        s_put_key(e, tab[j].key);
        int rc = s_enc_field(e, &tab[j], base);
        if (rc)
            return rc;
    }
    return 0;
}

/* Starts a frame: the top map with "v" and "t", then the plain fields. */
static int
s_enc_begin(telem_encoder_t *e, telem_msg_type_t type, const s_field_t *tab,
            int ntab, const void *m)
{
    msgpack_sbuffer_clear(&e->buf);
    e->fail = 0;
    e->toobig = false;
    e->fail |= msgpack_pack_map(&e->pk, (size_t) ntab);
    s_put_key(e, "v");
    e->fail |= msgpack_pack_int(&e->pk, TELEM_PROTO_VERSION);
    s_put_key(e, "t");
    e->fail |= msgpack_pack_int(&e->pk, (int) type);
    return s_enc_fields(e, tab, ntab, m);
}

static int
s_enc_end(telem_encoder_t *e, int rc, const void **data, size_t *size)
{
    if (rc)
        return rc;
    if (e->toobig)
        return TELEM_ETOOBIG;
    if (e->fail)
        return TELEM_ENOMEM;
    *data = e->buf.data;
    *size = e->buf.size;
    return 0;
}

static int
s_enc_tags(telem_encoder_t *e, const telem_tag_t *tags, uint32_t n)
{
    if (n > TELEM_TAGS_MAX)
        return TELEM_ETOOBIG;
    if (n && !tags)
        return TELEM_EINVAL;
    e->fail |= msgpack_pack_map(&e->pk, n);
    for (uint32_t i = 0; i < n; i++) {
        int rc = s_put_name(e, tags[i].key);
        if (rc == 0)
            rc = s_put_name(e, tags[i].value);
        if (rc)
            return rc;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(tags[j].key, tags[i].key) == 0)
                return TELEM_EINVAL;
    }
    return 0;
}

static int
s_enc_sample(telem_encoder_t *e, const telem_sample_t *s)
{
    if (s->level > 4)
        return TELEM_EINVAL;
    e->fail |= msgpack_pack_array(&e->pk, s->ntags ? 5 : 4);
    int rc = s_put_name(e, s->metric);
    if (rc)
        return rc;
    e->fail |= msgpack_pack_int64(&e->pk, s->ts_ns);
    e->fail |= msgpack_pack_double(&e->pk, s->value);
    e->fail |= msgpack_pack_uint8(&e->pk, s->level);
    return s->ntags ? s_enc_tags(e, s->tags, s->ntags) : 0;
}

int
telem_encode_batch(telem_encoder_t *e, const telem_batch_t *m,
                   const void **data, size_t *size)
{
    if (!e || !m || !data || !size || (m->nsamples && !m->samples))
        return TELEM_EINVAL;
    if (m->nsamples > TELEM_BATCH_MAX)
        return TELEM_ETOOBIG;
    int rc = s_enc_begin(e, TELEM_MSG_BATCH, s_batch_tab, NTAB(s_batch_tab), m);
    if (rc == 0) {
        s_put_key(e, "tg");
        rc = s_enc_tags(e, m->tags, m->ntags);
    }
    if (rc == 0) {
        s_put_key(e, "s");
        e->fail |= msgpack_pack_array(&e->pk, m->nsamples);
    }
    for (uint32_t i = 0; rc == 0 && i < m->nsamples; i++)
        rc = s_enc_sample(e, &m->samples[i]);
    return s_enc_end(e, rc, data, size);
}

int
telem_encode_meta(telem_encoder_t *e, const telem_meta_t *m,
                  const void **data, size_t *size)
{
    if (!e || !m || !data || !size)
        return TELEM_EINVAL;
    int rc = s_enc_begin(e, TELEM_MSG_META, s_meta_tab, NTAB(s_meta_tab), m);
    return s_enc_end(e, rc, data, size);
}

int
telem_encode_query(telem_encoder_t *e, const telem_query_t *m,
                   const void **data, size_t *size)
{
    if (!e || !m || !data || !size || (m->nmetrics && !m->metrics))
        return TELEM_EINVAL;
    if (m->nmetrics > TELEM_QUERY_METRICS_MAX)
        return TELEM_ETOOBIG;
    int rc = s_enc_begin(e, TELEM_MSG_QUERY, s_query_tab, NTAB(s_query_tab), m);
    if (rc == 0) {
        s_put_key(e, "f");
        rc = s_enc_tags(e, m->filters, m->nfilters);
    }
    if (rc == 0) {
        s_put_key(e, "m");
        e->fail |= msgpack_pack_array(&e->pk, m->nmetrics);
    }
    for (uint32_t i = 0; rc == 0 && i < m->nmetrics; i++)
        rc = s_put_name(e, m->metrics[i]);
    return s_enc_end(e, rc, data, size);
}

/* n 8-byte words (int64 or double) as one little-endian bin. */
static void
s_put_words(telem_encoder_t *e, const void *src, uint32_t n)
{
    e->fail |= msgpack_pack_bin(&e->pk, (size_t) n * 8);
#if S_LITTLE_ENDIAN
    e->fail |= msgpack_pack_bin_body(&e->pk, src, (size_t) n * 8);
#else
    uint8_t chunk[256];
    for (uint32_t i = 0; i < n; i += 32) {
        uint32_t k = n - i < 32 ? n - i : 32;
        for (uint32_t j = 0; j < k; j++) {
            uint64_t w;
            memcpy(&w, (const char *) src + 8 * (size_t) (i + j), 8);
            for (int b = 0; b < 8; b++)
                chunk[8 * j + (uint32_t) b] = (uint8_t) (w >> (8 * b));
        }
        e->fail |= msgpack_pack_bin_body(&e->pk, chunk, (size_t) k * 8);
    }
#endif
}

static int
s_enc_series(telem_encoder_t *e, const telem_series_t *s)
{
    if (s->npoints && (!s->ts || !s->values))
        return TELEM_EINVAL;
    if (s->npoints > TELEM_PROTO_MAX_MSG / 16)
        return TELEM_ETOOBIG;
    e->fail |= msgpack_pack_map(&e->pk, (size_t) NTAB(s_series_tab));
    int rc = s_enc_fields(e, s_series_tab, NTAB(s_series_tab), s);
    if (rc)
        return rc;
    s_put_key(e, "tg");
    if ((rc = s_enc_tags(e, s->tags, s->ntags)) != 0)
        return rc;
    s_put_key(e, "ts");
    s_put_words(e, s->ts, s->npoints);
    s_put_key(e, "vl");
    s_put_words(e, s->values, s->npoints);
    return e->toobig ? TELEM_ETOOBIG : 0;
}

int
telem_encode_query_reply(telem_encoder_t *e, const telem_query_reply_t *m,
                         const void **data, size_t *size)
{
    if (!e || !m || !data || !size || (m->nseries && !m->series))
        return TELEM_EINVAL;
    const s_field_t *tab = s_reply_tab;
    int rc = s_enc_begin(e, TELEM_MSG_QUERY_REPLY, tab, NTAB(s_reply_tab), m);
    if (rc == 0) {
        s_put_key(e, "sr");
        e->fail |= msgpack_pack_array(&e->pk, m->nseries);
    }
    for (uint32_t i = 0; rc == 0 && i < m->nseries; i++)
        rc = s_enc_series(e, &m->series[i]);
    return s_enc_end(e, rc, data, size);
}

int
telem_encode_control(telem_encoder_t *e, const telem_control_t *m,
                     const void **data, size_t *size)
{
    if (!e || !m || !data || !size)
        return TELEM_EINVAL;
    int rc = s_enc_begin(e, TELEM_MSG_CONTROL, s_control_tab, NTAB(s_control_tab), m);
    return s_enc_end(e, rc, data, size);
}

int
telem_encode_control_reply(telem_encoder_t *e, const telem_control_reply_t *m,
                           const void **data, size_t *size)
{
    if (!e || !m || !data || !size)
        return TELEM_EINVAL;
    const s_field_t *tab = s_creply_tab;
    int rc = s_enc_begin(e, TELEM_MSG_CONTROL_REPLY, tab, NTAB(s_creply_tab), m);
    if (rc == 0) {
        s_put_key(e, "st");
        e->fail |= msgpack_pack_map(&e->pk, (size_t) NTAB(s_status_tab));
        rc = s_enc_fields(e, s_status_tab, NTAB(s_status_tab), &m->status);
    }
    return s_enc_end(e, rc, data, size);
}

int
telem_encode_error(telem_encoder_t *e, const telem_error_msg_t *m,
                   const void **data, size_t *size)
{
    if (!e || !m || !data || !size)
        return TELEM_EINVAL;
    int rc = s_enc_begin(e, TELEM_MSG_ERROR, s_error_tab, NTAB(s_error_tab), m);
    return s_enc_end(e, rc, data, size);
}
