/* test_run_trace.c - telem_run's tracer (run_trace.h) on programs whose
 * system calls are known.
 *
 * The traced programs are this binary itself, run as
 * `test_run_trace child MODE ARGS...` (tests/it_run.sh runs the same
 * workloads under the real telem_run):
 *   write N K            N write() calls of K bytes to /dev/null
 *   threads T N K        T threads, each N writes of K bytes
 *   fork C N K           C children (fork), each N writes of K bytes
 *   vfork C N K          C children started with vfork + execve of
 *                        "write N K"
 *   execthread N K       a second thread execs "write N K" (an execve
 *                        from a thread other than the leader)
 *   signals N            N SIGUSR1 sent to itself, each handled: exit 0
 *                        only when the handler ran N times
 *   stopself             stops itself with SIGSTOP, exits 42 once
 *                        continued
 *   exit S               exits with status S;  kill SIG: killed by SIG
 *   ticker T FD          T threads, each writing (thread, counter)
 *                        records to FD, one per millisecond, forever
 * Checked: the counts of write and its bytes are exact in every mode; the
 * exit status is the program's; signals are delivered as often as sent; a
 * stop signal stops the program until SIGCONT; attaching to a running
 * multi-threaded program and detaching leaves it running with its output
 * unchanged (every thread's records contiguous, before, during and after).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "run_counts.h"
#include "run_scall.h"
#include "run_trace.h"
#include "telem_error.h"

#define S_TICK_NS 5000000        /* 5 ms */

/* ---- the traced programs ------------------------------------------------ */

static int
s_writes(int n, int k)
{
    char *buf = calloc(1, (size_t) k + 1);
    int fd = open("/dev/null", O_WRONLY);
    if (!buf || fd < 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (write(fd, buf, (size_t) k) != k)
            return 1;
    close(fd);
    free(buf);
    return 0;
}

typedef struct {
    int n, k, fd, id;
} s_work_t;

static void *
s_writer(void *arg)
{
    s_work_t *w = arg;
    return s_writes(w->n, w->k) ? (void *) 1 : NULL;
}

static int
s_threads(int t, int n, int k)
{
    pthread_t th[64];
    s_work_t w = { n, k, -1, 0 };
    int rc = 0;
    for (int i = 0; i < t && i < 64; i++)
        pthread_create(&th[i], NULL, s_writer, &w);
    for (int i = 0; i < t && i < 64; i++) {
        void *r;
        pthread_join(th[i], &r);
        rc |= r != NULL;
    }
    return rc;
}

static int
s_forks(int c, int n, int k, int use_vfork, const char *self)
{
    char ns[16], ks[16];
    snprintf(ns, sizeof ns, "%d", n);
    snprintf(ks, sizeof ks, "%d", k);
    char *argv[] = { (char *) self, "child", "write", ns, ks, NULL };
    int rc = 0;
    for (int i = 0; i < c; i++) {
        pid_t p = use_vfork ? vfork() : fork();
        if (p == 0 && use_vfork) {
            execv(self, argv);
            _exit(127);
        }
        if (p == 0)
            _exit(s_writes(n, k));
        int st;
        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st)
            || WEXITSTATUS(st))
            rc = 1;
    }
    return rc;
}

typedef struct {
    char **argv;
} s_exec_t;

static void *
s_execer(void *arg)
{
    s_exec_t *e = arg;
    execv(e->argv[0], e->argv);
    _exit(127);
}

static int
s_exec_thread(const char *self, char *n, char *k)
{
    char *argv[] = { (char *) self, "child", "write", n, k, NULL };
    s_exec_t e = { argv };
    pthread_t th;
    pthread_create(&th, NULL, s_execer, &e);
    pthread_join(th, NULL);          /* the execve ends this image */
    return 1;
}

static _Atomic int s_handled;

static void
s_on_usr1(int sig)
{
    (void) sig;
    s_handled++;
}

static int
s_signals(int n)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < n; i++)
        kill(getpid(), SIGUSR1);
    return s_handled == n ? 0 : 1;
}

static void *
s_ticker_thread(void *arg)
{
    s_work_t *w = arg;
    struct timespec ms = { 0, 1000000 };
    for (uint32_t i = 0;; i++) {
        uint32_t rec[2] = { (uint32_t) w->id, i };
        if (write(w->fd, rec, sizeof rec) != (ssize_t) sizeof rec)
            _exit(3);
        nanosleep(&ms, NULL);
    }
    return NULL;
}

static int
s_ticker(int t, int fd)
{
    static s_work_t w[8];
    pthread_t th;
    for (int i = 1; i < t && i < 8; i++) {
        w[i] = (s_work_t) { 0, 0, fd, i };
        pthread_create(&th, NULL, s_ticker_thread, &w[i]);
    }
    w[0] = (s_work_t) { 0, 0, fd, 0 };
    s_ticker_thread(&w[0]);
    return 0;
}

static int
s_child(int argc, char **argv, const char *self)
{
    const char *mode = argc > 2 ? argv[2] : "";
    int a = argc > 3 ? atoi(argv[3]) : 0, b = argc > 4 ? atoi(argv[4]) : 0;
    int c = argc > 5 ? atoi(argv[5]) : 0;
    if (!strcmp(mode, "write"))
        return s_writes(a, b);
    if (!strcmp(mode, "threads"))
        return s_threads(a, b, c);
    if (!strcmp(mode, "fork") || !strcmp(mode, "vfork"))
        return s_forks(a, b, c, mode[0] == 'v', self);
    if (!strcmp(mode, "execthread") && argc > 4)
        return s_exec_thread(self, argv[3], argv[4]);
    if (!strcmp(mode, "signals"))
        return s_signals(a);
    if (!strcmp(mode, "stopself"))
        return raise(SIGSTOP) == 0 ? 42 : 1;
    if (!strcmp(mode, "exit"))
        return a;
    if (!strcmp(mode, "kill"))
        return kill(getpid(), a) == 0 ? 0 : 1;
    if (!strcmp(mode, "ticker"))
        return s_ticker(a, b);
    fprintf(stderr, "test_run_trace: unknown child mode '%s'\n", mode);
    return 2;
}

/* ---- the tracer around them --------------------------------------------- */

typedef struct s_rig s_rig_t;

struct s_rig {
    run_counts_t *counts;
    run_scall_t *scall;
    run_trace_t *trace;
    pid_t pid;
    int (*on_tick)(s_rig_t *rig);   /* the test's own check, every tick */
    int stopped_seen;               /* stopself: seen stopped, continued */
    int stopped_ticks;              /* stopself: ticks seen stopped */
    uint64_t last_total;            /* stopself: calls at the last tick */
    int min_writes;                 /* attach: detach after this many */
    int ticks;
};

static char s_self[4096];

static int
s_tick(void *arg)
{
    s_rig_t *rig = arg;
    rig->ticks++;
    return rig->on_tick ? rig->on_tick(rig) : RUN_TRACE_GO_ON;
}

static void
s_rig_open(s_rig_t *rig)
{
    memset(rig, 0, sizeof *rig);
    rig->scall = run_scall_new();
    rig->counts = run_counts_new(RUN_SCALL_SLOTS, "strace_hits_total",
                                 "strace_size_total", "scall", run_scall_name,
                                 NULL);
    REQUIRE(rig->scall && rig->counts);
    run_trace_config_t cfg = { rig->counts, rig->scall, S_TICK_NS, s_tick,
                               rig, 0 };
    int err = 1;
    rig->trace = run_trace_new(&cfg, &err);
    REQUIRE(rig->trace);
    CHECK_RC(err, 0);
}

static void
s_rig_close(s_rig_t *rig)
{
    run_trace_destroy(&rig->trace);
    CHECK(rig->trace == NULL);
    run_counts_destroy(&rig->counts);
    run_scall_destroy(&rig->scall);
}

/* Hits and bytes of every slot named `name` (any architecture). */
static uint64_t
s_hits(s_rig_t *rig, const char *name, uint64_t *bytes)
{
    uint64_t hits = 0, sum = 0;
    for (size_t i = 0; i < RUN_SCALL_SLOTS; i++) {
        uint64_t h, b;
        run_counts_total(rig->counts, i, &h, &b);
        if (!h && !b)
            continue;
        char label[RUN_COUNTS_LABEL_MAX];
        run_counts_label(rig->counts, i, label, sizeof label);
        if (strcmp(label, name) == 0) {
            hits += h;
            sum += b;
        }
    }
    if (bytes)
        *bytes = sum;
    return hits;
}

/* Runs `test_run_trace child ARGS...` traced to its end; returns its wait
 * status. */
static int
s_trace_child(s_rig_t *rig, char **args)
{
    char *argv[16] = { s_self, "child" };
    int n = 2;
    while (args[n - 2] && n < 15) {
        argv[n] = args[n - 2];
        n++;
    }
    argv[n] = NULL;
    rig->pid = run_trace_spawn(rig->trace, s_self, argv);
    REQUIRE(rig->pid > 0);
    CHECK_RC(run_trace_loop(rig->trace), 0);
    int st = -1;
    CHECK_RC(run_trace_status(rig->trace, &st), 0);
    return st;
}

/* One mode, checked for its exit status and its writes. */
static void
s_expect(char **args, int exit_code, uint64_t writes, uint64_t bytes)
{
    s_rig_t rig;
    s_rig_open(&rig);
    int st = s_trace_child(&rig, args);
    CHECK(WIFEXITED(st));
    CHECK_INT(WEXITSTATUS(st), exit_code);
    uint64_t b;
    CHECK_INT(s_hits(&rig, "write", &b), writes);
    CHECK_INT(b, bytes);
    CHECK_INT(s_hits(&rig, "execve", NULL) >= 1, 1);
    s_rig_close(&rig);
}

static void
test_writes(void)
{
    s_expect((char *[]) { "write", "1000", "100", NULL }, 0, 1000, 100000);
    s_expect((char *[]) { "write", "0", "1", NULL }, 0, 0, 0);
    s_expect((char *[]) { "threads", "4", "250", "64", NULL }, 0, 1000,
             64000);
    s_expect((char *[]) { "fork", "3", "100", "10", NULL }, 0, 300, 3000);
    s_expect((char *[]) { "vfork", "3", "100", "10", NULL }, 0, 300, 3000);
    s_expect((char *[]) { "execthread", "100", "7", NULL }, 0, 100, 700);
}

static void
test_exit_status(void)
{
    s_rig_t rig;
    s_rig_open(&rig);
    int st = s_trace_child(&rig, (char *[]) { "exit", "7", NULL });
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    s_rig_close(&rig);
    s_rig_open(&rig);
    st = s_trace_child(&rig, (char *[]) { "kill", "15", NULL });
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    s_rig_close(&rig);
}

static void
test_signals(void)
{
    s_rig_t rig;
    s_rig_open(&rig);
    int st = s_trace_child(&rig, (char *[]) { "signals", "50", NULL });
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);   /* 50 handled */
    CHECK_INT(s_hits(&rig, "kill", NULL), 50);
    s_rig_close(&rig);
}

/* The process's state letter in /proc/PID/stat ('?' when unreadable). */
static char
s_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

static uint64_t
s_total(s_rig_t *rig)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < RUN_SCALL_SLOTS; i++) {
        uint64_t h;
        run_counts_total(rig->counts, i, &h, NULL);
        sum += h;
    }
    return sum;
}

/* A ptrace stop shows as 't' too, so the program counts as stopped only
 * after its raise (tgkill counted) when two ticks in a row find it stopped
 * with no call in between: by then the loop has handled every stop that
 * was pending and the SIGSTOP has been delivered. */
static int
s_continue_when_stopped(s_rig_t *rig)
{
    char st = s_state(rig->pid);
    uint64_t total = s_total(rig);
    int stopped = (st == 't' || st == 'T') && s_hits(rig, "tgkill", NULL);
    rig->stopped_ticks = stopped && total == rig->last_total
                             ? rig->stopped_ticks + 1
                             : stopped;
    rig->last_total = total;
    if (!rig->stopped_seen && rig->stopped_ticks >= 2) {
        rig->stopped_seen = 1;
        kill(rig->pid, SIGCONT);
    }
    return RUN_TRACE_GO_ON;
}

static void
test_group_stop(void)
{
    s_rig_t rig;
    s_rig_open(&rig);
    rig.on_tick = s_continue_when_stopped;
    int st = s_trace_child(&rig, (char *[]) { "stopself", NULL });
    /* It exits 42 only after SIGCONT, which the test sends only once it
       has seen the program stopped. */
    CHECK(rig.stopped_seen);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
    s_rig_close(&rig);
}

/* ---- attach and detach --------------------------------------------------- */

#define S_TICKERS 3

typedef struct {
    int fd;                         /* the ticker's records, non-blocking */
    uint32_t next[S_TICKERS];       /* each thread's next counter */
    int bad;                        /* records out of order or malformed */
} s_records_t;

static s_records_t s_rec;           /* the attach test's, read at ticks */

/* Reads the records there are; with `need` > 0, blocks until every
 * thread's counter has reached it. */
static void
s_read_records(s_records_t *r, uint32_t need)
{
    for (;;) {
        int done = 1;
        for (int i = 0; i < S_TICKERS; i++)
            done &= r->next[i] >= need;
        if (done && need)
            return;
        uint32_t rec[2];
        ssize_t n = read(r->fd, rec, sizeof rec);
        if (n < 0 && errno == EAGAIN && !need)
            return;
        if (n < 0 && errno == EAGAIN) {
            struct timespec ms = { 0, 1000000 };
            nanosleep(&ms, NULL);   /* the ticker writes every ms */
            continue;
        }
        if (n != (ssize_t) sizeof rec || rec[0] >= S_TICKERS
            || rec[1] != r->next[rec[0]]) {
            r->bad++;
            return;
        }
        r->next[rec[0]]++;
    }
}

static int
s_detach_after(s_rig_t *rig)
{
    s_read_records(&s_rec, 0);
    return s_hits(rig, "write", NULL) >= (uint64_t) rig->min_writes
               ? RUN_TRACE_DETACH
               : RUN_TRACE_GO_ON;
}

static pid_t
s_start_ticker(int *fd)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        char t[16], w[16];
        close(p[0]);
        snprintf(t, sizeof t, "%d", S_TICKERS);
        snprintf(w, sizeof w, "%d", p[1]);
        execl(s_self, s_self, "child", "ticker", t, w, (char *) NULL);
        _exit(127);
    }
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    *fd = p[0];
    return pid;
}

static void
test_attach_detach(void)
{
    memset(&s_rec, 0, sizeof s_rec);
    pid_t pid = s_start_ticker(&s_rec.fd);
    s_read_records(&s_rec, 5);        /* every thread runs */
    s_rig_t rig;
    s_rig_open(&rig);
    rig.on_tick = s_detach_after;
    rig.min_writes = 60;
    char why[256] = "";
    CHECK_RC(run_trace_attach(rig.trace, pid, why, sizeof why), 0);
    CHECK_RC(run_trace_attach(rig.trace, pid, why, sizeof why), TELEM_ESTATE);
    CHECK_RC(run_trace_loop(rig.trace), 0);
    uint64_t bytes, hits = s_hits(&rig, "write", &bytes);
    CHECK(hits >= 60);
    /* A hit counts at the call's entry, its bytes at its return: a thread
       detached at a write's entry stop has that write's hit and not its
       bytes (docs/telem_run.md), so each thread may lack one write's. */
    CHECK(bytes % 8 == 0 && bytes <= hits * 8
          && hits * 8 - bytes <= 8 * (uint64_t) S_TICKERS);
    int st;
    CHECK_RC(run_trace_status(rig.trace, &st), TELEM_ESTATE);   /* running */
    s_rig_close(&rig);
    CHECK_INT(waitpid(pid, &st, WNOHANG), 0);
    /* It goes on, every thread's records in order, well past the detach. */
    uint32_t at = 0;
    for (int i = 0; i < S_TICKERS; i++)
        at = s_rec.next[i] > at ? s_rec.next[i] : at;
    s_read_records(&s_rec, at + 100);
    CHECK_INT(s_rec.bad, 0);
    kill(pid, SIGTERM);
    CHECK_INT(waitpid(pid, &st, 0), pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    close(s_rec.fd);
}

static void
test_attach_errors(void)
{
    s_rig_t rig;
    s_rig_open(&rig);
    char why[256] = "";
    /* A pid that names no process: pids stay below pid_max.  (The pid of a
       child just reaped is no such pid: on a busy machine pids wrap, and
       once another process had it, so the attach succeeded.) */
    long pid_max = 4194304;          /* the kernel's PID_MAX_LIMIT */
    FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
    if (f) {
        if (fscanf(f, "%ld", &pid_max) != 1)
            pid_max = 4194304;
        fclose(f);
    }
    CHECK_RC(run_trace_attach(rig.trace, (pid_t) pid_max, why, sizeof why),
             TELEM_ENOTFOUND);
    CHECK(strstr(why, "process") != NULL);
    s_rig_close(&rig);
    run_trace_config_t bad = { NULL, NULL, 0, NULL, NULL, 0 };
    int err = 0;
    CHECK(run_trace_new(&bad, &err) == NULL);
    CHECK_RC(err, TELEM_EINVAL);
}

static void
test_which(void)
{
    char buf[4096];
    CHECK_RC(run_trace_which("/x/y", buf, sizeof buf), 0);
    CHECK_STR(buf, "/x/y");
    setenv("PATH", "/nonexistent:/bin:/usr/bin", 1);
    CHECK_RC(run_trace_which("sh", buf, sizeof buf), 0);
    CHECK(strcmp(buf, "/bin/sh") == 0 || strcmp(buf, "/usr/bin/sh") == 0);
    CHECK_RC(run_trace_which("no-such-program-here", buf, sizeof buf),
             TELEM_ENOTFOUND);
    CHECK_RC(run_trace_which("", buf, sizeof buf), TELEM_ENOTFOUND);
    CHECK_RC(run_trace_which("/x/y", buf, 3), TELEM_ETOOBIG);
}

int
main(int argc, char **argv)
{
    ssize_t n = readlink("/proc/self/exe", s_self, sizeof s_self - 1);
    REQUIRE(n > 0);
    s_self[n] = '\0';
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return s_child(argc, argv, s_self);
    /* In a sanitizer build the traced programs cannot check for leaks at
       exit (the leak checker uses ptrace itself); this process still does,
       having read its options already. */
    char asan[512];
    const char *opts = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "%s%sdetect_leaks=0", opts ? opts : "",
             opts && *opts ? ":" : "");
    setenv("ASAN_OPTIONS", asan, 1);
    test_writes();
    test_exit_status();
    test_signals();
    test_group_stop();
    test_attach_detach();
    test_attach_errors();
    test_which();
    return check_report("test_run_trace");
}
