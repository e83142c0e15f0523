/* telemd_agent_int.h - the node agent's state, private to the agent's
 * files.
 *
 * telemd_agent.c holds the agent's life, ingest, requests and sampling;
 * telemd_agent_info.c what the agent tells of its node besides queries:
 * the one-time system snapshot (taken at start, served to sysinfo
 * requests) and the /metrics snapshots of the store.  telemd_agent.c
 * calls telemd_agent_info.c, never the other way.
 */
#ifndef TELEMD_AGENT_INT_H
#define TELEMD_AGENT_INT_H

#include <stdint.h>

#include "telem_log.h"
#include "telem_procwalk.h"
#include "telem_proto.h"
#include "telem_store.h"
#include "telemd_agent.h"
#include "telemd_log.h"
#include "telemd_push.h"
#include "telemd_reply.h"
#include "telemd_slurmd.h"

#define TELEMD_AGENT_TOKENS 1024       /* remembered end-of-stream tokens */
#define TELEMD_AGENT_PENDING 64        /* points handed to the store at once */
#define TELEMD_AGENT_SAMPLERS 15       /* proc, nvml, self, psi, vmstat,
                                          numa, cpufreq, fs, ib, hw, nfs,
                                          lustre, job, rsmi, ze */

struct telemd_agent {
    telemd_config_t cfg;
    char *node;
    int level;
    int64_t interval_ns;
    int64_t started_mono;
    int64_t next_sample_mono;
    int64_t next_expire_mono;
    uint64_t expire_appended;   /* store points appended at the last expiry */
    telem_store_t *store;
    telem_proto_decoder_t *dec;
    telem_proto_encoder_t *enc;
    telem_store_tags_t *batch_tags;    /* batch tags + host, per batch */
    telem_store_point_t pending[TELEMD_AGENT_PENDING]; /* samples with
                                                          batch_tags */
    uint32_t npending;
    void *sampler_state[TELEMD_AGENT_SAMPLERS];
    telem_procwalk_t *procwalk;     /* lent to the samplers: one walk of
                                       /proc a round for proc and job */
    int64_t sample_now;                /* timestamp for emitted samples */
    uint64_t bad_messages;             /* input refused as malformed or
                                          on the wrong socket */
    uint64_t denied;                   /* control refused over plain TCP */
    telemd_push_t *push;               /* counter increments, refusals */
    uint64_t queue_depth;
    uint64_t tokens[TELEMD_AGENT_TOKENS];
    uint32_t token_next;
    telemd_log_t *log;                 /* NULL: --no-log */
    int64_t flush_ns;
    int64_t next_flush_mono;
    int stopping;
    int handing_over;
    int64_t last_round_ns;             /* grid time of the last sampling */
    telemd_reply_t *reply;             /* a query's reply being built */
    telem_ratelimit_t bad_log;
    telem_ratelimit_t sampler_log;
    telemd_slurmd_t *slurmd;           /* the node's slurmd, or NULL */
    char *sysinfo;                     /* the system snapshot (JSON) */
    size_t sysinfo_len;
};

/* Takes the system snapshot into self->sysinfo (once, at start; logs the
 * outcome). */
void telemd_agent_sysinfo_take(telemd_agent_t *self);

/* Answers a sysinfo request: the snapshot, or an error of
 * TELEM_ENOTFOUND when there is none.  *reply as telemd_agent_request(). */
int telemd_agent_sysinfo_reply(telemd_agent_t *self,
                               const telem_sysinfo_req_t *q,
                               const void **reply, size_t *size);

#endif
