/* launch_step.c - step files, srun's labels and srun's own lines (see
 * launch_step.h).
 *
 * Why a step file rather than srun --multi-prog: every task of a step
 * needs its own words (telemd's --bind NODEADDR, telem_dictd's --node,
 * the program's TELEM_RANK...), and a --multi-prog configuration has its
 * own quoting rules and no environment per task.  A file of escaped
 * fields, one line per node, carries any argument and any environment
 * exactly, and telem_step picks its line by SLURMD_NODENAME, the name the
 * launcher already checks telemd by.  The file lives in the run
 * directory, which every node sees under Slurm (docs/telem_launch.md).
 *
 * srun's lines are matched on the words Slurm 22.05 writes
 * (src/plugins/launch/slurm/launch_slurm.c, _task_finish()): they are not
 * an interface, so anything not understood is OTHER, and the launcher
 * still learns of every task's end when srun itself ends.
 */
#include "launch_step.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "telem_error.h"
#include "telem_paths.h"

/* ---- the step file ------------------------------------------------------- */

static int
s_put_escaped(FILE *f, const char *prefix, const char *s)
{
    if (fputs(prefix, f) == EOF)
        return -1;
    for (; *s; s++) {
        const char *e = *s == '\\' ? "\\\\" : *s == '\t' ? "\\t"
                        : *s == '\n' ? "\\n" : *s == '\r' ? "\\r" : NULL;
        if (e ? fputs(e, f) == EOF : fputc(*s, f) == EOF)
            return -1;
    }
    return 0;
}

int
launch_step_file_line(FILE *f, const char *node, size_t rank,
                      const char *const *env, const char *const *argv)
{
    if (!f || !telem_node_valid(node) || node[0] == '#' || !argv || !argv[0])
        return TELEM_EINVAL;
    for (size_t k = 0; env && env[k]; k++)
        if (env[k][0] == '=' || !strchr(env[k], '='))
            return TELEM_EINVAL;
    int rc = s_put_escaped(f, "", node) || fprintf(f, "\t%zu", rank) < 0;
    for (size_t k = 0; !rc && env && env[k]; k++)
        rc = s_put_escaped(f, "\te:", env[k]);
    for (size_t k = 0; !rc && argv[k]; k++)
        rc = s_put_escaped(f, "\ta:", argv[k]);
    if (!rc && fputc('\n', f) == EOF)
        rc = -1;
    return rc ? TELEM_EIO : 0;
}

/* Unescapes field [s, end) into a new string; NULL with *err set. */
static char *
s_unescape(const char *s, const char *end, int *err)
{
    char *out = malloc((size_t) (end - s) + 1), *o = out;
    if (!out) {
        *err = TELEM_ENOMEM;
        return NULL;
    }
    while (s < end) {
        if (*s != '\\') {
            *o++ = *s++;
            continue;
        }
        char c = s + 1 < end ? s[1] : '\0';
        *o++ = c == '\\' ? '\\' : c == 't' ? '\t' : c == 'n' ? '\n'
               : c == 'r' ? '\r' : '\0';
        if (o[-1] == '\0') {
            free(out);
            *err = TELEM_EPROTO;
            return NULL;
        }
        s += 2;
    }
    *o = '\0';
    return out;
}

/* A decimal rank in [s, end); 0 or TELEM_EPROTO. */
static int
s_rank(const char *s, const char *end, size_t *rank)
{
    size_t v = 0;
    if (s == end || end - s > 9)
        return TELEM_EPROTO;
    for (; s < end; s++) {
        if (!isdigit((unsigned char) *s))
            return TELEM_EPROTO;
        v = v * 10 + (size_t) (*s - '0');
    }
    *rank = v;
    return 0;
}

/* One word "e:K=V" or "a:ARG" of [s, end) into env or argv. */
static int
s_word(const char *s, const char *end, launch_argv_t *env, launch_argv_t *argv)
{
    if (end - s < 2 || s[1] != ':' || (s[0] != 'e' && s[0] != 'a'))
        return TELEM_EPROTO;
    int err = 0;
    char *w = s_unescape(s + 2, end, &err);
    if (!w)
        return err;
    int rc = 0;
    if (s[0] == 'e' && (w[0] == '=' || !strchr(w, '=')))
        rc = TELEM_EPROTO;
    else
        rc = launch_argv_add(s[0] == 'e' ? env : argv, w);
    free(w);
    return rc;
}

/* Reads the fields after the node of one line [s, end). */
static int
s_line(const char *s, const char *end, size_t *rank, launch_argv_t *env,
       launch_argv_t *argv)
{
    const char *tab = memchr(s, '\t', (size_t) (end - s));
    int rc = s_rank(s, tab ? tab : end, rank);
    while (!rc && tab) {
        s = tab + 1;
        tab = memchr(s, '\t', (size_t) (end - s));
        rc = s_word(s, tab ? tab : end, env, argv);
    }
    return rc ? rc : argv->n ? 0 : TELEM_EPROTO;
}

/* Whether line [s, end) starts with the escaped form of `node` then a tab;
 * node names never hold a character that is escaped. */
static int
s_is_node(const char *s, const char *end, const char *node, size_t nlen)
{
    return (size_t) (end - s) > nlen && memcmp(s, node, nlen) == 0
           && s[nlen] == '\t';
}

int
launch_step_file_find(const char *buf, size_t len, const char *node,
                      size_t *rank, launch_argv_t *env, launch_argv_t *argv)
{
    if (!buf || !telem_node_valid(node))
        return TELEM_ENOTFOUND;
    size_t nlen = strlen(node);
    const char *end = buf + len, *found = NULL, *found_end = NULL;
    for (const char *s = buf; s < end;) {
        const char *nl = memchr(s, '\n', (size_t) (end - s));
        const char *e = nl ? nl : end;
        if (*s != '#' && s_is_node(s, e, node, nlen)) {
            if (found)
                return TELEM_EPROTO;        /* two lines for one node */
            found = s + nlen + 1;
            found_end = e;
        }
        s = nl ? nl + 1 : end;
    }
    return found ? s_line(found, found_end, rank, env, argv) : TELEM_ENOTFOUND;
}

/* ---- labels -------------------------------------------------------------- */

int
launch_step_label(const char *line, size_t ntasks, size_t *rank,
                  const char **text)
{
    const char *p = line;
    while (*p == ' ')
        p++;
    const char *digits = p;
    size_t v = 0;
    while (isdigit((unsigned char) *p) && p - digits < 10)
        v = v * 10 + (size_t) (*p++ - '0');
    if (p == digits || p[0] != ':' || (p[1] != ' ' && p[1] != '\0'))
        return isdigit((unsigned char) *p) ? TELEM_EPROTO : TELEM_ENOTFOUND;
    if (v >= ntasks)
        return TELEM_EPROTO;
    *rank = v;
    *text = p[1] ? p + 2 : p + 1;
    return 0;
}

/* ---- srun's lines -------------------------------------------------------- */

static const char s_srun[] = "srun: ";
static const char s_error[] = "error: ";
static const char s_finish[] = "launch/slurm: _task_finish: ";

/* The wait status that `what` says ("Completed", "Exited with exit code
 * C", a signal's name as strsignal() writes it, perhaps " (core
 * dumped)"), or -1. */
static int
s_what_status(const char *what)
{
    static const char exited[] = "Exited with exit code ";
    if (strcmp(what, "Completed") == 0)
        return 0;
    if (strncmp(what, exited, sizeof exited - 1) == 0) {
        char *e;
        long c = strtol(what + sizeof exited - 1, &e, 10);
        return *e == '\0' && c >= 0 && c <= 255 && e != what + sizeof exited - 1
               ? (int) c << 8 : -1;
    }
    size_t len = strlen(what);
    static const char core[] = " (core dumped)";
    if (len >= sizeof core - 1
        && strcmp(what + len - (sizeof core - 1), core) == 0)
        len -= sizeof core - 1;
    for (int sig = 1; sig < NSIG; sig++) {
        const char *name = strsignal(sig);
        if (name && strlen(name) == len && strncmp(name, what, len) == 0)
            return sig;                 /* a wait status: killed by sig */
    }
    return -1;
}

/* "HOSTS: task R: WHAT" or "HOSTS: tasks R-S,T: WHAT" in s. */
static int
s_tasks(const char *s, launch_step_srun_t *ev)
{
    const char *t = strstr(s, ": task");
    if (!t || t == s)
        return 0;
    t += 6;
    if (*t == 's')
        t++;
    if (*t++ != ' ')
        return 0;
    const char *colon = strstr(t, ": ");
    if (!colon || colon == t || colon[2] == '\0')
        return 0;
    for (const char *c = t; c < colon; c++)
        if (!isdigit((unsigned char) *c) && *c != '-' && *c != ',')
            return 0;
    ev->kind = LAUNCH_STEP_SRUN_TASKS;
    ev->ranks = t;
    ev->ranks_len = (size_t) (colon - t);
    ev->what = colon + 2;
    ev->status = s_what_status(ev->what);
    return 1;
}

/* "Received task exit notification for N task(s) of StepId=J.S
 * (status=0xHHHH)." */
static int
s_status(const char *s, launch_step_srun_t *ev)
{
    static const char head[] = "Received task exit notification for ";
    if (strncmp(s, head, sizeof head - 1) != 0)
        return 0;
    const char *p = strstr(s, "(status=0x");
    if (!p)
        return 0;
    char *e;
    errno = 0;
    unsigned long v = strtoul(p + 10, &e, 16);
    if (e == p + 10 || *e != ')' || errno || v > 0xffff)
        return 0;
    ev->kind = LAUNCH_STEP_SRUN_STATUS;
    ev->status = (int) v;
    return 1;
}

void
launch_step_srun_parse(const char *line, launch_step_srun_t *ev)
{
    static const char failure[] = "Node failure on ";
    memset(ev, 0, sizeof *ev);
    ev->kind = LAUNCH_STEP_SRUN_OTHER;
    ev->status = -1;
    if (strncmp(line, s_srun, sizeof s_srun - 1) != 0)
        return;
    const char *s = line + sizeof s_srun - 1;
    if (strncmp(s, s_finish, sizeof s_finish - 1) == 0) {
        s += sizeof s_finish - 1;
        if (!s_status(s, ev))
            s_tasks(s, ev);
        return;
    }
    if (strncmp(s, "fatal: ", 7) == 0) {
        ev->kind = LAUNCH_STEP_SRUN_ERROR;
        ev->what = s + 7;
        return;
    }
    if (strncmp(s, s_error, sizeof s_error - 1) != 0)
        return;
    s += sizeof s_error - 1;
    if (strncmp(s, failure, sizeof failure - 1) == 0
        && s[sizeof failure - 1] != '\0') {
        ev->kind = LAUNCH_STEP_SRUN_NODE_FAILURE;
        ev->node = s + sizeof failure - 1;
        ev->node_len = strlen(ev->node);
        return;
    }
    if (!s_tasks(s, ev)) {
        ev->kind = LAUNCH_STEP_SRUN_ERROR;
        ev->what = s;
    }
}

/* One number of a rank list at *p (advanced); -1 when there is none. */
static long
s_num(const char **p, const char *end)
{
    long v = 0;
    const char *s = *p;
    while (*p < end && isdigit((unsigned char) **p) && *p - s < 9)
        v = v * 10 + (**p - '0'), (*p)++;
    return *p == s || (*p < end && isdigit((unsigned char) **p)) ? -1 : v;
}

int
launch_step_ranks(const char *ranks, size_t len, size_t ntasks,
                  unsigned char *hit)
{
    const char *p = ranks, *end = ranks + len;
    /* Checked in full first, so that a bad list marks nothing. */
    for (int pass = 0; pass < 2; pass++) {
        p = ranks;
        while (p < end) {
            long lo = s_num(&p, end), hi = lo;
            if (lo >= 0 && p < end && *p == '-') {
                p++;
                hi = s_num(&p, end);
            }
            if (lo < 0 || hi < lo || (size_t) hi >= ntasks
                || (p < end && *p != ',') || (p < end && p + 1 == end))
                return TELEM_EPROTO;
            for (long r = lo; pass == 1 && r <= hi; r++)
                hit[r] = 1;
            p += p < end;
        }
        if (len == 0)
            return TELEM_EPROTO;
    }
    return 0;
}

/* ---- telem_step's start line --------------------------------------------- */

int
launch_step_start_parse(const char *line, long *pid, char *step, size_t size)
{
    size_t hl = sizeof LAUNCH_STEP_START - 1;
    if (strncmp(line, LAUNCH_STEP_START, hl) != 0)
        return TELEM_ENOTFOUND;
    char *e;
    errno = 0;
    long v = strtol(line + hl, &e, 10);
    if (e == line + hl || *e != '\t' || errno || v <= 1 || v > INT_MAX)
        return TELEM_EPROTO;
    const char *s = e + 1, *tab = strchr(s, '\t');
    size_t n = tab ? (size_t) (tab - s) : 0;
    if (!tab || n == 0 || n >= size || strspn(s, "0123456789.") != n
        || !memchr(s, '.', n))
        return TELEM_EPROTO;
    memcpy(step, s, n);
    step[n] = '\0';
    *pid = v;
    return 0;
}
