/* telemd_actor.h - the node agent as a czmq actor.
 *
 * telemd owns one node's store.  It pulls samples from the node's processes
 * on an ipc PULL socket, samples /proc, NVML and itself by telemetry level,
 * and answers queries and control requests on a ROUTER bound both on ipc
 * (<rundir>/<node>/ctl.sock) and on TCP for other nodes; with http_bind
 * set it also serves GET /metrics for Prometheus (telemd_http.h).  All its
 * sockets are created and bound by telemd_new() in the caller's thread, so
 * bind errors come back as codes; then a czmq actor thread runs the loop.
 *
 * The actor stops on $TERM from its pipe (telemd_destroy), on a
 * TELEM_CTL_SHUTDOWN or TELEM_CTL_HANDOVER request, or when the process is
 * interrupted (SIGINT/SIGTERM through czmq's handler).  Before it closes
 * the ingest socket it reads what that socket still holds and has the
 * agent flush everything to its log (telemd_agent_finish); at a hand-over
 * it first lets the ingest connections go to the successor and reads each
 * to its end (telemd_drain.h).
 */
#ifndef TELEMD_ACTOR_H
#define TELEMD_ACTOR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "telem_keys.h"
#include "telem_zap.h"
#include "telemd_handover.h"

typedef struct {
    const char *node;           /* required; telem_node_valid() */
    const char *rundir;         /* required; prepared by the caller */
    int level;                  /* 0-4, default 2 in telemd's main */
    int64_t window_ns;          /* retention window */
    int64_t interval_ns;        /* sampling interval */
    size_t mem_cap_bytes;       /* store cap; 0 = store default */
    const char *tcp_bind;       /* e.g. "tcp://127.0.0.1:*"; NULL = none */
    const telem_keys_t *keys;   /* the job's keys: the TCP endpoint is
                                   CURVE and serves only the job (the
                                   process's ZAP handler, telem_zap.h, must
                                   run).  NULL: plain TCP, which serves
                                   queries but refuses control that changes
                                   or stops telemd (TELEM_EPERM).  Kept by
                                   pointer: they outlive telemd */
    const telem_zap_t *zap;     /* the process's ZAP handler, whose
                                   refusals the status reports
                                   (refused_peers); NULL: none */
    uid_t job_uid;              /* processes counted by num_running_processes */
    const char *proc_root;      /* NULL = "/proc" */
    const char *sys_root;       /* NULL = "/sys" */
    const char *nvml_library;   /* NULL = default */
    const char *rsmi_library;   /* NULL = default */
    const char *ze_library;     /* NULL = default */
    int max_tcp_peers;          /* TCP connections held at once; more are
                                   refused (telem_peercap.h); 0 = the
                                   default, TELEM_TCP_PEERS_DEFAULT */
    const char *http_bind;      /* NULL = no HTTP server; else the numeric
                                   address GET /metrics is served on
                                   (telemd_http.h, docs/prometheus.md) */
    int http_port;              /* its port; 0 = ephemeral */
    int handover;               /* 1: take the node over from a running
                                   telemd (telemd_handover.h); 0: refuse
                                   to start while one runs */
    telemd_handover_config_t handover_cfg;  /* 0 fields: the defaults */
    const char *log_dir;        /* flush log directory; NULL = no log */
    int64_t flush_ns;           /* flush interval; 0 = 120 s */
    int64_t history_ns;         /* what the log keeps and queries reach;
                                   0 = no bound but log_max_bytes */
    uint64_t log_max_bytes;     /* bound on the log's segments; 0 = 1 GiB */
    const char *slurmd_node;    /* watch this Slurm node's slurmd and answer
                                   status requests TELEM_ESTATE, "node
                                   lost: ...", once it is gone
                                   (telemd_slurmd.h); NULL = no watch */
} telemd_config_t;

/* Largest request frame (query, control) the request sockets take; a
 * larger frame makes libzmq drop the connection before it is read.  The
 * largest valid request, a query naming 256 metrics of 255 bytes with 16
 * filters of 255-byte keys and values, encodes to about 74 KiB
 * (tests/test_hostile.c measures it), so 128 KiB leaves room for keys a
 * later version adds.  A request is one frame after the ROUTER's identity
 * and an optional empty delimiter: a message of more frames is refused
 * with an error reply, and what one message can cost before telemd sees
 * it is bounded by its frame count times this (see docs/telemd.md). */
#define TELEMD_REQUEST_MAX (128u << 10)

typedef struct telemd telemd_t;

/* Creates the node directory, takes its lock (one telemd per node and run
 * directory; with cfg->handover, taking the node over from the telemd
 * that holds it), binds the sockets, creates the agent (which reloads its
 * log) and starts the actor.  Returns NULL and sets *err: TELEM_EINVAL
 * (bad config), TELEM_ESTATE (another telemd holds the node's lock and
 * hand-over is off), TELEM_ETIMEDOUT (the old telemd outlived the
 * hand-over), TELEM_EIO (directory, bind, log), TELEM_ENOMEM. */
telemd_t *telemd_new(const telemd_config_t *cfg, int *err);

/* Endpoints bound by telemd_new(); strings owned by the telemd.  The TCP
 * endpoint is "" when none was bound. */
const char *telemd_ingest_endpoint(const telemd_t *self);
const char *telemd_ctl_endpoint(const telemd_t *self);
const char *telemd_tcp_endpoint(const telemd_t *self);
/* The URL of GET /metrics ("http://127.0.0.1:PORT/metrics"), "" when no
 * HTTP server runs. */
const char *telemd_metrics_url(const telemd_t *self);

/* Blocks until the actor ends by itself (shutdown request or interrupt) or
 * timeout_ms passes (-1 waits forever).  Returns 1 if it ended, 0 if not.
 * A signal this thread takes (czmq's handler sets zsys_interrupted) wakes
 * the actor at once; the telemd program blocks SIGINT and SIGTERM in every
 * other thread so that they come here.  Elsewhere the actor notices an
 * interrupt within a second. */
int telemd_wait(telemd_t *self, int timeout_ms);

/* Stops the actor if running, closes everything, removes the node's socket
 * files and lock; accepts NULL and nulls *self_p. */
void telemd_destroy(telemd_t **self_p);

#endif
