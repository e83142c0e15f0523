/* telem_dict.c - command-line client of the distributed dictionary, for
 * scripts and tests: one operation per run, through ddict.h only.
 *
 * The flags are read by telem_cli's shared loop, which lets them stand
 * anywhere among the words (put -s NS KEY VALUE); the operands, the
 * command and its arguments, are checked against the command only once
 * the dictionary is open (a wrong count is a bad command line, status 2).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddict.h"
#include "telem_cli.h"

#define S_PROG "telem_dict"

static const char s_usage[] =
"Usage: telem_dict [OPTIONS] COMMAND [ARGS]\n"
"Client of telem's distributed dictionary (telem_dictd).\n"
"\n"
"Commands:\n"
"  put KEY VALUE        store a value          get KEY    print a value\n"
"  del KEY              remove a key           len        count keys\n"
"  keys                 list keys, one a line\n"
"  fill N [PREFIX]      put keys PREFIXi = 'value-i' for i < N (batched)\n"
"  check N [PREFIX]     verify those keys; prints how many are right\n"
"  event-set NAME | event-wait NAME MS | event-is-set NAME\n"
"  checkpoint ID | restore\n"
"  reform NODE,NODE,... re-form the dictionary on this node list\n"
"\n"
"Options:\n"
"  -N, --nodefile FILE  dictionary node file (default: $TELEM_DICT_NODEFILE,\n"
"                       else RUNDIR/dict_nodes)\n"
"  -s, --ns NAME        namespace (default \"\")\n"
"  -t, --timeout MS     deadline of each call (default 10000)\n"
"  -R, --replicas N     replicas for reform (default 0: automatic)\n"
"  -h, --help           show this help\n"
"Servers at tcp:// endpoints are reached with CURVE when the job's key is\n"
"found: $TELEM_KEYS, else keys/ beside the node file, else RUNDIR/keys.\n"
"Exit status: 0 ok, 1 operation failed (message on stderr), 2 bad usage,\n"
"3 key or event not found / not set.\n";

static int
s_fail(const char *what, int rc)
{
    fprintf(stderr, S_PROG ": %s: %s\n", what, telem_strerror(rc));
    return rc == TELEM_ENOTFOUND ? 3 : 1;
}

static int
s_print_key(void *arg, const void *key, size_t klen)
{
    (void) arg;
    fwrite(key, 1, klen, stdout);
    putchar('\n');
    return 0;
}

static int
s_fill(ddict_t *d, long n, const char *prefix, int check)
{
    ddict_batch_t *b = ddict_batch_new();
    char (*keys)[64] = malloc((size_t) (n ? n : 1) * 64);
    char (*vals)[64] = malloc((size_t) (n ? n : 1) * 64);
    for (long i = 0; i < n; i++) {
        snprintf(keys[i], 64, "%s%ld", prefix, i);
        snprintf(vals[i], 64, "value-%ld", i);
        if (check)
            ddict_batch_get(b, keys[i], strlen(keys[i]));
        else
            ddict_batch_put(b, keys[i], strlen(keys[i]), vals[i],
                            strlen(vals[i]));
    }
    int rc = ddict_batch_exec(d, b);
    long good = 0;
    for (long i = 0; i < n; i++) {
        const void *v;
        size_t vlen;
        int code = ddict_batch_result(b, (size_t) i, &v, &vlen, NULL);
        if (code == 0 && (!check || (vlen == strlen(vals[i])
                                     && memcmp(v, vals[i], vlen) == 0)))
            good++;
        else if (rc == 0)
            rc = code;
    }
    if (check)
        printf("%ld\n", good);
    free(keys);
    free(vals);
    ddict_batch_destroy(&b);
    return rc;
}

static int
s_run(ddict_t *d, int argc, char **argv, int replicas)
{
    const char *cmd = argv[0];
    int rc;
    if (!strcmp(cmd, "put") && argc == 3)
        return ddict_put(d, argv[1], strlen(argv[1]), argv[2],
                         strlen(argv[2]), NULL);
    if (!strcmp(cmd, "get") && argc == 2) {
        void *v;
        size_t n;
        if ((rc = ddict_get(d, argv[1], strlen(argv[1]), &v, &n, NULL)) == 0) {
            fwrite(v, 1, n, stdout);
            putchar('\n');
            free(v);
        }
        return rc;
    }
    if (!strcmp(cmd, "del") && argc == 2)
        return ddict_del(d, argv[1], strlen(argv[1]));
    if (!strcmp(cmd, "len") && argc == 1) {
        uint64_t n;
        if ((rc = ddict_len(d, &n)) == 0)
            printf("%" PRIu64 "\n", n);
        return rc;
    }
    if (!strcmp(cmd, "keys") && argc == 1)
        return ddict_keys(d, s_print_key, NULL);
    if ((!strcmp(cmd, "fill") || !strcmp(cmd, "check")) && argc >= 2)
        return s_fill(d, atol(argv[1]), argc > 2 ? argv[2] : "k",
                      !strcmp(cmd, "check"));
    if (!strcmp(cmd, "event-set") && argc == 2)
        return ddict_event_set(d, argv[1]);
    if (!strcmp(cmd, "event-wait") && argc == 3)
        return ddict_event_wait(d, argv[1], atol(argv[2]));
    if (!strcmp(cmd, "event-is-set") && argc == 2) {
        rc = ddict_event_is_set(d, argv[1]);
        return rc == 1 ? 0 : rc == 0 ? TELEM_ENOTFOUND : rc;
    }
    if (!strcmp(cmd, "checkpoint") && argc == 2)
        return ddict_checkpoint(d, strtoull(argv[1], NULL, 10));
    if (!strcmp(cmd, "restore") && argc == 1) {
        uint64_t id;
        if ((rc = ddict_restore(d, &id)) == 0)
            printf("%" PRIu64 "\n", id);
        return rc;
    }
    if (!strcmp(cmd, "reform") && argc == 2) {
        char *list = strdup(argv[1]);
        const char *names[1024];
        int n = 0;
        for (char *sv = NULL, *t = strtok_r(list, ",", &sv); t && n < 1024;
             t = strtok_r(NULL, ",", &sv))
            names[n++] = t;
        rc = ddict_reform(d, names, n, replicas);
        free(list);
        return rc;
    }
    return TELEM_EINVAL;                /* s_command() checked the name */
}

typedef struct {
    const char *nodefile, *ns;
    int64_t timeout, replicas;
    int argc;                   /* the command and its arguments */
    char **argv;
} s_args_t;

/* One flag for telem_cli_parse_spec(); returns 0 or 2 (bad value). */
static int
s_option(void *arg, int c, char *v)
{
    s_args_t *a = arg;
    switch (c) {
    case 'N': a->nodefile = v; return 0;
    case 's': a->ns = v; return 0;
    case 't':
        if (telem_cli_int64(v, 1, INT64_MAX, &a->timeout))
            return telem_cli_bad(S_PROG, "--timeout", v,
                                 "milliseconds, above 0");
        return 0;
    case 'R':
        if (telem_cli_int64(v, 0, 4, &a->replicas))
            return telem_cli_bad(S_PROG, "--replicas", v,
                                 "an integer from 0 to 4");
        return 0;
    default: return 2;
    }
}

/* The commands: name, operands after it (min, max), and which operand
 * (1-based; 0 none) must be a non-negative integer. */
static const struct {
    const char *name;
    int min, max, number;
} s_cmds[] = {
    { "put", 2, 2, 0 }, { "get", 1, 1, 0 }, { "del", 1, 1, 0 },
    { "len", 0, 0, 0 }, { "keys", 0, 0, 0 }, { "fill", 1, 2, 1 },
    { "check", 1, 2, 1 }, { "event-set", 1, 1, 0 },
    { "event-wait", 2, 2, 2 }, { "event-is-set", 1, 1, 0 },
    { "checkpoint", 1, 1, 1 }, { "restore", 0, 0, 0 }, { "reform", 1, 1, 0 },
};

/* Takes the command and its arguments, checked before anything is opened,
 * for s_run(). */
static int
s_command(void *arg, int argc, char **argv)
{
    s_args_t *a = arg;
    int64_t v;
    if (argc == 0)
        return telem_cli_error(S_PROG, "a command is required");
    for (size_t i = 0; i < sizeof s_cmds / sizeof s_cmds[0]; i++) {
        if (strcmp(argv[0], s_cmds[i].name) != 0)
            continue;
        int min = s_cmds[i].min, max = s_cmds[i].max, n = argc - 1;
        if ((n < min || n > max) && min == max)
            return telem_cli_error(S_PROG, "%s takes %d argument(s), not %d",
                                   argv[0], min, n);
        if (n < min || n > max)
            return telem_cli_error(S_PROG, "%s takes %d or %d arguments, "
                                   "not %d", argv[0], min, max, n);
        int k = s_cmds[i].number;
        if (k && telem_cli_int64(argv[k], 0, INT64_MAX, &v))
            return telem_cli_bad(S_PROG, argv[0], argv[k],
                                 "a non-negative integer");
        a->argc = argc;
        a->argv = argv;
        return 0;
    }
    return telem_cli_error(S_PROG, "unknown command: %s", argv[0]);
}

/* Returns 0 to run, 1 after --help, 2 on a usage error. */
static int
s_parse(s_args_t *a, int argc, char **argv)
{
    static const struct option opts[] = {
        { "nodefile", 1, NULL, 'N' }, { "ns", 1, NULL, 's' },
        { "timeout", 1, NULL, 't' }, { "replicas", 1, NULL, 'R' },
        { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 } };
    const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage, .shortopts = "N:s:t:R:h",
        .longopts = opts, .option = s_option, .operands = s_command,
    };
    return telem_cli_parse_spec(&spec, argc, argv, a);
}

int
main(int argc, char **argv)
{
    s_args_t a = { .nodefile = NULL, .ns = "", .timeout = 10000 };
    int rc = s_parse(&a, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    int err;
    ddict_t *d = ddict_open(a.nodefile, a.ns, a.timeout, &err);
    if (!d)
        return s_fail("open", err);
    rc = s_run(d, a.argc, a.argv, (int) a.replicas);
    ddict_close(&d);
    return rc ? s_fail(a.argv[0], rc) : 0;
}
