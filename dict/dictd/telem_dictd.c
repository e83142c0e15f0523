/* telem_dictd.c - the dictionary server's command line: parse flags, start
 * the actor, wait for a signal or a shutdown request.
 *
 * Everything else lives in ddict_actor.c (sockets, loop) and
 * ddict_server*.c (what messages mean).  The flags are read by
 * telem_cli's shared loop; the defaults that depend on the environment
 * (node name, run directory, node file) are filled in after it, so that
 * --help and a bad flag never look at the machine.
 */
#include <czmq.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddict_actor.h"
#include "ddict_map.h"
#include "telem.h"
#include "telem_cli.h"
#include "telem_error.h"
#include "telem_keys.h"
#include "telem_limits.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_time.h"
#include "telem_zap.h"

static const char s_usage[] =
"Usage: telem_dictd [OPTIONS]\n"
"telem's distributed dictionary server: one per node of a job.  Holds the\n"
"shards of the job's key-value store that the shard map gives this node,\n"
"replicates writes to the other owners of each shard before acknowledging\n"
"them, and keeps an append-only checksummed log to restart from.\n"
"\n"
"Options:\n"
"  -n, --node NAME        node name (default: $TELEM_NODE, $SLURMD_NODENAME,\n"
"                         or the host name)\n"
"  -r, --rundir DIR       run directory (default: $TELEM_RUNDIR, ...)\n"
"  -N, --nodefile FILE    dictionary node file to register in (default:\n"
"                         $TELEM_DICT_NODEFILE, else RUNDIR/dict_nodes)\n"
"  -a, --nodes LIST       comma-separated node list of the first map\n"
"                         (default: this node only; the log's map wins)\n"
"  -R, --replicas N       copies of each shard, 1-4 (default 2 with >= 2\n"
"                         nodes)\n"
"  -s, --sync MODE        batch (fdatasync once per burst, before replies;\n"
"                         default) or none (no fdatasync)\n"
"  -b, --bind ADDR        also listen on TCP at ADDR (e.g. 127.0.0.1)\n"
"  -p, --port PORT        TCP port (default 0: ephemeral)\n"
"      --keys DIR         the job's key directory (DIR/job.key, mode 0600):\n"
"                         TCP, to clients and to the other servers, is\n"
"                         CURVE and serves only holders of the key\n"
"                         (default: $TELEM_KEYS, else RUNDIR/keys when it\n"
"                         holds a key, else plain TCP)\n"
"      --insecure         allow plain TCP off loopback (a network only you\n"
"                         use): anyone who reaches it can read and write\n"
"                         the dictionary\n"
"      --max-tcp-peers N  TCP connections held at once; more are refused\n"
"                         (default 512; at most half the open-file limit)\n"
"  -l, --log-level LVL    error, warn, info (default) or debug\n"
"  -h, --help             show this help\n"
"  -V, --version          show the version\n"
"\n"
"On start it prints 'endpoint<TAB>EP' and 'ready'.  The log is\n"
"RUNDIR/NODE/dict.log.  It stops on SIGINT, SIGTERM or a shutdown request.\n"
"Every second it records telem_dict_keys, telem_dict_bytes,\n"
"telem_dict_log_bytes, telem_dict_epoch and telem_dict_bad_messages\n"
"(level 1) to the node's telemd.\n"
"Exit status: 0 after a clean stop, 1 on a start-up error, 2 on bad usage.\n";

typedef struct {
    ddict_actor_config_t cfg;
    unsigned long stats_calls;  /* s_on_stats calls so far */
    char node[TELEM_NAME_MAX + 1];
    char rundir[TELEM_PATH_MAX];
    char nodefile[TELEM_PATH_MAX];
    char tcp[200];
    char *list;
    const char *list_arg;       /* --nodes as given */
    const char *names[DDICT_NODES_MAX];
    const char *bind;
    long port;
    const char *keys_dir;       /* --keys */
    int insecure;
    telem_log_level_t level;
} s_args_t;

#define S_PROG "telem_dictd"

static int
s_nodes(s_args_t *a, const char *arg)
{
    free(a->list);
    a->list = strdup(arg);
    a->list_arg = arg;
    int n = 0;
    for (char *save = NULL, *t = strtok_r(a->list, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (n == DDICT_NODES_MAX || !telem_node_valid(t))
            return -1;
        a->names[n++] = t;
    }
    a->cfg.server.nodes = a->names;
    a->cfg.server.nnodes = n;
    return n > 0 ? 0 : -1;
}

static int
s_option(void *opt_arg, int c, char *arg)
{
    s_args_t *a = opt_arg;
    int64_t v;
    switch (c) {
    case 'n':
        if (!telem_node_valid(arg))
            return telem_cli_bad(S_PROG, "--node", arg,
                                 "not a valid node name");
        snprintf(a->node, sizeof a->node, "%s", arg);
        return 0;
    case 'r':
        return telem_rundir_resolve(a->rundir, sizeof a->rundir, arg)
                   ? telem_cli_bad(S_PROG, "--rundir", arg,
                                   "too long, or no current directory")
                   : 0;
    case 'N':
        return snprintf(a->nodefile, sizeof a->nodefile, "%s", arg)
                       >= (int) sizeof a->nodefile
                   ? telem_cli_bad(S_PROG, "--nodefile", arg, "too long") : 0;
    case 'a':
        return s_nodes(a, arg) ? telem_cli_bad(S_PROG, "--nodes", arg,
                                               "not a list of node names")
                               : 0;
    case 'R':
        if (telem_cli_int64(arg, 1, DDICT_REPLICAS_MAX, &v))
            return telem_cli_bad(S_PROG, "--replicas", arg, "expected 1-4");
        a->cfg.server.replicas = (int) v;
        return 0;
    case 's':
        if (strcmp(arg, "batch") && strcmp(arg, "none"))
            return telem_cli_bad(S_PROG, "--sync", arg,
                                 "expected batch or none");
        a->cfg.server.sync = strcmp(arg, "none") ? DDICT_SYNC_BATCH
                                                 : DDICT_SYNC_NONE;
        return 0;
    case 'b':
        a->bind = arg;
        return 0;
    case 'p':
        if (telem_cli_int64(arg, 0, 65535, &v))
            return telem_cli_bad(S_PROG, "--port", arg, "expected 0-65535");
        a->port = (long) v;
        return 0;
    case 'M':
        if (telem_cli_int64(arg, 1, 1 << 20, &v))
            return telem_cli_bad(S_PROG, "--max-tcp-peers", arg,
                                 "expected 1-1048576");
        a->cfg.max_tcp_peers = (int) v;
        return 0;
    case 'k':
        a->keys_dir = arg;
        return 0;
    case 'I':
        a->insecure = 1;
        return 0;
    }
    return 2;
}

/* Whether --nodes names this node: a server outside its first map would
   own no shard, and its clients would wait for it in vain. */
static int
s_lists_node(const s_args_t *a)
{
    for (int i = 0; i < a->cfg.server.nnodes; i++)
        if (strcmp(a->names[i], a->node) == 0)
            return 1;
    return 0;
}

/* Fills in what the command line left out: node name, run directory,
   node file; and the TCP endpoint from --bind and --port. */
static int
s_finish(s_args_t *a)
{
    if (!a->node[0] && telem_node_default(a->node, sizeof a->node))
        return telem_cli_bad(S_PROG, "--node", "", "no usable default");
    if (a->list_arg && !s_lists_node(a))
        return telem_cli_error(S_PROG, "invalid --nodes '%s': the list must "
                               "contain this node, '%s'", a->list_arg,
                               a->node);
    if (!a->rundir[0] && telem_rundir_default(a->rundir, sizeof a->rundir))
        return telem_cli_bad(S_PROG, "--rundir", "", "no usable default");
    if (!a->nodefile[0]) {
        const char *env = getenv("TELEM_DICT_NODEFILE");
        if (snprintf(a->nodefile, sizeof a->nodefile, "%s/dict_nodes",
                     a->rundir) >= (int) sizeof a->nodefile)
            return telem_cli_bad(S_PROG, "--rundir", a->rundir, "too long");
        if (env && *env)
            snprintf(a->nodefile, sizeof a->nodefile, "%s", env);
    }
    if (a->bind)
        snprintf(a->tcp, sizeof a->tcp, "tcp://%s:%ld", a->bind, a->port);
    return 0;
}



/* Returns 0 to run, 1 after --help or --version, 2 on a bad command
   line. */
static int
s_parse(s_args_t *a, int argc, char **argv)
{
    static const struct option opts[] = {
        { "node", 1, NULL, 'n' }, { "rundir", 1, NULL, 'r' },
        { "nodefile", 1, NULL, 'N' }, { "nodes", 1, NULL, 'a' },
        { "replicas", 1, NULL, 'R' }, { "sync", 1, NULL, 's' },
        { "bind", 1, NULL, 'b' }, { "port", 1, NULL, 'p' },
        { "log-level", 1, NULL, 'l' }, { "max-tcp-peers", 1, NULL, 'M' },
        { "keys", 1, NULL, 'k' }, { "insecure", 0, NULL, 'I' },
        { "help", 0, NULL, 'h' },
        { "version", 0, NULL, 'V' }, { NULL, 0, NULL, 0 } };
    const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage, .shortopts = "n:r:N:a:R:s:b:p:l:hV",
        .longopts = opts, .option = s_option, .log_level = &a->level,
        .version = S_PROG " 0.1.0",
    };
    int rc = telem_cli_parse_spec(&spec, argc, argv, a);
    return rc ? rc : s_finish(a);
}

/* The server's own figures as metrics of its node (level 1, to the
 * node's telemd through the user API, so they are series like any other:
 * telem_client, telem_agg and Grafana show them per host).  The
 * descriptions go with the first calls and then once a minute: telemd may
 * not listen yet when the server starts, and one that restarts has
 * forgotten them. */
static void
s_describe(void)
{
    telem_describe("telem_dict_keys", "gauge", "",
                   "Keys held by this node's dictionary server (its shards, "
                   "replicas included).");
    telem_describe("telem_dict_bytes", "gauge", "bytes",
                   "Bytes of keys and values held by this node's dictionary "
                   "server.");
    telem_describe("telem_dict_log_bytes", "gauge", "bytes",
                   "Size of this node's dictionary log on disk (compacted "
                   "past a threshold).");
    telem_describe("telem_dict_epoch", "gauge", "",
                   "The dictionary's shard-map epoch (one more per re-form).");
    telem_describe("telem_dict_bad_messages", "counter", "",
                   "Messages this node's dictionary server refused since it "
                   "started: malformed, of a kind it does not take, or of "
                   "too many frames.");
}

static void
s_on_stats(const ddict_server_stats_t *st, void *arg)
{
    unsigned long *calls = arg;
    if (*calls < 5 || *calls % 60 == 0)
        s_describe();
    ++*calls;
    telem_add_data("telem_dict_keys", (double) st->keys, 0, 1);
    telem_add_data("telem_dict_bytes", (double) st->bytes, 0, 1);
    telem_add_data("telem_dict_log_bytes", (double) st->log_bytes, 0, 1);
    telem_add_data("telem_dict_epoch", (double) st->epoch, 0, 1);
    telem_add_data("telem_dict_bad_messages", (double) st->bad_messages, 0,
                   1);
}

static void
s_self_metrics(s_args_t *a)
{
    /* The user API finds the node's telemd from these. */
    if (setenv("TELEM_NODE", a->node, 1) || setenv("TELEM_RUNDIR", a->rundir, 1))
        return;
    unsetenv("TELEM_INGEST");
    a->cfg.on_stats = s_on_stats;
    a->cfg.stats_arg = &a->stats_calls;
    a->cfg.stats_period_ns = TELEM_NS_PER_SEC;
}

/* Runs the server until a signal or a shutdown request.  0, or 1 when it
   could not start. */
static int
s_serve(s_args_t *a)
{
    int err = 0;
    ddict_actor_t *actor = ddict_actor_new(&a->cfg, &err);
    if (!actor) {
        telem_log(TELEM_LOG_ERROR, "cannot start: %s", telem_strerror(err));
        return 1;
    }
    printf("endpoint\t%s\nready\n", ddict_actor_endpoint(actor));
    fflush(stdout);
    char *msg = zstr_recv(ddict_actor_pipe(actor));
    zstr_free(&msg);
    ddict_actor_destroy(&actor);
    return 0;
}

/* The job's keys and the ZAP handler that checks them, before the
   server binds (docs/security.md).  0, or an exit status. */
static int
s_security(s_args_t *a, telem_keys_t **keys, telem_zap_t **zap)
{
    char why[512];
    int err = telem_keys_for_bind(a->keys_dir, a->insecure, a->rundir,
                                  a->tcp[0] ? a->tcp : NULL, keys, why,
                                  sizeof why);
    if (err) {
        fprintf(stderr, S_PROG ": %s\n", why);
        return err == TELEM_EPERM ? 2 : 1;
    }
    a->cfg.keys = *keys;
    if (*keys && !(*zap = telem_zap_new(*keys, &err))) {
        fprintf(stderr, S_PROG ": cannot start the ZAP handler: %s\n",
                telem_strerror(err));
        return 1;
    }
    if (a->tcp[0] && !*keys)
        telem_log(TELEM_LOG_WARN, "plain TCP at %s (no keys): anyone who "
                  "reaches it%s can read and write this dictionary; "
                  "--keys makes it CURVE", a->tcp,
                  telem_keys_loopback(a->tcp) ? " (every user of this "
                  "machine)" : "");
    return 0;
}

int
main(int argc, char **argv)
{
    s_args_t a;
    memset(&a, 0, sizeof a);
    a.level = TELEM_LOG_INFO;
    a.cfg.server.sync = DDICT_SYNC_BATCH;
    int rc = s_parse(&a, argc, argv);
    if (rc) {
        free(a.list);
        return rc == 1 ? 0 : rc;
    }
    telem_log_init("telem_dictd", a.level);
    /* Before any socket exists (telem_limits.h: libzmq aborts when an ipc
       accept finds the descriptor table full). */
    a.cfg.max_tcp_peers = telem_limits_start(a.cfg.max_tcp_peers,
                                             a.tcp[0] != '\0');
    zsys_init();
    zsys_catch_interrupts();
    a.cfg.node = a.node;
    a.cfg.rundir = a.rundir;
    a.cfg.nodefile = a.nodefile;
    a.cfg.tcp = a.tcp[0] ? a.tcp : NULL;
    telem_keys_t *keys = NULL;
    telem_zap_t *zap = NULL;
    if ((rc = s_security(&a, &keys, &zap)) == 0) {
        s_self_metrics(&a);
        rc = s_serve(&a);
    }
    telem_zap_destroy(&zap);
    telem_keys_destroy(&keys);
    free(a.list);
    return rc;
}
