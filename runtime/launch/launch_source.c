/* launch_source.c - node sources of the launcher: local virtual nodes, a
 * Slurm allocation, a remote-shell template (see launch_source.h).
 *
 * A source is a list of node names plus one function that wraps a command
 * for a node; everything else in the launcher is the same for the three.
 * Slurm host lists are expanded by Slurm's own `scontrol show hostnames`
 * rather than by a parser of ours.
 */
#include "launch_source.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
    launch_argv_t addrs;        /* per name, "" where unknown */
    unsigned char *released;    /* per name: given back to Slurm */
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

/* Writes `host` as a numeric address into out (IPv4 preferred); 0 or -1. */
static int
s_numeric(const char *host, char *out, size_t size)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC,
                              .ai_socktype = SOCK_DGRAM }, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        return -1;
    const struct addrinfo *pick = res;
    for (const struct addrinfo *a = res; a; a = a->ai_next)
        if (a->ai_family == AF_INET) {
            pick = a;
            break;
        }
    int rc = getnameinfo(pick->ai_addr, pick->ai_addrlen, out,
                         (socklen_t) size, NULL, 0, NI_NUMERICHOST) == 0
             ? 0 : -1;
    freeaddrinfo(res);
    return rc;
}

/* The value of "KEY=" in one line of `scontrol -o show node`, copied. */
static void
s_field(const char *line, const char *key, char *out, size_t size)
{
    out[0] = '\0';
    size_t klen = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += klen) {
        if (p != line && p[-1] != ' ')
            continue;
        p += klen;
        size_t n = strcspn(p, " \n");
        snprintf(out, size, "%.*s", (int) n, p);
        return;
    }
}

/* Fills self->addrs from `scontrol -o show node NODELIST` (buf: scratch
 * of S_HOSTNAMES_MAX).  Unknown addresses stay "": the daemons then bind
 * their default.  Only out of memory is an error. */
static int
s_slurm_addrs(launch_source_t *self, const char *nodelist, char *buf)
{
    for (size_t i = 0; i < self->names.n; i++)
        if (launch_argv_add(&self->addrs, ""))
            return TELEM_ENOMEM;
    char *argv[] = { "scontrol", "-o", "show", "node", (char *) nodelist,
                     NULL };
    if (launch_proc_run_capture(argv, buf, S_HOSTNAMES_MAX) != 0)
        return 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char name[TELEM_NAME_MAX + 1], addr[256], num[64];
        s_field(line, "NodeName=", name, sizeof name);
        s_field(line, "NodeAddr=", addr, sizeof addr);
        for (size_t i = 0; *addr && i < self->names.n; i++)
            if (strcmp(self->names.v[i], name) == 0
                && s_numeric(addr, num, sizeof num) == 0) {
                char *copy = strdup(num);
                if (!copy)
                    return TELEM_ENOMEM;
                free(self->addrs.v[i]);
                self->addrs.v[i] = copy;
            }
    }
    return 0;
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
    if ((*err = s_slurm_addrs(self, nodelist, buf)) != 0)
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
    launch_argv_clear(&(*self_p)->addrs);
    free((*self_p)->released);
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

/* The index of node `node`, or the node count when it is not a node. */
static size_t
s_find(const launch_source_t *self, const char *node)
{
    size_t i = 0;
    while (node && i < self->names.n && strcmp(self->names.v[i], node) != 0)
        i++;
    return node ? i : self->names.n;
}

const char *
launch_source_addr(const launch_source_t *self, const char *node)
{
    size_t i = s_find(self, node);
    return i < self->addrs.n && *self->addrs.v[i] ? self->addrs.v[i] : NULL;
}

/* This host's address on the route to numeric address `to`; 0 or -1. */
static int
s_route(const char *to, char *out, size_t size)
{
    struct addrinfo hints = { .ai_flags = AI_NUMERICHOST,
                              .ai_socktype = SOCK_DGRAM }, *res = NULL;
    if (getaddrinfo(to, "9", &hints, &res) != 0 || !res)
        return -1;
    int fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;
    struct sockaddr_storage me;
    socklen_t len = sizeof me;
    /* A UDP connect sends nothing: it only asks the kernel for a route. */
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0
        && getsockname(fd, (struct sockaddr *) &me, &len) == 0)
        rc = getnameinfo((struct sockaddr *) &me, len, out, (socklen_t) size,
                         NULL, 0, NI_NUMERICHOST) == 0 ? 0 : -1;
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    return rc;
}

/* Host names resolved, at most, in search of the route to the nodes.  Each
 * is a blocking getaddrinfo(); a name the resolver does not know costs a
 * DNS round trip, and one whose query is lost its timeout (5 s by default,
 * resolv.conf's `timeout`).  Trying every node's name made a job of N
 * unresolvable template hosts wait N lookups before its first daemon
 * started: 10 s of the 16 s start-up of 64 namespaced nodes
 * (bench/fanin.sh), 2 lost queries in 64 on that machine.  The nodes of a
 * job share their route to this host in every case seen, so the first few
 * names say as much as all of them. */
#define S_ROUTE_RESOLVE 2

int
launch_source_route_addr(const launch_source_t *self, char *out, size_t size)
{
    out[0] = '\0';
    if (self->kind == LAUNCH_SOURCE_LOCAL)
        return TELEM_ENOTFOUND;
    size_t resolved = 0;
    for (size_t i = 0; i < self->names.n; i++) {
        char num[64];
        const char *a = i < self->addrs.n && *self->addrs.v[i]
                        ? self->addrs.v[i] : NULL;
        if (!a && self->kind == LAUNCH_SOURCE_TEMPLATE
            && resolved < S_ROUTE_RESOLVE) {
            resolved++;
            if (s_numeric(self->names.v[i], num, sizeof num) == 0)
                a = num;
        }
        if (a && s_route(a, out, size) == 0)
            return 0;
    }
    out[0] = '\0';
    return TELEM_ENOTFOUND;
}

/* argv for `scontrol update JobId=ID NodeList=LIST` keeping every node
 * not released; the words are written into `job` and `list`. */
static int
s_release_argv(const launch_source_t *self, const char *id, char *job,
               size_t job_size, char *list, size_t list_size)
{
    size_t len = (size_t) snprintf(list, list_size, "NodeList=");
    for (size_t i = 0; i < self->names.n; i++) {
        if (self->released[i])
            continue;
        int n = snprintf(list + len, list_size - len, "%s%s",
                         list[len - 1] == '=' ? "" : ",", self->names.v[i]);
        if (n < 0 || (size_t) n >= list_size - len)
            return TELEM_ETOOBIG;
        len += (size_t) n;
    }
    snprintf(job, job_size, "JobId=%s", id);
    return list[len - 1] == '=' ? TELEM_EINVAL : 0;
}

int
launch_source_release(launch_source_t *self, const char *node, char *why,
                      size_t why_size)
{
    const char *id = getenv("SLURM_JOB_ID"), *me = getenv("SLURMD_NODENAME");
    if (self->kind != LAUNCH_SOURCE_SLURM || !id || !*id
        || (me && node && strcmp(me, node) == 0))
        return 0;
    if (!self->released
        && !(self->released = calloc(self->names.n, 1)))
        return TELEM_ENOMEM;
    size_t i = s_find(self, node);
    if (i == self->names.n || self->released[i])
        return 0;
    self->released[i] = 1;
    char job[64], *list = malloc(S_HOSTNAMES_MAX), out[512];
    int rc = list ? s_release_argv(self, id, job, sizeof job, list,
                                   S_HOSTNAMES_MAX) : TELEM_ENOMEM;
    if (rc == 0) {
        /* Without SLURM_JOB_ID scontrol writes no resize scripts into
           the working directory. */
        char *argv[] = { "env", "-u", "SLURM_JOB_ID", "-u", "SLURM_JOBID",
                         "scontrol", "update", job, list, NULL };
        rc = launch_proc_run_capture(argv, out, sizeof out);
        if (rc)
            telem_why(why, why_size, "`scontrol update %s %.200s` failed",
                      job, list);
    }
    if (rc)
        self->released[i] = 0;
    free(list);
    return rc == TELEM_EINVAL ? 0 : rc ? rc : 1;
}

static int
s_slurm_command(const char *node, const char *role, launch_argv_t *out)
{
    char nodelist[TELEM_NAME_MAX + 16], name[64];
    snprintf(nodelist, sizeof nodelist, "--nodelist=%s", node);
    snprintf(name, sizeof name, "--job-name=telem-%s", role);
    const char *const words[] = {
        "srun", "--nodes=1", "--ntasks=1", nodelist, name, "--overlap",
        "--quiet", "--kill-on-bad-exit=1", "--input=none",
        "--disable-status", NULL
    };
    return launch_argv_addv(out, words);
}

int
launch_source_step_command(const launch_source_t *self, size_t n,
                           const char *role, const char *const *argv,
                           launch_argv_t *out)
{
    if (self->kind != LAUNCH_SOURCE_SLURM)
        return TELEM_EUNSUPPORTED;
    if (n < 1 || !role || !argv || !argv[0] || !out)
        return TELEM_EINVAL;
    char nodes[32], tasks[32], name[64];
    snprintf(nodes, sizeof nodes, "--nodes=%zu", n);
    snprintf(tasks, sizeof tasks, "--ntasks=%zu", n);
    snprintf(name, sizeof name, "--job-name=telem-%s", role);
    /* Each flag measured on Slurm 22.05 (docs/telem_launch.md):
       arbitrary: task k on line k of SLURM_HOSTFILE; --label: whose line;
       --verbose: every task's end, "Completed" too; --kill-on-bad-exit=0,
       --no-kill: a task's end or a node's loss leaves the others
       running. */
    const char *const words[] = {
        "srun", nodes, tasks, "--distribution=arbitrary", name, "--overlap",
        "--label", "--verbose", "--kill-on-bad-exit=0", "--no-kill",
        "--input=none", "--disable-status", NULL
    };
    int rc = launch_argv_addv(out, words);
    return rc ? rc : launch_argv_addv(out, argv);
}

int
launch_source_stop_signal(const launch_source_t *self)
{
    return self->kind == LAUNCH_SOURCE_SLURM ? SIGINT : SIGTERM;
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
