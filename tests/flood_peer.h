/* flood_peer.h - the pieces of tests/flood_peer, the helper of
 * tests/it_flood.sh: a generator of malformed messages (flood_bad.c), the
 * good requests and their checks over the same sockets (flood_good.c),
 * and the HTTP flood (flood_http.c).  flood_peer.c runs them.
 *
 * Everything is deterministic for a seed, so a failure can be replayed.
 * Not a library: one thread, test code only.
 */
#ifndef TELEM_TESTS_FLOOD_PEER_H
#define TELEM_TESTS_FLOOD_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "telem_keys.h"
#include "telem_proto.h"

/* ---- a small deterministic random generator (xorshift64*) ------------- */

typedef struct {
    uint64_t s;
} flood_rng_t;

static inline uint64_t
flood_rand(flood_rng_t *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * UINT64_C(2685821657736338717);
}

/* A number in [lo, hi]. */
static inline uint64_t
flood_between(flood_rng_t *r, uint64_t lo, uint64_t hi)
{
    return lo + flood_rand(r) % (hi - lo + 1);
}

/* ---- malformed messages (flood_bad.c) ---------------------------------- */

/* What a socket takes; every message made for it is one it must refuse. */
typedef enum {
    FLOOD_TO_INGEST = 0,        /* telemd's PULL: batch and meta */
    FLOOD_TO_REQUEST = 1,       /* telemd's ROUTERs: query, control */
    FLOOD_TO_DICT = 2,          /* telem_dictd's ROUTER: dict_req, admin */
    FLOOD_TO_N = 3
} flood_to_t;

/* The kinds of malformed message, made in turn. */
typedef enum {
    FLOOD_BAD_RANDOM = 0,       /* random bytes */
    FLOOD_BAD_TRUNCATED,        /* a valid message cut short */
    FLOOD_BAD_TYPE,             /* one field of a wrong msgpack type */
    FLOOD_BAD_HUGE,             /* array32/map32/str32/bin32 of 2^32-1 */
    FLOOD_BAD_DEEP,             /* nesting thousands deep */
    FLOOD_BAD_FRAMES,           /* more frames than the socket takes */
    FLOOD_BAD_KIND,             /* a valid message the socket does not take */
    FLOOD_BAD_N
} flood_bad_kind_t;

extern const char *const flood_bad_names[FLOOD_BAD_N];

typedef struct flood_bad flood_bad_t;

/* One malformed message: its first frame, then `extra` more frames (each
 * a few non-empty bytes). */
typedef struct {
    const uint8_t *data;
    size_t size;
    int extra;
    flood_bad_kind_t kind;
} flood_msg_t;

flood_bad_t *flood_bad_new(uint64_t seed);
void flood_bad_destroy(flood_bad_t **self_p);

/* Makes the next malformed message for a socket that takes `to`'s kinds;
 * out->data stays valid until the next call. */
void flood_bad_make(flood_bad_t *self, flood_to_t to, flood_msg_t *out);

/* ---- the HTTP flood (flood_http.c) -------------------------------------- */

typedef struct {
    const char *host;           /* numeric IPv4 address */
    int port;
    const char *token;          /* NULL: the server takes none */
    int metrics;                /* 1: telemd's /metrics; 0: telem_agg */
    const char *good_metric;    /* a good answer names it */
    long bad;                   /* malformed requests to send */
    long every;                 /* a good request after this many */
    int slow;                   /* partial requests held open meanwhile */
    uint64_t seed;
    int clean;                  /* only the good requests (bad / every),
                                   and no partial request */
} flood_http_opts_t;

/* Sends o->bad malformed requests, each on a connection of its own, with
 * a good request after every o->every of them, while o->slow partial
 * requests are held open.  Prints its figures; returns 0 when every good
 * request was answered correctly, else 1. */
int flood_http_run(const flood_http_opts_t *o);

#endif
