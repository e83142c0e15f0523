/* telem_agg.c - telem's HTTP face: OpenTSDB's API over every node of a
 * job, a live dashboard, and Dragon's operational extras.
 *
 *   telem_agg [--port N] [--bind ADDR] [--token-file F] [options]
 *
 * A thin main: it reads the command line and the token, starts the HTTP
 * front-end module (runtime/http) with the aggregator (agg.c) as its
 * handler, writes <rundir>/telem_agg/url, and waits for SIGINT, SIGTERM
 * or SIGHUP.  The signals are blocked before any thread starts and read
 * from a signalfd (telem_signals.h), so no handler runs inside the HTTP
 * module's threads. */
#include "agg.h"
#include "telem_web.h"
#include "agg_cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "telem_cli.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_signals.h"

#define S_PROG "telem_agg"
#define S_PORT_DEFAULT 4242

static const char s_usage[] =
"Usage: telem_agg [options]\n"
"\n"
"Serve the job's telemetry over HTTP: OpenTSDB 2.4's API (for Grafana),\n"
"a live dashboard at /, and the job's state at /telem/job.  Every answer\n"
"comes from the job's nodes (the node file) within one deadline; a node\n"
"that does not answer is named in the X-Telem-Missing header.\n"
"\n"
"Options:\n"
"  -p, --port N            TCP port (0: any free one)             [4242]\n"
"  -b, --bind ADDR         address to listen on (an IPv4 or IPv6\n"
"                          literal; 0.0.0.0 for every interface) [127.0.0.1]\n"
"      --token-file F      require 'Authorization: Bearer TOKEN' (or the\n"
"                          query argument token=TOKEN) on every request;\n"
"                          F holds the token and must be mode 0600 (or\n"
"                          stricter) and owned by you.  Without a token\n"
"                          /api/put and /api/reboot answer 403\n"
"  -t, --timeout MS        deadline of one request's node queries   [2000]\n"
"      --max-body BYTES    largest request body (larger: 413)    [1048576]\n"
"      --max-conns N       connections at once (more are refused)     [64]\n"
"      --threads N         worker threads                              [4]\n"
"      --cors              allow cross-origin requests (Grafana's browser\n"
"                          access mode); off by default\n"
"      --nodefile F        the job's node file   [$TELEM_NODEFILE, RUNDIR/nodes]\n"
"      --rundir DIR        run directory  [$TELEM_RUNDIR, $XDG_RUNTIME_DIR/telem,\n"
"                          /tmp/telem-UID]\n"
"      --launch-endpoint EP  telem_launch's restart socket, for /api/reboot\n"
"                          [$TELEM_LAUNCH_ENDPOINT, ipc://RUNDIR/launch/restart.sock]\n"
"      --log-level LVL     error, warn, info, debug                  [info]\n"
"  -h, --help              show this help\n"
"  -V, --version           show the version\n"
"\n"
"See docs/telem_agg.md and docs/grafana.md.\n";

typedef struct {
    agg_cfg_t agg;
    telem_http_opts_t http;
    const char *token_file;
    char token[512];
} s_args_t;

static int
s_option(void *arg, int c, char *v)
{
    s_args_t *a = arg;
    int rc = agg_cli_http_option(S_PROG, c, v, &a->http);
    if (rc >= 0) {
        if (c == 'H')
            a->agg.pool = a->http.threads;
        return rc;
    }
    int64_t i = 0;
    switch (c) {
    case 'T': a->token_file = v; return 0;
    case 't':
        rc = telem_cli_int64(v, 1, 3600000, &i)
             ? telem_cli_bad(S_PROG, "--timeout", v, "milliseconds, 1 to "
                             "3600000") : 0;
        a->agg.timeout_ms = (int) i;
        return rc;
    case 'N': a->agg.nodefile = v; return 0;
    case 'r': a->agg.rundir = v; return 0;
    case 'E': a->agg.launch_ep = v; return 0;
    default: return 2;
    }
}

static int
s_read_token(s_args_t *a)
{
    return agg_read_token(S_PROG, a->token_file, a->token, sizeof a->token);
}

static int
s_parse(s_args_t *a, int argc, char **argv, telem_log_level_t *level)
{
    static const struct option opts[] = {
        { "port", 1, 0, 'p' }, { "bind", 1, 0, 'b' },
        { "token-file", 1, 0, 'T' }, { "timeout", 1, 0, 't' },
        { "max-body", 1, 0, 'B' }, { "max-conns", 1, 0, 'C' },
        { "threads", 1, 0, 'H' }, { "cors", 0, 0, 'O' },
        { "nodefile", 1, 0, 'N' }, { "rundir", 1, 0, 'r' },
        { "launch-endpoint", 1, 0, 'E' }, { "log-level", 1, 0, 'l' },
        { "help", 0, 0, 'h' }, { "version", 0, 0, 'V' }, { 0, 0, 0, 0 }
    };
    const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage, .shortopts = ":p:b:t:hV",
        .longopts = opts, .option = s_option, .log_level = level,
        .version = "telem_agg " TELEM_AGG_VERSION " (OpenTSDB API 2.4)",
    };
    int rc = telem_cli_parse_spec(&spec, argc, argv, a);
    if (rc == 0 && a->token_file && (rc = s_read_token(a)) == 0)
        a->http.token = a->token;
    a->agg.has_token = a->http.token != NULL;
    return rc;
}

/* <rundir>/telem_agg/url: where the server listens, for scripts and the
 * launcher (removed at exit). */
static void
s_url_file(const char *rundir, const char *url, char *path, size_t size)
{
    snprintf(path, size, "%s/telem_agg", rundir);
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        *path = '\0';
        return;
    }
    snprintf(path, size, "%s/telem_agg/url", rundir);
    char tmp[TELEM_PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.%ld", path, (long) getpid());
    FILE *f = fopen(tmp, "we");
    if (!f || fprintf(f, "%s\n", url) < 0 || fclose(f) != 0
        || rename(tmp, path) != 0) {
        telem_log(TELEM_LOG_WARN, "cannot write %s: %s", path,
                  strerror(errno));
        unlink(tmp);
        *path = '\0';
    }
}

static int
s_serve(s_args_t *a, int sigfd)
{
    int err = 0;
    char why[512] = "", url[600], path[TELEM_PATH_MAX + 32] = "";
    agg_t *agg = agg_new(&a->agg, &err);
    if (!agg) {
        telem_log(TELEM_LOG_ERROR, "cannot start: %s", telem_strerror(err));
        return 1;
    }
    telem_http_t *http = telem_http_new(&a->http, agg_handle, agg, &err, why,
                                        sizeof why);
    if (!http) {                  /* the module has logged why */
        agg_destroy(&agg);
        return 1;
    }
    agg_cli_url(&a->http, telem_http_port(http), url, sizeof url);
    s_url_file(agg_rundir(agg), url, path, sizeof path);
    printf("telem_agg: serving %s (OpenTSDB API, dashboard at /)%s\n", url,
           a->http.token ? "; a bearer token is required" : "");
    fflush(stdout);
    agg_cli_wait_stop(sigfd);
    telem_http_destroy(&http);
    agg_destroy(&agg);
    if (*path)
        unlink(path);
    return 0;
}

int
main(int argc, char **argv)
{
    s_args_t a;
    memset(&a, 0, sizeof a);
    a.http.port = S_PORT_DEFAULT;
    a.http.name = S_PROG;
    a.http.open_paths = telem_web_open_paths();
    telem_log_level_t level = TELEM_LOG_INFO;
    int rc = s_parse(&a, argc, argv, &level);
    if (rc)
        return rc == 1 ? 0 : rc;
    telem_log_init(S_PROG, level);
    int sigfd = telem_signals_open_stop(0);
    if (sigfd < 0) {
        telem_log(TELEM_LOG_ERROR, "cannot block the stop signals: %s",
                  strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    rc = s_serve(&a, sigfd);
    close(sigfd);
    return rc;
}
