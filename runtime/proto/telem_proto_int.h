/* telem_proto_int.h - PRIVATE to the wire codec (runtime/proto/telem_proto_*.c);
 * not installed, and nothing outside the codec includes it except its own
 * unit tests.  telem_proto.h is the public API.
 *
 * The codec is split by responsibility, top to bottom; each file calls
 * only files below it:
 *   telem_proto_dec.c     decoder object, trimming of its vectors, the
 *                         dispatch of telem_proto_decode() over message
 *                         families (it names them in s_families)
 *   telem_proto_ingest.c  family "ingest": batch (1), meta (2)
 *   telem_proto_req.c     family "request": query (3) .. error (7)
 *   telem_proto_dict.c    family "dict" (32-63)
 *   telem_proto_watch.c   family "watch" (8-12)
 *   telem_proto_sysinfo.c family "sysinfo" (16-17)
 *   telem_proto_relay.c   family "relay" (24-25)
 *   telem_proto_dec_map.c decoding helpers: vectors, string arena, error
 *                         reasons, table-driven map and tags decoding
 *   telem_proto_enc.c     encoder object and table-driven encoding helpers
 *   telem_proto_rd.c      the bounded msgpack reader (telem_rd_t)
 * Internal names carry the tp_ prefix (s_ stays for file statics) and are
 * hidden from libtelem.so's exported symbols.
 *
 * How to add a message family (e.g. types 8-15, 32-63 reserved in
 * telem_proto.h) in its own file, runtime/telem_proto_<family>.c:
 *   1. Public part, in the family's own header: the message structs and
 *      telem_msg_type_t values, and one telem_proto_encode_<msg>() per message.
 *      Add the struct to the union of telem_msg_t (a decoded message must
 *      fit there) and a section to docs/protocol.md.
 *   2. A field table per message map: TP_FV first (the envelope keys "v"
 *      and "t"), then one TP_F(key, kind, required, struct, member, lo, hi)
 *      per field.  Plain kinds (strings, integers, bools) are decoded and
 *      encoded by the table; TP_K_X marks arrays and nested maps, handled
 *      by a tp_custom_fn that receives the field's index in the table.
 *   3. A decode function (tp_dec_fn) that calls tp_dec_map() with the table
 *      and writes into the message struct.  Strings go into the decoder's
 *      arena (tp_take_str, or automatically for table strings); arrays go
 *      into a vector (tp_reserve on d->vec[...]; add a TP_VEC_* entry and
 *      its element size in telem_proto_dec.c if none fits).  Vectors may
 *      move while a frame decodes, so keep indices and point into them in a
 *      fix-up pass at the end (see tp_fix_tags).  Report failures with
 *      tp_fail (innermost reason) and tp_wrap (add context going out).
 *   4. An encode function per message: validate NULL/count arguments, then
 *      tp_enc_begin(e, type, table, ntable, msg) writes the envelope and
 *      every plain field; write each TP_K_X field with tp_put_key and the
 *      packer (e->pk, or-ing results into e->fail); finish with
 *      tp_enc_end().  The map header counts every table entry, so each
 *      TP_K_X field must be written exactly once.
 *   5. Registration: a `const tp_family_t tp_<family>_family` listing
 *      {type, name, decode fn, sizeof struct}, declared below and added to
 *      s_families[] in telem_proto_dec.c.  tp_families_check(), run on
 *      the registration by tests/test_proto.c, refuses duplicate or
 *      out-of-range types and structs that do not fit telem_msg_t.
 *
 * Thread safety: as the public API; everything here works on one encoder
 * or decoder owned by the calling thread, and every table is const.
 */
#ifndef TELEM_PROTO_INT_H
#define TELEM_PROTO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "telem_proto.h"

#if defined(__GNUC__)
#define TP_HIDDEN __attribute__((visibility("hidden")))
#define TP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TP_HIDDEN
#define TP_PRINTF(f, a)
#endif

/* Bins of points are little-endian on the wire.  Hosts that are not known
 * to be little-endian (or builds with TELEM_PROTO_PORTABLE, which exercise
 * that path on any host) convert byte by byte. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && \
    !defined(TELEM_PROTO_PORTABLE)
#define TP_LITTLE_ENDIAN 1
#else
#define TP_LITTLE_ENDIAN 0
#endif

#define TP_MIN_TAG 4         /* wire bytes of a tag: two non-empty strings */
#define TP_TYPE_MAX 255      /* message types are 1 .. TP_TYPE_MAX */

/* ---------------------------------------------------------------- reader */

/* A bounded cursor over one frame.  Every primitive checks the bytes left
 * before reading, advances p only on success, and on failure returns a
 * negative telem_err_t with a short reason in `why` ("is truncated"). */
typedef struct {
    const uint8_t *p;
    const uint8_t *end;
    const char *why;    /* reason of the last failed read */
} telem_rd_t;

enum { TP_N_UINT, TP_N_INT, TP_N_FLOAT, TP_N_BOOL };
typedef struct {
    int kind;           /* TP_N_UINT: u >= 0; TP_N_INT: i < 0 */
    uint64_t u;         /* TP_N_UINT, TP_N_BOOL (0 or 1) */
    int64_t i;
    double f;
} tp_num_t;

static inline size_t
tp_left(const telem_rd_t *r)
{
    return (size_t) (r->end - r->p);
}

/* Records a reason and returns rc, for `return tp_bad(r, rc, "...")`. */
static inline int
tp_bad(telem_rd_t *r, int rc, const char *why)
{
    r->why = why;
    return rc;
}

/* Big-endian unsigned integer of n <= 8 bytes. */
static inline uint64_t
tp_be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* A length or count header: a fix form (first byte lo..lo+fixmax) or the
 * 8/16/32-bit forms marked m8/m16/m32 (0 = no such form).  Returns 0, 1
 * when the next object is of another type (nothing consumed), or < 0. */
TP_HIDDEN int tp_rd_hdr(telem_rd_t *r, int lo, int fixmax, int m8, int m16,
                        int m32, uint32_t *n);
/* A str (a bin when `bin`): *s points at its bytes inside the frame. */
TP_HIDDEN int tp_rd_bytes(telem_rd_t *r, bool bin, const uint8_t **s,
                          uint32_t *len);
/* An array (map when `map`) header whose elements need at least `min`
 * bytes each; a count the rest of the frame cannot hold is refused here,
 * before anyone allocates for it.  A map's count is in pairs. */
TP_HIDDEN int tp_rd_count(telem_rd_t *r, bool map, size_t min, uint32_t *n);
/* Any integer, float or bool. */
TP_HIDDEN int tp_rd_num(telem_rd_t *r, tp_num_t *v);
/* Skips one object of any type, nested ones included, without recursion. */
TP_HIDDEN int tp_rd_skip(telem_rd_t *r);

/* Integers of any msgpack form, range-checked; f64 takes floats and ints;
 * bool takes true/false and the integers 0 and 1.  Inline: they sit on the
 * per-sample path of the decoder. */
static inline int
tp_rd_i64(telem_rd_t *r, int64_t *out)
{
    tp_num_t v;
    int rc = tp_rd_num(r, &v);
    if (rc)
        return rc;
    if (v.kind == TP_N_INT)
        *out = v.i;
    else if (v.kind != TP_N_UINT)
        return tp_bad(r, TELEM_EPROTO, "is not an integer");
    else if (v.u > INT64_MAX)
        return tp_bad(r, TELEM_EPROTO, "is out of range");
    else
        *out = (int64_t) v.u;
    return 0;
}

static inline int
tp_rd_u64(telem_rd_t *r, uint64_t *out)
{
    tp_num_t v;
    int rc = tp_rd_num(r, &v);
    if (rc)
        return rc;
    if (v.kind == TP_N_INT)
        return tp_bad(r, TELEM_EPROTO, "is negative");
    if (v.kind != TP_N_UINT)
        return tp_bad(r, TELEM_EPROTO, "is not an integer");
    *out = v.u;
    return 0;
}

static inline int
tp_rd_f64(telem_rd_t *r, double *out)
{
    tp_num_t v;
    int rc = tp_rd_num(r, &v);
    if (rc)
        return rc;
    if (v.kind == TP_N_BOOL)
        return tp_bad(r, TELEM_EPROTO, "is not a number");
    *out = v.kind == TP_N_FLOAT ? v.f : v.kind == TP_N_INT ? (double) v.i : (double) v.u;
    return 0;
}

static inline int
tp_rd_bool(telem_rd_t *r, int64_t *out)
{
    tp_num_t v;
    int rc = tp_rd_num(r, &v);
    if (rc)
        return rc;
    if ((v.kind != TP_N_BOOL && v.kind != TP_N_UINT) || v.u > 1)
        return tp_bad(r, TELEM_EPROTO, "is not a boolean");
    *out = (int64_t) v.u;
    return 0;
}
/* ---------------------------------------------------------- field tables */

typedef enum {
    TP_K_IGN,      /* "v" and "t": checked before the body is decoded */
    TP_K_X,        /* array or nested map: a tp_custom_fn decodes it */
    TP_K_NAME,     /* str, 1..TELEM_NAME_MAX bytes */
    TP_K_STR,      /* str, 0..TELEM_NAME_MAX bytes */
    TP_K_TEXT,     /* str, 0..TELEM_TEXT_MAX bytes */
    TP_K_I64, TP_K_I32, TP_K_U32, TP_K_U64,
    TP_K_BOOL8, TP_K_BOOL32   /* msgpack bool (ints 0 and 1 accepted) */
} tp_kind_t;

/* One key of a message map.  Strings are const char * members, integers
 * int64_t/uint64_t/int32_t/uint32_t (enums are int32), BOOL8 a uint8_t.
 * A table has at most 32 entries (duplicates are tracked in a bit set). */
typedef struct {
    const char *key;
    uint8_t klen;
    uint8_t kind;       /* tp_kind_t */
    uint8_t req;        /* required on decode */
    uint16_t off;       /* offset of the member in the message struct */
    int64_t min, max;   /* TP_K_I32 and TP_K_U32; bools are 0..1 */
} tp_field_t;

#define TP_F(k, kind, req, type, member, lo, hi) \
    { k, sizeof(k) - 1, kind, req, offsetof(type, member), lo, hi }
#define TP_FV { "v", 1, TP_K_IGN, 1, 0, 0, 0 }, { "t", 1, TP_K_IGN, 1, 0, 0, 0 }
#define TP_NTAB(t) ((int) (sizeof(t) / sizeof((t)[0])))

/* --------------------------------------------------------------- decoder */

typedef struct {
    void *p;
    size_t cap;         /* elements */
} tp_vec_t;

/* The decoder's vectors; their element sizes are listed in
 * telem_proto_dec.c.  Each is trimmed per frame and freed on destroy. */
enum {
    TP_VEC_STR,         /* char: the string arena, NUL-terminated copies */
    TP_VEC_SAMPLES,     /* telem_sample_t */
    TP_VEC_TAGS,        /* telem_tag_t */
    TP_VEC_SERIES,      /* telem_series_t */
    TP_VEC_METRICS,     /* const char * */
    TP_VEC_TS,          /* int64_t, same capacity as TP_VEC_VALS */
    TP_VEC_VALS,        /* double */
    TP_VEC_DICT,        /* telem_dict_op_t or telem_dict_res_t */
    TP_VEC_WATCH,       /* bytes: the watch family's lists */
    TP_VEC_RELAY,       /* telem_relay_item_t */
    TP_VEC_COUNT
};

struct telem_decoder {
    tp_vec_t vec[TP_VEC_COUNT];
    size_t nstr, ntags, npts;   /* used in STR, TAGS, TS/VALS */
    size_t mark[2];             /* first tag of a block, for the fix-up */
    uint32_t nts, nvl;          /* points of the series being decoded */
    const uint8_t *last_raw;    /* last sample's metric, on the wire ... */
    uint32_t last_len;
    const char *last_copy;      /* ... and in the arena */
    char err[256];
};

/* Grows v to hold n elements of sz bytes (doubling).  0 or TELEM_ENOMEM. */
TP_HIDDEN int tp_reserve(tp_vec_t *v, size_t n, size_t sz);

/* Sets the decoder's reason and returns rc. */
TP_HIDDEN int tp_fail(telem_proto_decoder_t *d, int rc, const char *fmt, ...)
    TP_PRINTF(3, 4);
/* Prefixes the current reason with a context ("sample 3: ") and returns rc. */
TP_HIDDEN int tp_wrap(telem_proto_decoder_t *d, int rc, const char *fmt, ...)
    TP_PRINTF(3, 4);

/* Copies a str into the arena: at most max bytes, non-empty when asked,
 * no NUL inside.  The reason is left in r->why. */
TP_HIDDEN int tp_take_str(telem_proto_decoder_t *d, telem_rd_t *r, size_t max,
                          bool nonempty, const char **out);

/* Decodes a TP_K_X field; idx is its index in the table. */
typedef int (*tp_custom_fn)(telem_proto_decoder_t *d, telem_rd_t *r, int idx,
                            void *base);

/* Decodes the body of a map of nkeys pairs described by tab into base:
 * table strings default to "", unknown keys are skipped, duplicate keys
 * and missing required keys refused.  custom may be NULL when the table
 * has no TP_K_X field.  Sets the decoder's reason on failure. */
TP_HIDDEN int tp_dec_map(telem_proto_decoder_t *d, telem_rd_t *r,
                         uint32_t nkeys, const tp_field_t *tab, int ntab,
                         void *base, tp_custom_fn custom);

/* Appends a map of tags to TP_VEC_TAGS; *n gets their count.  The block
 * starts at d->ntags before the call; point at it with tp_fix_tags once
 * the frame is decoded. */
TP_HIDDEN int tp_dec_tags(telem_proto_decoder_t *d, telem_rd_t *r, uint32_t *n);

/* Points *tags at the n tags at *cursor in the final tag vector (NULL when
 * n is 0) and advances *cursor: blocks are fixed in the order appended.
 * Inline: it runs once per sample. */
static inline void
tp_fix_tags(telem_proto_decoder_t *d, const telem_tag_t **tags, uint32_t n,
            size_t *cursor)
{
    *tags = n ? (const telem_tag_t *) d->vec[TP_VEC_TAGS].p + *cursor : NULL;
    *cursor += n;
}

/* ------------------------------------------------------------- families */

/* Decodes the body of a top map of nkeys pairs into msg (zeroed, the
 * message's union member).  Sets the decoder's reason on failure; the
 * dispatch prefixes it with the message name. */
typedef int (*tp_dec_fn)(telem_proto_decoder_t *d, telem_rd_t *r,
                         uint32_t nkeys, void *msg);

typedef struct {
    int type;           /* telem_msg_type_t value, 1 .. TP_TYPE_MAX */
    const char *name;   /* as telem_proto_msg_type_name() returns it */
    tp_dec_fn decode;
    size_t size;        /* sizeof the message struct */
} tp_type_t;

typedef struct {
    const char *name;
    const tp_type_t *types;
    size_t ntypes;
} tp_family_t;

/* The registered families (telem_proto_dec.c lists them in s_families). */
extern const tp_family_t tp_ingest_family TP_HIDDEN;    /* 1-2 */
extern const tp_family_t tp_request_family TP_HIDDEN;   /* 3-7 */
extern const tp_family_t tp_dict_family TP_HIDDEN;      /* 32-37 */
extern const tp_family_t tp_watch_family TP_HIDDEN;     /* 8-12 */
extern const tp_family_t tp_sysinfo_family TP_HIDDEN;   /* 16-17 */
extern const tp_family_t tp_relay_family TP_HIDDEN;     /* 24-25 */

/* The registered type `type`, or NULL. */
TP_HIDDEN const tp_type_t *tp_type_find(int64_t type);

/* The registered families, s_families of telem_proto_dec.c; *n gets
 * their count. */
TP_HIDDEN const tp_family_t *const *tp_families(size_t *n);

/* Checks a registration (tp_families(), or any other set for tests): every
 * type in 1..TP_TYPE_MAX and registered once, with a name and a decoder,
 * and every struct fitting telem_msg_t.  Returns 0 or TELEM_EINVAL with a
 * reason in why (may be NULL). */
TP_HIDDEN int tp_families_check(const tp_family_t *const *fams, size_t nfams,
                                char *why, size_t whylen);

/* --------------------------------------------------------------- encoder */

struct telem_encoder {
    msgpack_sbuffer buf;
    msgpack_packer pk;  /* writes into buf, refusing past TELEM_PROTO_MAX_MSG */
    int fail;           /* a write failed: or-ed packer results */
    bool toobig;        /* the frame passed TELEM_PROTO_MAX_MSG */
};

/* Writes a str / a key.  Failures accumulate in e->fail. */
TP_HIDDEN void tp_put_str(telem_proto_encoder_t *e, const char *s, size_t len);
TP_HIDDEN void tp_put_key(telem_proto_encoder_t *e, const char *k);

/* Checks a string to send: NULL becomes "" unless it must be non-empty.
 * Returns 0, TELEM_EINVAL (NULL or empty when nonempty) or TELEM_ETOOBIG
 * (longer than max); *len gets its length. */
TP_HIDDEN int tp_check_str(const char **s, size_t max, bool nonempty,
                           size_t *len);
/* Checks and writes a name (1..TELEM_NAME_MAX bytes). */
TP_HIDDEN int tp_put_name(telem_proto_encoder_t *e, const char *s);

/* Writes every plain field of tab from base, with its key; TP_K_IGN and
 * TP_K_X fields are the caller's.  0, TELEM_EINVAL or TELEM_ETOOBIG. */
TP_HIDDEN int tp_enc_fields(telem_proto_encoder_t *e, const tp_field_t *tab,
                            int ntab, const void *base);

/* Starts a frame: clears the buffer, writes the top map header for ntab
 * entries, "v" and "t", then the plain fields of m. */
TP_HIDDEN int tp_enc_begin(telem_proto_encoder_t *e, int type,
                           const tp_field_t *tab, int ntab, const void *m);

/* Ends a frame: rc if non-zero, else TELEM_ETOOBIG or TELEM_ENOMEM for a
 * failed write, else 0 with *data and *size set to the encoder's buffer. */
TP_HIDDEN int tp_enc_end(telem_proto_encoder_t *e, int rc, const void **data,
                         size_t *size);

/* Writes a tags map: at most TELEM_TAGS_MAX names, no duplicate keys. */
TP_HIDDEN int tp_enc_tags(telem_proto_encoder_t *e, const telem_tag_t *tags,
                          uint32_t n);

/* Writes n 8-byte words (int64 or double) as one little-endian bin. */
TP_HIDDEN void tp_put_words(telem_proto_encoder_t *e, const void *src,
                            uint32_t n);

#endif
