/* agg_cli.c - the command-line pieces telem_agg and telem_view share
 * (agg_cli.h). */
#include "agg_cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "telem_cli.h"
#include "telem_log.h"

static int
s_int(const char *prog, const char *flag, const char *v, int64_t lo,
      int64_t hi, int64_t *out, const char *what)
{
    return telem_cli_int64(v, lo, hi, out) ? telem_cli_bad(prog, flag, v,
                                                           what) : 0;
}

int
agg_cli_http_option(const char *prog, int c, const char *v,
                    telem_http_opts_t *http)
{
    int64_t i = 0;
    int rc = 0;
    switch (c) {
    case 'p':
        rc = s_int(prog, "--port", v, 0, 65535, &i, "a port from 0 to 65535");
        http->port = (int) i;
        return rc;
    case 'b': http->bind = v; return 0;
    case 'B':
        rc = s_int(prog, "--max-body", v, 1024, INT64_C(1) << 30, &i,
                   "bytes, 1024 to 1073741824");
        http->max_body = (size_t) i;
        return rc;
    case 'C':
        rc = s_int(prog, "--max-conns", v, 1, 100000, &i, "1 to 100000");
        http->max_conns = (unsigned) i;
        return rc;
    case 'H':
        rc = s_int(prog, "--threads", v, 1, 64, &i, "1 to 64");
        http->threads = (unsigned) i;
        return rc;
    case 'O': http->cors = true; return 0;
    default: return -1;
    }
}

void
agg_cli_url(const telem_http_opts_t *http, int port, char *url, size_t size)
{
    const char *bind = http->bind ? http->bind : "127.0.0.1";
    snprintf(url, size, strchr(bind, ':') ? "http://[%s]:%d/"
             : "http://%s:%d/", bind, port);
}

void
agg_cli_wait_stop(int sigfd)
{
    struct signalfd_siginfo si = { 0 };
    while (read(sigfd, &si, sizeof si) < 0 && errno == EINTR)
        ;
    telem_log(TELEM_LOG_INFO, "signal %u: stopping", si.ssi_signo);
}
