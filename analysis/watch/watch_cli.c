/* watch_cli.c - telem_watch's flags, help and detector list.
 *
 * Every flag is validated here, once, with a sentence naming the flag and
 * exit status 2, before the watcher opens a file or a socket.  Detector
 * specs are only split and looked up by name here; their parameters are
 * checked when the detectors are created, before the first tick.
 */
#include "watch_cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "telem_cli.h"

#define S_PROG "telem_watch"
/* A usage error: the message, the --help hint, exit status 2. */
#define S_BAD(...) telem_cli_error(S_PROG, __VA_ARGS__)

static const char s_usage[] =
"usage: telem_watch --detector SPEC [--detector SPEC ...] [options]\n"
"       telem_watch ctl [--help] COMMAND ...\n"
"       telem_watch --list\n"
"\n"
"Every period, pulls recent data from every node of the job (the node\n"
"file), runs the detectors, prints their events, publishes them, and acts.\n"
"\n"
"detectors:\n"
"  -d, --detector SPEC   NAME[:PARAM=VALUE,...] or LABEL=NAME[:...]; e.g.\n"
"                        slowgpu, slowgpu:effect=0.1,k=3,n=4,\n"
"                        hot=threshold:metric=cpu_percent,op=>,value=95,duration=30\n"
"      --set L.P=V       set parameter P of the detector labelled L\n"
"      --list            list detectors, their parameters and defaults\n"
"options:\n"
"      --nodefile F      node file (default $TELEM_NODEFILE, else <rundir>/nodes)\n"
"      --period S        seconds between ticks (default 1; 0.05-3600)\n"
"      --timeout MS      deadline of each query (default 1000)\n"
"      --json            print JSON lines instead of text\n"
"      --exec CMD        run CMD (sh -c) for each event at --act-on or above;\n"
"                        the event is in TELEM_EVENT_* variables and as JSON\n"
"                        on its stdin\n"
"      --restart-endpoint EP  ask the launcher at EP to restart the job\n"
"                        without the flagged nodes\n"
"      --restart-timeout MS   wait this long for its ack (default 5000)\n"
"      --act-on warn|act lowest severity that triggers --exec and restarts\n"
"                        (default act)\n"
"      --name NAME       files under <rundir>/NAME (default telem_watch)\n"
"      --rundir DIR      run directory (default $TELEM_RUNDIR, ...)\n"
"      --pub EP          bind events here (default ipc://<rundir>/NAME/pub.sock)\n"
"      --ctl EP          bind control here (default ipc://<rundir>/NAME/ctl.sock)\n"
"                        a tcp:// --pub or --ctl is CURVE with the job's key\n"
"                        ($TELEM_KEYS, else <rundir>/keys); without one a\n"
"                        TCP --ctl, or a --pub off loopback, needs --insecure\n"
"      --insecure        allow those on plain TCP (a network only you use)\n"
"      --count N         stop after N ticks\n"
"      --duration S      stop after S seconds\n"
"  -v, --verbose         debug log lines on stderr\n"
"  -h, --help            this text\n"
"exit: 0 stopped (signal, --count, --duration), 1 error, 2 bad command line\n";

static int
s_push(const char ***v, size_t *n, const char *s)
{
    const char **p = realloc(*v, (*n + 1) * sizeof *p);
    if (!p)
        return -1;
    p[(*n)++] = s;
    *v = p;
    return 0;
}

/* Lists every detector with its parameters. */
static void
s_list(void)
{
    size_t n;
    const det_vtable_t *const *all = det_registry(&n);
    for (size_t i = 0; i < n; i++) {
        printf("%s\n    %s\n", all[i]->name, all[i]->doc);
        for (size_t j = 0; j < all[i]->nparams; j++) {
            const det_param_def_t *p = &all[i]->params[j];
            if (p->type == DET_PARAM_NUM) {
                printf("  %-15s %-10g [%g, %g] %s\n", p->name, p->def,
                       p->min, p->max, p->doc);
                continue;
            }
            printf("  %-15s %-10s %s%s", p->name,
                   *p->def_str ? p->def_str : "\"\"",
                   p->required ? "(required) " : "", p->doc);
            for (size_t k = 0; p->choices && p->choices[k]; k++)
                printf("%s%s", k ? ", " : "; one of: ", p->choices[k]);
            printf("\n");
        }
        printf("\n");
    }
}

enum {
    O_SET = 256, O_LIST, O_NODEFILE, O_PERIOD, O_TIMEOUT, O_JSON, O_EXEC,
    O_RESTART, O_RESTART_TIMEOUT, O_ACT_ON, O_NAME, O_RUNDIR, O_PUB, O_CTL,
    O_COUNT, O_DURATION, O_INSECURE
};

static const struct option s_opts[] = {
    { "detector", required_argument, NULL, 'd' },
    { "set", required_argument, NULL, O_SET },
    { "list", no_argument, NULL, O_LIST },
    { "nodefile", required_argument, NULL, O_NODEFILE },
    { "period", required_argument, NULL, O_PERIOD },
    { "timeout", required_argument, NULL, O_TIMEOUT },
    { "json", no_argument, NULL, O_JSON },
    { "exec", required_argument, NULL, O_EXEC },
    { "restart-endpoint", required_argument, NULL, O_RESTART },
    { "restart-timeout", required_argument, NULL, O_RESTART_TIMEOUT },
    { "act-on", required_argument, NULL, O_ACT_ON },
    { "name", required_argument, NULL, O_NAME },
    { "rundir", required_argument, NULL, O_RUNDIR },
    { "pub", required_argument, NULL, O_PUB },
    { "ctl", required_argument, NULL, O_CTL },
    { "insecure", no_argument, NULL, O_INSECURE },
    { "count", required_argument, NULL, O_COUNT },
    { "duration", required_argument, NULL, O_DURATION },
    { "verbose", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

/* Checks a detector spec's name part. */
static int
s_spec(const char *spec)
{
    const char *colon = strchr(spec, ':'), *eq = strchr(spec, '=');
    const char *name = eq && (!colon || eq < colon) ? eq + 1 : spec;
    size_t len = colon ? (size_t) (colon - name) : strlen(name);
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return S_BAD("--detector '%s': no detector name", spec);
    memcpy(buf, name, len);
    buf[len] = '\0';
    if (!det_find(buf))
        return S_BAD("--detector: no detector '%s' (see --list)", buf);
    return 0;
}

static int
s_time(const char *flag, const char *arg, double lo, double hi, int64_t *ns)
{
    if (telem_cli_seconds(arg, lo, hi, ns))
        return telem_cli_error(S_PROG, "%s '%s': expected seconds in %g..%g",
                               flag, arg, lo, hi);
    return 0;
}

static int
s_ms(const char *flag, const char *arg, int *ms)
{
    int64_t v;
    if (telem_cli_int64(arg, 1, 3600000, &v))
        return telem_cli_error(S_PROG, "%s '%s': expected milliseconds in "
                               "1..3600000", flag, arg);
    *ms = (int) v;
    return 0;
}

static int
s_option(watch_cli_t *cli, int c, const char *arg)
{
    int64_t v;
    switch (c) {
    case 'd':
        return s_spec(arg) ? 2 : s_push(&cli->detectors, &cli->ndetectors, arg);
    case O_SET:
        if (!strchr(arg, '=') || !strchr(arg, '.'))
            return S_BAD("--set '%s': expected LABEL.PARAM=VALUE", arg);
        return s_push(&cli->sets, &cli->nsets, arg);
    case O_NODEFILE: cli->nodefile = arg; return 0;
    case O_PERIOD: return s_time("--period", arg, 0.05, 3600, &cli->period_ns);
    case O_TIMEOUT: return s_ms("--timeout", arg, &cli->timeout_ms);
    case O_JSON: cli->json = 1; return 0;
    case O_EXEC:
        if (!*arg)
            return S_BAD("--exec: empty command");
        cli->exec_cmd = arg;
        return 0;
    case O_RESTART:
        if (!strstr(arg, "://"))
            return S_BAD("--restart-endpoint '%s': expected an endpoint "
                         "such as tcp://127.0.0.1:5555 or ipc:///path", arg);
        cli->restart_ep = arg;
        return 0;
    case O_RESTART_TIMEOUT:
        return s_ms("--restart-timeout", arg, &cli->restart_timeout_ms);
    case O_ACT_ON:
        if (strcmp(arg, "warn") && strcmp(arg, "act"))
            return S_BAD("--act-on '%s': expected warn or act", arg);
        cli->act_on = strcmp(arg, "warn") == 0 ? DET_SEV_WARN : DET_SEV_ACT;
        return 0;
    case O_NAME:
        if (!*arg || strpbrk(arg, "/\t\r\n") || !strcmp(arg, ".") ||
            !strcmp(arg, ".."))
            return S_BAD("--name '%s': not a usable directory name", arg);
        cli->name = arg;
        return 0;
    case O_RUNDIR: cli->rundir = arg; return 0;
    case O_PUB: cli->pub_ep = arg; return 0;
    case O_CTL: cli->ctl_ep = arg; return 0;
    case O_INSECURE: cli->insecure = 1; return 0;
    case O_COUNT:
        if (telem_cli_int64(arg, 1, INT64_MAX, &v))
            return S_BAD("--count '%s': expected a positive whole number", arg);
        cli->count = (uint64_t) v;
        return 0;
    case O_DURATION:
        return s_time("--duration", arg, 0.001, 1e7, &cli->duration_ns);
    case 'v': cli->verbose = 1; return 0;
    default: return 2;
    }
}

/* What the parse callbacks share: the flags, and --list, which is run
   once the whole command line has been read. */
typedef struct {
    watch_cli_t *cli;
    int list;
} s_parse_t;

static int
s_flag(void *arg, int c, char *v)
{
    s_parse_t *p = arg;
    if (c == O_LIST) {
        p->list = 1;
        return 0;
    }
    int rc = s_option(p->cli, c, v);
    return rc < 0 ? S_BAD("out of memory") : rc;
}

/* The watcher takes no operands; --list ignores them, as --help does. */
static int
s_operands(void *arg, int argc, char **argv)
{
    const s_parse_t *p = arg;
    if (argc > 0 && !p->list)
        return S_BAD("unexpected argument '%s'", argv[0]);
    return 0;
}

int
watch_cli_parse(int argc, char **argv, watch_cli_t *cli)
{
    static const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage, .shortopts = ":d:vh",
        .longopts = s_opts, .option = s_flag, .operands = s_operands,
    };
    memset(cli, 0, sizeof *cli);
    cli->period_ns = 1000000000;
    cli->timeout_ms = 1000;
    cli->restart_timeout_ms = 5000;
    cli->act_on = DET_SEV_ACT;
    s_parse_t p = { .cli = cli };
    int rc = telem_cli_parse_spec(&spec, argc, argv, &p);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (p.list) {
        s_list();
        return 0;
    }
    if (cli->ndetectors == 0)
        return S_BAD("no detector: give at least one --detector");
    return -1;
}

void
watch_cli_free(watch_cli_t *cli)
{
    free(cli->detectors);
    free(cli->sets);
    cli->detectors = cli->sets = NULL;
}

void
watch_cli_print_name(FILE *out, const char *name, const char *sep)
{
    fputs(sep, out);
    int plain = *name != '\0';
    for (const char *p = name; *p && plain; p++)
        plain = isalnum((unsigned char) *p) || strchr("._-:@+", *p);
    if (plain) {
        fputs(name, out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *) name; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\x%02x", *p);
        else if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}
