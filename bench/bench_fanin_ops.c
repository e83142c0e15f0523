/* bench_fanin_ops.c - what bench_fanin does to the nodes: the feeder of
 * device timings, the analysis-client query, the HTTP query to telem_agg,
 * and the CPU clocks the benchmark reads.
 *
 * The feeder stands in for telem_collect: 256 nodes of 8 DGEMM collectors
 * each cannot run on 2 cores, so the benchmark itself writes, between two
 * timed operations, one round of the series slowgpu reads (the same
 * metric, tags and level as the cpu backend's) into every node's telemd
 * over the node's ipc ingest socket, and waits until each has stored it.
 * The rounds are stamped 1 s apart, as collectors at a 1 s period would
 * write them; nothing is timed while the feeder runs.
 */
#include "bench_fanin.h"

#include "bench_common.h"
#include "telem_time.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define S_SYNC_MS 20000

struct fanin_feed {
    void *zctx;
    void **push;
    char **ctl;
    size_t n;
    telem_proto_encoder_t *enc;
    uint64_t token;
};

void
fanin_op_init(fanin_op_t *op, const char *name, size_t cap)
{
    *op = (fanin_op_t) { .name = name, .cap = cap ? cap : 1 };
    if (!(op->wall = calloc(op->cap, sizeof *op->wall)))
        bench_die("fanin", "out of memory");
}

void
fanin_op_add(fanin_op_t *op, int64_t wall, int64_t cpu)
{
    if (op->n < op->cap)
        op->wall[op->n++] = wall;
    op->cpu_total += cpu;
}

void
fanin_op_free(fanin_op_t *op)
{
    free(op->wall);
    op->wall = NULL;
}

fanin_feed_t *
fanin_feed_new(const char *rundir, const char *const *nodes, size_t n)
{
    fanin_feed_t *self = calloc(1, sizeof *self);
    if (!self || !(self->push = calloc(n, sizeof *self->push))
        || !(self->ctl = calloc(n, sizeof *self->ctl)))
        bench_die("fanin", "out of memory");
    self->zctx = zmq_ctx_new();
    self->enc = telem_proto_encoder_new();
    self->n = n;
    self->token = (uint64_t) telem_now_ns();
    for (size_t k = 0; k < n; k++) {
        char ep[4200];
        snprintf(ep, sizeof ep, "ipc://%s/%s/ingest.sock", rundir, nodes[k]);
        self->push[k] = zmq_socket(self->zctx, ZMQ_PUSH);
        if (!self->push[k] || zmq_connect(self->push[k], ep) != 0)
            bench_die("fanin", "connect %s: %s", ep,
                      zmq_strerror(zmq_errno()));
        snprintf(ep, sizeof ep, "ipc://%s/%s/ctl.sock", rundir, nodes[k]);
        if (!(self->ctl[k] = strdup(ep)))
            bench_die("fanin", "out of memory");
    }
    return self;
}

void
fanin_feed_destroy(fanin_feed_t **self_p)
{
    fanin_feed_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    int zero = 0;
    for (size_t k = 0; k < self->n; k++) {
        zmq_setsockopt(self->push[k], ZMQ_LINGER, &zero, sizeof zero);
        zmq_close(self->push[k]);
        free(self->ctl[k]);
    }
    free(self->push);
    free(self->ctl);
    telem_proto_encoder_destroy(&self->enc);
    zmq_ctx_term(self->zctx);
    free(self);
    *self_p = NULL;
}

/* A deterministic round-to-round noise of about 1 %. */
static double
s_noise(size_t node, int dev, int r)
{
    uint64_t x = (uint64_t) node * 0x9E3779B97F4A7C15ull
                 ^ (uint64_t) (dev + 1) * 0xC2B2AE3D27D4EB4Full
                 ^ (uint64_t) (r + 1) * 0x165667B19E3779F9ull;
    x ^= x >> 31;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 29;
    return 1.0 + ((double) (x % 2001) - 1000.0) / 100000.0;
}

void
fanin_feed_round(fanin_feed_t *self, int r, int64_t ts_ns, long slow)
{
    static const char *const gpu[FANIN_DEVICES] = { "0", "1", "2", "3",
                                                    "4", "5", "6", "7" };
    telem_tag_t tg[FANIN_DEVICES];
    telem_sample_t s[FANIN_DEVICES];
    telem_tag_t btags[] = { { "group", "cg" }, { "backend", "cpu" } };
    for (size_t k = 0; k < self->n; k++) {
        for (int j = 0; j < FANIN_DEVICES; j++) {
            double v = 0.01 * s_noise(k, j, r);
            if ((long) k == slow && j == 3)
                v *= 1.2;
            tg[j] = (telem_tag_t) { "gpu", gpu[j] };
            s[j] = (telem_sample_t) { .metric = FANIN_METRIC, .tags = &tg[j],
                                      .ntags = 1, .level = 1, .ts_ns = ts_ns,
                                      .value = v };
        }
        telem_batch_t b = { "fanin", btags, 2, s, FANIN_DEVICES, 0 };
        const void *data;
        size_t size;
        if (telem_proto_encode_batch(self->enc, &b, &data, &size)
            || zmq_send(self->push[k], data, size, 0) < 0)
            bench_die("fanin", "cannot send round %d to node %zu", r, k);
    }
    self->token++;
    for (size_t k = 0; k < self->n; k++)
        if (bench_fin_and_sync(self->zctx, self->push[k], self->enc,
                               self->ctl[k], self->token, S_SYNC_MS))
            bench_die("fanin", "node %zu did not store round %d in %d ms",
                      k, r, S_SYNC_MS);
}

size_t
fanin_query_latest(ac_t *ac, size_t *missing)
{
    static const char *const m[FANIN_QUERY_SERIES] = {
        "cpu_percent", "used_ram", "mem_used_bytes", "mem_available_bytes",
        "mem_total_bytes", "swap_used_bytes", "num_running_processes",
        "procs_running", "context_switches_per_second", "uptime_seconds",
    };
    ac_query_t q = { .metrics = m, .nmetrics = FANIN_QUERY_SERIES,
                     .flags = TELEM_QUERY_LATEST };
    ac_result_t *res = NULL;
    int rc = ac_query(ac, &q, &res);
    size_t n = res ? ac_result_nseries(res) : 0;
    *missing = res ? ac_result_nmissing(res) : ac_node_count(ac);
    if (rc && rc != TELEM_EPARTIAL && !*missing)
        *missing = ac_node_count(ac);
    ac_result_destroy(&res);
    return n;
}

/* Connects a TCP socket to host:port of `url` (http://HOST:PORT/...). */
static int
s_connect(const char *url)
{
    char host[256], port[16];
    if (sscanf(url, "http://%255[^:/]:%15[0-9]", host, port) != 2)
        return -1;
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
        return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static int
s_send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t) w;
    }
    return 0;
}

int
fanin_agg_query(const char *url, const char *token, int64_t now_s,
                size_t *bytes)
{
    char body[512], req[2048];
    int blen = snprintf(body, sizeof body,
                        "{\"start\":%lld,\"end\":%lld,\"queries\":[{\"metric\":"
                        "\"%s\",\"aggregator\":\"sum\",\"downsample\":"
                        "\"1m-avg\"}]}", (long long) (now_s - 3600),
                        (long long) now_s, FANIN_METRIC);
    int rlen = snprintf(req, sizeof req,
                        "POST /api/query HTTP/1.1\r\nHost: telem\r\n"
                        "Authorization: Bearer %s\r\nContent-Type: "
                        "application/json\r\nContent-Length: %d\r\n"
                        "Connection: close\r\n\r\n%s", token, blen, body);
    *bytes = 0;
    int fd = s_connect(url);
    if (fd < 0 || rlen <= 0 || (size_t) rlen >= sizeof req
        || s_send_all(fd, req, (size_t) rlen) != 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    char buf[65536], head[32] = "";
    size_t total = 0;
    ssize_t r;
    while ((r = recv(fd, buf, sizeof buf, 0)) > 0) {
        if (total == 0)
            snprintf(head, sizeof head, "%.*s", (int) (r < 31 ? r : 31), buf);
        total += (size_t) r;
    }
    close(fd);
    int status = 0;
    if (sscanf(head, "HTTP/1.%*d %d", &status) != 1)
        return 0;
    *bytes = total;
    return status;
}

/* The sum of the live threads' schedstat (1 ns resolution; a thread that
 * already ended is not in it): only where the process's CPU clock cannot
 * be read. */
static int64_t
s_threads_cpu_ns(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[384];
        unsigned long long ns;
        snprintf(p, sizeof p, "/proc/%ld/task/%s/schedstat", pid, e->d_name);
        FILE *f = fopen(p, "r");
        if (f && fscanf(f, "%llu", &ns) == 1)
            total += (int64_t) ns;
        if (f)
            fclose(f);
    }
    closedir(d);
    return total;
}

int64_t
fanin_proc_cpu_ns(long pid)
{
    /* The process's CPU clock counts every thread it ever ran, in ns.
     * Summing /proc/PID/task/STAR/schedstat (what this did first) loses a
     * thread's time when the thread ends: the launcher closes its heartbeat's
     * analysis client (a ZeroMQ context: I/O and reaper threads) and makes
     * a new one when the node set changes, so a restart that ended those
     * threads came out with a negative CPU (-1.78 ms once at 64 nodes). */
    clockid_t id;
    struct timespec ts;
    if (clock_getcpuclockid((pid_t) pid, &id) == 0
        && clock_gettime(id, &ts) == 0)
        return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
    return s_threads_cpu_ns(pid);
}

int64_t
fanin_self_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}
