/* ac.h - telem's analysis client: one query, every node, one deadline.
 *
 * An ac_t holds one connection (a ZeroMQ DEALER) to the query socket of every
 * telemd of a job.  A call sends its request to all the nodes it names at
 * once, then waits for their replies until one deadline passes, and returns
 * what came: merged series plus the nodes that did not answer (or answered
 * with an error) and why.  One dead node never hangs a call; it costs at most
 * the call's deadline and is named in the result.
 *
 * The node list comes from a node file (see telem_paths.h): one node a line,
 * "<name>\t<query endpoint>\n"; lines whose first character is '#' are
 * comments and blank lines are skipped; a trailing CR is ignored.  Names may
 * hold any character except '/', tab, CR, LF and NUL (spaces included, kept
 * as written).  Duplicate names and lines without a tab are errors.
 *
 * Stale replies: every request carries a fresh 64-bit id and replies with
 * another id are dropped.  In addition, when a call ends with a request still
 * unanswered, that node's socket is closed and reconnected, so a reply that
 * arrives late is never read (and queued requests to a dead node are never
 * delivered in a burst when it comes back).  Sockets use ZMQ_IMMEDIATE, so a
 * request is only handed to a node whose connection is up; a node that never
 * connects within the deadline is reported as TELEM_ECONN.
 *
 * Size limit: replies over the limit (AC_MAX_REPLY_DEFAULT, the protocol's
 * largest frame, unless changed with ac_set_max_reply) are refused by ZeroMQ (ZMQ_MAXMSGSIZE): the
 * connection is dropped, the reply is lost, and the node is reported
 * missing with TELEM_ETIMEDOUT and a message naming the limit.
 *
 * Relays: past a few hundred nodes a job runs relays (telem_relay,
 * docs/relay.md), each serving a group of nodes.  ac_connect() reads the
 * relays file beside the node file (RUNDIR/relays, or $TELEM_RELAYS: one
 * relay a line, "<relay>\t<endpoint>\t<node>,<node>,...", '#' comments;
 * checked like the node file, a malformed one fails ac_connect() with
 * TELEM_EINVAL).  Reads (queries, status and sync, snapshots) then go to
 * each relay for the selected nodes of its group, and directly to the
 * nodes no relay covers; every reply a relay carries back is the node's
 * own frame and is checked and kept exactly as a direct one, so results,
 * missing-node codes and sentences are the same either way.  A relay gets
 * three quarters of the call's deadline (it asks its nodes with five
 * eighths); one that has not answered by then costs its group that share:
 * its nodes are asked directly with the rest of the deadline, and the
 * relay is skipped (its nodes asked directly) for a back-off period
 * (AC_RELAY_BACKOFF_DEFAULT_MS, ac_set_relay_backoff).  A node behind a
 * relay gets a direct socket only when first asked directly.  Control
 * operations that change or stop a node never go through a relay.  A node
 * whose name holds a ',' cannot be put in a group.
 *
 * Thread safety: an ac_t and the results it returns are used by one thread
 * at a time (results may be handed to another thread and read there).  The
 * library never logs and installs no signal handlers; each ac_t has its own
 * ZeroMQ context.  Errors are telem_err_t codes (telem_error.h).
 *
 * Types: the series, tags, status, query flags and control operations a
 * caller sees are those of telem_types.h; this header gives no wire types
 * (the codec, telem_proto.h, is the library's own business).
 */
#ifndef AC_H
#define AC_H

#include <stddef.h>
#include <stdint.h>

#include "telem_error.h"
#include "telem_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_TIMEOUT_DEFAULT_MS 2000
#define AC_WINDOW_DEFAULT_NS (300 * INT64_C(1000000000))
/* How long a relay that failed to answer is skipped, ms. */
#define AC_RELAY_BACKOFF_DEFAULT_MS 10000
/* Largest reply accepted by default, bytes: the protocol's frame limit. */
#define AC_MAX_REPLY_DEFAULT (64u << 20)

typedef struct ac ac_t;
typedef struct ac_result ac_result_t;
typedef struct ac_status_result ac_status_result_t;

/* ---- connecting -------------------------------------------------------- */

/* Reads the node file `nodefile` (NULL: $TELEM_NODEFILE, else <rundir>/nodes)
 * and connects one socket to every node listed.  A node at a tcp://
 * endpoint is reached with CURVE when the job's key is found: in the
 * directory $TELEM_KEYS names, else in keys/ beside the node file, else
 * in <rundir>/keys (docs/security.md);
 * a key file of the wrong mode or owner is refused.  Calls wait at most
 * `timeout_ms` by default (<= 0: AC_TIMEOUT_DEFAULT_MS).  Connecting does not
 * wait for any node.  Returns the client, or NULL with *err (if err is not
 * NULL) set to TELEM_ENOTFOUND (no such file, or it lists no node), TELEM_EIO
 * (unreadable), TELEM_EINVAL (a malformed line, a bad node name or endpoint,
 * a duplicate name, a malformed key file), TELEM_EPERM (a key file others
 * could read or write) or TELEM_ENOMEM.  ac_nodefile_check() explains a
 * failure in words. */
ac_t *ac_connect(const char *nodefile, int timeout_ms, int *err);

/* Like ac_connect() for a caller that knows its nodes: `n` names and their
 * query endpoints (strings are copied).  Errors as for ac_connect(). */
ac_t *ac_connect_nodes(const char *const *names, const char *const *endpoints,
                       size_t n, int timeout_ms, int *err);

/* Parses `nodefile` (NULL: the default above) and the relays file a
 * client of it would use, and loads the job's key where one is found,
 * without connecting.  Returns
 * 0 and the number of nodes in *nnodes (may be NULL), or the error
 * ac_connect() would give, with a sentence such as "nodes:3: no tab between
 * node name and endpoint" written to why (if why_size > 0). */
int ac_nodefile_check(const char *nodefile, size_t *nnodes, char *why,
                      size_t why_size);

/* The relays file a client of `nodefile` (NULL: the default above) reads:
 * $TELEM_RELAYS, else "relays" beside the node file.  Returns 1 with the
 * path in buf, 0 when relays are turned off ($TELEM_RELAYS empty), or
 * TELEM_ETOOBIG.  For long-lived clients that reconnect when it changes. */
int ac_relays_path(const char *nodefile, char *buf, size_t size);

/* Replaces the client's nodes with `n` names and their endpoints (strings
 * are copied; n may be 0).  A node whose name and endpoint are unchanged
 * keeps its socket and its connection (with CURVE, a new connection costs
 * a key exchange on both ends: a launcher that re-made its client after
 * every restart of a 256-node job spent more CPU on that than on the
 * restart); the others are opened or closed.  Not for a client with
 * relays (TELEM_EINVAL); between calls only (not thread-safe, like every
 * call on one client).  Returns 0, TELEM_EINVAL (a bad or duplicate
 * entry: the client is unchanged), TELEM_ENOMEM (unchanged) or a socket
 * error (the client holds the new list; a node whose socket could not
 * be opened is reported missing by the next call, as a dead node is). */
int ac_set_nodes(ac_t *self, const char *const *names,
                 const char *const *endpoints, size_t n);

/* Closes every socket and frees the client; accepts NULL or a pointer to
 * NULL and nulls the caller's pointer.  Results stay valid. */
void ac_close(ac_t **self_p);

/* Changes the largest reply accepted from a node (bytes, > 0; default
 * AC_MAX_REPLY_DEFAULT).  Reconnects every node.  Returns 0, TELEM_EINVAL or
 * TELEM_ENOMEM/TELEM_EIO if a socket could not be recreated. */
int ac_set_max_reply(ac_t *self, size_t bytes);

/* Sets how long a relay that did not answer in time is skipped (ms, >= 0;
 * 0: tried again on the next call).  Returns 0 or TELEM_EINVAL. */
int ac_set_relay_backoff(ac_t *self, int ms);

/* Number of relays in use, and relay i's name and endpoint (NULL if out
 * of range; owned by the client). */
size_t ac_relay_count(const ac_t *self);
const char *ac_relay_name(const ac_t *self, size_t i);
const char *ac_relay_endpoint(const ac_t *self, size_t i);

/* ---- nodes ------------------------------------------------------------- */

/* Number of nodes, in node file order. */
size_t ac_node_count(const ac_t *self);

/* Name and endpoint of node i (NULL if i is out of range).  Owned by the
 * client, valid until ac_close(). */
const char *ac_node_name(const ac_t *self, size_t i);
const char *ac_node_endpoint(const ac_t *self, size_t i);

/* Index of the node called `name`, or -1. */
long ac_node_find(const ac_t *self, const char *name);

/* ---- queries ----------------------------------------------------------- */

typedef struct {
    /* Metric names; NULL or empty = every metric (at most
     * TELEM_QUERY_METRICS_MAX). */
    const char *const *metrics;
    size_t nmetrics;
    /* Exact key=value filters; value "*" = the key is present (at most
     * TELEM_TAGS_MAX). */
    const telem_tag_t *tags;
    size_t ntags;
    /* Realtime ns.  start: 0 = the default (see ac_query), < 0 = now +
     * start_ns.  end: 0 = each node's now, < 0 = now + end_ns. */
    int64_t start_ns;
    int64_t end_ns;
    uint32_t max_points;         /* newest points kept per series; 0 = all */
    uint32_t flags;              /* TELEM_QUERY_LIST, TELEM_QUERY_LATEST */
    const char *const *nodes;    /* node names to ask; NULL = every node */
    size_t nnodes;
    int timeout_ms;              /* this call's deadline; <= 0: the client's */
} ac_query_t;

/* Asks every selected node for `q` (NULL: every series of every node, the
 * defaults) at once and waits for the replies until the deadline.  Default
 * start: with TELEM_QUERY_LIST or TELEM_QUERY_LATEST
 * the node's whole retention window, otherwise the last
 * AC_WINDOW_DEFAULT_NS (300 s) before now.  A node answering TELEM_ENOTFOUND
 * ("nothing matches") counts as an answer with no series.
 *
 * Returns 0 when every node answered, TELEM_EPARTIAL when some did and
 * others did not or answered with an error, TELEM_ETIMEDOUT when no node
 * answered at all, and the error of the first node to answer when every
 * node that answered did so with an error.  *out is NULL only when the call
 * was refused before anything was sent: invalid arguments (TELEM_EINVAL,
 * over-limit counts TELEM_ETOOBIG), an unknown node name (TELEM_ENOTFOUND)
 * or TELEM_ENOMEM.  Otherwise *out is a result, to be destroyed by the
 * caller, holding the series that came and naming the nodes that are
 * missing. */
int ac_query(ac_t *self, const ac_query_t *q, ac_result_t **out);

/* The metric catalog: ac_query() with TELEM_QUERY_LIST and no filters
 * (series carry metric, tags, type, unit and doc, no points).  Returns as
 * ac_query(). */
int ac_metrics(ac_t *self, ac_result_t **out);

/* Series in the result, sorted by metric, then tags, then node. */
size_t ac_result_nseries(const ac_result_t *r);

/* Series i (NULL if out of range); its strings and arrays are owned by the
 * result.  The tags include "host". */
const telem_series_t *ac_result_series(const ac_result_t *r, size_t i);

/* Name of the node that sent series i (NULL if out of range). */
const char *ac_result_series_node(const ac_result_t *r, size_t i);

/* Number of nodes whose reply said it was cut to the size limit. */
size_t ac_result_ntruncated(const ac_result_t *r);

/* Nodes that did not answer or answered with an error, in node order:
 * name, code (TELEM_ETIMEDOUT: no reply in time; TELEM_ECONN: never
 * connected; TELEM_EPROTO: an undecodable reply; otherwise the node's own
 * error) and a sentence.  NULL/0 when i is out of range. */
size_t ac_result_nmissing(const ac_result_t *r);
const char *ac_result_missing(const ac_result_t *r, size_t i);
int ac_result_missing_code(const ac_result_t *r, size_t i);
const char *ac_result_missing_message(const ac_result_t *r, size_t i);

/* Frees the result; accepts NULL or a pointer to NULL; nulls the pointer. */
void ac_result_destroy(ac_result_t **r_p);

/* ---- status and control ------------------------------------------------ */

/* Sends control operation `op` with `arg` to node `node` (an index), or to
 * every node when node < 0, and waits as ac_query() does.  Examples:
 * TELEM_CTL_SET_LEVEL with arg 0-4; TELEM_CTL_SHUTDOWN; TELEM_CTL_SYNC with
 * a fin token.  `timeout_ms` <= 0 uses the client's deadline.  Returns
 * and fills *out as ac_query() does (a bad node index gives TELEM_EINVAL
 * and *out NULL). */
int ac_control(ac_t *self, long node, telem_ctl_op_t op, int64_t arg,
               int timeout_ms, ac_status_result_t **out);

/* ac_control(self, -1, TELEM_CTL_STATUS, 0, 0, out). */
int ac_status(ac_t *self, ac_status_result_t **out);

/* Entries: one per node asked, in node order. */
size_t ac_status_result_count(const ac_status_result_t *r);
const char *ac_status_result_node(const ac_status_result_t *r, size_t i);

/* Node i's status as it replied (strings owned by the result), or NULL if
 * it did not answer or answered with an error. */
const telem_status_t *ac_status_result_status(const ac_status_result_t *r,
                                              size_t i);

/* TELEM_CTL_SYNC: 1 if node i had seen the token; 0 otherwise. */
int ac_status_result_synced(const ac_status_result_t *r, size_t i);

/* 0 if node i answered, else its code and sentence as for the missing
 * nodes of a query result (message "" when it answered). */
int ac_status_result_code(const ac_status_result_t *r, size_t i);
const char *ac_status_result_message(const ac_status_result_t *r, size_t i);

/* Number of entries whose code is not 0. */
size_t ac_status_result_nmissing(const ac_status_result_t *r);

/* Frees the result; accepts NULL or a pointer to NULL; nulls the pointer. */
void ac_status_result_destroy(ac_status_result_t **r_p);

/* ---- system snapshots -------------------------------------------------- */

typedef struct ac_snapshot_result ac_snapshot_result_t;

/* Asks node `node` (an index), or every node when node < 0, for the
 * one-time system snapshot its telemd took at start: a JSON object whose
 * shape docs/protocol.md ("sysinfo") gives.  Waits and returns as
 * ac_query() does: 0, TELEM_EPARTIAL (some nodes missing, named in the
 * result), TELEM_ETIMEDOUT, or the nodes' common error (a node holding no
 * snapshot answers TELEM_ENOTFOUND); a bad node index gives TELEM_EINVAL
 * and *out NULL.  `timeout_ms` <= 0 uses the client's deadline. */
int ac_snapshot(ac_t *self, long node, int timeout_ms,
                ac_snapshot_result_t **out);

/* Entries: one per node asked, in node order. */
size_t ac_snapshot_result_count(const ac_snapshot_result_t *r);
const char *ac_snapshot_result_node(const ac_snapshot_result_t *r, size_t i);

/* Node i's snapshot, NUL-terminated JSON owned by the result, its length
 * in *len (may be NULL); NULL (*len 0) when the node did not answer. */
const char *ac_snapshot_result_json(const ac_snapshot_result_t *r, size_t i,
                                    size_t *len);

/* 0 if node i answered, else its code and sentence as for the missing
 * nodes of a query result. */
int ac_snapshot_result_code(const ac_snapshot_result_t *r, size_t i);
const char *ac_snapshot_result_message(const ac_snapshot_result_t *r,
                                       size_t i);
size_t ac_snapshot_result_nmissing(const ac_snapshot_result_t *r);

/* Frees the result; accepts NULL or a pointer to NULL; nulls the pointer. */
void ac_snapshot_result_destroy(ac_snapshot_result_t **r_p);

/* ---- forwarding (for relays) ------------------------------------------- */

/* Receives each node's outcome of ac_forward(): code 0 with the node's
 * reply frame as it came (valid during the call only; an error reply of
 * the node is passed on as a frame too), or a code and sentence when the
 * node gave none (`answered` 1 when the node sent something undecodable, 0
 * when it never answered). */
typedef void (ac_forward_fn)(void *arg, size_t node, int code, int answered,
                             const char *message, const void *frame,
                             size_t size);

typedef struct {
    const void *frame;          /* a request: query, control or sysinfo */
    size_t size;
    const size_t *nodes;        /* node indexes, ascending, no duplicates */
    size_t nnodes;
    int timeout_ms;             /* this call's deadline; <= 0: the client's */
    int report_ms;              /* deadline named in sentences; <= 0: the
                                   call's */
    size_t report_max;          /* reply limit named; 0: the client's */
    ac_forward_fn *fn;
    void *arg;
} ac_forward_t;

/* Sends `f->frame` unchanged to the given nodes and waits as ac_query()
 * does, handing fn every reply whose request id matches (raw, undecoded
 * beyond the id) and every node that gave none; fn runs once per node.
 * This is what telem_relay serves with; it never goes through relays
 * itself.  Returns 0 (every node replied), TELEM_EPARTIAL, TELEM_ETIMEDOUT
 * (none did), or TELEM_EINVAL (bad arguments, or a frame that is not a
 * request with an id; fn never runs then). */
int ac_forward(ac_t *self, const ac_forward_t *f);

/* ---- misc -------------------------------------------------------------- */

/* Same as telem_strerror(). */
const char *ac_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
