/* bench_restart_prog.c - the program bench_restart runs under telem_launch.
 *
 * It does nothing but mark the moment it runs: the first thing main()
 * does is read CLOCK_REALTIME, then it writes those nanoseconds to
 * $TELEM_RUNDIR/rb/<TELEM_RESTART_COUNT>.<TELEM_NODE> (written to a
 * temporary name and renamed, so the benchmark, which watches the
 * directory with inotify, never reads half a file) and waits for the
 * launcher's SIGTERM.  It links no telem library and does no set-up
 * before the clock read, so its timestamp is the launcher's spawn plus
 * exec and the dynamic loader of a libc-only program: the part of
 * "running again" the launcher is responsible for.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int
s_write(const char *dir, const char *count, const char *node, int64_t ns)
{
    char tmp[4096], path[4096];
    int a = snprintf(tmp, sizeof tmp, "%s/rb/.%s.%s", dir, count, node);
    int b = snprintf(path, sizeof path, "%s/rb/%s.%s", dir, count, node);
    if (a < 0 || b < 0 || (size_t) a >= sizeof tmp
        || (size_t) b >= sizeof path)
        return -1;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int bad = fprintf(f, "%lld\n", (long long) ns) < 0;
    bad |= fclose(f) != 0;
    return bad || rename(tmp, path) != 0 ? -1 : 0;
}

int
main(int argc, char **argv)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: bench_restart_prog\n"
               "Run by bench_restart under telem_launch: writes its start "
               "time (CLOCK_REALTIME ns)\nto $TELEM_RUNDIR/rb/"
               "$TELEM_RESTART_COUNT.$TELEM_NODE, then waits for SIGTERM.\n");
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "bench_restart_prog: takes no arguments "
                "(see --help)\n");
        return 2;
    }
    const char *dir = getenv("TELEM_RUNDIR");
    const char *node = getenv("TELEM_NODE");
    const char *count = getenv("TELEM_RESTART_COUNT");
    if (!dir || !node || !count || strchr(node, '/') || strchr(count, '/')) {
        fprintf(stderr, "bench_restart_prog: needs TELEM_RUNDIR, TELEM_NODE "
                "and TELEM_RESTART_COUNT (run it under telem_launch)\n");
        return 2;
    }
    if (s_write(dir, count, node, ns) != 0) {
        perror("bench_restart_prog: writing the start time");
        return 1;
    }
    for (;;)
        pause();            /* SIGTERM (default action) ends it */
}
