/* bench_common.c - helpers shared by telem's benchmarks; see bench_common.h.
 *
 * The end-of-stream handshake mirrors what a real telem process does at
 * exit: ZeroMQ keeps the order of frames on one PUSH connection, so once
 * telemd has seen the fin token of the last batch it has ingested every
 * batch before it.  That is what makes "samples/s until confirmed" a fair
 * end-to-end figure (no guessing from a queue that looks empty).
 */
#include "bench_common.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "telem_error.h"
#include "telem_log.h"
#include "telem_paths.h"

int64_t
bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
bench_die(const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", what);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static int
s_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

static int
s_cmp_d(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

void
bench_sort_i64(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, s_cmp_i64);
}

int64_t
bench_percentile_sorted(const int64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t rank = (size_t) ((p / 100.0) * (double) n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

void
bench_sort_d(double *v, size_t n)
{
    qsort(v, n, sizeof *v, s_cmp_d);
}

double
bench_median_d(double *v, size_t n)
{
    if (n == 0)
        return 0;
    bench_sort_d(v, n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
s_cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = 0;
        snprintf(buf, size, "%s", colon);
        break;
    }
    fclose(f);
}

void
bench_print_machine(const char *bench_name)
{
    char model[256], date[64];
    s_cpu_model(model, sizeof model);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    struct utsname u;
    if (uname(&u) != 0)
        snprintf(u.release, sizeof u.release, "?");
    int zmaj, zmin, zpat;
    zmq_version(&zmaj, &zmin, &zpat);
    double load[3] = { 0, 0, 0 };
    if (getloadavg(load, 3) < 0)
        load[0] = -1;
    printf("== %s  %s  nproc=%ld  cpu=\"%s\"  kernel=%s  libzmq=%d.%d.%d  "
           "load=%.2f %.2f %.2f\n", bench_name, date,
           sysconf(_SC_NPROCESSORS_ONLN), model, u.release, zmaj, zmin, zpat,
           load[0], load[1], load[2]);
    /* Daemon log lines (sampler availability...) would clutter tables. */
    telem_log_init(bench_name, TELEM_LOG_WARN);
}

void
bench_tmpdir(char *buf, size_t size, const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    if (snprintf(buf, size, "%s/telem-bench-%s-XXXXXX", base, tag)
        >= (int) size)
        bench_die("tmpdir", "path too long");
    if (!mkdtemp(buf))
        bench_die("tmpdir", "mkdtemp %s: %s", buf, strerror(errno));
}

static int
s_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void) st;
    (void) flag;
    (void) ftw;
    remove(path);
    return 0;
}

void
bench_rmtree(const char *dir)
{
    nftw(dir, s_rm, 16, FTW_DEPTH | FTW_PHYS);
}

telemd_t *
bench_telemd_start(const char *rundir, const char *node, int level,
                   int64_t window_s, size_t mem_cap, int tcp)
{
    telemd_config_t cfg = {
        .node = node,
        .rundir = rundir,
        .level = level,
        .window_ns = window_s * INT64_C(1000000000),
        .interval_ns = INT64_C(1000000000),
        .mem_cap_bytes = mem_cap,
        .tcp_bind = tcp ? "tcp://127.0.0.1:*" : NULL,
        .job_uid = getuid(),
    };
    int err = 0;
    telemd_t *t = telemd_new(&cfg, &err);
    if (!t)
        bench_die("telemd_new", "%s", telem_strerror(err));
    return t;
}

/* Receives one frame with a deadline; returns its size or -1. */
static int
s_recv(void *sock, zmq_msg_t *msg, int timeout_ms)
{
    zmq_pollitem_t it = { sock, 0, ZMQ_POLLIN, 0 };
    if (zmq_poll(&it, 1, timeout_ms) <= 0)
        return -1;
    return zmq_msg_recv(msg, sock, 0);
}

int
bench_control(void *zctx, const char *ctl_ep, telem_proto_decoder_t *dec,
              telem_ctl_op_t op, int64_t arg, int timeout_ms,
              telem_control_reply_t *out)
{
    int rc = TELEM_ENOMEM;
    void *sock = zmq_socket(zctx, ZMQ_DEALER);
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (!sock || !enc)
        goto out;
    int zero = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero);
    rc = TELEM_ECONN;
    if (zmq_connect(sock, ctl_ep) != 0)
        goto out;
    /* A fresh socket per request, so any id will do; keep them distinct. */
    telem_control_t c = { .id = (uint64_t) bench_now_ns(), .op = op,
                          .arg = arg };
    const void *data;
    size_t size;
    if ((rc = telem_proto_encode_control(enc, &c, &data, &size)) != 0)
        goto out;
    rc = TELEM_ECONN;
    if (zmq_send(sock, data, size, 0) < 0)
        goto out;
    rc = TELEM_ETIMEDOUT;
    if (s_recv(sock, &msg, timeout_ms) < 0)
        goto out;
    telem_msg_t m;
    rc = telem_proto_decode(dec, zmq_msg_data(&msg), zmq_msg_size(&msg), &m);
    if (rc == 0 && m.type == TELEM_MSG_CONTROL_REPLY)
        *out = m.u.control_reply;
    else if (rc == 0)
        rc = m.type == TELEM_MSG_ERROR ? m.u.error.code : TELEM_EPROTO;
out:
    zmq_msg_close(&msg);
    telem_proto_encoder_destroy(&enc);
    if (sock)
        zmq_close(sock);
    return rc;
}

int
bench_sync(void *zctx, const char *ctl_ep, uint64_t token, int timeout_ms)
{
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    int64_t deadline = bench_now_ns() + (int64_t) timeout_ms * 1000000;
    int rc = TELEM_ETIMEDOUT;
    while (bench_now_ns() < deadline) {
        telem_control_reply_t r;
        int crc = bench_control(zctx, ctl_ep, dec, TELEM_CTL_SYNC,
                                (int64_t) token, timeout_ms, &r);
        if (crc == 0 && r.synced) {
            rc = 0;
            break;
        }
        /* Not there yet: telemd is still draining its queue.  Ask again
         * shortly; each ask costs telemd one small request. */
        struct timespec pause = { 0, 100000 };
        nanosleep(&pause, NULL);
    }
    telem_proto_decoder_destroy(&dec);
    return rc;
}

int
bench_fin_and_sync(void *zctx, void *push, telem_proto_encoder_t *enc,
                   const char *ctl_ep, uint64_t token, int timeout_ms)
{
    telem_batch_t fin = { .source = "bench", .fin_token = token };
    const void *data;
    size_t size;
    int rc = telem_proto_encode_batch(enc, &fin, &data, &size);
    if (rc)
        return rc;
    if (zmq_send(push, data, size, 0) < 0)
        return TELEM_ECONN;
    return bench_sync(zctx, ctl_ep, token, timeout_ms);
}

void
bench_fill_telemd(telemd_t *td, char *const *frames, const size_t *sizes,
                  int n, uint64_t token, int timeout_ms)
{
    void *zctx = zmq_ctx_new();
    void *push = zmq_socket(zctx, ZMQ_PUSH);
    zmq_connect(push, telemd_ingest_endpoint(td));
    for (int i = 0; i < n; i++)
        zmq_send(push, frames[i], sizes[i], 0);
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    int rc = bench_fin_and_sync(zctx, push, enc, telemd_ctl_endpoint(td),
                                token, timeout_ms);
    if (rc)
        bench_die("fill", "sync: %s", telem_strerror(rc));
    telem_proto_encoder_destroy(&enc);
    zmq_close(push);
    zmq_ctx_term(zctx);
}

int64_t
bench_ingested(void *zctx, const char *ctl_ep)
{
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    telem_control_reply_t r;
    int rc = bench_control(zctx, ctl_ep, dec, TELEM_CTL_STATUS, 0, 2000, &r);
    int64_t n = rc == 0 ? (int64_t) r.status.ingested : -1;
    telem_proto_decoder_destroy(&dec);
    return n;
}

pid_t
bench_spawn_logged(const char *path, char *const argv[], const char *log,
                   const char *who)
{
    extern char **environ;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT
                                     | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        bench_die(who, "cannot start %s: %s", path, strerror(rc));
    return pid;
}

int64_t
bench_read_stamp(const char *dir, const char *name, const char *who)
{
    char path[4352];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    long long ns = 0;
    int ok = f && fscanf(f, "%lld", &ns) == 1;
    if (f)
        fclose(f);
    if (!ok)
        bench_die(who, "cannot read %s", path);
    return (int64_t) ns;
}

const char *
bench_verdict(int ok)
{
    return ok ? "PASS" : "MISS";
}

static const char *
s_dash(const char *s)
{
    return s && *s ? s : "-";
}

void
bench_figure(const char *name, const char *target, const char *peer,
             const char *ratio, int ok, const char *measured_fmt, ...)
{
    char measured[128];
    va_list ap;
    va_start(ap, measured_fmt);
    vsnprintf(measured, sizeof measured, measured_fmt, ap);
    va_end(ap);
    printf("FIGURE\t%s\t%s\t%s\t%s\t%s\t%s\n", name, s_dash(target),
           measured, s_dash(peer), s_dash(ratio),
           ok < 0 ? "-" : ok ? "met" : "missed");
}

void
bench_summarise(int64_t *v, size_t n, bench_lat_t *out)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double) v[i];
    bench_sort_i64(v, n);
    out->p50 = bench_percentile_sorted(v, n, 50);
    out->p99 = bench_percentile_sorted(v, n, 99);
    out->p999 = bench_percentile_sorted(v, n, 99.9);
    out->max = v[n - 1];
    out->mean = sum / (double) n;
}
