/* ac_internal.h - what the analysis client's files share and nobody else sees.
 *
 * ac.c owns the client and its sockets and runs the fan-out (send one frame
 * to many nodes, collect replies until a deadline); ac_relay.c sends the
 * part of a fan-out that relays cover through them and turns their merged
 * answers back into per-node replies; ac_query.c and ac_status.c build
 * requests and turn replies into results; ac_nodes.c reads node files and
 * ac_relays.c relays files; ac_arena.c is the bump allocator results copy
 * replies into.  Internal names use the `ac__` prefix.
 */
#ifndef AC_INTERNAL_H
#define AC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <zmq.h>

#include "ac.h"
#include "telem_keys.h"
#include "telem_proto.h"

#define AC__ENDPOINT_MAX 1024   /* longest endpoint accepted in a node file */

_Static_assert(AC_MAX_REPLY_DEFAULT == TELEM_PROTO_MAX_MSG,
               "ac.h's default reply limit is the protocol's frame limit");

/* ---- node lists (ac_nodes.c) ---- */

typedef struct {
    char *name;
    char *endpoint;
} ac__node_entry_t;

/* Reads and validates a node file (NULL: the default path).  On success
 * *nodes holds *n entries (n >= 1) that the caller frees with
 * ac__nodes_free().  On failure returns the code and writes a sentence to
 * why (may be NULL). */
int ac__nodes_read(const char *path, ac__node_entry_t **nodes, size_t *n,
                   char *why, size_t why_size);

/* Validates and copies caller-given names and endpoints (same rules). */
int ac__nodes_copy(const char *const *names, const char *const *endpoints,
                   size_t n, ac__node_entry_t **nodes, char *why,
                   size_t why_size);

void ac__nodes_free(ac__node_entry_t **nodes, size_t n);

/* NULL when (name, endpoint) is a valid node file entry, else the reason. */
const char *ac__node_check(const char *name, const char *endpoint);

/* ---- relays files (ac_relays.c) ---- */

typedef struct {
    char *name;
    char *endpoint;
    char **nodes;               /* the relay's group, as written */
    size_t nnodes;
} ac__relay_entry_t;

/* Parses the text of a relays file (`len` bytes; `what` names it in
 * reasons): "<relay>\t<endpoint>\t<node>,<node>,...\n" a line, '#'
 * comments and blank lines skipped, a CR before the LF forgiven.  Relay
 * names follow node-name rules, endpoints the node file's; a group holds
 * at least one node; a relay named twice, or a node in two groups (or
 * twice in one), is refused.  No relay line at all is fine (*n 0).
 * Returns 0, TELEM_EINVAL with `why` naming the line, or TELEM_ENOMEM. */
int ac__relays_parse(const char *text, size_t len, const char *what,
                     ac__relay_entry_t **out, size_t *n, char *why,
                     size_t why_size);

/* The relays file a client of `nodefile` (NULL: the default) uses:
 * $TELEM_RELAYS when set (empty: none), else "relays" beside the node
 * file when it exists.  Reads and parses it.  Returns 0 with *n 0 when
 * there is none; TELEM_ENOTFOUND when $TELEM_RELAYS names a missing file;
 * TELEM_EIO, TELEM_ETOOBIG (over 16 MiB) or the parser's error. */
int ac__relays_read(const char *nodefile, ac__relay_entry_t **out, size_t *n,
                    char *why, size_t why_size);

void ac__relays_free(ac__relay_entry_t **r, size_t n);

/* ---- arena (ac_arena.c) ---- */

typedef struct ac__chunk ac__chunk_t;
typedef struct {
    ac__chunk_t *head;
} ac__arena_t;

/* 8-byte aligned memory that lives until ac__arena_free(); NULL when out of
 * memory.  size 0 gives a valid unique pointer. */
void *ac__arena_alloc(ac__arena_t *a, size_t size);
void *ac__arena_memdup(ac__arena_t *a, const void *src, size_t size);
char *ac__arena_strdup(ac__arena_t *a, const char *s);  /* NULL -> "" */
void ac__arena_free(ac__arena_t *a);

/* ---- the client (ac.c) ---- */

enum { AC__IDLE = 0, AC__WANT_SEND, AC__SENT, AC__DONE, AC__VIA };

typedef struct {
    char *name;
    char *endpoint;
    void *sock;              /* DEALER, or NULL (not opened yet, or failed) */
    int state;               /* AC__* during a call; AC__VIA: its relay was
                                asked for it */
    long relay;              /* index of the relay covering it, or -1 */
} ac__node_t;

typedef struct {
    char *name;
    char *endpoint;
    void *sock;              /* DEALER to the relay's ROUTER, or NULL */
    size_t *group;           /* node indexes it covers, ascending */
    size_t ngroup;
    int state;               /* AC__IDLE, AC__WANT_SEND, AC__SENT, AC__DONE */
    int64_t until_ns;        /* this call: its answer is due by then */
    int64_t skip_until_ns;   /* back-off: not asked before then */
    void *req;               /* this call's relay request frame */
    size_t req_size;
} ac__relay_t;

struct ac {
    void *ctx;
    telem_keys_t *keys;      /* the job's keys: CURVE to TCP nodes; NULL */
    ac__node_t *nodes;
    size_t n;
    ac__relay_t *relays;
    size_t nrelays;
    int64_t relay_backoff_ns;
    int timeout_ms;
    size_t max_reply;
    uint64_t next_id;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
    telem_proto_encoder_t *renc;   /* relay requests (enc holds the inner) */
    telem_proto_decoder_t *rdec;   /* relay replies (dec decodes the inner) */
    zmq_pollitem_t *items;   /* n + nrelays entries, rebuilt on every poll */
    size_t *item_node;       /* items[k] is node item_node[k], or relay
                                item_node[k] - n */
};

/* ---- fan-out (ac.c) ---- */

/* Called for a reply of the expected type whose id matches; copies what it
 * needs (msg's pointers die after the call).  Returns 0, or a negative code
 * that makes the node count as failed. */
typedef int (ac__reply_fn)(void *arg, size_t node, const telem_msg_t *msg);

/* Called once for each node that failed: code and a sentence (copy it). */
typedef void (ac__miss_fn)(void *arg, size_t node, int code,
                           const char *message);

typedef struct {
    const size_t *sel;          /* node indexes to ask, ascending */
    size_t nsel;
    const void *frame;          /* the request, sent to each node */
    size_t size;
    uint64_t id;                /* request id the replies must carry */
    telem_msg_type_t expect;    /* reply type that counts as an answer */
    int notfound_is_empty;      /* a TELEM_ENOTFOUND error counts as an answer */
    int relay;                  /* a read: relays may carry it */
    int report_ms;              /* deadline named in sentences; 0: timeout */
    size_t report_max;          /* reply limit named; 0: the client's */
    /* When set, a reply whose id matches goes here raw instead of through
       on_reply (ac_forward). */
    void (*on_raw)(void *arg, size_t node, const void *frame, size_t size);
    int timeout_ms;             /* > 0 */
    ac__reply_fn *on_reply;
    ac__miss_fn *on_miss;
    void *arg;
} ac__call_t;

/* Sends, waits, collects.  Returns 0 (all answered), TELEM_EPARTIAL,
 * TELEM_ETIMEDOUT (nobody answered) or the first node's error (every node
 * that answered did so with an error).  on_miss has been called for every
 * node that is not counted as answered. */
int ac__fanout(ac_t *self, const ac__call_t *call);

/* The running tally of a fan-out. */
typedef struct {
    size_t nok;          /* nodes counted as answered */
    size_t nerr;         /* nodes that answered with an error */
    int first_err;       /* first such error, in arrival order */
} ac__tally_t;

/* Node i is done without an answer; `answered` says whether the node
 * itself reported the error (as opposed to no contact at all). */
void ac__fail(ac_t *self, const ac__call_t *c, ac__tally_t *t, size_t i,
              int code, const char *message, int answered);

/* Acts on one reply frame of node i, as it came from the node (directly
 * or carried by a relay): decodes, matches, hands it on.  A stale frame
 * leaves the node's state alone. */
void ac__handle(ac_t *self, const ac__call_t *c, ac__tally_t *t, size_t i,
                const void *data, size_t size);

/* Opens node i's socket if it has none (relayed nodes open theirs on
 * first direct use).  0 or an error. */
int ac__node_open(ac_t *self, size_t i);

/* ---- relays (ac_relay.c) ---- */

/* Takes the parsed relays (entries are consumed and nulled) and ties them
 * to the client's nodes: group names that are not nodes are dropped, a
 * relay left without nodes is dropped.  0 or TELEM_ENOMEM. */
int ac__relays_attach(ac_t *self, ac__relay_entry_t **entries_p, size_t n);

/* Closes the relays' sockets and frees them. */
void ac__relays_close(ac_t *self);

/* Start of a call: for every relay not backing off that covers selected
 * nodes, builds its request and marks those nodes AC__VIA.  A relay that
 * cannot be used leaves its nodes to the direct path. */
void ac__relay_begin(ac_t *self, const ac__call_t *c, int64_t now);

/* Adds the relays in play to self->items from index k; returns the new k. */
size_t ac__relay_poll_set(ac_t *self, size_t k);

/* Earliest answer due of a relay in play, or INT64_MAX. */
int64_t ac__relay_due(const ac_t *self);

/* Reads what relay r sent; hands every embedded reply to ac__handle. */
void ac__relay_drain(ac_t *self, const ac__call_t *c, ac__tally_t *t,
                     size_t r);

/* Gives up on relays whose answer is overdue: their nodes still waiting go
 * direct and the relay backs off. */
void ac__relay_expire(ac_t *self, const ac__call_t *c, ac__tally_t *t,
                      int64_t now);

/* End of a call: relays still owed an answer get a new socket; states
 * reset. */
void ac__relay_settle(ac_t *self);

/* A fresh request id (never 0). */
uint64_t ac__next_id(ac_t *self);

/* The client's encoder (for building the request frame). */
telem_proto_encoder_t *ac__encoder(ac_t *self);

/* The deadline a call uses: timeout_ms if > 0, else the client's. */
int ac__timeout(const ac_t *self, int timeout_ms);

#endif
