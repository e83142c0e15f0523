/* bench_curve_storm.c - a storm of 1,000 clients connecting at once to one
 * ROUTER on loopback TCP, plain and CURVE, with libzmq's default listen
 * backlog (100) and telem's (1024) (bench_curve.h).
 *
 * 1,000 DEALERs are made first (options set, CURVE keys on, not yet
 * connected; that time is printed, not counted), in one context with one
 * I/O thread.  Then the clock starts and, in one loop, each connects and
 * sends one request (queued by libzmq until its connection is up); a
 * ROUTER (in czmq's context, where telem's ZAP handler answers for its
 * CURVE handshakes, as in a daemon) echoes every request at once.  The
 * clock stops when all 1,000 have their reply, or at the bound, which is
 * then reported as a timeout with how many were answered.
 *
 * Both ends share this machine's two cores, where a real storm's clients
 * run on other nodes.  So the CPU time of the server's threads (the
 * threads that existed before the storm, but main: czmq's I/O thread,
 * the ZAP handler, the echo thread) is measured apart from the clients'
 * (/proc/self/task/TID/stat), and 1,000 / server CPU seconds is printed:
 * the rate the server alone could sustain if it had a core to itself.
 */
#include <czmq.h>
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zmq.h>

#include "bench_common.h"
#include "bench_curve.h"

#define S_CLIENTS 1000
#define S_TASKS_MAX 64

/* ---- the echo server --------------------------------------------------- */

typedef struct {
    void *router;
    void *stop_rx, *stop_tx;    /* inproc PAIR: a byte ends the server */
    pthread_t thread;
} s_echo_t;

static void *
s_echo_run(void *arg)
{
    s_echo_t *e = arg;
    zmq_pollitem_t it[2] = { { e->router, 0, ZMQ_POLLIN, 0 },
                             { e->stop_rx, 0, ZMQ_POLLIN, 0 } };
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    while (zmq_poll(it, 2, -1) >= 0 && !(it[1].revents & ZMQ_POLLIN)) {
        while (zmq_msg_recv(&id, e->router, ZMQ_DONTWAIT) >= 0
               && zmq_msg_recv(&body, e->router, 0) >= 0) {
            zmq_msg_send(&id, e->router, ZMQ_SNDMORE);
            zmq_msg_send(&body, e->router, 0);
        }
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    return NULL;
}

/* Starts the ROUTER echo; its endpoint in ep. */
static void
s_echo_start(s_echo_t *e, const telem_keys_t *keys, int backlog, char *ep,
             size_t size)
{
    e->router = bcurve_server(ZMQ_ROUTER, keys, backlog, "tcp://127.0.0.1:*",
                              ep, size);
    /* A name of its own: a closed socket's inproc name is released
     * later, by libzmq's reaper. */
    char sep[64];
    snprintf(sep, sizeof sep, "inproc://bench-curve-stop-%lld",
             (long long) bench_now_ns());
    e->stop_rx = zmq_socket(zsys_init(), ZMQ_PAIR);
    e->stop_tx = zmq_socket(zsys_init(), ZMQ_PAIR);
    if (!e->stop_rx || !e->stop_tx || zmq_bind(e->stop_rx, sep) != 0
        || zmq_connect(e->stop_tx, sep) != 0)
        bench_die("echo", "inproc pair: %s", zmq_strerror(zmq_errno()));
    pthread_create(&e->thread, NULL, s_echo_run, e);
}

static void
s_echo_stop(s_echo_t *e)
{
    zmq_send(e->stop_tx, "", 0, 0);
    pthread_join(e->thread, NULL);
    zmq_close(e->stop_tx);
    zmq_close(e->stop_rx);
    zmq_close(e->router);
}

/* ---- CPU time of threads ----------------------------------------------- */

typedef struct {
    pid_t tid[S_TASKS_MAX];
    long long ticks[S_TASKS_MAX];
    int n;
} s_tasks_t;

/* utime + stime of one of our threads, in clock ticks; -1 if gone. */
static long long
s_task_ticks(pid_t tid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int) tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');      /* the name may hold spaces */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                     "%llu %llu", &ut, &st) != 2)
        return -1;
    return (long long) (ut + st);
}

/* Every thread of this process but the main one, and its CPU so far. */
static void
s_tasks_snap(s_tasks_t *t)
{
    t->n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    while (d && (de = readdir(d)) && t->n < S_TASKS_MAX) {
        pid_t tid = (pid_t) atoi(de->d_name);
        if (tid <= 0 || tid == getpid())
            continue;
        t->tid[t->n] = tid;
        t->ticks[t->n++] = s_task_ticks(tid);
    }
    if (d)
        closedir(d);
}

/* CPU seconds the threads of `before` used since. */
static double
s_tasks_since(const s_tasks_t *before)
{
    long long sum = 0;
    for (int i = 0; i < before->n; i++) {
        long long now = s_task_ticks(before->tid[i]);
        if (now >= 0 && before->ticks[i] >= 0)
            sum += now - before->ticks[i];
    }
    return (double) sum / (double) sysconf(_SC_CLK_TCK);
}

static double
s_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec)
           + (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* ---- the storm --------------------------------------------------------- */

typedef struct {
    double made;                /* making the 1,000 sockets (not counted) */
    double seconds;             /* to the last reply, or the bound */
    double half;                /* to the 500th reply */
    int answered;
    double cpu;                 /* this process's CPU seconds meanwhile */
    double server_cpu;          /* of which the server's threads */
} s_storm_t;

/* Waits for the replies until all came or the bound passed. */
static void
s_storm_wait(void **dealer, int64_t t0, double limit_s, s_storm_t *out)
{
    static zmq_pollitem_t it[S_CLIENTS];
    static int idx[S_CLIENTS];
    int64_t deadline = t0 + (int64_t) (limit_s * 1e9);
    int n = S_CLIENTS;
    for (int i = 0; i < n; i++)
        idx[i] = i;
    char buf[16];
    while (n > 0 && bench_now_ns() < deadline) {
        for (int i = 0; i < n; i++)
            it[i] = (zmq_pollitem_t) { dealer[idx[i]], 0, ZMQ_POLLIN, 0 };
        long left_ms = (long) ((deadline - bench_now_ns()) / 1000000) + 1;
        if (zmq_poll(it, n, left_ms) < 0)
            bench_die("storm", "poll: %s", zmq_strerror(zmq_errno()));
        int m = 0;
        for (int i = 0; i < n; i++) {
            if ((it[i].revents & ZMQ_POLLIN)
                && zmq_recv(dealer[idx[i]], buf, sizeof buf, 0) >= 0) {
                if (++out->answered == S_CLIENTS / 2)
                    out->half = (double) (bench_now_ns() - t0) / 1e9;
            } else {
                idx[m++] = idx[i];
            }
        }
        n = m;
    }
    out->seconds = n ? limit_s : (double) (bench_now_ns() - t0) / 1e9;
}

static void
s_storm_once(const bcurve_ctx_t *ctx, int curve, int backlog, s_storm_t *out)
{
    const telem_keys_t *keys = curve ? ctx->keys : NULL;
    static void *dealer[S_CLIENTS];
    s_echo_t e;
    char ep[256];
    memset(out, 0, sizeof *out);
    out->half = -1;
    s_echo_start(&e, keys, backlog, ep, sizeof ep);
    s_tasks_t server;
    s_tasks_snap(&server);
    void *zctx = zmq_ctx_new();
    zmq_ctx_set(zctx, ZMQ_MAX_SOCKETS, S_CLIENTS + 64);
    int64_t t_make = bench_now_ns();
    for (int i = 0; i < S_CLIENTS; i++)
        dealer[i] = bcurve_client(zctx, ZMQ_DEALER, keys, NULL);
    double cpu0 = s_cpu_s(), srv0 = s_tasks_since(&server);
    int64_t t0 = bench_now_ns();
    out->made = (double) (t0 - t_make) / 1e9;
    for (int i = 0; i < S_CLIENTS; i++)
        if (zmq_connect(dealer[i], ep) != 0
            || zmq_send(dealer[i], "ping", 4, 0) != 4)
            bench_die("storm", "client %d: %s", i, zmq_strerror(zmq_errno()));
    s_storm_wait(dealer, t0, ctx->storm_limit_s, out);
    out->cpu = s_cpu_s() - cpu0;
    out->server_cpu = s_tasks_since(&server) - srv0;
    for (int i = 0; i < S_CLIENTS; i++)
        zmq_close(dealer[i]);
    zmq_ctx_term(zctx);
    s_echo_stop(&e);
}

static void
s_storm_print(int curve, int backlog, const s_storm_t *s)
{
    printf("  %-6s %4d  ", curve ? "CURVE" : "plain", backlog);
    if (s->answered == S_CLIENTS)
        printf("%7.2f s (%5.0f conn/s)", s->seconds, S_CLIENTS / s->seconds);
    else
        printf("TIMEOUT at %.0f s, %4d answered", s->seconds, s->answered);
    printf("  half %6.2f s  CPU %5.2f s, server %5.2f s (%6.0f conn/s "
           "alone)  [made in %.2f s]\n", s->half, s->cpu, s->server_cpu,
           s->server_cpu > 0 ? S_CLIENTS / s->server_cpu : 0.0, s->made);
}

void
bcurve_part_storm(const bcurve_ctx_t *ctx, bcurve_table_t *t)
{
    printf("\n-- 5. connection storm: %d DEALERs connect at once to one "
           "ROUTER on loopback TCP, one request each (bound %.0f s)\n"
           "  side backlog  to all replies        to half     CPU of this "
           "process, of which the server's threads\n", S_CLIENTS,
           ctx->storm_limit_s);
    static const int backlog[2] = { 100, 1024 };
    static const char *const id[2] = { "storm_100", "storm_1024" };
    static const char *const what[2] = {
        "storm 1,000 clients, ZMQ_BACKLOG 100 (s)",
        "storm 1,000 clients, ZMQ_BACKLOG 1024 (s)" };
    for (int b = 0; b < 2; b++) {
        s_storm_t s[2];
        for (int c = 0; c < 2; c++) {
            s_storm_once(ctx, c, backlog[b], &s[c]);
            s_storm_print(c, backlog[b], &s[c]);
            fflush(stdout);
        }
        bcurve_add(t, &(bcurve_row_t) {
            .id = id[b], .what = what[b], .plain = s[0].seconds,
            .curve = s[1].seconds, .limit = ctx->storm_limit_s,
            .timed_out = (s[0].answered < S_CLIENTS)
                         | (s[1].answered < S_CLIENTS) << 1 });
    }
}
