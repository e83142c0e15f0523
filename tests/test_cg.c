/* test_cg.c - unit tests for collector groups (cg.h) with real processes.
 *
 * This program is its own collector: started by a group with
 * TELEM_COLLECTOR_FLAG it blocks the stop signals, reports its command
 * line (and $CG_TEST_NODE) as one line on the pipe named by $CG_TEST_FD,
 * and runs cg_collector_main() with a trivial test function.  The parent
 * reads those lines with poll() and a deadline, so it knows exactly what
 * every collector was told: node, device, pin, phase, epoch, group, and
 * that quoting through a spawn template survives node names with blanks
 * and quotes.  No telemd runs: the collectors' samples are dropped.
 * Checked: settings validation, the local device map and phases, cg_wait
 * reporting a killed collector, a clean cg_stop, SIGKILL after the bound
 * for a collector that ignores SIGTERM, per-node tests, spawn templates
 * with and without {cmd}, the built-in collector program, and a collector
 * program of one's own: the words put after it (cg_add_collector_arg) and
 * a kernel it decides, named in the metric.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cg.h"
#include "telem_backend.h"
#include "telem_time.h"

#define S_MSGS_MAX 8
#define S_SEP '\x1f'

/* ---- the collector side ------------------------------------------------ */

static int
s_figure(void *arg, int device, double *figure)
{
    (void) arg;
    *figure = 1e-3 * (device + 2);
    return 0;
}

static int
s_collector(int argc, char **argv)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    const char *fd = getenv("CG_TEST_FD"), *node = getenv("CG_TEST_NODE");
    char line[4000];
    int n = snprintf(line, sizeof line, "%s", node ? node : "-");
    for (int i = 1; i < argc && n < (int) sizeof line; i++)
        n += snprintf(line + n, sizeof line - (size_t) n, "%c%s", S_SEP,
                      argv[i]);
    if (fd && n < (int) sizeof line - 1) {
        line[n++] = '\n';
        if (write(atoi(fd), line, (size_t) n) != n)
            return 1;
    }
    if (getenv("CG_TEST_IGNORE_TERM")) {
        /* A collector that hangs: SIGTERM ignored and unblocked, so it is
           discarded at once (a blocked one would stay pending and could
           reach a signalfd); only SIGKILL ends it. */
        signal(SIGTERM, SIG_IGN);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        for (;;)
            pause();
    }
    /* Words a test put after the program for itself (test_collector_args)
       are not collector options: leave them out. */
    int k = 1;
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--cg-test-extra", 15) != 0)
            argv[k++] = argv[i];
    argv[k] = NULL;
    return cg_collector_main(k, argv, "cg_test_figure", s_figure, NULL);
}

/* ---- the parent side --------------------------------------------------- */

typedef struct {
    int rfd, wfd;
    char buf[S_MSGS_MAX * 4000];
    size_t len;
    char *msgs[S_MSGS_MAX];
    size_t n;
} s_pipe_t;

/* Reads until `want` lines came or 20 s passed. */
static void
s_read_lines(s_pipe_t *p, size_t want)
{
    int64_t deadline = telem_mono_ns() + 20 * TELEM_NS_PER_SEC;
    p->n = 0;
    p->len = 0;
    while (p->n < want) {
        int left = (int) ((deadline - telem_mono_ns()) / TELEM_NS_PER_MS);
        struct pollfd pf = { .fd = p->rfd, .events = POLLIN };
        if (left <= 0 || poll(&pf, 1, left) <= 0)
            break;
        ssize_t r = read(p->rfd, p->buf + p->len, sizeof p->buf - p->len - 1);
        if (r <= 0)
            break;
        p->len += (size_t) r;
        p->buf[p->len] = '\0';
        p->n = 0;
        for (char *s = p->buf; *s && p->n < S_MSGS_MAX;) {
            char *nl = strchr(s, '\n');
            if (!nl)
                break;
            p->msgs[p->n++] = s;
            s = nl + 1;
        }
    }
}

/* The value after flag `flag` in message m (copied to out), or NULL. */
static const char *
s_arg(const char *m, const char *flag, char *out, size_t size)
{
    char key[64];
    snprintf(key, sizeof key, "%c%s%c", S_SEP, flag, S_SEP);
    const char *p = strstr(m, key);
    if (!p)
        return NULL;
    p += strlen(key);
    size_t n = strcspn(p, "\x1f\n");
    snprintf(out, size, "%.*s", (int) (n < size ? n : size - 1), p);
    return out;
}

/* The message of the collector for `node` (exact), or NULL. */
static const char *
s_msg_for(const s_pipe_t *p, const char *node)
{
    char v[300];
    for (size_t i = 0; i < p->n; i++)
        if (s_arg(p->msgs[i], "--node", v, sizeof v) && strcmp(v, node) == 0)
            return p->msgs[i];
    return NULL;
}

static void
test_settings(void)
{
    char why[256];
    cg_t *g = cg_new(NULL, NULL);
    CHECK(g && strcmp(cg_name(g), "cg") == 0);
    int err = 0;
    CHECK(cg_new("", &err) == NULL && err == TELEM_EINVAL);
    CHECK(cg_set_backend(g, "tpu") == TELEM_EINVAL);
    CHECK(cg_set_devices(g, "x") == TELEM_EINVAL);
    CHECK(cg_set_devices(g, "all") == 0);
    CHECK(cg_set_period(g, 0) == TELEM_EINVAL);
    CHECK(cg_set_reps(g, 0) == TELEM_EINVAL);
    CHECK(cg_set_user_test(g, "", NULL) == TELEM_EINVAL);
    const char *bad[] = { "a/b" };
    CHECK(cg_set_nodes(g, bad, 1) == TELEM_EINVAL);
    CHECK(cg_stop(g, 0) == TELEM_ESTATE);
    CHECK(cg_wait(g, 0, -1) == TELEM_ESTATE);
    CHECK(cg_set_nodefile(g, "/nonexistent/nodes") == 0);
    CHECK(cg_start(g, why, sizeof why) == TELEM_ENOTFOUND && *why);
    CHECK(cg_count(g) == 0);
    cg_destroy(&g);
    CHECK(g == NULL);

    g = cg_new("k", NULL);
    const char *one[] = { "n1" };
    CHECK(cg_set_nodes(g, one, 1) == 0);
    CHECK(cg_set_kernel(g, "nope") == 0);
    CHECK(cg_start(g, why, sizeof why) == TELEM_ENOTFOUND);
    CHECK(strstr(why, "nope") != NULL);
    cg_destroy(&g);
}

/* Local map: 3 virtual nodes, device 0 each, on this machine's cores. */
static void
test_local_map(s_pipe_t *p)
{
    char why[256], v[64];
    const char *nodes[] = { "va", "vb", "vc" };
    int err;
    telem_backend_t *b = telem_backend_open("cpu", NULL, 0, &err);
    size_t nm = b ? telem_backend_ndevices(b) : 1;
    cg_t *g = cg_new("maptest", NULL);
    CHECK(cg_set_nodes(g, nodes, 3) == 0);
    CHECK(cg_set_devices(g, "0") == 0);
    CHECK(cg_set_period(g, 100 * TELEM_NS_PER_MS) == 0);
    CHECK(cg_set_user_test(g, "cg_test_figure", NULL) == 0);
    CHECK(cg_start(g, why, sizeof why) == 0);
    CHECK(cg_set_reps(g, 3) == TELEM_ESTATE);
    CHECK(cg_count(g) == 3 && cg_running(g) == 3);
    CHECK(cg_epoch(g) > 0 && cg_epoch(g) % (100 * TELEM_NS_PER_MS) == 0);
    s_read_lines(p, 3);
    CHECK(p->n == 3);
    size_t share[3] = { 0, 0, 0 };
    for (size_t k = 0; k < 3; k++) {
        cg_info_t in;
        CHECK(cg_info(g, k, &in) == 0);
        CHECK(strcmp(in.node, nodes[k]) == 0 && in.device == 0);
        CHECK(in.pin == (int) (k % nm) && in.state == CG_RUNNING);
        CHECK(b && strcmp(in.pin_id, telem_backend_device(b, k % nm)->id)
              == 0);
        /* the i-th collector on a core runs i/n of a period late */
        size_t on_core = (3 + nm - 1 - in.pin) / nm;
        CHECK(in.phase_ns == (int64_t) (share[in.pin]++ * 100
                                        * TELEM_NS_PER_MS / on_core));
        const char *m = s_msg_for(p, nodes[k]);
        CHECK(m != NULL);
        if (!m)
            continue;
        CHECK(strncmp(m, "-\x1f" TELEM_COLLECTOR_FLAG "\x1f",
                      strlen(TELEM_COLLECTOR_FLAG) + 3) == 0);
        CHECK(s_arg(m, "--device", v, sizeof v) && strcmp(v, "0") == 0);
        CHECK(s_arg(m, "--pin", v, sizeof v) && atoi(v) == in.pin);
        CHECK(s_arg(m, "--phase", v, sizeof v)
              && atoll(v) == (long long) in.phase_ns);
        CHECK(s_arg(m, "--epoch", v, sizeof v)
              && atoll(v) == (long long) cg_epoch(g));
        CHECK(s_arg(m, "--group", v, sizeof v) && strcmp(v, "maptest") == 0);
        CHECK(s_arg(m, "--period", v, sizeof v) && atof(v) == 0.1);
    }
    /* A collector killed from outside is reported by cg_wait. */
    cg_info_t in;
    cg_info(g, 1, &in);
    CHECK(kill(in.pid, SIGKILL) == 0);
    CHECK(cg_wait(g, 20000, -1) == 1);
    CHECK(cg_info(g, 1, &in) == 0 && in.state == CG_EXITED
          && in.signal == SIGKILL);
    CHECK(cg_running(g) == 2);
    CHECK(cg_stop(g, 20000) == 0);
    for (size_t k = 0; k < 3; k++) {
        CHECK(cg_info(g, k, &in) == 0 && in.state == CG_EXITED);
        if (k != 1)
            CHECK(in.exit_code == 0 && in.signal == 0);
    }
    CHECK(cg_running(g) == 0);
    CHECK(cg_info(g, 3, &in) == TELEM_EINVAL);
    cg_destroy(&g);
    telem_backend_close(&b);
}

/* --local-devices and --spread: every virtual device on one core, taking
 * turns within period / reps; a device the machine lacks is refused. */
static void
test_local_spread(s_pipe_t *p)
{
    char why[256], v[64], list[16];
    const char *nodes[] = { "la", "lb", "lc" };
    int err;
    telem_backend_t *b = telem_backend_open("cpu", NULL, 0, &err);
    size_t nm = b ? telem_backend_ndevices(b) : 1;
    cg_t *g = cg_new("spreadtest", NULL);
    snprintf(list, sizeof list, "%zu", nm - 1);
    CHECK(cg_set_nodes(g, nodes, 3) == 0);
    CHECK(cg_set_devices(g, "0") == 0);
    CHECK(cg_set_period(g, 100 * TELEM_NS_PER_MS) == 0);
    CHECK(cg_set_reps(g, 5) == 0);
    CHECK(cg_set_spread(g, 1) == 0);
    CHECK(cg_set_local_devices(g, "x") == TELEM_EINVAL);
    CHECK(cg_set_local_devices(g, list) == 0);
    CHECK(cg_set_user_test(g, "cg_test_figure", NULL) == 0);
    CHECK(cg_start(g, why, sizeof why) == 0);
    CHECK(cg_set_spread(g, 0) == TELEM_ESTATE);
    s_read_lines(p, 3);
    CHECK(p->n == 3);
    for (size_t k = 0; k < 3; k++) {
        cg_info_t in;
        CHECK(cg_info(g, k, &in) == 0);
        CHECK(in.pin == (int) (nm - 1));
        CHECK(in.phase_ns == (int64_t) k * (20 * TELEM_NS_PER_MS) / 3);
        const char *m = s_msg_for(p, nodes[k]);
        CHECK(m && strstr(m, "\x1f--spread\x1f") != NULL);
        CHECK(m && s_arg(m, "--pin", v, sizeof v) && atoi(v) == in.pin);
    }
    CHECK(cg_stop(g, 20000) == 0);
    cg_destroy(&g);
    g = cg_new("spreadbad", NULL);
    snprintf(list, sizeof list, "%zu", nm);
    CHECK(cg_set_nodes(g, nodes, 1) == 0);
    CHECK(cg_set_local_devices(g, list) == 0);
    CHECK(cg_set_user_test(g, "cg_test_figure", NULL) == 0);
    CHECK(cg_start(g, why, sizeof why) == TELEM_EINVAL);
    CHECK(strstr(why, "local device") != NULL);
    cg_destroy(&g);
    telem_backend_close(&b);
}

/* Templates: {node} inside a word, and {cmd} through a shell. */
static void
test_templates(s_pipe_t *p)
{
    char why[256], v[300];
    const char *nodes[] = { "t1", "t 2'q" };
    cg_t *g = cg_new("tmpl", NULL);
    CHECK(cg_set_nodes(g, nodes, 2) == 0);
    CHECK(cg_set_per_node(g, 1) == 0);
    CHECK(cg_set_user_test(g, "cg_test_figure", NULL) == 0);
    CHECK(cg_set_spawn(g, "env CG_TEST_NODE=<{node}>") == 0);
    CHECK(cg_start(g, why, sizeof why) == 0);
    s_read_lines(p, 2);
    CHECK(p->n == 2);
    const char *m = s_msg_for(p, "t 2'q");
    CHECK(m && strncmp(m, "<t 2'q>\x1f", 8) == 0);
    CHECK(m && strstr(m, "\x1f--per-node\x1f") && !s_arg(m, "--pin", v, 9));
    cg_info_t in;
    CHECK(cg_info(g, 0, &in) == 0 && in.device == -1 && in.pin == -1);
    CHECK(cg_stop(g, 20000) == 0);
    cg_destroy(&g);

    g = cg_new("tmpl2", NULL);
    CHECK(cg_set_nodes(g, nodes, 2) == 0);
    CHECK(cg_set_devices(g, "0") == 0);
    CHECK(cg_set_user_test(g, "cg_test_figure", NULL) == 0);
    CHECK(cg_set_spawn(g, "env CG_TEST_NODE={node}/x sh -c {cmd}") == 0);
    CHECK(cg_start(g, why, sizeof why) == 0);
    s_read_lines(p, 2);
    CHECK(p->n == 2);
    m = s_msg_for(p, "t 2'q");
    CHECK(m && strncmp(m, "t 2'q/x\x1f", 8) == 0);
    CHECK(m && s_arg(m, "--device", v, sizeof v) && strcmp(v, "0") == 0);
    CHECK(cg_stop(g, 20000) == 0);
    for (size_t k = 0; k < 2; k++)
        CHECK(cg_info(g, k, &in) == 0 && in.exit_code == 0);
    cg_destroy(&g);
}

/* A collector that ignores SIGTERM is killed after the bound. */
static void
test_stop_escalates(s_pipe_t *p)
{
    char why[256];
    const char *nodes[] = { "hang" };
    cg_info_t in;
    setenv("CG_TEST_IGNORE_TERM", "1", 1);
    cg_t *g = cg_new("hang", NULL);
    CHECK(cg_set_nodes(g, nodes, 1) == 0);
    CHECK(cg_set_per_node(g, 1) == 0);
    CHECK(cg_set_user_test(g, "cg_test_figure", NULL) == 0);
    CHECK(cg_start(g, why, sizeof why) == 0);
    unsetenv("CG_TEST_IGNORE_TERM");
    s_read_lines(p, 1);
    CHECK(p->n == 1);
    CHECK(cg_stop(g, 200) == TELEM_ETIMEDOUT);
    CHECK(cg_info(g, 0, &in) == 0 && in.state == CG_EXITED
          && in.signal == SIGKILL);
    CHECK(cg_running(g) == 0);
    cg_destroy(&g);
}

/* The built-in kernel through the telem_collector program. */
static void
test_builtin(void)
{
    char why[256];
    const char *nodes[] = { "b1" };
    cg_t *g = cg_new("builtin", NULL);
    CHECK(cg_set_nodes(g, nodes, 1) == 0);
    CHECK(cg_set_devices(g, "0") == 0);
    CHECK(cg_start(g, why, sizeof why) == 0);
    CHECK(strcmp(cg_metric(g), "cg_dgemm_seconds") == 0);
    CHECK(cg_wait(g, 300, -1) == 0);      /* still running: nothing ends */
    CHECK(cg_running(g) == 1);
    CHECK(cg_stop(g, 20000) == 0);
    cg_destroy(&g);

    g = cg_new("missing", NULL);
    CHECK(cg_set_nodes(g, nodes, 1) == 0);
    CHECK(cg_set_collector(g, "/nonexistent/telem_collector") == 0);
    CHECK(cg_start(g, why, sizeof why) == TELEM_EIO);
    CHECK(strstr(why, "/nonexistent/telem_collector") != NULL);
    cg_destroy(&g);
}

/* A collector program of one's own (a Python script's interpreter, here
 * this program): words after it, checked and bounded; a kernel the
 * backend lacks is passed on and names the metric. */
static void
test_collector_args(s_pipe_t *p)
{
    char why[256], self[PATH_MAX], v[64], big[CG_COLLECTOR_ARG_MAX + 2];
    const char *nodes[] = { "c1" };
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cg_t *g = cg_new("cargs", NULL);
    CHECK(cg_add_collector_arg(g, "") == TELEM_EINVAL);
    CHECK(cg_add_collector_arg(g, NULL) == TELEM_EINVAL);
    CHECK(cg_add_collector_arg(g, "a\nb") == TELEM_EINVAL);
    CHECK(cg_add_collector_arg(g, big) == TELEM_EINVAL);
    CHECK(cg_set_nodes(g, nodes, 1) == 0);
    CHECK(cg_set_devices(g, "0") == 0);
    CHECK(cg_set_collector(g, self) == 0);
    CHECK(cg_set_kernel(g, "py-eig") == 0);     /* cannot name a metric */
    CHECK(cg_start(g, why, sizeof why) == TELEM_EINVAL);
    CHECK(strstr(why, "py-eig") != NULL);
    cg_destroy(&g);

    g = cg_new("cargs", NULL);
    CHECK(cg_set_nodes(g, nodes, 1) == 0);
    CHECK(cg_set_devices(g, "0") == 0);
    CHECK(cg_set_collector(g, self) == 0);
    CHECK(cg_set_kernel(g, "pyeig") == 0);
    CHECK(cg_add_collector_arg(g, TELEM_COLLECTOR_FLAG) == 0);
    CHECK(cg_add_collector_arg(g, "--cg-test-extra=a b'c") == 0);
    for (int i = 2; i < CG_COLLECTOR_ARGS_MAX; i++)
        CHECK(cg_add_collector_arg(g, "--cg-test-extra") == 0);
    CHECK(cg_add_collector_arg(g, "--cg-test-extra") == TELEM_ETOOBIG);
    CHECK(cg_start(g, why, sizeof why) == 0);
    CHECK(cg_add_collector_arg(g, "late") == TELEM_ESTATE);
    CHECK(strcmp(cg_metric(g), "cg_pyeig_seconds") == 0);
    s_read_lines(p, 1);
    CHECK(p->n == 1);
    const char *m = p->n ? p->msgs[0] : "";
    const char *head = "-\x1f" TELEM_COLLECTOR_FLAG
                       "\x1f--cg-test-extra=a b'c\x1f--cg-test-extra\x1f";
    CHECK(strncmp(m, head, strlen(head)) == 0);
    CHECK(s_arg(m, "--kernel", v, sizeof v) && strcmp(v, "pyeig") == 0);
    CHECK(s_arg(m, "--node", v, sizeof v) && strcmp(v, "c1") == 0);
    cg_info_t in;
    CHECK(cg_stop(g, 20000) == 0);
    CHECK(cg_info(g, 0, &in) == 0 && in.exit_code == 0);
    cg_destroy(&g);
}

int
main(int argc, char **argv)
{
    if (cg_is_collector(argc, argv))
        return s_collector(argc, argv);
    char rundir[] = "/tmp/test_cg.XXXXXX", fdnum[16];
    s_pipe_t p = { 0 };
    int fds[2];
    if (!mkdtemp(rundir) || pipe(fds))
        return 1;
    p.rfd = fds[0], p.wfd = fds[1];
    fcntl(p.rfd, F_SETFD, FD_CLOEXEC);
    snprintf(fdnum, sizeof fdnum, "%d", p.wfd);
    setenv("CG_TEST_FD", fdnum, 1);
    setenv("TELEM_RUNDIR", rundir, 1);
    setenv("TELEM_FINALIZE_MS", "100", 1);
    unsetenv("TELEM_CPU_DEVICES");
    test_settings();
    test_local_map(&p);
    test_local_spread(&p);
    test_templates(&p);
    test_stop_escalates(&p);
    test_builtin();
    test_collector_args(&p);
    close(p.rfd);
    close(p.wfd);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", rundir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_cg: could not remove %s\n", rundir);
    return check_report("test_cg");
}
