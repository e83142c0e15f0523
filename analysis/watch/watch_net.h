/* watch_net.h - the watcher's sockets and its files in the run directory
 * (watch_net.c).
 *
 * Thread safety: the watcher's one thread.  Errors are telem_err_t codes.
 */
#ifndef WATCH_NET_H
#define WATCH_NET_H

#include <stddef.h>
#include <stdint.h>

#include "det.h"
#include "telem_keys.h"
#include "telem_proto.h"
#include "watch.h"

typedef struct watch_net watch_net_t;

typedef struct {
    const char *rundir;        /* NULL: telem_rundir_default() */
    const char *name;          /* NULL: WATCH_NAME_DEFAULT */
    const char *pub_ep;        /* NULL: ipc://<rundir>/<name>/pub.sock */
    const char *ctl_ep;        /* NULL: ipc://<rundir>/<name>/ctl.sock */
    const char *restart_ep;    /* NULL: no restart action */
    const telem_keys_t *keys;  /* the job's: tcp:// endpoints are CURVE
                                  (a bind needs the process's ZAP handler,
                                  telem_zap.h); NULL: plain */
    int insecure;              /* without keys, allow control on TCP and
                                  events on TCP off loopback */
} watch_net_opts_t;

/* Takes <rundir>/<name>/ (created 0700, locked with flock so a second
 * watcher of the same name is refused), binds PUB and ROUTER, connects the
 * restart DEALER, and writes <rundir>/<name>/endpoints ("pub EP", "ctl
 * EP", "pid N" lines).  Returns the watcher's sockets, or NULL with a
 * sentence in why and *err (NULL allowed): TELEM_ESTATE (another watcher
 * of that name runs), TELEM_EINVAL (run directory or name), TELEM_EIO
 * (directory, bind or file), TELEM_ECONN (the restart endpoint),
 * TELEM_EPERM (control on plain TCP, or events on plain TCP off loopback,
 * without o->insecure) or TELEM_ENOMEM. */
watch_net_t *watch_net_new(const watch_net_opts_t *o, char *why,
                          size_t why_size, int *err);

/* Closes the sockets, removes the endpoints file and the ipc socket files
 * it created, releases the lock; accepts NULL; nulls the pointer. */
void watch_net_destroy(watch_net_t **self_p);

const char *watch_net_pub_endpoint(const watch_net_t *self);
const char *watch_net_ctl_endpoint(const watch_net_t *self);
const char *watch_net_dir(const watch_net_t *self);

/* Sockets to poll: control requests, restart acks (NULL without one). */
void *watch_net_ctl_sock(const watch_net_t *self);
void *watch_net_restart_sock(const watch_net_t *self);

/* Publishes an event: frame 1 the detector label, frame 2 the message.
 * Never blocks (a slow subscriber loses events, as PUB does).  Returns 0
 * or an encoding error. */
int watch_net_publish(watch_net_t *self, const det_event_t *e, uint64_t seq);

/* Reads one control request from the ROUTER, answers it through
 * watch_control() (undecodable requests get an error reply).  Returns 0, or
 * TELEM_EPROTO after answering a bad request (the caller may log it). */
int watch_net_serve(watch_net_t *self, watch_t *watch, const char *const *extra,
                    size_t nextra);

/* Control requests refused so far: undecodable, not a watch_ctl, or not
 * [identity, request] (frames past those are read and freed one at a
 * time, never kept). */
uint64_t watch_net_bad_requests(const watch_net_t *self);

/* Sends a restart request (m->id is set here).  Returns 0, or an encoding
 * error / TELEM_ECONN (the socket refused it). */
int watch_net_restart_send(watch_net_t *self, telem_restart_t *m);

/* Reads one frame from the restart socket into *ack, without waiting
 * (strings valid until the next call).  Returns 0, TELEM_EPROTO for a
 * frame that is not a restart_ack, or TELEM_ETIMEDOUT when nothing is
 * there. */
int watch_net_restart_recv(watch_net_t *self, telem_restart_ack_t *ack);

/* Drops the restart connection and makes a fresh one, so a request that
 * timed out is never delivered late.  0 or TELEM_EIO. */
int watch_net_restart_reset(watch_net_t *self);

#endif
