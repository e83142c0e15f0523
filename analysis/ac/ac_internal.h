/* ac_internal.h - what the analysis client's files share and nobody else sees.
 *
 * ac.c owns the client and its sockets and runs the fan-out (send one frame
 * to many nodes, collect replies until a deadline); ac_query.c and
 * ac_status.c build requests and turn replies into results; ac_nodes.c reads
 * node files; ac_arena.c is the bump allocator results copy replies into.
 * Internal names use the `ac__` prefix.
 */
#ifndef AC_INTERNAL_H
#define AC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ac.h"
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

/* A fresh request id (never 0). */
uint64_t ac__next_id(ac_t *self);

/* The client's encoder (for building the request frame). */
telem_proto_encoder_t *ac__encoder(ac_t *self);

/* The deadline a call uses: timeout_ms if > 0, else the client's. */
int ac__timeout(const ac_t *self, int timeout_ms);

#endif
