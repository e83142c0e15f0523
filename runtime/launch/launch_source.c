/* launch_source.c - node sources of the launcher: local virtual nodes, a
 * Slurm allocation, a remote-shell template (see launch_source.h).
 *
 * A source is a list of node names plus one function that wraps a command
 * for a node; everything else in the launcher is the same for the three.
 * Slurm host lists are expanded by Slurm's own `scontrol show hostnames`
 * rather than by a parser of ours.
 */
#include "launch_source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch_proc.h"
#include "telem_error.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_why.h"

#define S_LOCAL_MAX 4096
#define S_HOSTNAMES_MAX (1u << 20)   /* bytes of scontrol output */

struct launch_source {
    launch_source_kind_t kind;
    launch_argv_t names;
    char *template_;
};

static launch_source_t *
s_new(launch_source_kind_t kind)
{
    launch_source_t *self = calloc(1, sizeof *self);
    if (self)
        self->kind = kind;
    return self;
}

launch_source_t *
launch_source_new_local(size_t n, int *err)
{
    int err_ignored;
    if (!err)
        err = &err_ignored;
    int dummy;
    err = err ? err : &dummy;
    *err = TELEM_EINVAL;
    if (n < 1 || n > S_LOCAL_MAX)
        return NULL;
    *err = TELEM_ENOMEM;
    launch_source_t *self = s_new(LAUNCH_SOURCE_LOCAL);
    for (size_t i = 0; self && i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%zu", i + 1);
        if (launch_argv_add(&self->names, name))
            launch_source_destroy(&self);
    }
    if (self)
        *err = 0;
    return self;
}

/* Appends the names in `list` separated by any of `seps`, checking each. */
static int
s_add_names(launch_source_t *self, const char *list, const char *seps,
            char *why, size_t why_size)
{
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return TELEM_ENOMEM;
    int rc = 0;
    for (char *w = strtok_r(copy, seps, &save); w && !rc;
         w = strtok_r(NULL, seps, &save)) {
        if (!telem_node_valid(w)) {
            telem_why(why, why_size, "'%s' is not a usable node name", w);
            rc = TELEM_EINVAL;
        } else if (launch_argv_add(&self->names, w)) {
            rc = TELEM_ENOMEM;
        }
    }
    free(copy);
    for (size_t i = 0; !rc && i < self->names.n; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(self->names.v[i], self->names.v[j]) == 0) {
                telem_why(why, why_size, "node '%s' is listed twice",
                          self->names.v[i]);
                rc = TELEM_EINVAL;
                break;
            }
    if (!rc && self->names.n == 0) {
        telem_why(why, why_size, "%s", "the node list is empty");
        rc = TELEM_EINVAL;
    }
    return rc;
}

launch_source_t *
launch_source_new_slurm(const char *nodelist, char *why, size_t why_size,
                        int *err)
{
    int err_ignored;
    if (!err)
        err = &err_ignored;
    int dummy;
    err = err ? err : &dummy;
    *err = TELEM_EINVAL;
    if (!nodelist || !*nodelist) {
        telem_why(why, why_size, "%s", "SLURM_JOB_NODELIST is empty");
        return NULL;
    }
    char *buf = malloc(S_HOSTNAMES_MAX);
    launch_source_t *self = s_new(LAUNCH_SOURCE_SLURM);
    if (!buf || !self) {
        *err = TELEM_ENOMEM;
        goto fail;
    }
    char *argv[] = { "scontrol", "show", "hostnames", (char *) nodelist,
                     NULL };
    *err = launch_proc_run_capture(argv, buf, S_HOSTNAMES_MAX);
    if (*err) {
        telem_why(why, why_size, "`scontrol show hostnames %s` failed",
                  nodelist);
        *err = *err == TELEM_ETOOBIG ? TELEM_ETOOBIG : TELEM_EIO;
        goto fail;
    }
    if ((*err = s_add_names(self, buf, "\n", why, why_size)) != 0)
        goto fail;
    free(buf);
    return self;
fail:
    free(buf);
    launch_source_destroy(&self);
    return NULL;
}

launch_source_t *
launch_source_new_template(const char *template_, const char *hosts, char *why,
                           size_t why_size, int *err)
{
    int err_ignored;
    if (!err)
        err = &err_ignored;
    int dummy;
    err = err ? err : &dummy;
    launch_source_t *self = s_new(LAUNCH_SOURCE_TEMPLATE);
    launch_argv_t probe = { 0 };
    *err = TELEM_ENOMEM;
    if (!self || !(self->template_ = strdup(template_ ? template_ : "")))
        goto fail;
    *err = launch_argv_split(&probe, self->template_, "node");
    launch_argv_clear(&probe);
    if (*err) {
        telem_why(why, why_size,
                  "cannot split the command template '%s' into "
                  "words",
                  self->template_);
        goto fail;
    }
    if ((*err = s_add_names(self, hosts ? hosts : "", ",", why, why_size)))
        goto fail;
    return self;
fail:
    launch_source_destroy(&self);
    return NULL;
}

void
launch_source_destroy(launch_source_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    launch_argv_clear(&(*self_p)->names);
    free((*self_p)->template_);
    free(*self_p);
    *self_p = NULL;
}

launch_source_kind_t
launch_source_kind(const launch_source_t *self)
{
    return self->kind;
}

const char *
launch_source_kind_name(const launch_source_t *self)
{
    static const char *const names[] = { "local", "slurm", "template" };
    return names[self->kind];
}

size_t
launch_source_count(const launch_source_t *self)
{
    return self->names.n;
}

const char *const *
launch_source_names(const launch_source_t *self)
{
    return (const char *const *) self->names.v;
}

int
launch_source_daemon_names_itself(const launch_source_t *self)
{
    return self->kind == LAUNCH_SOURCE_SLURM;
}

static int
s_slurm_command(const char *node, const char *role, launch_argv_t *out)
{
    char nodelist[TELEM_NAME_MAX + 16], name[64];
    snprintf(nodelist, sizeof nodelist, "--nodelist=%s", node);
    snprintf(name, sizeof name, "--job-name=telem-%s", role);
    const char *const words[] = {
        "srun", "--nodes=1", "--ntasks=1", nodelist, name, "--overlap",
        "--quiet", "--kill-on-bad-exit=1", "--input=none", NULL
    };
    return launch_argv_addv(out, words);
}

int
launch_source_command(const launch_source_t *self, const char *node,
                      const char *role, const char *const *argv,
                      const char *const *env_kv, launch_argv_t *out)
{
    if (!node || !role || !argv || !argv[0] || !out)
        return TELEM_EINVAL;
    int rc = 0;
    switch (self->kind) {
    case LAUNCH_SOURCE_LOCAL:
        break;
    case LAUNCH_SOURCE_SLURM:
        rc = s_slurm_command(node, role, out);
        break;
    case LAUNCH_SOURCE_TEMPLATE:
        rc = launch_argv_split(out, self->template_, node);
        if (!rc)
            rc = launch_argv_add(out, "env");
        if (!rc)
            rc = launch_argv_addv(out, env_kv);
        break;
    }
    return rc ? rc : launch_argv_addv(out, argv);
}
