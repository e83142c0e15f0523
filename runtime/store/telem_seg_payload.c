/* telem_seg_payload.c - the payloads of SERIES, BLOCK, META, SNAPSHOT
 * and ANNOTATION records (docs/store.md, "Segment files"), encoded and decoded.
 *
 * The writers' argument checks live here too, so what a writer accepts
 * is exactly what the reader accepts back.
 */
#include <string.h>

#include "telem_block.h"
#include "telem_paths.h"
#include "telem_seg_int.h"

#define SEG_VAR_MAX 10u

int
seg_key_valid(const char *key, size_t len)
{
    if (!key || len < 2 || key[len - 1] != '\0' || key[0] == '\0')
        return 0;
    size_t parts = 0, start = 0;
    for (size_t i = 0; i < len; i++) {
        if (key[i] != '\0')
            continue;
        size_t plen = i - start;
        if (plen > TELEM_NAME_MAX)
            return 0;
        /* parts 1, 3, 5...: tag keys, non-empty */
        if (parts % 2 == 1 && plen == 0)
            return 0;
        parts++;
        start = i + 1;
    }
    return parts % 2 == 1 && (parts - 1) / 2 <= TELEM_TAGS_MAX;
}

int
seg_check_chunk(const telem_chunk_t *c)
{
    telem_block_info_t info;
    if (!c || !seg_key_valid(c->key, c->key_len) || !c->block ||
        c->key_len > TELEM_SEG_RECORD_MAX / 2 ||
        c->block_len > TELEM_SEG_RECORD_MAX / 2)
        return TELEM_EINVAL;
    if (telem_block_info(c->block, c->block_len, &info) != 0 ||
        info.size != c->block_len)
        return TELEM_EINVAL;
    return 0;
}

int
seg_check_meta(const telem_meta_t *m)
{
    if (!m || !m->metric || !*m->metric ||
        strlen(m->metric) > TELEM_NAME_MAX ||
        (m->type != TELEM_METRIC_GAUGE && m->type != TELEM_METRIC_COUNTER) ||
        (m->unit && strlen(m->unit) > TELEM_NAME_MAX) ||
        (m->doc && strlen(m->doc) > TELEM_TEXT_MAX))
        return TELEM_EINVAL;
    return 0;
}

int
seg_enc_series(seg_buf_t *b, uint64_t id, const char *node, const char *key,
               uint32_t key_len, int counter)
{
    size_t nlen = strlen(node);
    long long at = seg_rec_begin(b, TELEM_SEG_REC_SERIES,
                                 3 * SEG_VAR_MAX + nlen + key_len + 1);
    if (at < 0)
        return (int) at;
    seg_put_uvar(b, id);
    seg_put_str(b, node, nlen);
    seg_put_str(b, key, key_len);
    seg_put_u8(b, counter ? 1 : 0);
    seg_rec_end(b, at);
    return 0;
}

int
seg_enc_block(seg_buf_t *b, uint64_t id, const telem_chunk_t *c,
              int64_t *first_ts, int64_t *last_ts, uint32_t *npoints)
{
    telem_block_info_t info;
    if (telem_block_info(c->block, c->block_len, &info) != 0 ||
        info.size != c->block_len)
        return TELEM_EINVAL;
    long long at = seg_rec_begin(b, TELEM_SEG_REC_BLOCK,
                                 2 * SEG_VAR_MAX + 1 + c->block_len);
    if (at < 0)
        return (int) at;
    seg_put_uvar(b, id);
    seg_put_uvar(b, c->first_seq);
    seg_put_u8(b, c->closed ? 1 : 0);
    seg_put_bytes(b, c->block, c->block_len);
    seg_rec_end(b, at);
    if (first_ts)
        *first_ts = info.first_ts;
    if (last_ts)
        *last_ts = info.last_ts;
    if (npoints)
        *npoints = info.npoints;
    return 0;
}

int
seg_enc_meta(seg_buf_t *b, const char *node, const telem_meta_t *m)
{
    const char *unit = m->unit ? m->unit : "", *doc = m->doc ? m->doc : "";
    size_t nlen = strlen(node), mlen = strlen(m->metric);
    size_t ulen = strlen(unit), dlen = strlen(doc);
    long long at = seg_rec_begin(b, TELEM_SEG_REC_META,
                                 4 * SEG_VAR_MAX + 1 + nlen + mlen + ulen +
                                     dlen);
    if (at < 0)
        return (int) at;
    seg_put_str(b, node, nlen);
    seg_put_str(b, m->metric, mlen);
    seg_put_u8(b, (unsigned) m->type);
    seg_put_str(b, unit, ulen);
    seg_put_str(b, doc, dlen);
    seg_rec_end(b, at);
    return 0;
}

int
seg_enc_snapshot(seg_buf_t *b, const char *node, const char *json, size_t len,
                 int64_t created_ns)
{
    size_t nlen = strlen(node);
    long long at = seg_rec_begin(b, TELEM_SEG_REC_SNAPSHOT,
                                 SEG_VAR_MAX + nlen + 8 + len);
    if (at < 0)
        return (int) at;
    seg_put_str(b, node, nlen);
    seg_put_u64(b, (uint64_t) created_ns);
    seg_put_bytes(b, json, len);
    seg_rec_end(b, at);
    return 0;
}

int
seg_enc_note(seg_buf_t *b, telem_seg_note_t type, int64_t time_ms,
             const char *json, size_t len)
{
    long long at = seg_rec_begin(b, TELEM_SEG_REC_ANNOTATION, 1 + 8 + len);
    if (at < 0)
        return (int) at;
    seg_put_u8(b, (unsigned) type);
    seg_put_u64(b, (uint64_t) time_ms);
    seg_put_bytes(b, json, len);
    seg_rec_end(b, at);
    return 0;
}

/* Copies s[0..n) NUL-terminated into scratch at *at; returns the copy. */
static const char *
s_copy(char *scratch, size_t *at, const unsigned char *s, size_t n)
{
    char *out = scratch + *at;
    memcpy(out, s, n);
    out[n] = '\0';
    *at += n + 1;
    return out;
}

/* A node name: valid and without NUL. */
static const char *
s_node(seg_cur_t *c, char *scratch, size_t *at)
{
    size_t n;
    const unsigned char *p = seg_cur_str(c, TELEM_NAME_MAX, &n);
    if (!p || n == 0)
        return NULL;
    const char *node = s_copy(scratch, at, p, n);
    if (strlen(node) != n || !telem_node_valid(node)) {
        c->bad = 1;
        return NULL;
    }
    return node;
}

static int
s_dec_series(seg_cur_t *c, char *scratch, size_t *at, telem_seg_rec_t *r)
{
    size_t klen;
    r->series_id = seg_cur_uvar(c);
    r->node = s_node(c, scratch, at);
    const unsigned char *key = seg_cur_str(c, TELEM_SEG_RECORD_MAX, &klen);
    unsigned flags = seg_cur_u8(c);
    if (c->bad || !r->node || flags > 1 || c->pos != c->len ||
        !seg_key_valid((const char *) key, klen))
        return TELEM_EPROTO;
    r->chunk.key = (const char *) key;
    r->chunk.key_len = (uint32_t) klen;
    r->chunk.metric = r->chunk.key;
    r->chunk.counter = (int) flags;
    return 0;
}

static int
s_dec_block(seg_cur_t *c, telem_seg_rec_t *r)
{
    telem_block_info_t info;
    r->series_id = seg_cur_uvar(c);
    r->chunk.first_seq = seg_cur_uvar(c);
    unsigned flags = seg_cur_u8(c);
    if (c->bad || flags > 1 || c->pos >= c->len)
        return TELEM_EPROTO;
    r->chunk.closed = (int) flags;
    r->chunk.block = c->p + c->pos;
    r->chunk.block_len = c->len - c->pos;
    if (telem_block_info(r->chunk.block, r->chunk.block_len, &info) != 0 ||
        info.size != r->chunk.block_len)
        return TELEM_EPROTO;
    r->npoints = info.npoints;
    r->first_ts = info.first_ts;
    r->last_ts = info.last_ts;
    return 0;
}

static const char *
s_text(seg_cur_t *c, char *scratch, size_t *at, size_t max)
{
    size_t n;
    const unsigned char *p = seg_cur_str(c, max, &n);
    if (!p)
        return NULL;
    const char *s = s_copy(scratch, at, p, n);
    if (strlen(s) != n) {
        c->bad = 1;
        return NULL;
    }
    return s;
}

static int
s_dec_meta(seg_cur_t *c, char *scratch, size_t *at, telem_seg_rec_t *r)
{
    r->node = s_node(c, scratch, at);
    r->meta.metric = s_text(c, scratch, at, TELEM_NAME_MAX);
    unsigned type = seg_cur_u8(c);
    r->meta.unit = s_text(c, scratch, at, TELEM_NAME_MAX);
    r->meta.doc = s_text(c, scratch, at, TELEM_TEXT_MAX);
    if (c->bad || !r->node || !r->meta.metric || !*r->meta.metric ||
        !r->meta.unit || !r->meta.doc || type > TELEM_METRIC_COUNTER ||
        c->pos != c->len)
        return TELEM_EPROTO;
    r->meta.type = (telem_metric_type_t) type;
    return 0;
}

static int
s_dec_snapshot(seg_cur_t *c, char *scratch, size_t *at, telem_seg_rec_t *r)
{
    r->node = s_node(c, scratch, at);
    r->created_ns = (int64_t) seg_cur_u64(c);
    if (c->bad || !r->node || c->len - c->pos > TELEM_SEG_SNAPSHOT_MAX)
        return TELEM_EPROTO;
    r->json = (const char *) c->p + c->pos;
    r->json_len = c->len - c->pos;
    return 0;
}

static int
s_dec_note(seg_cur_t *c, telem_seg_rec_t *r)
{
    unsigned type = seg_cur_u8(c);
    r->note_ms = (int64_t) seg_cur_u64(c);
    if (c->bad || (type != TELEM_SEG_NOTE_EVENT &&
                   type != TELEM_SEG_NOTE_RESTART) ||
        c->len - c->pos > TELEM_SEG_NOTE_MAX)
        return TELEM_EPROTO;
    r->note = (telem_seg_note_t) type;
    r->json = (const char *) c->p + c->pos;
    r->json_len = c->len - c->pos;
    return 0;
}

int
seg_dec_payload(unsigned kind, const unsigned char *p, uint32_t len,
                char *scratch, telem_seg_rec_t *r)
{
    seg_cur_t c = {p, len, 0, 0};
    size_t at = 0;
    r->kind = (telem_seg_rec_kind_t) kind;
    switch (kind) {
    case TELEM_SEG_REC_SERIES:
        return s_dec_series(&c, scratch, &at, r);
    case TELEM_SEG_REC_BLOCK:
        return s_dec_block(&c, r);
    case TELEM_SEG_REC_META:
        return s_dec_meta(&c, scratch, &at, r);
    case TELEM_SEG_REC_SNAPSHOT:
        return s_dec_snapshot(&c, scratch, &at, r);
    case TELEM_SEG_REC_INDEX:
        return len > 0 ? 0 : TELEM_EPROTO;
    case TELEM_SEG_REC_ANNOTATION:
        return s_dec_note(&c, r);
    default:
        return TELEM_EPROTO;
    }
}
