/* flood_bad.c - malformed messages for tests/it_flood.sh (flood_peer.h).
 *
 * Each call makes the next of seven kinds in turn, for one kind of socket:
 * random bytes; a valid message of a kind the socket takes, cut short at
 * a random byte; such a message written field by field with one field (at
 * the top or inside a sample or an op) of a msgpack type it never has; a
 * header claiming 2^32-1 elements or bytes (array32, map32, str32, bin32)
 * at the top or in a field; nesting 100 to 5,000 deep in a field that
 * must be a name or a number, or under an unknown key (skipped whole)
 * before a field of a wrong type; a message of more frames than the
 * socket takes; a valid message of a kind the socket does not take (a
 * batch on a request socket, a request on the ingest socket, a dictionary
 * message to telemd, telemd's to the dictionary, replies to either).
 *
 * Every message is one the daemon must refuse and count exactly once:
 * none may decode as something it acts on (deep nesting under an unknown
 * key, which a decoder skips, is therefore followed by a bad field; a
 * dictionary server is never sent a dict_admin or dict_repl, which it
 * takes).  Valid messages come from the codec; malformed ones are written
 * with msgpack-c's packer.
 */
#include "flood_peer.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "telem_proto_dict.h"
#include "telem_proto_watch.h"

#define S_RANDOM_MAX 256
#define S_TEMPLATES 16

const char *const flood_bad_names[FLOOD_BAD_N] = {
    "random bytes", "truncated", "wrong type", "huge length",
    "deep nesting", "many frames", "wrong kind",
};

typedef struct {
    uint8_t *data;
    size_t size;
} s_buf_t;

struct flood_bad {
    flood_rng_t rng;
    unsigned next[FLOOD_TO_N];        /* the kind made next, per socket */
    msgpack_sbuffer sb;
    msgpack_packer pk;
    uint8_t random[S_RANDOM_MAX];
    s_buf_t batch, meta, query, control, dict_get, dict_hello;
    s_buf_t foreign[S_TEMPLATES];     /* replies and other families */
    int nforeign;
};

/* ---- valid messages, encoded once ----------------------------------- */

/* Keeps a copy of what an encoder made; the encoder's call is the
 * argument `rc`, evaluated before *data and *size are read here. */
static void
s_keep(s_buf_t *b, int rc, const void *const *data, const size_t *size)
{
    if (rc != 0)
        abort();                      /* a test's own encoding failed */
    b->data = malloc(*size);
    memcpy(b->data, *data, *size);
    b->size = *size;
}

static void
s_requests(flood_bad_t *self, telem_proto_encoder_t *e)
{
    const void *d;
    size_t n;
    telem_sample_t s = { .metric = "flood_bad", .level = 1, .value = 1 };
    telem_batch_t b = { .source = "flood", .samples = &s, .nsamples = 1 };
    s_keep(&self->batch, telem_proto_encode_batch(e, &b, &d, &n), &d, &n);
    telem_meta_t m = { "flood_bad", TELEM_METRIC_GAUGE, "B", "bad" };
    s_keep(&self->meta, telem_proto_encode_meta(e, &m, &d, &n), &d, &n);
    const char *metric = "flood_good";
    telem_query_t q = { .id = 77, .metrics = &metric, .nmetrics = 1 };
    s_keep(&self->query, telem_proto_encode_query(e, &q, &d, &n), &d, &n);
    telem_control_t c = { .id = 78, .op = TELEM_CTL_STATUS };
    s_keep(&self->control, telem_proto_encode_control(e, &c, &d, &n), &d, &n);
    telem_dict_op_t op = { .op = TELEM_DOP_GET, .key = (const uint8_t *) "k",
                           .klen = 1 };
    telem_dict_req_t r = { .id = 79, .ns = "", .ops = &op, .nops = 1 };
    s_keep(&self->dict_get, telem_proto_encode_dict_req(
               e, TELEM_MSG_DICT_REQ, &r, &d, &n), &d, &n);
    telem_dict_admin_t a = { .id = 80, .op = TELEM_DADM_HELLO };
    s_keep(&self->dict_hello, telem_proto_encode_dict_admin(e, &a, &d, &n),
           &d, &n);
}

/* Replies, and messages of the watcher's family: no daemon takes them. */
static void
s_foreign(flood_bad_t *self, telem_proto_encoder_t *e)
{
    const void *d;
    size_t n;
    s_buf_t *f = self->foreign;
    telem_query_reply_t qr = { .id = 1, .node = "x" };
    s_keep(f++, telem_proto_encode_query_reply(e, &qr, &d, &n), &d, &n);
    telem_control_reply_t cr = { .id = 2, .op = TELEM_CTL_STATUS,
                                 .status = { .node = "x" } };
    s_keep(f++, telem_proto_encode_control_reply(e, &cr, &d, &n), &d, &n);
    telem_error_msg_t er = { 3, TELEM_EPROTO, "no" };
    s_keep(f++, telem_proto_encode_error(e, &er, &d, &n), &d, &n);
    telem_dict_rep_t rep = { 4, 1, 0, NULL, 0 };
    s_keep(f++, telem_proto_encode_dict_rep(e, TELEM_MSG_DICT_REP, &rep, &d,
                                            &n), &d, &n);
    s_keep(f++, telem_proto_encode_dict_rep(e, TELEM_MSG_DICT_ACK, &rep, &d,
                                            &n), &d, &n);
    telem_restart_ack_t ra = { 5, 0, "ok" };
    s_keep(f++, telem_proto_encode_restart_ack(e, &ra, &d, &n), &d, &n);
    telem_watch_ctl_t wc = { .id = 6, .op = 1, .detector = "", .param = "",
                             .value = "" };
    s_keep(f++, telem_proto_encode_watch_ctl(e, &wc, &d, &n), &d, &n);
    self->nforeign = (int) (f - self->foreign);
}

flood_bad_t *
flood_bad_new(uint64_t seed)
{
    flood_bad_t *self = calloc(1, sizeof *self);
    telem_proto_encoder_t *e = telem_proto_encoder_new();
    if (!self || !e)
        abort();
    self->rng.s = seed ? seed : 1;
    msgpack_sbuffer_init(&self->sb);
    msgpack_packer_init(&self->pk, &self->sb, msgpack_sbuffer_write);
    s_requests(self, e);
    s_foreign(self, e);
    telem_proto_encoder_destroy(&e);
    return self;
}

void
flood_bad_destroy(flood_bad_t **self_p)
{
    flood_bad_t *self = *self_p;
    if (!self)
        return;
    s_buf_t *all[] = { &self->batch, &self->meta, &self->query,
                       &self->control, &self->dict_get, &self->dict_hello };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]->data);
    for (int i = 0; i < self->nforeign; i++)
        free(self->foreign[i].data);
    msgpack_sbuffer_destroy(&self->sb);
    free(self);
    *self_p = NULL;
}

/* A valid message of a kind `to` takes. */
static const s_buf_t *
s_taken(flood_bad_t *self, flood_to_t to)
{
    int one = (int) (flood_rand(&self->rng) & 1);
    if (to == FLOOD_TO_INGEST)
        return one ? &self->batch : &self->meta;
    if (to == FLOOD_TO_REQUEST)
        return one ? &self->query : &self->control;
    return one ? &self->dict_get : &self->dict_hello;
}

/* A valid message of a kind `to` does not take. */
static const s_buf_t *
s_not_taken(flood_bad_t *self, flood_to_t to)
{
    const s_buf_t *c[S_TEMPLATES + 6];
    int n = 0;
    for (int i = 0; i < self->nforeign; i++)
        c[n++] = &self->foreign[i];
    if (to != FLOOD_TO_INGEST) {
        c[n++] = &self->batch;
        c[n++] = &self->meta;
    }
    if (to != FLOOD_TO_REQUEST) {
        c[n++] = &self->query;
        c[n++] = &self->control;
    }
    if (to != FLOOD_TO_DICT) {       /* the dictionary takes these two */
        c[n++] = &self->dict_get;
        c[n++] = &self->dict_hello;
    }
    return c[flood_rand(&self->rng) % (uint64_t) n];
}

/* ---- messages written field by field ---------------------------------- */

/* A field's type, as the protocol gives it. */
typedef enum { S_INT, S_STR, S_MAP, S_ARR, S_BIN } s_type_t;

static void
s_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str_with_body(pk, s, strlen(s));
}

/* Writes a value of a type no field of type `t` accepts (an int field
 * takes no str, a str field no int, and so on). */
static void
s_wrong(msgpack_packer *pk, s_type_t t)
{
    switch (t) {
    case S_INT: s_str(pk, "x"); break;
    case S_STR: msgpack_pack_int(pk, 7); break;
    case S_MAP: msgpack_pack_array(pk, 1); msgpack_pack_int(pk, 1); break;
    case S_ARR: s_str(pk, "y"); break;
    case S_BIN: msgpack_pack_int(pk, 3); break;
    }
}

/* A field's right value: one sample or op when it is the samples or ops,
 * with element `bad` (0-3; -1 none) of a wrong type. */
static void
s_right(msgpack_packer *pk, s_type_t t, int list, int bad)
{
    static const s_type_t sample[4] = { S_STR, S_INT, S_INT, S_INT };
    static const s_type_t op[4] = { S_INT, S_BIN, S_INT, S_INT };
    if (list) {
        const s_type_t *el = list == 1 ? sample : op;
        msgpack_pack_array(pk, 1);
        msgpack_pack_array(pk, 4);
        for (int i = 0; i < 4; i++) {
            if (i == bad && el[i] == S_INT && list == 1 && i == 2)
                s_str(pk, "z");       /* the value: a float field */
            else if (i == bad)
                s_wrong(pk, el[i]);
            else if (el[i] == S_STR)
                s_str(pk, "m");
            else if (el[i] == S_BIN)
                msgpack_pack_bin_with_body(pk, "k", 1);
            else
                msgpack_pack_int(pk, 1);
        }
        return;
    }
    switch (t) {
    case S_INT: msgpack_pack_int(pk, 1); break;
    case S_STR: s_str(pk, "s"); break;
    case S_MAP: msgpack_pack_map(pk, 1); s_str(pk, "a"); s_str(pk, "b"); break;
    case S_ARR: msgpack_pack_array(pk, 0); break;
    case S_BIN: msgpack_pack_bin_with_body(pk, "b", 1); break;
    }
}

typedef struct {
    const char *key;
    s_type_t type;
    int list;                         /* 1: samples, 2: dict ops */
} s_field_t;

/* The fields of one message of each kind a socket takes; "v" and "t"
 * first, and "t" is written with the message's type. */
static const s_field_t s_batch[] = { { "v", S_INT, 0 }, { "t", S_INT, 0 },
    { "src", S_STR, 0 }, { "tg", S_MAP, 0 }, { "s", S_ARR, 1 },
    { "fin", S_INT, 0 } };
static const s_field_t s_query[] = { { "v", S_INT, 0 }, { "t", S_INT, 0 },
    { "id", S_INT, 0 }, { "m", S_ARR, 0 }, { "f", S_MAP, 0 },
    { "s", S_INT, 0 }, { "e", S_INT, 0 }, { "n", S_INT, 0 },
    { "fl", S_INT, 0 } };
static const s_field_t s_dict[] = { { "v", S_INT, 0 }, { "t", S_INT, 0 },
    { "id", S_INT, 0 }, { "ep", S_INT, 0 }, { "ns", S_STR, 0 },
    { "ops", S_ARR, 2 } };

static void
s_fields(flood_to_t to, const s_field_t **f, int *n, int *type)
{
    if (to == FLOOD_TO_INGEST) {
        *f = s_batch, *n = 6, *type = TELEM_MSG_BATCH;
    } else if (to == FLOOD_TO_REQUEST) {
        *f = s_query, *n = 9, *type = TELEM_MSG_QUERY;
    } else {
        *f = s_dict, *n = 6, *type = TELEM_MSG_DICT_REQ;
    }
}

/* One message with field `bad` (or, in the samples or ops, its element
 * `inner`) of a wrong type. */
static void
s_wrong_type(flood_bad_t *self, flood_to_t to)
{
    const s_field_t *f;
    int n, type;
    s_fields(to, &f, &n, &type);
    int bad = (int) (flood_rand(&self->rng) % (uint64_t) n);
    int inner = f[bad].list ? (int) (flood_rand(&self->rng) % 5) - 1 : -1;
    msgpack_pack_map(&self->pk, (size_t) n);
    for (int i = 0; i < n; i++) {
        s_str(&self->pk, f[i].key);
        if (i == bad && inner < 0)
            s_wrong(&self->pk, f[i].type);
        else if (i == 1)
            msgpack_pack_int(&self->pk, type);
        else
            s_right(&self->pk, f[i].type, f[i].list, i == bad ? inner : -1);
    }
}

/* 2^32-1 elements or bytes claimed at the top, in a field of the kind, or
 * under an unknown key, with a few bytes after the header. */
static void
s_huge(flood_bad_t *self, flood_to_t to)
{
    static const uint8_t heads[4] = { 0xdd, 0xdf, 0xdb, 0xc6 };
    const s_field_t *f;
    int n, type;
    s_fields(to, &f, &n, &type);
    uint8_t head[5] = { heads[flood_rand(&self->rng) % 4], 0xff, 0xff, 0xff,
                        0xff };
    int where = (int) (flood_rand(&self->rng) % (uint64_t) (n + 1));
    if (where == 0) {                 /* the top is the huge one */
        msgpack_sbuffer_write(&self->sb, (const char *) head, 5);
        msgpack_sbuffer_write(&self->sb, "\x01\x02\x03", 3);
        return;
    }
    msgpack_pack_map(&self->pk, 3);
    s_str(&self->pk, "v");
    msgpack_pack_int(&self->pk, 1);
    s_str(&self->pk, "t");
    msgpack_pack_int(&self->pk, type);
    s_str(&self->pk, where == 1 ? "zz" : f[where - 1].key);
    msgpack_sbuffer_write(&self->sb, (const char *) head, 5);
    msgpack_sbuffer_write(&self->sb, "\x91\x01", 2);
}

/* Nesting `depth` deep (arrays, or maps keyed "a"): as the value of a
 * field that must be a str or an int (the samples' or ops' first element
 * for those, else the request's id), or under an unknown key, which a
 * decoder skips whole, followed by a known field of a wrong type. */
static void
s_deep(flood_bad_t *self, flood_to_t to)
{
    const s_field_t *f;
    int n, type;
    s_fields(to, &f, &n, &type);
    int depth = (int) flood_between(&self->rng, 100, 5000);
    int maps = (int) (flood_rand(&self->rng) & 1);
    int skipped = (int) (flood_rand(&self->rng) & 1);
    int list = !skipped && to != FLOOD_TO_REQUEST;
    msgpack_pack_map(&self->pk, skipped ? 4 : 3);
    s_str(&self->pk, "v");
    msgpack_pack_int(&self->pk, 1);
    s_str(&self->pk, "t");
    msgpack_pack_int(&self->pk, type);
    s_str(&self->pk, skipped ? "zz"
                    : list ? f[n - (to == FLOOD_TO_INGEST ? 2 : 1)].key
                           : "id");
    if (list)                         /* [ [ <deep>, ... ] ] */
        msgpack_pack_array(&self->pk, 1), msgpack_pack_array(&self->pk, 4);
    for (int i = 0; i < depth; i++) {
        if (maps) {
            msgpack_pack_map(&self->pk, 1);
            s_str(&self->pk, "a");
        } else {
            msgpack_pack_array(&self->pk, 1);
        }
    }
    msgpack_pack_int(&self->pk, 1);
    for (int i = 1; list && i < 4; i++)
        msgpack_pack_int(&self->pk, 1);
    if (skipped) {
        s_str(&self->pk, to == FLOOD_TO_INGEST ? "fin" : "id");
        s_str(&self->pk, "x");
    }
}

/* ---- one message -------------------------------------------------------- */

static void
s_copy(flood_bad_t *self, const uint8_t *data, size_t size)
{
    msgpack_sbuffer_write(&self->sb, (const char *) data, size);
}

void
flood_bad_make(flood_bad_t *self, flood_to_t to, flood_msg_t *out)
{
    flood_bad_kind_t kind =
        (flood_bad_kind_t) (self->next[to]++ % FLOOD_BAD_N);
    msgpack_sbuffer_clear(&self->sb);
    out->extra = 0;
    out->kind = kind;
    const s_buf_t *v;
    switch (kind) {
    case FLOOD_BAD_RANDOM: {
        size_t n = (size_t) flood_between(&self->rng, 1, S_RANDOM_MAX);
        for (size_t i = 0; i < n; i++)
            self->random[i] = (uint8_t) flood_rand(&self->rng);
        s_copy(self, self->random, n);
        break;
    }
    case FLOOD_BAD_TRUNCATED:
        v = s_taken(self, to);
        s_copy(self, v->data, (size_t) flood_between(&self->rng, 1,
                                                     v->size - 1));
        break;
    case FLOOD_BAD_TYPE: s_wrong_type(self, to); break;
    case FLOOD_BAD_HUGE: s_huge(self, to); break;
    case FLOOD_BAD_DEEP: s_deep(self, to); break;
    case FLOOD_BAD_FRAMES:
        /* A request the socket takes, then frames it does not: refused
           by their count (a dictionary GET owns no value frame). */
        v = to == FLOOD_TO_DICT ? &self->dict_get : s_taken(self, to);
        s_copy(self, v->data, v->size);
        out->extra = (int) flood_between(&self->rng, 1, 40);
        break;
    case FLOOD_BAD_KIND:
    default:
        v = s_not_taken(self, to);
        s_copy(self, v->data, v->size);
        break;
    }
    out->data = (const uint8_t *) self->sb.data;
    out->size = self->sb.size;
}
