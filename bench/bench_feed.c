/* bench_feed.c - what stands in for users and for Prometheus beside the
 * daemons that bench_overhead.sh measures: one small program per role, each
 * woken once a second on an absolute clock (clock_nanosleep, so late ticks
 * do not drift), so that every daemon gets the same 1 Hz load.
 *
 *   bench_feed telem N SECONDS        N series through libtelem
 *                                     (telem_add_data, level 1; TELEM_*
 *                                     from the environment)
 *   bench_feed collectd N SECONDS SOCK  N PUTVAL lines a second to
 *                                     collectd's unixsock plugin at SOCK
 *   bench_feed textfile N SECONDS FILE  rewrites FILE (node_exporter's
 *                                     textfile collector) with N gauges a
 *                                     second, through a temporary file and
 *                                     rename, as the collector asks
 *   bench_feed scrape 0 SECONDS URL   GET URL a second (http://127.0.0.1:
 *                                     PORT/PATH), as Prometheus does; prints
 *                                     the sample lines of the last scrape
 *
 * SECONDS 0 runs until SIGTERM.  Each prints "feed MODE ticks=T late=L
 * errors=E [samples=S]" on exit.  Benchmark code only: exits 1 on set-up
 * errors, 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "telem.h"

typedef struct {
    const char *mode;
    long n;
    long seconds;
    const char *target;
    FILE *sock;                 /* collectd's unixsock, line buffered */
    long errors, late, samples;
    char *buf;                  /* scrape buffer */
    size_t cap;
} s_feed_t;

static volatile sig_atomic_t s_stop_flag;   /* set by the signal handler */

static void
s_on_signal(int sig)
{
    (void) sig;
    s_stop_flag = 1;
}

static int
s_usage(FILE *out)
{
    fputs("usage: bench_feed telem N SECONDS\n"
          "       bench_feed collectd N SECONDS SOCKET\n"
          "       bench_feed textfile N SECONDS FILE\n"
          "       bench_feed scrape 0 SECONDS URL\n"
          "One tick a second for SECONDS (0: until SIGTERM); see the "
          "source's header.\n", out);
    return 2;
}

static FILE *
s_unix_connect(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return NULL;
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    if (connect(fd, (struct sockaddr *) &a, sizeof a) != 0) {
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r+");
    if (!f)
        close(fd);
    return f;
}

/* One tick of collectd: N PUTVALs, then N replies read ("0 Success: ..."). */
static void
s_tick_collectd(s_feed_t *f, long tick)
{
    char line[256];
    for (long i = 0; i < f->n; i++)
        fprintf(f->sock, "PUTVAL \"benchfeed/exec-user/gauge-m%ld\" "
                "interval=1 N:%ld\n", i, tick + i);
    fflush(f->sock);
    for (long i = 0; i < f->n; i++) {
        if (!fgets(line, sizeof line, f->sock)) {
            f->errors++;
            s_stop_flag = 1;
            return;
        }
        if (line[0] != '0')
            f->errors++;
    }
}

static void
s_tick_textfile(s_feed_t *f, long tick)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", f->target, (int) getpid());
    FILE *o = fopen(tmp, "w");
    if (!o) {
        f->errors++;
        return;
    }
    fputs("# TYPE bench_user gauge\n", o);
    for (long i = 0; i < f->n; i++)
        fprintf(o, "bench_user{m=\"m%ld\"} %ld\n", i, tick + i);
    if (fclose(o) != 0 || rename(tmp, f->target) != 0)
        f->errors++;
}

static void
s_tick_telem(s_feed_t *f, long tick)
{
    char name[32];
    for (long i = 0; i < f->n; i++) {
        snprintf(name, sizeof name, "bench_user_m%ld", i);
        if (telem_add_data(name, (double) (tick + i), 0, 1) < 0)
            f->errors++;
    }
}

/* GET `path` from 127.0.0.1:port over HTTP/1.0 on a fresh connection into
 * f->buf (NUL-terminated); returns the bytes read or -1. */
static long
s_http_get(s_feed_t *f, int port, const char *path)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t) port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *) &a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char req[1200];
    int len = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: "
                       "127.0.0.1\r\n\r\n", path);
    size_t used = 0;
    if (write(fd, req, (size_t) len) == len)
        for (;;) {
            if (used + 65536 > f->cap) {
                f->cap = f->cap ? f->cap * 2 : 1 << 20;
                if (!(f->buf = realloc(f->buf, f->cap)))
                    abort();
            }
            ssize_t r = read(fd, f->buf + used, f->cap - used - 1);
            if (r <= 0)
                break;
            used += (size_t) r;
        }
    close(fd);
    if (!f->buf)
        return -1;
    f->buf[used] = '\0';
    return (long) used;
}

/* GET url; counts the sample lines (not comments, not blank) of the body
 * into f->samples. */
static void
s_tick_scrape(s_feed_t *f)
{
    int port = 0;
    char path[1024] = "/metrics";
    if (sscanf(f->target, "http://127.0.0.1:%d%1023s", &port, path) < 1 ||
        s_http_get(f, port, path) < 0) {
        f->errors++;
        return;
    }
    char *body = strstr(f->buf, "\r\n\r\n");
    if (!body || strncmp(f->buf, "HTTP/1.", 7) || !strstr(f->buf, " 200 ")) {
        f->errors++;
        return;
    }
    long lines = 0;
    for (char *p = body + 4; *p; ) {
        char *e = strchr(p, '\n');
        if (*p != '#' && *p != '\n')
            lines++;
        if (!e)
            break;
        p = e + 1;
    }
    f->samples = lines;
}

static void
s_tick(s_feed_t *f, long tick)
{
    if (!strcmp(f->mode, "telem"))
        s_tick_telem(f, tick);
    else if (!strcmp(f->mode, "collectd"))
        s_tick_collectd(f, tick);
    else if (!strcmp(f->mode, "textfile"))
        s_tick_textfile(f, tick);
    else
        s_tick_scrape(f);
}

static int
s_setup(s_feed_t *f)
{
    if (!strcmp(f->mode, "telem"))
        return telem_init() == 0 ? 0 : -1;
    if (!strcmp(f->mode, "collectd")) {
        f->sock = s_unix_connect(f->target);
        return f->sock ? 0 : -1;
    }
    return 0;
}

/* Fills f from the command line; 0, or 2 after the usage (1 for --help,
 * which exits 0). */
static int
s_parse(s_feed_t *f, int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--help"))
        return s_usage(stdout), 1;
    if (argc < 4 || argc > 5)
        return s_usage(stderr);
    f->mode = argv[1];
    f->n = strtol(argv[2], NULL, 10);
    f->seconds = strtol(argv[3], NULL, 10);
    f->target = argc > 4 ? argv[4] : NULL;
    int known = !strcmp(f->mode, "telem") || !strcmp(f->mode, "collectd") ||
                !strcmp(f->mode, "textfile") || !strcmp(f->mode, "scrape");
    if (!known || f->n < 0 || f->seconds < 0 ||
        (strcmp(f->mode, "telem") && !f->target))
        return s_usage(stderr);
    return 0;
}

/* One tick a second on the monotonic clock until SIGTERM or f->seconds;
 * a tick that ends past the next one's start counts as late. */
static long
s_loop(s_feed_t *f)
{
    struct timespec next, now;
    clock_gettime(CLOCK_MONOTONIC, &next);
    long tick = 0;
    while (!s_stop_flag && (!f->seconds || tick < f->seconds)) {
        s_tick(f, tick++);
        next.tv_sec++;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec ||
            (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
            f->late++;
        while (!s_stop_flag && clock_nanosleep(CLOCK_MONOTONIC,
                   TIMER_ABSTIME, &next, NULL) == EINTR)
            ;
    }
    return tick;
}

int
main(int argc, char **argv)
{
    s_feed_t f = {0};
    int rc = s_parse(&f, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    struct sigaction sa = {.sa_handler = s_on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (s_setup(&f) != 0) {
        fprintf(stderr, "bench_feed %s: cannot set up (%s)\n", f.mode,
                f.target ? f.target : "telem_init");
        return 1;
    }
    long ticks = s_loop(&f);
    if (!strcmp(f.mode, "telem"))
        telem_finalize();
    if (f.sock)
        fclose(f.sock);
    printf("feed %s ticks=%ld late=%ld errors=%ld samples=%ld\n", f.mode,
           ticks, f.late, f.errors, f.samples);
    free(f.buf);
    return 0;
}
