/* launch_job_dict.c - the job's distributed dictionary, seen from the
 * launcher: when a node counts as ready, and re-forming the dictionary on
 * the job's node set.
 *
 * Every node of the job that is not DOWN (active and reserve alike) runs a
 * telem_dictd and is in the dictionary's map, so promoting a reserve moves
 * no data; a node that goes DOWN leaves the map at the next re-form.  The
 * servers register their endpoints in the job's dictionary node file
 * themselves; the launcher only tells them (and the program, through
 * TELEM_DICT_NODEFILE) where that file is.
 *
 * A re-form goes through the client library (ddict_reform()), which runs
 * its three phases against every listed server with one deadline, each
 * phase sent to all of them at once.  It is a blocking call on the
 * launcher's loop: the loop has nothing else to do at that point of a
 * restart (the program is stopped everywhere), and the deadline bounds
 * it.  The handle is opened at the first re-form and kept for the job, so
 * that later re-forms reuse its connections to the servers (ZeroMQ
 * reconnects to a server that restarted at the same endpoint; one whose
 * endpoint changed is connected anew).
 */
#include "launch_job_int.h"

#include <stdlib.h>
#include <string.h>

#include "ddict.h"
#include "telem_error.h"

/* Deadline of a whole re-form, and of learning the map before it. */
#define S_REFORM_MS 10000

int
launch_job_node_ready(const launch_job_t *self, size_t i)
{
    launch_state_node_t st = launch_state_node(self->state, i);
    if (st == LAUNCH_NODE_DOWN)
        return 1;
    if (st == LAUNCH_NODE_ACTIVE && !self->nodes[i].ready)
        return 0;
    return !self->dict || self->nodes[i].dict_ready;
}

int
launch_job_dict_reform(launch_job_t *self, char *why, size_t why_size)
{
    if (!self->dict)
        return 0;
    const char **names = calloc(self->n ? self->n : 1, sizeof *names);
    if (!names) {
        snprintf(why, why_size, "out of memory");
        return TELEM_ENOMEM;
    }
    int n = 0;
    for (size_t i = 0; i < self->n; i++)
        if (launch_state_node(self->state, i) != LAUNCH_NODE_DOWN)
            names[n++] = launch_state_name(self->state, i);
    int rc = 0;
    if (n && !self->dd)
        self->dd = ddict_open(self->dict_nodefile, NULL, S_REFORM_MS, &rc);
    if (self->dd)
        rc = ddict_reform(self->dd, names, n, 0);
    if (rc)
        snprintf(why, why_size, "re-form on %d node(s): %s", n,
                 telem_strerror(rc));
    else if (self->dd)
        telem_log(TELEM_LOG_DEBUG, "dictionary re-formed on %d node(s), "
                  "epoch %llu", n, (unsigned long long) ddict_epoch(self->dd));
    free(names);
    return rc;
}

void
launch_job_dict_close(launch_job_t *self)
{
    ddict_close(&self->dd);
}
