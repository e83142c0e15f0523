/* launch_source.h - where a job's nodes come from and how a command is run
 * on one of them.
 *
 * Three sources, one interface:
 *   local     N virtual nodes "n1".."nN" on this machine; a command runs
 *             directly.  The default when there is no allocation.
 *   slurm     the nodes of the Slurm allocation ($SLURM_JOB_NODELIST,
 *             expanded by `scontrol show hostnames`); a command runs as
 *             `srun --nodes=1 --ntasks=1 --nodelist=NODE --overlap ... CMD`,
 *             which carries the launcher's environment to the node, and
 *             one kind on many nodes as one step
 *             (launch_source_step_command()).  On
 *             the node, telemd takes its name from SLURMD_NODENAME (several
 *             slurmd may share one host name), and the launcher checks that
 *             the name it reports is the node it was sent to.  Each
 *             node's address is Slurm's NodeAddr (`scontrol show node`,
 *             made numeric), which the node daemons bind by default so
 *             that other nodes and the launcher reach them.
 *   template  a user list of hosts and a command template such as
 *             "ssh {node}": the template's words (split as a shell would,
 *             "{node}" replaced by the host) are put in front of
 *             `env KEY=VALUE... CMD`, because a remote shell does not carry
 *             the environment.  A remote shell joins its arguments into one
 *             command line: arguments with spaces need quoting there.
 *
 * Thread safety: none; one owner.
 */
#ifndef LAUNCH_SOURCE_H
#define LAUNCH_SOURCE_H

#include <stddef.h>

#include "launch_argv.h"

typedef enum {
    LAUNCH_SOURCE_LOCAL = 0,
    LAUNCH_SOURCE_SLURM = 1,
    LAUNCH_SOURCE_TEMPLATE = 2
} launch_source_kind_t;

typedef struct launch_source launch_source_t;

/* The constructors return the source, or NULL with a negative
 * telem_err_t in *err (err may be NULL). */

/* `n` local virtual nodes (1-4096).  NULL with TELEM_EINVAL or
 * TELEM_ENOMEM in *err. */
launch_source_t *launch_source_new_local(size_t n, int *err);

/* The nodes of the Slurm allocation `nodelist` (a Slurm host list such as
 * "n[1-3]"), expanded with `scontrol show hostnames`.  NULL with a sentence
 * in `why` and TELEM_EIO (scontrol failed), TELEM_EINVAL (an empty list or
 * a bad node name) or TELEM_ENOMEM in *err. */
launch_source_t *launch_source_new_slurm(const char *nodelist, char *why,
                                         size_t why_size, int *err);

/* Hosts from the comma-separated list `hosts`, commands run through
 * `template` (which must split into at least one word).  NULL with a
 * sentence in `why` and TELEM_EINVAL or TELEM_ENOMEM in *err. */
launch_source_t *launch_source_new_template(const char *template_,
                                            const char *hosts, char *why,
                                            size_t why_size, int *err);

/* Frees; accepts NULL or a pointer to NULL; nulls the pointer. */
void launch_source_destroy(launch_source_t **self_p);

launch_source_kind_t launch_source_kind(const launch_source_t *self);

/* "local", "slurm" or "template". */
const char *launch_source_kind_name(const launch_source_t *self);

/* Node names, in allocation order (owned by the source). */
size_t launch_source_count(const launch_source_t *self);
const char *const *launch_source_names(const launch_source_t *self);

/* 1 if telemd on this source names itself (Slurm: SLURMD_NODENAME) and
 * must not be given --node. */
int launch_source_daemon_names_itself(const launch_source_t *self);

/* The numeric address other hosts reach node `node` at (Slurm: its
 * NodeAddr, resolved), or NULL where the source does not know it (local,
 * template, or scontrol did not say). */
const char *launch_source_addr(const launch_source_t *self, const char *node);

/* This host's numeric address on the route to the first node with an
 * address (Slurm's NodeAddr, else the name of one of the first two
 * template hosts resolved: one DNS lookup per host of a long list of names
 * the resolver does not know cost seconds), for endpoints the nodes must
 * reach back.  Returns 0, or TELEM_ENOTFOUND
 * (no node address known, or no route) with `out` empty. */
int launch_source_route_addr(const launch_source_t *self, char *out,
                             size_t size);

/* Gives node `node` back to Slurm for the rest of the job: the
 * allocation shrinks to the nodes not given back (`scontrol update
 * JobId=$SLURM_JOB_ID NodeList=...`), so Slurm ends whatever still runs
 * there and the node's later failure (Slurm marking it DOWN) no longer
 * ends the whole allocation.  The node this launcher itself runs on (its
 * SLURMD_NODENAME, under sbatch) is never given back.  Only the Slurm
 * source does anything.  Returns 1 (given back), 0 (nothing to do), or
 * TELEM_EIO with a sentence in `why` (scontrol failed; the node stays in
 * the allocation). */
int launch_source_release(launch_source_t *self, const char *node, char *why,
                          size_t why_size);

/* The signal that asks a command of launch_source_command to stop, sent
 * once: SIGTERM, or under Slurm SIGINT, which srun (run with
 * --disable-status) forwards to its task as SIGINT; srun answers a
 * SIGTERM by killing its step's tasks with SIGKILL, and a second SIGINT
 * within a second the same way. */
int launch_source_stop_signal(const launch_source_t *self);

/* Appends to `out` the command that runs `argv` on node `node` in the
 * role `role` (a short word used in job step names), with `env_kv` (a
 * NULL-terminated "KEY=VALUE" list, may be NULL) reaching the command
 * where the source does not carry the environment.  Returns 0,
 * TELEM_EINVAL or TELEM_ENOMEM. */
int launch_source_command(const launch_source_t *self, const char *node,
                          const char *role, const char *const *argv,
                          const char *const *env_kv, launch_argv_t *out);

/* Appends to `out` the command that runs one task on each of `n` nodes as
 * one Slurm job step named after `role`, every task running `argv` (the
 * same words on every node: telem_step and its step file):
 *   srun --nodes=N --ntasks=N --distribution=arbitrary --job-name=telem-ROLE
 *        --overlap --label --verbose --kill-on-bad-exit=0 --no-kill
 *        --input=none --disable-status ARGV...
 * The nodes, and task k's node, are the lines of the file that the
 * caller names in SLURM_HOSTFILE in the command's environment.  Returns 0,
 * TELEM_EUNSUPPORTED (the source is not Slurm), TELEM_EINVAL or
 * TELEM_ENOMEM. */
int launch_source_step_command(const launch_source_t *self, size_t n,
                               const char *role, const char *const *argv,
                               launch_argv_t *out);

#endif
