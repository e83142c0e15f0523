/* telem_proto_enc.c - the encoder object and the table-driven helpers every
 * message encoder is built from (declared in telem_proto_int.h); the
 * telem_proto_encode_*() functions live with their message families.
 *
 * Encoding uses msgpack-c's packer over a reused msgpack_sbuffer whose
 * write callback enforces TELEM_PROTO_MAX_MSG, so a frame that grows past
 * the limit stops growing at once and the encode reports TELEM_ETOOBIG.
 * Packer failures are or-ed into e->fail and checked once, at the end of
 * the frame (tp_enc_end), which keeps each encoder a straight sequence of
 * writes.  Everything sent is validated the way the decoder will check it.
 */
#include "telem_proto_int.h"

#include <stdlib.h>
#include <string.h>

static int
s_write(void *data, const char *buf, size_t len)
{
    telem_proto_encoder_t *e = data;
    if (len > TELEM_PROTO_MAX_MSG - e->buf.size) {
        e->toobig = true;
        return -1;
    }
    return msgpack_sbuffer_write(&e->buf, buf, len);
}

telem_proto_encoder_t *
telem_proto_encoder_new(void)
{
    telem_proto_encoder_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    msgpack_sbuffer_init(&e->buf);
    msgpack_packer_init(&e->pk, e, s_write);
    return e;
}

void
telem_proto_encoder_destroy(telem_proto_encoder_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    msgpack_sbuffer_destroy(&(*self_p)->buf);
    free(*self_p);
    *self_p = NULL;
}

void
tp_put_str(telem_proto_encoder_t *e, const char *s, size_t len)
{
    e->fail |= msgpack_pack_str_with_body(&e->pk, s, len);
}

void
tp_put_key(telem_proto_encoder_t *e, const char *k)
{
    tp_put_str(e, k, strlen(k));
}

/* Checks a string to send: NULL is "" unless it must be non-empty. */
int
tp_check_str(const char **s, size_t max, bool nonempty, size_t *len)
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

int
tp_put_name(telem_proto_encoder_t *e, const char *s)
{
    size_t len;
    int rc = tp_check_str(&s, TELEM_NAME_MAX, true, &len);
    if (rc == 0)
        tp_put_str(e, s, len);
    return rc;
}

static int
s_enc_field(telem_proto_encoder_t *e, const tp_field_t *f, const void *base)
{
    const char *p = (const char *) base + f->off;
    int64_t i32;
    if (f->kind == TP_K_NAME || f->kind == TP_K_STR || f->kind == TP_K_TEXT) {
        const char *s;
        size_t len;
        memcpy(&s, p, sizeof s);
        size_t max = f->kind == TP_K_TEXT ? TELEM_TEXT_MAX : TELEM_NAME_MAX;
        int rc = tp_check_str(&s, max, f->kind == TP_K_NAME, &len);
        if (rc == 0)
            tp_put_str(e, s, len);
        return rc;
    }
    if (f->kind == TP_K_U64 || f->kind == TP_K_I64) {
        uint64_t u;
        memcpy(&u, p, 8);
        e->fail |= f->kind == TP_K_U64 ? msgpack_pack_uint64(&e->pk, u)
                                    : msgpack_pack_int64(&e->pk, (int64_t) u);
        return 0;
    }
    if (f->kind == TP_K_BOOL8) {
        i32 = *(const uint8_t *) p;
    } else if (f->kind == TP_K_U32) {
        uint32_t w;
        memcpy(&w, p, 4);
        i32 = w;
    } else {
        int32_t w;
        memcpy(&w, p, 4);
        i32 = w;
    }
    if (f->kind == TP_K_BOOL8 || f->kind == TP_K_BOOL32)
        i32 = i32 != 0;   /* any non-zero flag is true */
    if (i32 < f->min || i32 > f->max)
        return TELEM_EINVAL;
    if (f->kind == TP_K_BOOL8 || f->kind == TP_K_BOOL32)
        e->fail |= i32 ? msgpack_pack_true(&e->pk) : msgpack_pack_false(&e->pk);
    else
        e->fail |= msgpack_pack_int64(&e->pk, i32);
    return 0;
}

/* Writes every plain field of a table; TP_K_X fields are the caller's. */
int
tp_enc_fields(telem_proto_encoder_t *e, const tp_field_t *tab, int ntab,
              const void *base)
{
    for (int j = 0; j < ntab; j++) {
        if (tab[j].kind == TP_K_IGN || tab[j].kind == TP_K_X)
            continue;
        tp_put_key(e, tab[j].key);
        int rc = s_enc_field(e, &tab[j], base);
        if (rc)
            return rc;
    }
    return 0;
}

/* Starts a frame: the top map with "v" and "t", then the plain fields. */
int
tp_enc_begin(telem_proto_encoder_t *e, int type, const tp_field_t *tab,
             int ntab, const void *m)
{
    msgpack_sbuffer_clear(&e->buf);
    e->fail = 0;
    e->toobig = false;
    e->fail |= msgpack_pack_map(&e->pk, (size_t) ntab);
    tp_put_key(e, "v");
    e->fail |= msgpack_pack_int(&e->pk, TELEM_PROTO_VERSION);
    tp_put_key(e, "t");
    e->fail |= msgpack_pack_int(&e->pk, (int) type);
    return tp_enc_fields(e, tab, ntab, m);
}

int
tp_enc_end(telem_proto_encoder_t *e, int rc, const void **data, size_t *size)
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

int
tp_enc_tags(telem_proto_encoder_t *e, const telem_tag_t *tags, uint32_t n)
{
    if (n > TELEM_TAGS_MAX)
        return TELEM_ETOOBIG;
    if (n && !tags)
        return TELEM_EINVAL;
    e->fail |= msgpack_pack_map(&e->pk, n);
    for (uint32_t i = 0; i < n; i++) {
        int rc = tp_put_name(e, tags[i].key);
        if (rc == 0)
            rc = tp_put_name(e, tags[i].value);
        if (rc)
            return rc;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(tags[j].key, tags[i].key) == 0)
                return TELEM_EINVAL;
    }
    return 0;
}

/* n 8-byte words (int64 or double) as one little-endian bin. */
void
tp_put_words(telem_proto_encoder_t *e, const void *src, uint32_t n)
{
    e->fail |= msgpack_pack_bin(&e->pk, (size_t) n * 8);
#if TP_LITTLE_ENDIAN
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

