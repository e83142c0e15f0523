/* telem_limits.c - process limits every telem daemon sets at start
 * (telem_limits.h).
 *
 * RLIMIT_NOFILE's hard limit may be RLIM_INFINITY on some systems; Linux
 * refuses a soft limit above fs.nr_open, so an infinite hard limit is
 * tried and, when refused, the soft limit is left as it was.
 */
#include "telem_limits.h"

#include <errno.h>
#include <malloc.h>
#include <string.h>
#include <sys/resource.h>

#include "telem_error.h"
#include "telem_log.h"

int
telem_limits_raise_nofile(long *nofile)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return TELEM_EIO;
    int rc = 0;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit up = { rl.rlim_max, rl.rlim_max };
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl.rlim_cur = rl.rlim_max;
        else
            rc = TELEM_EIO;
    }
    if (nofile)
        *nofile = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t) 1 << 30
                      ? 1L << 30 : (long) rl.rlim_cur;
    return rc;
}

int
telem_limits_tcp_peers(int want, long nofile)
{
    long half = nofile / 2;
    long n = want < half ? want : half;
    return n < 1 ? 1 : (int) n;
}

int
telem_limits_start(int want, int tcp)
{
    long nofile = 0;
    if (telem_limits_raise_nofile(&nofile))
        telem_log(TELEM_LOG_WARN, "cannot raise the open-file limit: %s",
                  strerror(errno));
    int peers = telem_limits_tcp_peers(want ? want : TELEM_TCP_PEERS_DEFAULT,
                                       nofile);
    if (tcp)
        telem_log(TELEM_LOG_INFO, "open-file limit %ld: at most %d TCP "
                  "peers", nofile, peers);
    return peers;
}

void
telem_limits_trim(size_t *freed_bytes)
{
    if (*freed_bytes < TELEM_TRIM_AFTER)
        return;
    malloc_trim(0);
    *freed_bytes = 0;
}
