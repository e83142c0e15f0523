/* telem_run.c - telem_run's main: the command line.  The run itself is
 * run_session.c's; docs/telem_run.md is the manual.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "run_session.h"
#include "telem_cli.h"

#define S_PROG "telem_run"

static const char s_usage[] =
"Usage: telem_run [-m] [-s] [-u PATH] [-v] [-F HZ] [--] COMMAND [ARG]...\n"
"       telem_run -S PID [-u PATH] [-v] [-F HZ]\n"
"Runs COMMAND with telem's push client set up, counts the launch in the\n"
"node's telemd (telem_run_total{operation=\"exec\"}) and exits with\n"
"COMMAND's status.  Counts are sums over every process of the node.\n"
"\n"
"Options:\n"
"  -s, --syscalls       count every system call of COMMAND, its threads\n"
"                       and its children by name (strace_hits_total\n"
"                       {scall=NAME}) and the bytes of its I/O calls\n"
"                       (strace_size_total{scall=NAME}), through ptrace\n"
"  -S, --attach PID     count the system calls of the running process PID\n"
"                       (every thread) until it ends or telem_run gets\n"
"                       SIGINT, SIGTERM or SIGHUP, which detach and leave\n"
"                       it running\n"
"  -m, --mpi            count MPI calls and bytes per function\n"
"                       (mpi_calls_total{call=NAME},\n"
"                       mpi_bytes_total{call=NAME}) with libtelem_mpi.so\n"
"                       preloaded into COMMAND\n"
"  -u, --endpoint PATH  the node to push to (also --unix): its directory\n"
"                       <rundir>/<node> or a socket in it (as telem_client\n"
"                       -u), or an ipc:// or tcp:// endpoint of its ingest\n"
"                       socket\n"
"                       (default: from TELEM_INGEST, else TELEM_RUNDIR and\n"
"                       TELEM_NODE, as every telem program finds it)\n"
"  -F, --rate HZ        pushes per second while COMMAND runs, 0.01-1000\n"
"                       (default 1); the counts are pushed at the end too\n"
"  -v, --verbose        say what is attached and detached, and print the\n"
"                       totals on stderr at the end\n"
"  -h, --help           show this help\n"
"\n"
"Without a telemd, telem_run says so once and runs COMMAND without\n"
"counting (with -v the counts are still taken and printed).\n"
"Signals sent to telem_run by other processes are passed on to COMMAND.\n"
"Exit status: COMMAND's (128+N when signal N ended it); 0 after -S\n"
"detached; 2 on bad usage; 125 when telem_run itself failed; 126 when\n"
"COMMAND cannot be executed; 127 when it is not found.\n";

static const struct option s_opts[] = {
    { "syscalls", no_argument, NULL, 's' },
    { "attach", required_argument, NULL, 'S' },
    { "mpi", no_argument, NULL, 'm' },
    { "endpoint", required_argument, NULL, 'u' },
    { "unix", required_argument, NULL, 'u' },        /* as telem_client's */
    { "rate", required_argument, NULL, 'F' },
    { "verbose", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static int
s_option(void *arg, int c, char *v)
{
    run_session_config_t *cfg = arg;
    int64_t pid;
    switch (c) {
    case 's':
        cfg->syscalls = 1;
        return 0;
    case 'S':
        if (telem_cli_int64(v, 1, 0x7fffffff, &pid))
            return telem_cli_bad(S_PROG, "--attach", v, "a process id");
        cfg->attach = (pid_t) pid;
        return 0;
    case 'm':
        cfg->mpi = 1;
        return 0;
    case 'u':
        cfg->endpoint = v;
        return 0;
    case 'F':
        if (telem_cli_number(v, 0.01, 1000, &cfg->rate_hz))
            return telem_cli_bad(S_PROG, "--rate", v,
                                 "pushes per second, 0.01 to 1000");
        return 0;
    case 'v':
        cfg->verbose = 1;
        return 0;
    default:
        return 2;
    }
}

static int
s_operands(void *arg, int argc, char **argv)
{
    run_session_config_t *cfg = arg;
    if (cfg->attach && argc > 0)
        return telem_cli_error(S_PROG, "-S takes no COMMAND (got '%s')",
                               argv[0]);
    if (cfg->attach && cfg->mpi)
        return telem_cli_error(S_PROG, "-m needs a COMMAND to start; it"
                                       " cannot be added to a running"
                                       " process");
    if (!cfg->attach && argc == 0)
        return telem_cli_error(S_PROG, "no COMMAND to run");
    cfg->argv = argc ? argv : NULL;
    return 0;
}

int
main(int argc, char **argv)
{
    run_session_config_t cfg = { .rate_hz = 1.0 };
    const telem_cli_spec_t spec = {
        .prog = S_PROG,
        .usage = s_usage,
        .shortopts = "+:msS:u:vF:h",
        .longopts = s_opts,
        .option = s_option,
        .operands = s_operands,
    };
    int rc = telem_cli_parse_spec(&spec, argc, argv, &cfg);
    if (rc)
        return rc == 1 ? 0 : rc;
    return run_session(&cfg);
}
