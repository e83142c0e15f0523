/* telem_load.c - the load generator: makes one device really slower.
 *
 * For demos, tests and benchmarks of slow-device detection, without any
 * simulated timing: it contends for the device a collector measures.  On
 * cpu it is a busy loop pinned to the device's core; on cuda, the backend's
 * kernel launched back to back.  A duty cycle grades the slowdown: in every
 * cycle (10 ms unless --cycle-ms says otherwise) the device is kept busy
 * for duty x cycle and left alone for the rest; several threads contend
 * harder.  Cycles follow an absolute schedule; the idle part is a
 * ppoll() on a signalfd, so SIGTERM/SIGINT stop it at once.
 *
 * With --period the load contends only inside a window of every round of
 * a collector schedule (epoch + k x period + phase, the collectors' own
 * arithmetic, wall clock): when several devices are emulated by sharing
 * one core at different phases, it slows the one device whose phase it
 * covers and leaves the others alone, as a competing kernel on one GPU
 * does.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "telem_backend.h"
#include "telem_cli.h"
#include "telem_error.h"
#include "telem_signals.h"
#include "telem_log.h"
#include "telem_time.h"

#define S_CYCLE_DEFAULT_NS (10 * TELEM_NS_PER_MS)
#define S_THREADS_MAX 64

static const char s_usage[] =
"Usage: telem_load --device J [OPTIONS]\n"
"Contends for one device of this machine so that collectors measuring it\n"
"see it slow down: on cpu a busy loop pinned to the device's core, on cuda\n"
"a competing kernel launched in a loop.\n"
"\n"
"Options:\n"
"  -d, --device J       this machine's device index, as listed by\n"
"                       telem_collector --list-devices (required); the\n"
"                       mapping telem_collect prints names it per node\n"
"  -b, --backend B      cpu (default) or cuda\n"
"  -u, --duty D         fraction of every cycle the device is kept busy,\n"
"                       0-1 (default 1)\n"
"  -c, --cycle-ms MS    the duty cycle's length, 0.1-1000 ms (default 10);\n"
"                       cycles shorter than the measured kernel spread\n"
"                       the contention evenly over every repetition, but\n"
"                       each one preempts it once, which costs it more\n"
"                       than the busy time (on cpu its caches): on the\n"
"                       reference VM a 3 ms DGEMM ran 1.09x slower at\n"
"                       duty 0.02 with 0.5 ms cycles, 1.05x with 1 ms\n"
"  -n, --threads N      contending threads on the device, 1-64 (default\n"
"                       1); on cpu, N busy threads leave a collector on\n"
"                       that core about 1/(N+1) of it\n"
"  -t, --duration S     stop after S seconds (default: run until a signal)\n"
"  -p, --period S       contend only in a window of every round of a\n"
"                       collector schedule with this period (seconds)\n"
"  -w, --window S       that window's length (required with --period)\n"
"  -P, --phase S        where the window starts in the round (default 0)\n"
"  -e, --epoch NS       the schedule's epoch, wall-clock ns, as given to\n"
"                       the collectors (default 0: rounds at multiples of\n"
"                       the period)\n"
"  -l, --log-level LVL  error, warn, info (default) or debug\n"
"  -h, --help           show this help\n"
"\n"
"Prints 'ready' on stdout once the load runs.  Stops on SIGTERM, SIGINT or\n"
"SIGHUP.  Exit status: 0 after a stop, 1 on a run-time error, 2 on bad\n"
"usage, 3 when the backend is not present on this machine.\n";

typedef struct {
    const char *backend;
    long device;
    double duty;
    int64_t cycle_ns;
    int threads;
    int64_t duration_ns;
    int64_t period_ns, window_ns, phase_ns, epoch_ns;   /* windowed mode */
    telem_log_level_t loglevel;
} s_args_t;

#define S_PROG "telem_load"

static int
s_option(void *arg, int c, char *v)
{
    s_args_t *a = arg;
    double d;
    int64_t i;
    switch (c) {
    case 'd':
        if (telem_cli_int64(v, 0, 65535, &i))
            return telem_cli_bad(S_PROG, "--device", v,
                                 "an integer from 0 to 65535");
        a->device = (long) i;
        return 0;
    case 'b':
        if (!telem_backend_find(v))
            return telem_cli_bad(S_PROG, "--backend", v, "cpu or cuda");
        a->backend = v;
        return 0;
    case 'u':
        if (telem_cli_number(v, 0, 1, &a->duty))
            return telem_cli_bad(S_PROG, "--duty", v, "a fraction from 0 to 1");
        return 0;
    case 'c':
        if (telem_cli_number(v, 0.1, 1000, &d))
            return telem_cli_bad(S_PROG, "--cycle-ms", v,
                                 "milliseconds, 0.1 to 1000");
        a->cycle_ns = (int64_t) llround(d * 1e6);
        return 0;
    case 'n':
        if (telem_cli_int64(v, 1, S_THREADS_MAX, &i))
            return telem_cli_bad(S_PROG, "--threads", v,
                                 "an integer from 1 to 64");
        a->threads = (int) i;
        return 0;
    case 't':
        if (telem_cli_seconds(v, 0.001, 1e7, &a->duration_ns))
            return telem_cli_bad(S_PROG, "--duration", v, "seconds, above 0");
        return 0;
    case 'p':
        if (telem_cli_seconds(v, 0.001, 86400, &a->period_ns))
            return telem_cli_bad(S_PROG, "--period", v,
                                 "seconds, 0.001 to 86400");
        return 0;
    case 'w':
        if (telem_cli_seconds(v, 0.0001, 86400, &a->window_ns))
            return telem_cli_bad(S_PROG, "--window", v, "seconds, above 0");
        return 0;
    case 'P':
        if (telem_cli_seconds(v, 0, 86400, &a->phase_ns))
            return telem_cli_bad(S_PROG, "--phase", v, "seconds, 0 or more");
        return 0;
    case 'e':
        if (telem_cli_int64(v, 0, INT64_MAX, &a->epoch_ns))
            return telem_cli_bad(S_PROG, "--epoch", v,
                                 "nanoseconds since 1970, 0 or more");
        return 0;
    default:
        return 2;
    }
}

/* Returns 0 to run, 1 after --help, 2 on a usage error. */
static int
s_parse(s_args_t *a, int argc, char **argv)
{
    static const struct option opts[] = {
        { "device", 1, 0, 'd' }, { "backend", 1, 0, 'b' },
        { "duty", 1, 0, 'u' }, { "duration", 1, 0, 't' },
        { "threads", 1, 0, 'n' }, { "cycle-ms", 1, 0, 'c' },
        { "period", 1, 0, 'p' }, { "window", 1, 0, 'w' },
        { "phase", 1, 0, 'P' }, { "epoch", 1, 0, 'e' },
        { "log-level", 1, 0, 'l' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
    };
    const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage,
        .shortopts = "d:b:u:c:n:t:p:w:P:e:l:h", .longopts = opts,
        .option = s_option, .log_level = &a->loglevel,
    };
    int rc = telem_cli_parse_spec(&spec, argc, argv, a);
    if (rc)
        return rc;
    if (a->device < 0)
        return telem_cli_error(S_PROG, "--device is required");
    if ((a->window_ns || a->phase_ns || a->epoch_ns) && !a->period_ns)
        return telem_cli_error(S_PROG, "--window, --phase and --epoch need "
                               "--period");
    if (a->period_ns && (!a->window_ns || a->window_ns > a->period_ns ||
                         a->phase_ns >= a->period_ns))
        return telem_cli_error(S_PROG, "with --period, --window is required "
                               "and no longer than the period, and --phase "
                               "is below the period");
    return 0;
}

/* Waits until monotonic `target`; returns 1 if a stop signal came. */
static int
s_idle_until(int sfd, int64_t target)
{
    struct pollfd p = { .fd = sfd, .events = POLLIN };
    int64_t left = target - telem_mono_ns();
    if (left < 0)
        left = 0;
    struct timespec ts = { (time_t) (left / TELEM_NS_PER_SEC),
                           (long) (left % TELEM_NS_PER_SEC) };
    int n = ppoll(&p, 1, &ts, NULL);
    return n > 0 || (n < 0 && errno != EINTR);
}

typedef struct {
    const s_args_t *args;
    telem_backend_load_t *load;
    int sfd;
    int rc;
} s_worker_t;

/* Windowed mode: the wall-clock end of the window `now` is in, and in
 * *start the window's start (now itself when inside one, else the next). */
static int64_t
s_window(const s_args_t *a, int64_t now, int64_t *start)
{
    int64_t since = now - a->epoch_ns - a->phase_ns;
    int64_t k = since >= 0 ? since / a->period_ns
                           : -((-since + a->period_ns - 1) / a->period_ns);
    int64_t w0 = a->epoch_ns + a->phase_ns + k * a->period_ns;
    if (now >= w0 + a->window_ns)
        w0 += a->period_ns;
    *start = w0 > now ? w0 : now;
    return w0 + a->window_ns;
}

/* Busy/idle cycles on an absolute monotonic schedule from t0 until `end`
 * (0: no end).  Returns 0 at the end, 1 on a stop signal, -1 on an error. */
static int
s_duty(s_worker_t *w, int64_t t0, int64_t end)
{
    const int64_t cycle = w->args->cycle_ns;
    int64_t busy = (int64_t) llround(w->args->duty * (double) cycle);
    for (int64_t k = 0;; k++) {
        int64_t start = t0 + k * cycle;
        if (end && start >= end)
            return 0;
        int64_t b = end && start + busy > end ? end - start : busy;
        if (b > 0 && telem_backend_load_run(w->load, b))
            return -1;
        int64_t late = telem_mono_ns() - (start + cycle);
        if (late > 0)
            k += late / cycle;              /* overran: skip, do not drift */
        int64_t next = t0 + (k + 1) * cycle;
        if (s_idle_until(w->sfd, end && next > end ? end : next))
            return 1;
    }
}

/* One contending thread: duty cycles until the duration ends or a stop
 * signal makes the signalfd readable (nobody reads it, so every worker
 * sees it); in windowed mode only inside the windows. */
static void *
s_cycles(void *p)
{
    s_worker_t *w = p;
    const s_args_t *a = w->args;
    int64_t t0 = telem_mono_ns();
    int64_t stop = a->duration_ns ? t0 + a->duration_ns : 0;
    int rc = 0;
    while (rc == 0) {
        int64_t from = telem_mono_ns(), to = stop;
        if (a->period_ns) {
            int64_t now = telem_now_ns(), start;
            int64_t wend = s_window(a, now, &start);
            from += start - now;
            to = from + (wend - start);
            if (stop && to > stop)
                to = stop;
            if (s_idle_until(w->sfd, from))
                return NULL;
        }
        if (stop && from >= stop)
            return NULL;
        rc = s_duty(w, from, to);
        if (!a->period_ns || (stop && telem_mono_ns() >= stop))
            break;
    }
    if (rc < 0) {
        telem_log(TELEM_LOG_ERROR, "the device failed under load");
        w->rc = 1;
    }
    return NULL;
}

/* Runs the workers (threads created after the pinning inherit it). */
static int
s_workers(const s_args_t *a, s_worker_t *w)
{
    pthread_t tid[S_THREADS_MAX];
    int started = 0, rc = 0;
    for (int i = 1; i < a->threads; i++, started++)
        if (pthread_create(&tid[i], NULL, s_cycles, &w[i])) {
            telem_log(TELEM_LOG_ERROR, "cannot start a load thread");
            rc = 1;
            break;
        }
    if (rc == 0) {
        printf("ready\n");
        fflush(stdout);
        s_cycles(&w[0]);
    }
    for (int i = 1; i <= started; i++)
        pthread_join(tid[i], NULL);
    for (int i = 0; i < a->threads; i++)
        rc |= w[i].rc;
    return rc ? 1 : 0;
}

static int
s_run(const s_args_t *a, int sfd)
{
    char why[256];
    int err, rc = 1;
    s_worker_t w[S_THREADS_MAX];
    memset(w, 0, sizeof w);
    telem_backend_t *b = telem_backend_open(a->backend, why, sizeof why, &err);
    if (!b) {
        telem_log(TELEM_LOG_WARN, "backend %s skipped: %s", a->backend, why);
        return err == TELEM_EUNSUPPORTED ? 3 : 1;
    }
    if ((size_t) a->device >= telem_backend_ndevices(b)) {
        fprintf(stderr, "telem_load: no %s device %ld (this machine has "
                "%zu)\n", a->backend, a->device, telem_backend_ndevices(b));
        rc = 2;
        goto out;
    }
    if ((err = telem_backend_bind(b, (size_t) a->device, why, sizeof why)))
        goto fail;
    for (int i = 0; i < a->threads; i++) {
        w[i] = (s_worker_t) { .args = a, .sfd = sfd };
        if (!(w[i].load = telem_backend_load_new(b, (size_t) a->device, why,
                                                 sizeof why, &err)))
            goto fail;
    }
    telem_log(TELEM_LOG_INFO, "loading %s device %ld (id %s) at duty %.2f "
              "with %d thread(s)", a->backend, a->device,
              telem_backend_device(b, (size_t) a->device)->id, a->duty,
              a->threads);
    rc = s_workers(a, w);
    goto out;
fail:
    telem_log(TELEM_LOG_ERROR, "%s", why);
out:
    for (int i = 0; i < a->threads; i++)
        telem_backend_load_destroy(&w[i].load);
    telem_backend_close(&b);
    return rc;
}

int
main(int argc, char **argv)
{
    s_args_t a = { .backend = "cpu", .device = -1, .duty = 1.0,
                   .cycle_ns = S_CYCLE_DEFAULT_NS, .threads = 1, .loglevel = TELEM_LOG_INFO };
    int rc = s_parse(&a, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    telem_log_init("telem_load", a.loglevel);
    int sfd = telem_signals_open_stop(0);
    if (sfd < 0) {
        telem_log(TELEM_LOG_ERROR, "signalfd: %s", strerror(errno));
        return 1;
    }
    rc = s_run(&a, sfd);
    close(sfd);
    return rc;
}
