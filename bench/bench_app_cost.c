/* bench_app_cost.c - what recording metrics costs the application: a fixed
 * compute loop with and without instrumentation, in one run.
 *
 * The loop: one step is a DGEMM (GSL's gsl_blas_dgemm, C = A B + C on n x n
 * doubles), n chosen at start so one step takes about 1 ms on this machine.
 * Each instrumented run records samples at a nominal rate of 10 Hz, 1 kHz
 * or 100 kHz (samples per step = rate x the calibrated step time, spread by
 * an accumulator so every run does the same compute and the same count):
 *   add_data   telem_add_data() into a real telemd this program starts
 *              (bench_proc.c; level 2, 1 s sampling: the node as it runs)
 *   counter    telem_counter_add() (the push counters, docs/api.md)
 *   http+sqlite  a synchronous HTTP POST per sample on a kept-alive
 *              connection into bench_sqlite_server, which commits each
 *              sample into SQLite before answering: Dragon's add_data
 * Runs are interleaved: every instrumented run is paired with a plain run
 * right before it, and the slowdown is the median over the repetitions of
 * (instrumented time / plain time - 1), so drift of the machine cancels.
 * The baseline at high rates cannot keep up: its runs are shortened to at
 * most S_HTTP_SAMPLES samples and its achieved rate (samples/s) is printed.
 *
 * Usage: bench_app_cost [-r REPS] [-s STEPS] [-m MS]
 *   -r  repetitions of each pair (default 9; the baseline gets 3)
 *   -s  steps per run (default 500)
 *   -m  target step time in ms (default 1.0)
 * Prints the table and FIGURE lines (target: <= 1 % at 1 kHz).
 */
#include <arpa/inet.h>
#include <gsl/gsl_blas.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_proc.h"
#include "telem.h"

#define S_HTTP_SAMPLES 1000
#define S_RATES 3
#define S_REPS_MAX 64

typedef enum { M_NONE, M_ADD, M_CTR, M_HTTP, M_N } s_mode_t;
static const char *const s_mode_name[M_N] = {"none (A/A)", "add_data",
                                             "counter", "http+sqlite"};
static const double s_rate[S_RATES] = {10, 1000, 100000};

typedef struct {
    gsl_matrix *a, *b, *c;
    double step_s;            /* calibrated step time, seconds */
    int http_fd;              /* kept-alive connection to the baseline */
    long http_errors;
    char rbuf[4096];
} s_app_t;

typedef struct {
    double ratio[S_REPS_MAX]; /* instrumented / plain, per repetition */
    double tratio[S_REPS_MAX];/* the same of the application thread's CPU */
    int n;
    double noise;             /* 2 x 1.4826 x MAD of the thread ratios:
                                 about a 95 % band of the runs' spread */
    double step_us;           /* instrumented step time, median, µs */
    double achieved;          /* samples/s, median */
    long errors;
} s_cell_t;

static void
s_step(s_app_t *app)
{
    gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, app->a, app->b, 1e-9,
                   app->c);
}

/* Sizes the matrices so one step takes about target_ms on an idle core
 * (the fastest of 15 steps: a step preempted by other work is slower). */
static void
s_calibrate(s_app_t *app, double target_ms)
{
    for (size_t n = 16;; n += 4) {
        gsl_matrix_free(app->a), gsl_matrix_free(app->b);
        gsl_matrix_free(app->c);
        app->a = gsl_matrix_alloc(n, n), app->b = gsl_matrix_alloc(n, n);
        app->c = gsl_matrix_calloc(n, n);
        gsl_matrix_set_all(app->a, 0.5), gsl_matrix_set_all(app->b, 0.25);
        double ms = 1e9;      /* the fastest of 15: other work only adds */
        for (int r = 0; r < 15; r++) {
            int64_t t0 = bench_now_ns();
            s_step(app);
            ms = fmin(ms, (double) (bench_now_ns() - t0) / 1e6);
        }
        if (ms >= target_ms || n > 2000) {
            app->step_s = ms / 1e3;
            printf("  DGEMM n=%zu: %.3f ms a step\n", n, ms);
            return;
        }
    }
}

static int
s_http_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t) port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *) &a, sizeof a) != 0)
        bench_die("connect", "the baseline server on port %d", port);
    return fd;
}

/* One synchronous POST of `body`: sends, then reads the whole answer
 * (headers and Content-Length bytes); returns the HTTP status or -1. */
static int
s_http_send(s_app_t *app, const char *body)
{
    char req[1024];
    int rl = snprintf(req, sizeof req, "POST /api/add_data HTTP/1.1\r\n"
                      "Host: 127.0.0.1\r\nContent-Length: %zu\r\n\r\n%s",
                      strlen(body), body);
    if (rl >= (int) sizeof req || write(app->http_fd, req, (size_t) rl) != rl)
        return -1;
    size_t used = 0;
    char *end = NULL;
    long clen = -1;
    for (;;) {
        ssize_t r = read(app->http_fd, app->rbuf + used,
                         sizeof app->rbuf - 1 - used);
        if (r <= 0)
            return -1;
        used += (size_t) r;
        app->rbuf[used] = '\0';
        if (!end && (end = strstr(app->rbuf, "\r\n\r\n"))) {
            char *cl = strcasestr(app->rbuf, "Content-Length:");
            clen = cl ? strtol(cl + 15, NULL, 10) : 0;
        }
        if (end && (long) (used - (size_t) (end + 4 - app->rbuf)) >= clen)
            break;
    }
    return strncmp(app->rbuf, "HTTP/1.", 7) ? -1 : atoi(app->rbuf + 9);
}

/* One sample, as Dragon's add_data sends it: 0, or -1 when not 200. */
static int
s_http_post(s_app_t *app, const char *metric, double v)
{
    char body[160];
    snprintf(body, sizeof body, "%s %.17g %lld", metric, v,
             (long long) bench_now_ns());
    return s_http_send(app, body) == 200 ? 0 : -1;
}

/* The baseline refuses malformed bodies (400) and takes a good one (200):
 * checked before any figure is taken from it. */
static void
s_http_check(s_app_t *app)
{
    char longbody[700];
    memset(longbody, 'x', sizeof longbody - 1);
    longbody[sizeof longbody - 1] = '\0';
    const char *bad[] = {"", "metric", "metric notanumber 5", "m 1.0",
                         longbody};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (s_http_send(app, bad[i]) != 400)
            bench_die("bench_sqlite_server", "took malformed body %zu", i);
    if (s_http_send(app, "check 1.5 1") != 200)
        bench_die("bench_sqlite_server", "refused a good body");
}

static long
s_record(s_app_t *app, s_mode_t m, long i)
{
    switch (m) {
    case M_NONE:
        return 0;
    case M_ADD:
        return telem_add_data("app_step_value", (double) i, 0, 1) < 0;
    case M_CTR:
        return telem_counter_add("app_steps_total{phase=\"dgemm\"}", 1) < 0;
    default:
        return s_http_post(app, "app_step_value", (double) i) < 0;
    }
}

/* The calling thread's CPU time, ns: the application's own cost, which
 * other processes on a loaded machine do not inflate as they do wall time. */
static int64_t
s_thread_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (int64_t) t.tv_sec * 1000000000 + t.tv_nsec;
}

typedef struct {
    int64_t wall, cpu;        /* elapsed and this thread's CPU, ns */
} s_took_t;

/* One run of `steps` steps, recording `per_step` samples a step (0: plain).
 * Returns the elapsed and CPU ns; sets the samples and errors. */
static s_took_t
s_run(s_app_t *app, s_mode_t m, double per_step, long steps, long *samples,
      long *errors)
{
    double acc = 0;
    long n = 0, err = 0;
    int64_t c0 = s_thread_ns(), t0 = bench_now_ns();
    for (long s = 0; s < steps; s++) {
        s_step(app);
        for (acc += per_step; acc >= 1.0; acc -= 1.0)
            err += s_record(app, m, n++);
    }
    s_took_t took = {bench_now_ns() - t0, s_thread_ns() - c0};
    *samples = n, *errors = err;
    return took;
}

static int64_t
s_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (int64_t) t.tv_sec * 1000000000 + t.tv_nsec;
}

typedef struct {
    s_cell_t cell[M_N][S_RATES];
    double cpu_ratio[M_N][S_RATES][S_REPS_MAX];   /* process CPU, all threads */
    double step_us[M_N][S_RATES][S_REPS_MAX];
    double achieved[M_N][S_RATES][S_REPS_MAX];
} s_results_t;

/* One pair: a plain run, then the instrumented one; records the ratios. */
static void
s_pair(s_app_t *app, s_results_t *res, s_mode_t m, int r, long steps)
{
    s_cell_t *c = &res->cell[m][r];
    double per_step = s_rate[r] * app->step_s;
    if (m == M_HTTP && per_step * (double) steps > S_HTTP_SAMPLES)
        steps = (long) fmax(2.0, S_HTTP_SAMPLES / per_step);
    long samples, errors;
    int64_t c0 = s_cpu_ns();
    s_took_t plain = s_run(app, m, 0, steps, &samples, &errors);
    int64_t c1 = s_cpu_ns();
    s_took_t inst = s_run(app, m, per_step, steps, &samples, &errors);
    if (m != M_HTTP)
        telem_flush(5000);   /* the sender's backlog stays in this pair */
    int64_t c3 = s_cpu_ns();
    int i = c->n++;
    c->ratio[i] = (double) inst.wall / (double) plain.wall;
    c->tratio[i] = (double) inst.cpu / (double) plain.cpu;
    res->cpu_ratio[m][r][i] = (double) (c3 - c1) / (double) (c1 - c0);
    res->step_us[m][r][i] = (double) inst.wall / 1e3 / (double) steps;
    res->achieved[m][r][i] = (double) samples * 1e9 / (double) inst.wall;
    c->errors += errors;
}

static void
s_measure(s_app_t *app, s_results_t *res, int reps, long steps)
{
    for (int rep = 0; rep < reps; rep++)
        for (int m = 0; m < M_N; m++)
            for (int r = 0; r < S_RATES; r++) {
                if ((m == M_HTTP && (rep >= 3 || app->http_fd < 0)) ||
                    (m == M_NONE && r != 1))
                    continue;
                s_pair(app, res, (s_mode_t) m, r, steps);
            }
}

/* Median of v[0..n) into *med, its range into lo, hi (before the sort). */
static double
s_med_range(double *v, int n, double *lo, double *hi)
{
    *lo = *hi = v[0];
    for (int i = 1; i < n; i++)
        *lo = fmin(*lo, v[i]), *hi = fmax(*hi, v[i]);
    return bench_median_d(v, (size_t) n);
}

/* ns per call of each recording, timed alone on this thread's CPU clock
 * (median of 15 runs of 20,000 calls, the queue flushed between runs, so
 * that no call finds it full; the
 * baseline's: the wall time of a POST, its median of 200); the slowdown a
 * rate implies is rate x cost. */
static void
s_per_call(s_app_t *app, double ns[M_N])
{
    enum { CALLS = 20000, RUNS = 15, POSTS = 200 };
    double t[RUNS];
    telem_stats_t st0, st1;
    telem_stats(&st0);
    ns[M_NONE] = 0;
    for (int m = M_ADD; m <= M_CTR; m++) {
        for (int r = 0; r < RUNS; r++) {
            telem_flush(5000);
            int64_t c0 = s_thread_ns();
            for (long i = 0; i < CALLS; i++)
                s_record(app, (s_mode_t) m, i);
            t[r] = (double) (s_thread_ns() - c0) / CALLS;
        }
        telem_flush(5000);
        ns[m] = bench_median_d(t, RUNS);
    }
    double w[POSTS];
    for (int i = 0; i < POSTS && app->http_fd >= 0; i++) {
        int64_t t0 = bench_now_ns();
        s_record(app, M_HTTP, i);
        w[i] = (double) (bench_now_ns() - t0);
    }
    ns[M_HTTP] = app->http_fd >= 0 ? bench_median_d(w, POSTS) : 0;
    telem_stats(&st1);
    printf("  per call: telem_add_data %.1f ns, telem_counter_add %.1f ns "
           "(thread CPU; %llu of the calls dropped); HTTP POST + SQLite "
           "commit %.0f us (wall, p50)\n", ns[M_ADD], ns[M_CTR],
           (unsigned long long) (st1.dropped - st0.dropped), ns[M_HTTP] / 1e3);
}

static void
s_report_cell(s_results_t *res, int m, int r, const double *ns)
{
    s_cell_t *c = &res->cell[m][r];
    double lo, hi, tlo, thi;
    double med = s_med_range(c->ratio, c->n, &lo, &hi);
    double tmed = s_med_range(c->tratio, c->n, &tlo, &thi);
    c->step_us = bench_median_d(res->step_us[m][r], (size_t) c->n);
    c->achieved = bench_median_d(res->achieved[m][r], (size_t) c->n);
    double cpu = bench_median_d(res->cpu_ratio[m][r], (size_t) c->n);
    char range[40], trange[40];
    snprintf(range, sizeof range, "%.1f..%.1f", 100 * (lo - 1),
             100 * (hi - 1));
    snprintf(trange, sizeof trange, "%.1f..%.1f", 100 * (tlo - 1),
             100 * (thi - 1));
    printf("  %-12s %7.0f %8.3f %8.2f %13s %8.2f %13s %7.2f %8.1f %4d %10.0f"
           " %4ld\n", s_mode_name[m], s_rate[r],
           100 * s_rate[r] * ns[m] / 1e9, 100 * (med - 1), range,
           100 * (tmed - 1), trange, 100 * (cpu - 1), c->step_us, c->n,
           c->achieved, c->errors);
    double dev[S_REPS_MAX];
    for (int i = 0; i < c->n; i++)
        dev[i] = fabs(c->tratio[i] - tmed);
    c->noise = 2 * 1.4826 * bench_median_d(dev, (size_t) c->n);
    c->ratio[0] = med;        /* kept for the figures */
    c->tratio[0] = tmed;
}

static void
s_report(const s_app_t *app, s_results_t *res, int reps, long steps,
         const double *ns)
{
    printf("\n  %-12s %7s %8s %8s %13s %8s %13s %7s %8s %4s %10s %4s\n",
           "recording", "rate_Hz", "implied%", "wall+%", "range", "thread+%",
           "range",
           "proc+%", "step_us", "runs", "achieved/s", "err");
    for (int m = 0; m < M_N; m++)
        for (int r = 0; r < S_RATES; r++)
            if (res->cell[m][r].n)
                s_report_cell(res, m, r, ns);
    printf("  (implied: rate x cost per call, the cost measured alone;"
           " none (A/A): a plain run against a plain run, the noise floor;"
           "\n   wall+: median over runs of instrumented/plain wall time - 1,"
           " %ld steps a run, each run paired with the plain run before it;"
           "\n   thread+: the same of the application thread's CPU time"
           " (what other processes on a loaded machine do not inflate);"
           "\n   proc+: the whole process's CPU, the sender thread's"
           " included; plain step %.1f us; %d repetitions, the baseline 3,"
           "\n   at most %d samples a baseline run)\n", steps,
           app->step_s * 1e6, reps, S_HTTP_SAMPLES);
}

/* The figures of one recording at 1 kHz: the slowdown its cost per call
 * implies, and the measured one, decided only where the plain runs' own
 * spread (A/A) is under the 1 % it is compared with. */
static void
s_figure(const char *what, const s_results_t *res, s_mode_t m,
         const double *ns)
{
    const s_cell_t *c = &res->cell[m][1], *aa = &res->cell[M_NONE][1];
    double imp = 100 * s_rate[1] * ns[m] / 1e9;
    double himp = 100 * s_rate[1] * ns[M_HTTP] / 1e9;
    char peer[64] = "-";
    if (ns[M_HTTP] > 0)
        snprintf(peer, sizeof peer, "HTTP+SQLite %.1f %%", himp);
    printf("FIGURE\tapp slowdown, %s at 1 kHz (rate x cost)\t<= 1 %%\t"
           "%.4f %%\t%s\t%.4f of target\t%s\n", what, imp, peer, imp,
           imp <= 1 ? "met" : "missed");
    double t = 100 * (c->tratio[0] - 1), noise = 100 * aa->noise;
    int decided = aa->n >= 3 && noise < 1.0;   /* a band needs runs */
    printf("FIGURE\tapp slowdown, %s at 1 kHz, measured (thread CPU)\t"
           "<= 1 %%\t%.2f %%\tA/A noise +-%.2f %%\t%.2f of target\t%s\n",
           what, t, noise, t, decided ? (t <= 1 ? "met" : "missed") : "-");
}

static void
s_figures(const s_results_t *res, const double *ns)
{
    s_figure("telem_add_data", res, M_ADD, ns);
    s_figure("telem_counter_add", res, M_CTR, ns);
    const s_cell_t *h1 = &res->cell[M_HTTP][1], *h100 = &res->cell[M_HTTP][2];
    if (h1->n)
        printf("FIGURE\tHTTP+SQLite baseline slowdown at 1 kHz, wall\t-\t"
               "%.1f %%\t-\t-\t-\n", 100 * (h1->ratio[0] - 1));
    if (h100->n)
        printf("FIGURE\tHTTP+SQLite baseline at 100 kHz, achieved rate\t-\t"
               "%.0f samples/s\t-\t%.4f of asked\t-\n", h100->achieved,
               h100->achieved / s_rate[2]);
}

static pid_t
s_start_baseline(const char *argv0, const char *dir, int *port)
{
    char prog[1024], db[1024];
    bench_proc_path(prog, sizeof prog, argv0, "bench_sqlite_server");
    snprintf(db, sizeof db, "%s/dragon.db", dir);
    int fds[2];
    if (access(prog, X_OK) != 0 || pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);     /* ends with this program */
        dup2(fds[1], 1);
        close(fds[0]);
        execl(prog, prog, db, (char *) NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *out = fdopen(fds[0], "r");
    char line[128];
    while (out && fgets(line, sizeof line, out)) {
        sscanf(line, "port\t%d", port);
        if (!strcmp(line, "ready\n"))
            return pid;
    }
    bench_die("bench_sqlite_server", "exited before 'ready'");
}

/* A real telemd beside this program (level 2, 1 s sampling) in `dir`, and
 * libtelem pointed at it. */
static pid_t
s_start_telemd(const char *argv0, const char *dir)
{
    char errlog[600];
    snprintf(errlog, sizeof errlog, "%s/telemd.err", dir);
    const char *args[] = {"--node", "appnode", "--rundir", dir, "--level",
                          "2", "--interval", "1", "--log-level", "warn",
                          NULL};
    int64_t ready_ns;
    pid_t td = bench_proc_telemd(argv0, args, errlog, &ready_ns);
    setenv("TELEM_RUNDIR", dir, 1);
    setenv("TELEM_NODE", "appnode", 1);
    setenv("TELEM_LEVEL", "2", 1);
    unsetenv("TELEM_INGEST");
    unsetenv("TELEM_RANK");
    if (telem_init() != 0)
        bench_die("telem_init", "failed");
    return td;
}

static int
s_args(int argc, char **argv, int *reps, long *steps, double *ms)
{
    int o;
    while ((o = getopt(argc, argv, "r:s:m:h")) != -1) {
        if (o == 'r')
            *reps = atoi(optarg);
        else if (o == 's')
            *steps = atol(optarg);
        else if (o == 'm')
            *ms = atof(optarg);
        else {
            fputs("usage: bench_app_cost [-r REPS] [-s STEPS] [-m MS]\n",
                  o == 'h' ? stdout : stderr);
            exit(o == 'h' ? 0 : 2);
        }
    }
    if (optind != argc || *reps < 1 || *reps > S_REPS_MAX || *steps < 10 ||
        !(*ms > 0)) {
        fputs("bench_app_cost: bad arguments (-r 1-64, -s >= 10, -m > 0)\n",
              stderr);
        return 2;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    int reps = 9;
    long steps = 500;
    double ms = 1.0;
    if (s_args(argc, argv, &reps, &steps, &ms) != 0)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);     /* lines as they come, to a file too */
    bench_print_machine("bench_app_cost");
    char dir[512];
    bench_tmpdir(dir, sizeof dir, "appcost");
    pid_t td = s_start_telemd(argv[0], dir);
    int port = 0;
    pid_t srv = s_start_baseline(argv[0], dir, &port);
    s_app_t app = {.http_fd = srv > 0 ? s_http_connect(port) : -1};
    if (srv <= 0)
        printf("  no bench_sqlite_server beside this program (built only "
               "where libsqlite3-dev is installed): no baseline\n");
    if (app.http_fd >= 0)
        s_http_check(&app);
    s_calibrate(&app, ms);
    static s_results_t res;
    s_measure(&app, &res, reps, steps);
    double ns[M_N];
    s_per_call(&app, ns);
    s_report(&app, &res, reps, steps, ns);
    s_figures(&res, ns);
    telem_stats_t st;
    telem_finalize();
    telem_stats(&st);
    printf("  libtelem: %llu queued, %llu sent, %llu dropped\n",
           (unsigned long long) st.queued, (unsigned long long) st.sent,
           (unsigned long long) st.dropped);
    int status;
    if (srv > 0) {
        close(app.http_fd);
        bench_proc_stop(srv, SIGTERM, &status);
    }
    bench_proc_stop(td, SIGTERM, &status);
    gsl_matrix_free(app.a), gsl_matrix_free(app.b), gsl_matrix_free(app.c);
    bench_rmtree(dir);
    return 0;
}
