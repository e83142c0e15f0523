/* ddict.c - the dictionary client's handle: open (the node file, then the
 * map from a server), close, timeout, map figures.
 *
 * The client's files call one way, each only the files below it:
 *   ddict.c            the handle
 *   ddict_api.c        the operations of ddict.h, on the engine
 *   ddict_reform.c     the re-form coordinator
 *   ddict_batch_exec.c the request engine that runs a batch
 *   ddict_conn.c       sockets to the servers, node file, map discovery
 *   ddict_batch.c      the batch container
 *
 * A handle learns the shard map when it opens and again whenever a server
 * says the map it used is stale; each operation then goes straight to the
 * primary of its key's shard (ddict_batch_exec.c).
 */
#include "ddict_client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "telem_time.h"

#define S_DEFAULT_TIMEOUT_MS 10000

/* ---------------------------------------------------------------- handle */

static int
s_ns_valid(const char *ns)
{
    size_t n = strlen(ns);
    if (n > DDICT_NS_LIMIT)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char) ns[i] < 0x20)
            return 0;
    return 1;
}

static int
s_default_nodefile(char *buf, size_t size)
{
    const char *env = getenv("TELEM_DICT_NODEFILE");
    if (env && *env)
        return snprintf(buf, size, "%s", env) < (int) size ? 0
                                                            : TELEM_ETOOBIG;
    char dir[TELEM_PATH_MAX];
    int rc = telem_rundir_default(dir, sizeof dir);
    if (rc == 0 && snprintf(buf, size, "%s/dict_nodes", dir) >= (int) size)
        rc = TELEM_ETOOBIG;
    return rc;
}

ddict_t *
ddict_open(const char *nodefile, const char *ns, int64_t timeout_ms, int *err)
{
    int rc = TELEM_EINVAL;
    ddict_t *self = NULL;
    if (!ns)
        ns = "";
    if (!s_ns_valid(ns))
        goto out;
    rc = TELEM_ENOMEM;
    if (!(self = calloc(1, sizeof *self)))
        goto out;
    snprintf(self->ns, sizeof self->ns, "%s", ns);
    self->timeout_ms = timeout_ms > 0 ? timeout_ms : S_DEFAULT_TIMEOUT_MS;
    if (!(self->enc = telem_proto_encoder_new())
        || !(self->dec = telem_proto_decoder_new())
        || !(self->one = ddict_batch_new()) || !(self->zctx = dc_ctx_hold()))
        goto out;
    rc = TELEM_ETOOBIG;
    if (nodefile && snprintf(self->nodefile, sizeof self->nodefile, "%s",
                             nodefile) >= (int) sizeof self->nodefile)
        goto out;
    if (!nodefile && (rc = s_default_nodefile(self->nodefile,
                                              sizeof self->nodefile)) != 0)
        goto out;
    if ((rc = telem_keys_find(NULL, self->nodefile, &self->keys, NULL,
                              0)) != 0)
        goto out;
    rc = dc_refresh(self, telem_mono_ns()
                              + self->timeout_ms * TELEM_NS_PER_MS);
out:
    if (rc)
        ddict_close(&self);
    if (err)
        *err = rc;
    return self;
}

void
ddict_close(ddict_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ddict_t *self = *self_p;
    dc_nodes_free(self);
    dc_reform_forget(self);
    dc_ctx_release(&self->zctx);
    ddict_map_destroy(&self->map);
    telem_proto_encoder_destroy(&self->enc);
    telem_proto_decoder_destroy(&self->dec);
    ddict_batch_destroy(&self->one);
    telem_keys_destroy(&self->keys);
    free(self);
    *self_p = NULL;
}

void
ddict_set_timeout(ddict_t *self, int64_t timeout_ms)
{
    self->timeout_ms = timeout_ms > 0 ? timeout_ms : S_DEFAULT_TIMEOUT_MS;
}

uint64_t
ddict_epoch(const ddict_t *self)
{
    return self->epoch;
}

int
ddict_nodes(const ddict_t *self)
{
    return self->nnodes;
}
