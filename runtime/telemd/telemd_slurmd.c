/* telemd_slurmd.c - finds the node's slurmd in the proc tree and tells
 * whether it still runs (see telemd_slurmd.h).
 *
 * Only /proc is read: no message is sent to slurmd, so watching it costs
 * slurmd nothing and fills no log of Slurm's.
 */
#include "telemd_slurmd.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_log.h"
#include "telem_why.h"

#define S_CMDLINE_MAX 4096

struct telemd_slurmd {
    char root[256];
    pid_t pid;
    unsigned long long start;       /* clock ticks after boot */
    int gone;
    int reported;                   /* the loss was logged */
};

typedef struct {
    pid_t pid;
    unsigned long long start;
    int named;          /* started with -N for this node */
    int other;          /* started with -N for another node */
    int same_net;       /* in telemd's network namespace */
} s_cand_t;

/* Reads `path` into buf (NUL-terminated); bytes read, or -1. */
static ssize_t
s_read(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (ssize_t) n;
}

/* comm, state and start time of `pid` from its stat file; 0 or -1. */
static int
s_stat(const char *root, pid_t pid, char *comm, size_t comm_size,
       char *state, unsigned long long *start)
{
    char path[320], buf[1024];
    snprintf(path, sizeof path, "%s/%ld/stat", root, (long) pid);
    if (s_read(path, buf, sizeof buf) <= 0)
        return -1;
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (!open || !close || close < open)
        return -1;
    snprintf(comm, comm_size, "%.*s", (int) (close - open - 1), open + 1);
    char *p = close + 1;
    /* Fields after the comm: state is the 1st, starttime the 20th. */
    for (int field = 1; field <= 20; field++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return -1;
        if (field == 1)
            *state = *p;
        if (field == 20)
            return sscanf(p, "%llu", start) == 1 ? 0 : -1;
        while (*p && *p != ' ')
            p++;
    }
    return -1;
}

/* Whether `pid`'s command line names a node with -N: 1 this node, 2
 * another, 0 none. */
static int
s_names_node(const char *root, pid_t pid, const char *node)
{
    char path[320], buf[S_CMDLINE_MAX];
    snprintf(path, sizeof path, "%s/%ld/cmdline", root, (long) pid);
    ssize_t n = s_read(path, buf, sizeof buf);
    for (ssize_t i = 0; i < n; i += (ssize_t) strlen(buf + i) + 1) {
        const char *arg = buf + i, *name = NULL;
        if (strcmp(arg, "-N") == 0 && i + 3 < n)
            name = arg + 3;
        else if (strncmp(arg, "-N", 2) == 0 && arg[2])
            name = arg + 2;
        if (name)
            return strcmp(name, node) == 0 ? 1 : 2;
    }
    return 0;
}

static int
s_same_net(const char *root, pid_t pid)
{
    char path[320], mine[128], theirs[128];
    snprintf(path, sizeof path, "%s/self/ns/net", root);
    ssize_t a = readlink(path, mine, sizeof mine - 1);
    snprintf(path, sizeof path, "%s/%ld/ns/net", root, (long) pid);
    ssize_t b = readlink(path, theirs, sizeof theirs - 1);
    return a > 0 && a == b && memcmp(mine, theirs, (size_t) a) == 0;
}

/* Collects up to `max` slurmd processes; returns how many were seen. */
static size_t
s_scan(const char *root, const char *node, s_cand_t *c, size_t max)
{
    DIR *d = opendir(root);
    size_t n = 0;
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d)) {
        if (!isdigit((unsigned char) e->d_name[0]))
            continue;
        pid_t pid = (pid_t) strtol(e->d_name, NULL, 10);
        char comm[64], state = 0;
        unsigned long long start = 0;
        if (s_stat(root, pid, comm, sizeof comm, &state, &start) != 0
            || strcmp(comm, "slurmd") != 0 || state == 'Z')
            continue;
        if (n < max) {
            int names = s_names_node(root, pid, node);
            c[n] = (s_cand_t) { pid, start, names == 1, names == 2,
                                s_same_net(root, pid) };
        }
        n++;
    }
    if (d)
        closedir(d);
    return n < max ? n : max;
}

/* The one candidate matching `pick`, or -1 (none or several). */
static long
s_only(const s_cand_t *c, size_t n, int (*pick)(const s_cand_t *))
{
    long found = -1;
    for (size_t i = 0; i < n; i++)
        if (pick(&c[i])) {
            if (found >= 0)
                return -1;
            found = (long) i;
        }
    return found;
}

static int s_pick_named_net(const s_cand_t *c)
{
    return c->named && c->same_net;
}
static int s_pick_named(const s_cand_t *c) { return c->named; }
static int s_pick_net(const s_cand_t *c) { return !c->other && c->same_net; }
static int s_pick_any(const s_cand_t *c) { return !c->other; }

telemd_slurmd_t *
telemd_slurmd_find(const char *proc_root, const char *node, char *why,
                   size_t why_size)
{
    const char *root = proc_root ? proc_root : "/proc";
    s_cand_t c[64];
    size_t n = s_scan(root, node ? node : "", c, 64);
    long i = s_only(c, n, s_pick_named_net);
    if (i < 0)
        i = s_only(c, n, s_pick_named);
    if (i < 0)
        i = s_only(c, n, s_pick_net);
    if (i < 0)
        i = s_only(c, n, s_pick_any);
    if (i < 0) {
        if (n)
            telem_why(why, why_size, "%zu slurmd processes here and none is "
                      "node %s's alone", n, node ? node : "");
        else
            telem_why(why, why_size, "%s", "no slurmd process is visible");
        return NULL;
    }
    telemd_slurmd_t *self = calloc(1, sizeof *self);
    if (!self) {
        telem_why(why, why_size, "%s", "out of memory");
        return NULL;
    }
    snprintf(self->root, sizeof self->root, "%s", root);
    self->pid = c[i].pid;
    self->start = c[i].start;
    return self;
}

void
telemd_slurmd_destroy(telemd_slurmd_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

pid_t
telemd_slurmd_pid(const telemd_slurmd_t *self)
{
    return self->pid;
}

int
telemd_slurmd_alive(telemd_slurmd_t *self, char *why, size_t why_size)
{
    char comm[64], state = 0;
    unsigned long long start = 0;
    if (!self->gone
        && (s_stat(self->root, self->pid, comm, sizeof comm, &state, &start)
                != 0
            || start != self->start || state == 'Z'))
        self->gone = 1;
    if (self->gone)
        telem_why(why, why_size, "slurmd (pid %ld) is gone: Slurm can start "
                  "nothing on this node and will mark it DOWN",
                  (long) self->pid);
    return !self->gone;
}

telemd_slurmd_t *
telemd_slurmd_start(const char *proc_root, const char *node)
{
    char why[256];
    telemd_slurmd_t *self = telemd_slurmd_find(proc_root, node, why,
                                               sizeof why);
    if (self)
        telem_log(TELEM_LOG_INFO, "watching slurmd (pid %ld) of node %s",
                  (long) self->pid, node);
    else
        telem_log(TELEM_LOG_WARN, "slurmd of node %s not watched: %s", node,
                  why);
    return self;
}

int
telemd_slurmd_lost(telemd_slurmd_t *self, char *why, size_t why_size)
{
    char gone[200];
    if (!self || telemd_slurmd_alive(self, gone, sizeof gone))
        return 0;
    telem_why(why, why_size, "node lost: %s", gone);
    if (!self->reported) {
        self->reported = 1;
        telem_log(TELEM_LOG_ERROR, "node lost: %s", gone);
    }
    return 1;
}
