/* run_session.c - one run of telem_run (run_session.h): environment, the
 * launch count, the program traced or plainly waited for, the pushes.
 *
 * Signals.  Before anything starts a thread (libtelem's sender, ZeroMQ's
 * I/O threads), the stop signals and the tracer's tick signal are blocked;
 * the stop signals are then read from a signalfd: by the tracer's tick
 * callback when tracing, by a poll beside a pidfd of the program when
 * not.  A signal is passed on to the program only when another process
 * sent it (si_code SI_USER, SI_QUEUE or SI_TKILL): a terminal's Ctrl-C
 * reaches the whole foreground process group, the program included, and
 * passing it on would deliver it twice.
 *
 * Pushing.  The counts go to the node through the push API,
 * telem_counter_add(), as increments since the last push
 * (run_counts_flush), every 1/rate seconds from the tick callback and once
 * at the end; telem_finalize() then waits for telemd's acknowledgement.
 */
#include "run_session.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run_counts.h"
#include "run_env.h"
#include "run_scall.h"
#include "run_trace.h"
#include "telem.h"
#include "telem_error.h"
#include "telem_signals.h"

#define S_PROG "telem_run"
#define S_PROBE_MS 1000              /* the launch count's acknowledgement */
#define S_TICK_MAX_NS 100000000      /* signals are read at least this often */

extern char **environ;

typedef struct {
    const run_session_config_t *cfg;
    int sigfd;
    int connected;                   /* telemd acknowledged the launch */
    int64_t period_ns;
    int64_t next_push;
    run_counts_t *counts;
    run_trace_t *trace;
    pid_t child;                     /* plain mode */
} s_session_t;

static int64_t
s_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
s_fail(const char *fmt, const char *arg, const char *why)
{
    fprintf(stderr, "%s: ", S_PROG);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "%s%s\n", why ? ": " : "", why ? why : "");
    return RUN_SESSION_EFAIL;
}

/* The push sink of run_counts_flush(). */
static int
s_sink(void *arg, const char *name, double delta)
{
    (void) arg;
    int rc = telem_counter_add(name, delta);
    return rc > 0 ? 0 : rc;
}

static void
s_push(s_session_t *s)
{
    if (s->counts && s->connected)
        run_counts_flush(s->counts, s_sink, NULL);
}

/* Describes the metrics and learns whether a telemd answers (the
 * acknowledged flush of the descriptions); says so once when none does. */
static void
s_probe(s_session_t *s)
{
    const run_session_config_t *cfg = s->cfg;
    telem_describe("telem_run_total", "counter", "",
                   "Programs telem_run started (operation=exec) or attached"
                   " to (operation=attach)");
    if (cfg->syscalls || cfg->attach) {
        telem_describe("strace_hits_total", "counter", "",
                       "System calls made by programs run under telem_run"
                       " -s, by name (scall)");
        telem_describe("strace_size_total", "counter", "bytes",
                       "Bytes moved by the I/O system calls of programs run"
                       " under telem_run -s, by name (scall)");
    }
    int rc = telem_flush(S_PROBE_MS);
    s->connected = rc == 0;
    char where[512];
    run_env_ingest_shown(where, sizeof where);
    if (!s->connected)
        fprintf(stderr, "%s: no telemd answers at %s (%s): nothing is"
                        " counted%s\n",
                S_PROG, where, telem_strerror(rc),
                cfg->verbose ? "; counts are printed at the end" : "");
}

/* Counts the launch, once the program runs or is attached to; pushed with
 * the first push or at the end. */
static void
s_count_launch(s_session_t *s)
{
    if (s->connected)
        telem_counter_add(s->cfg->attach
                              ? "telem_run_total{operation=\"attach\"}"
                              : "telem_run_total{operation=\"exec\"}",
                          1);
}

/* A stop signal read from the signalfd: passed on, or a detach. */
static int
s_signals(s_session_t *s, pid_t target)
{
    struct signalfd_siginfo si;
    int detach = 0;
    while (read(s->sigfd, &si, sizeof si) == (ssize_t) sizeof si) {
        if (s->cfg->attach) {
            detach = 1;
            continue;
        }
        int code = si.ssi_code;
        if ((code == SI_USER || code == SI_QUEUE || code == SI_TKILL)
            && target > 0)
            kill(target, (int) si.ssi_signo);
    }
    return detach;
}

static int
s_tick(void *arg)
{
    s_session_t *s = arg;
    if (s_signals(s, s->cfg->attach ? 0 : s->child))
        return RUN_TRACE_DETACH;
    int64_t now = s_mono_ns();
    if (now >= s->next_push) {
        s_push(s);
        s->next_push = now + s->period_ns;
    }
    return RUN_TRACE_GO_ON;
}

static int
s_exit_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return RUN_SESSION_EFAIL;
}

/* Prints the totals, most called first (verbose). */
static void
s_summary(run_counts_t *counts)
{
    size_t n = run_counts_size(counts), k = 0;
    size_t *order = malloc(n * sizeof *order);
    if (!order)
        return;
    uint64_t h, b, h2;
    for (size_t i = 0; i < n; i++)
        if (run_counts_total(counts, i, &h, NULL), h)
            order[k++] = i;
    for (size_t i = 1; i < k; i++)       /* insertion sort: a few hundred */
        for (size_t j = i; j > 0; j--) {
            run_counts_total(counts, order[j - 1], &h, NULL);
            run_counts_total(counts, order[j], &h2, NULL);
            if (h >= h2)
                break;
            size_t tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    fprintf(stderr, "%s: %-20s %12s %16s\n", S_PROG, "syscall", "calls",
            "bytes");
    for (size_t i = 0; i < k; i++) {
        char name[RUN_COUNTS_LABEL_MAX];
        run_counts_label(counts, order[i], name, sizeof name);
        run_counts_total(counts, order[i], &h, &b);
        fprintf(stderr, "%s: %-20s %12llu %16llu\n", S_PROG, name,
                (unsigned long long) h, (unsigned long long) b);
    }
    free(order);
}

/* Starts or attaches to the program traced and follows it to its end or
 * a detach. */
static int
s_traced(s_session_t *s)
{
    const run_session_config_t *cfg = s->cfg;
    char why[256] = "", path[4096];
    int rc = TELEM_ENOMEM, st;
    run_scall_t *scall = run_scall_new();
    s->counts = run_counts_new(RUN_SCALL_SLOTS, "strace_hits_total",
                               "strace_size_total", "scall", run_scall_name,
                               NULL);
    int64_t tick = s->period_ns < S_TICK_MAX_NS ? s->period_ns : S_TICK_MAX_NS;
    run_trace_config_t tc = { s->counts, scall, tick, s_tick, s, cfg->verbose };
    if (!scall || !s->counts
        || !(s->trace = run_trace_new(&tc, &rc))) {
        rc = s_fail("cannot set up the tracer%s", "", telem_strerror(rc));
        goto out;
    }
    if (cfg->attach) {
        if (run_trace_attach(s->trace, cfg->attach, why, sizeof why) != 0) {
            rc = s_fail("-S %s", why, NULL);
            goto out;
        }
    } else if (run_trace_which(cfg->argv[0], path, sizeof path) != 0) {
        fprintf(stderr, "%s: %s: command not found\n", S_PROG, cfg->argv[0]);
        rc = 127;
        goto out;
    } else if ((s->child = run_trace_spawn(s->trace, path, cfg->argv)) < 0) {
        rc = s_fail("cannot start '%s'", cfg->argv[0], strerror(errno));
        goto out;
    }
    rc = 0;
    s_count_launch(s);
    s->next_push = s_mono_ns() + s->period_ns;
    if (run_trace_loop(s->trace) != 0)
        rc = s_fail("waiting for the traced program%s", "", strerror(errno));
    else if (run_trace_status(s->trace, &st) == 0)
        rc = cfg->attach ? 0 : s_exit_status(st);
    if (run_trace_unread(s->trace))
        fprintf(stderr, "%s: %llu system calls could not be read and are not"
                        " counted (PTRACE_GET_SYSCALL_INFO needs Linux 5.3 or"
                        " later)\n",
                S_PROG, (unsigned long long) run_trace_unread(s->trace));
    run_trace_destroy(&s->trace);
    s_push(s);
    if (cfg->verbose)
        s_summary(s->counts);
out:
    run_trace_destroy(&s->trace);
    run_scall_destroy(&scall);
    return rc;
}

/* Starts the program untraced and waits for it, passing signals on. */
static int
s_plain(s_session_t *s)
{
    const run_session_config_t *cfg = s->cfg;
    posix_spawnattr_t attr;
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setsigmask(&attr, &none);
    int e = posix_spawnp(&s->child, cfg->argv[0], NULL, &attr, cfg->argv,
                         environ);
    posix_spawnattr_destroy(&attr);
    if (e) {
        fprintf(stderr, "%s: %s: %s\n", S_PROG, cfg->argv[0],
                e == ENOENT ? "command not found" : strerror(e));
        return e == ENOENT ? 127 : 126;
    }
    s_count_launch(s);
    int pidfd = (int) syscall(SYS_pidfd_open, s->child, 0);
    int st;
    for (;;) {
        struct pollfd p[2] = { { s->sigfd, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
        pid_t w = waitpid(s->child, &st, pidfd >= 0 ? WNOHANG : 0);
        if (w == s->child)
            break;
        if (w < 0 && errno != EINTR)
            return s_fail("waiting for '%s'", cfg->argv[0], strerror(errno));
        if (pidfd >= 0 && poll(p, 2, -1) < 0 && errno != EINTR)
            return s_fail("waiting for '%s'", cfg->argv[0], strerror(errno));
        s_signals(s, s->child);
    }
    if (pidfd >= 0)
        close(pidfd);
    return s_exit_status(st);
}

int
run_session(const run_session_config_t *cfg)
{
    s_session_t s = { .cfg = cfg, .sigfd = -1 };
    s.period_ns = (int64_t) (1e9 / cfg->rate_hz);
    if (s.period_ns < 1000000)
        s.period_ns = 1000000;
    char why[512];
    if (run_env_ingest(cfg->endpoint, why, sizeof why) != 0)
        return s_fail("-u %s", why, NULL);
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
    sigset_t tick;
    sigemptyset(&tick);
    sigaddset(&tick, RUN_TRACE_TICK_SIG);
    pthread_sigmask(SIG_BLOCK, &tick, NULL);
    s.sigfd = telem_signals_open(sigs, sizeof sigs / sizeof *sigs, 1);
    if (s.sigfd < 0)
        return s_fail("cannot read signals%s", "", strerror(errno));
    s_probe(&s);
    /* TELEM_LEVEL=0 records nothing: nothing to trace for either. */
    int counting = (s.connected && telem_level() > 0) || cfg->verbose;
    int rc;
    if (cfg->attach && !counting) {
        rc = s_fail("-S: nothing to count without telemd (-v prints the"
                    " counts instead)%s", "", NULL);
    } else if (cfg->mpi && counting
               && run_env_mpi(cfg->rate_hz, cfg->verbose, why, sizeof why)) {
        rc = s_fail("-m: %s", why, NULL);
    } else if (cfg->attach || (cfg->syscalls && counting)) {
        rc = s_traced(&s);
    } else {
        rc = s_plain(&s);
    }
    run_counts_destroy(&s.counts);
    close(s.sigfd);
    telem_finalize();
    return rc;
}
