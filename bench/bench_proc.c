/* bench_proc.c - a real telemd for a benchmark (bench_proc.h). */
#include "bench_proc.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

void
bench_proc_path(char *buf, size_t size, const char *argv0, const char *name)
{
    const char *slash = strrchr(argv0, '/');
    int dlen = slash ? (int) (slash - argv0) : 1;
    snprintf(buf, size, "%.*s/%s", dlen, slash ? argv0 : ".", name);
}

pid_t
bench_proc_telemd(const char *argv0, const char *const *args,
                  const char *errlog, int64_t *ready_ns)
{
    char prog[1024];
    bench_proc_path(prog, sizeof prog, argv0, "telemd");
    const char *av[32] = { prog };
    int n = 1;
    for (; args[n - 1] && n < 31; n++)
        av[n] = args[n - 1];
    av[n] = NULL;
    int fds[2];
    if (pipe(fds) != 0)
        bench_die("pipe", "no pipe");
    int64_t t0 = bench_now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        int e = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (e >= 0)
            dup2(e, 2);
        close(fds[0]);
        execv(prog, (char *const *) av);
        _exit(127);
    }
    close(fds[1]);
    FILE *out = fdopen(fds[0], "r");
    char line[512];
    while (out && fgets(line, sizeof line, out))
        if (strcmp(line, "ready\n") == 0) {
            *ready_ns = bench_now_ns() - t0;
            return pid;      /* the pipe stays open: telemd may write */
        }
    bench_die("telemd", "%s exited before 'ready' (see %s)", prog, errlog);
    return -1;
}

int64_t
bench_proc_stop(pid_t pid, int sig, int *status)
{
    int64_t t0 = bench_now_ns();
    kill(pid, sig);
    waitpid(pid, status, 0);
    return bench_now_ns() - t0;
}
