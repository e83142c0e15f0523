/* ddict.h - client API of telem's distributed dictionary (libtelem_dict).
 *
 * A job runs one telem_dictd per node; together they hold a sharded,
 * replicated key-value store whose data survives the loss or exclusion of
 * any one node (docs/dict.md).  The client finds the servers through the
 * dictionary node file ($TELEM_DICT_NODEFILE, else <rundir>/dict_nodes,
 * one "<node>\t<endpoint>" a line), learns the shard map from any of them,
 * and sends each operation straight to the primary of the key's shard.
 *
 * Keys and values are binary; keys 0..65535 bytes, values up to
 * DDICT_VALUE_LIMIT.  Every handle works in one namespace (an application
 * or a job); namespaces are 0..200 bytes, no byte below 0x20.
 *
 * Every call has a deadline (the handle's timeout): a dead or silent
 * server gives TELEM_ETIMEDOUT, never a hang.  While the dictionary
 * re-forms, calls retry until it serves again or the deadline passes.
 *
 * Return values: 0 or a negative code from telem_error.h (TELEM_ECONFLICT
 * for a compare-and-set whose version differs); telem_strerror() names
 * them.
 *
 * Thread safety: a handle is not shared between threads; open one per
 * thread (they are cheap).  Functions of different handles may run
 * concurrently.
 */
#ifndef DDICT_H
#define DDICT_H

#include <stddef.h>
#include <stdint.h>

#include "telem_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DDICT_VALUE_LIMIT (256u << 20) /* bytes in one value (the wire's
                                          TELEM_DICT_VALUE_MAX) */
#define DDICT_NS_LIMIT 200             /* bytes in a user namespace */

typedef struct ddict ddict_t;

/* Opens a handle on namespace `ns` (NULL: "").  `nodefile` NULL takes the
 * default; timeout_ms <= 0 takes 10000.  Servers at tcp:// endpoints are
 * reached with CURVE when the job's key is found ($TELEM_KEYS, else keys/
 * beside the node file, else <rundir>/keys; docs/security.md).  Contacts
 * a server to learn the map.  Returns NULL and sets *err (may be NULL): TELEM_EINVAL (bad
 * namespace, a malformed key file), TELEM_EPERM (a key file others could
 * read or write), TELEM_ENOTFOUND (no node file or no servers in it),
 * TELEM_ETIMEDOUT (no server answered). */
ddict_t *ddict_open(const char *nodefile, const char *ns, int64_t timeout_ms,
                    int *err);
void ddict_close(ddict_t **self_p);

/* Changes the deadline of later calls. */
void ddict_set_timeout(ddict_t *self, int64_t timeout_ms);

/* Stores a value; returns once every replica of the key's shard holds it.
 * *version (may be NULL) gets the key's new version (1 for a new key). */
int ddict_put(ddict_t *self, const void *key, size_t klen, const void *val,
              size_t vlen, uint64_t *version);

/* Stores a value only if the key's version is `expected` (0: the key must
 * not exist).  TELEM_ECONFLICT otherwise, with the current version in
 * *version. */
int ddict_cas(ddict_t *self, const void *key, size_t klen, const void *val,
              size_t vlen, uint64_t expected, uint64_t *version);

/* Reads a value into a new malloc'd buffer (*val, freed by the caller;
 * NUL-terminated for convenience, not counted in *vlen).  TELEM_ENOTFOUND
 * if absent.  *version may be NULL. */
int ddict_get(ddict_t *self, const void *key, size_t klen, void **val,
              size_t *vlen, uint64_t *version);

/* Reads a value straight into the caller's buffer `buf` of `cap` bytes
 * (no allocation, no terminating NUL).  *vlen (may be NULL) gets the
 * value's length.  Returns 0, TELEM_ENOTFOUND, or TELEM_ETOOBIG when the
 * value is longer than cap (*vlen then says how long; buf's contents are
 * unspecified).  buf may be NULL when cap is 0.  The value travels in
 * small frames that are copied into buf and released one by one, so a
 * large value costs no fresh receive buffer: for values of a megabyte or
 * more this is the fastest read, and restoring into memory the
 * application already owns is what it is for.  *version may be NULL. */
int ddict_get_into(ddict_t *self, const void *key, size_t klen, void *buf,
                   size_t cap, size_t *vlen, uint64_t *version);

/* Removes a key.  TELEM_ENOTFOUND if absent. */
int ddict_del(ddict_t *self, const void *key, size_t klen);

/* Number of keys in the namespace (every server is asked). */
int ddict_len(ddict_t *self, uint64_t *n);

/* Calls fn once per key of the namespace (order unspecified); a non-zero
 * return stops and is returned. */
typedef int (*ddict_key_fn)(void *arg, const void *key, size_t klen);
int ddict_keys(ddict_t *self, ddict_key_fn fn, void *arg);

/* Cluster-wide events (independent of the namespace).  set: replicated
 * like a put; is_set: 1 or 0, or a negative code; wait: returns 0 as soon
 * as the event is set (waiters are notified by the server, not polling),
 * TELEM_ETIMEDOUT after timeout_ms; clear: removes it. */
int ddict_event_set(ddict_t *self, const char *name);
int ddict_event_is_set(ddict_t *self, const char *name);
int ddict_event_wait(ddict_t *self, const char *name, int64_t timeout_ms);
int ddict_event_clear(ddict_t *self, const char *name);

/* Marks a checkpoint of the namespace: every server copies the keys it
 * holds (values are shared, not copied), then the checkpoint id is
 * committed with a replicated write.  Call it after a round of writes
 * has been acknowledged and before the next begins.  A checkpoint that
 * did not finish leaves the previous one in force. */
int ddict_checkpoint(ddict_t *self, uint64_t id);

/* Replaces the namespace with its latest complete checkpoint, whose id
 * goes to *id (may be NULL).  TELEM_ENOTFOUND if there is none. */
int ddict_restore(ddict_t *self, uint64_t *id);

/* Batches: operations gathered and sent pipelined, grouped into one
 * message per server.  Keys and values added are borrowed until the
 * batch is executed or cleared. */
typedef struct ddict_batch ddict_batch_t;
ddict_batch_t *ddict_batch_new(void);
void ddict_batch_destroy(ddict_batch_t **self_p);
void ddict_batch_clear(ddict_batch_t *self);
int ddict_batch_put(ddict_batch_t *self, const void *key, size_t klen,
                    const void *val, size_t vlen);
int ddict_batch_get(ddict_batch_t *self, const void *key, size_t klen);
/* A get whose value goes into buf (cap bytes, borrowed until the batch is
 * executed or cleared), as ddict_get_into.  These gets are pipelined:
 * a window of them (up to 64 requests or 16 MiB of buffers) is in flight
 * at once, each value is copied into its buffer as its frames arrive, so
 * a batch of any size needs no more receive memory than the window.  The
 * result (ddict_batch_result) gives buf and the value's length, with
 * TELEM_ETOOBIG when it did not fit. */
int ddict_batch_get_into(ddict_batch_t *self, const void *key, size_t klen,
                         void *buf, size_t cap);
int ddict_batch_del(ddict_batch_t *self, const void *key, size_t klen);
size_t ddict_batch_size(const ddict_batch_t *self);

/* Runs every operation of the batch.  Returns 0 if all were executed
 * (each has its own result code), or a code for the whole batch
 * (TELEM_ETIMEDOUT: some results are missing, their code says so). */
int ddict_batch_exec(ddict_t *self, ddict_batch_t *b);

/* Result of operation i: its code, and for a get the value (borrowed,
 * valid until the batch is executed again, cleared or destroyed; for a
 * get into a buffer, that buffer and the value's length). */
int ddict_batch_result(const ddict_batch_t *b, size_t i, const void **val,
                       size_t *vlen, uint64_t *version);

/* Re-forms the dictionary on a new node list (some nodes excluded, some
 * new; every listed node must run a server registered in the node file)
 * with `replicas` copies of each shard (0: default).  Every acknowledged
 * key stays readable if, for each shard, at least one owner under the
 * old map is in the new list and alive.  The epochs are learnt from the
 * listed servers, so a re-form works even when a failed one left them all
 * re-forming.  Returns 0, TELEM_ETIMEDOUT (a listed server did not
 * answer; run it again with a list that leaves it out) or another code. */
int ddict_reform(ddict_t *self, const char *const *nodes, int n,
                 int replicas);

/* The map this handle uses: epoch and number of nodes. */
uint64_t ddict_epoch(const ddict_t *self);
int ddict_nodes(const ddict_t *self);

#ifdef __cplusplus
}
#endif
#endif
