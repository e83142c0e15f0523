/* telem_relay.c - the relay's command line: parse flags, load the job's
 * key and start its ZAP handler before any socket, serve until a signal
 * (docs/relay.md).
 *
 * Everything else lives in relay_server.c (sockets, workers) and
 * relay_core.c (what one request means).
 */
#include <czmq.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay_server.h"
#include "telem_cli.h"
#include "telem_error.h"
#include "telem_keys.h"
#include "telem_limits.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_zap.h"

#define S_PROG "telem_relay"
#define S_GROUP_MAX TELEM_RELAY_NODES_MAX

static const char s_usage[] =
"Usage: telem_relay --nodefile FILE --group NODE,NODE,... [OPTIONS]\n"
"A relay of the analysis client's fan-out: serves requests for the nodes\n"
"of its group, asking each node and answering with every node's reply\n"
"merged, so a client of many nodes talks to a few relays instead of every\n"
"node.  Only reads pass (queries, status, sync, snapshots); control that\n"
"changes or stops a node is refused (docs/relay.md).\n"
"\n"
"Options:\n"
"  -N, --nodefile FILE    the job's node file: where the group's nodes are\n"
"  -g, --group LIST       the nodes this relay serves, comma-separated\n"
"  -b, --bind ADDR        TCP address to serve on (default 127.0.0.1;\n"
"                         'none': ipc only)\n"
"  -p, --port PORT        TCP port (default 0: an ephemeral port)\n"
"      --keys DIR         the job's key directory (DIR/job.key): TCP is\n"
"                         CURVE, only the job's processes get in, and the\n"
"                         relay reaches its nodes with the same key\n"
"                         (default: $TELEM_KEYS, else RUNDIR/keys)\n"
"      --insecure         allow a plain TCP bind off loopback\n"
"  -r, --rundir DIR       run directory: the ipc socket lives there\n"
"                         (default: $TELEM_RUNDIR, $XDG_RUNTIME_DIR/telem\n"
"                         or /tmp/telem-UID)\n"
"  -n, --name NAME        the relay's name (default relay-FIRSTNODE)\n"
"  -w, --workers N        requests served at once (default 4, 1-64)\n"
"      --max-pending N    requests queued beyond the workers; more are\n"
"                         refused at once (default 64)\n"
"      --max-reply MIB    replies held for one request (default 256)\n"
"      --max-tcp-peers N  TCP connections held at once (default 512)\n"
"  -l, --log-level LVL    error, warn, info (default) or debug\n"
"  -h, --help             show this help\n"
"\n"
"On start it prints 'relay<TAB>NAME', 'query<TAB>ENDPOINT' (TCP, when\n"
"bound), 'ipc<TAB>ENDPOINT', then 'ready'.  Clients find relays in the\n"
"relays file beside the node file: '<name><TAB><endpoint><TAB><nodes>'.\n"
"Exit status: 0 after SIGINT or SIGTERM, 1 on a start-up error, 2 on bad\n"
"usage.\n";

typedef struct {
    const char *nodefile;
    char *group;                    /* the --group list, split in place */
    const char *names[S_GROUP_MAX];
    char *endpoints[S_GROUP_MAX];
    size_t ngroup;
    const char *bind_addr;
    long port;
    const char *keys_dir;
    int insecure;
    char rundir[TELEM_PATH_MAX];
    char name[TELEM_NAME_MAX + 1];
    relay_server_config_t cfg;
} s_args_t;

static int
s_option(void *arg, int c, char *v)
{
    s_args_t *a = arg;
    int64_t i;
    double d;
    switch (c) {
    case 'N': a->nodefile = v; return 0;
    case 'g': a->group = v; return 0;
    case 'b': a->bind_addr = v; return 0;
    case 'p':
        if (telem_cli_int64(v, 0, 65535, &i))
            return telem_cli_bad(S_PROG, "--port", v, "0 to 65535");
        a->port = (long) i;
        return 0;
    case 'k': a->keys_dir = v; return 0;
    case 'I': a->insecure = 1; return 0;
    case 'r':
        if (telem_rundir_resolve(a->rundir, sizeof a->rundir, v))
            return telem_cli_bad(S_PROG, "--rundir", v, "path too long");
        return 0;
    case 'n':
        if (!telem_node_valid(v))
            return telem_cli_bad(S_PROG, "--name", v,
                                 "1-255 bytes, no '/', tab or newline");
        snprintf(a->name, sizeof a->name, "%s", v);
        return 0;
    case 'w':
        if (telem_cli_int64(v, 1, 64, &i))
            return telem_cli_bad(S_PROG, "--workers", v, "1 to 64");
        a->cfg.workers = (int) i;
        return 0;
    case 'P':
        if (telem_cli_int64(v, 0, 100000, &i))
            return telem_cli_bad(S_PROG, "--max-pending", v, "0 to 100000");
        a->cfg.max_pending = (int) i;
        return 0;
    case 'R':
        if (telem_cli_number(v, 1, 65536, &d))
            return telem_cli_bad(S_PROG, "--max-reply", v, "MiB, 1 to 65536");
        a->cfg.max_reply_bytes = (size_t) (d * 1048576.0);
        return 0;
    case 'M':
        if (telem_cli_int64(v, 1, 1 << 20, &i))
            return telem_cli_bad(S_PROG, "--max-tcp-peers", v,
                                 "1 to 1048576");
        a->cfg.max_tcp_peers = (int) i;
        return 0;
    default: return 2;
    }
}

static int
s_parse(s_args_t *a, int argc, char **argv, telem_log_level_t *loglevel)
{
    static const struct option opts[] = {
        { "nodefile", 1, 0, 'N' }, { "group", 1, 0, 'g' },
        { "bind", 1, 0, 'b' }, { "port", 1, 0, 'p' }, { "keys", 1, 0, 'k' },
        { "insecure", 0, 0, 'I' }, { "rundir", 1, 0, 'r' },
        { "name", 1, 0, 'n' }, { "workers", 1, 0, 'w' },
        { "max-pending", 1, 0, 'P' }, { "max-reply", 1, 0, 'R' },
        { "max-tcp-peers", 1, 0, 'M' }, { "log-level", 1, 0, 'l' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
    };
    const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage, .shortopts = "N:g:b:p:r:n:w:l:h",
        .longopts = opts, .option = s_option, .log_level = loglevel,
    };
    int rc = telem_cli_parse_spec(&spec, argc, argv, a);
    if (rc)
        return rc;
    if (!a->nodefile || !a->group)
        return telem_cli_error(S_PROG, "--nodefile and --group are "
                               "required");
    return 0;
}

/* Splits --group and finds every node's endpoint in the node file.
 * 0, or an exit status. */
static int
s_group(s_args_t *a)
{
    for (char *p = a->group, *next; p; p = next) {
        next = strchr(p, ',');
        if (next)
            *next++ = '\0';
        if (!telem_node_valid(p))
            return telem_cli_bad(S_PROG, "--group", p, "not a node name");
        if (a->ngroup == S_GROUP_MAX)
            return telem_cli_error(S_PROG, "--group: more than %d nodes",
                                   S_GROUP_MAX);
        char ep[1024];
        int rc = telem_nodefile_lookup(a->nodefile, p, ep, sizeof ep);
        if (rc) {
            fprintf(stderr, "%s: node '%s' is not in %s: %s\n", S_PROG, p,
                    a->nodefile, telem_strerror(rc));
            return 1;
        }
        a->names[a->ngroup] = p;
        if (!(a->endpoints[a->ngroup++] = strdup(ep)))
            return 1;
    }
    if (!*a->name)
        snprintf(a->name, sizeof a->name, "relay-%s", a->names[0]);
    return 0;
}

/* The job's keys and the ZAP handler that checks them, before any socket
   is bound; the workers' clients find the same keys through $TELEM_KEYS.
   0, or an exit status. */
static int
s_security(s_args_t *a, telem_keys_t **keys, telem_zap_t **zap)
{
    char why[512];
    int err = telem_keys_for_bind(a->keys_dir, a->insecure, a->rundir,
                                  a->cfg.tcp_bind, keys, why, sizeof why);
    if (err) {
        fprintf(stderr, "%s: %s\n", S_PROG, why);
        return err == TELEM_EPERM ? 2 : 1;
    }
    a->cfg.keys = *keys;
    if (!*keys)
        return 0;
    setenv(TELEM_KEYS_ENV, telem_keys_dir(*keys), 1);
    if (!(*zap = telem_zap_new(*keys, &err))) {
        fprintf(stderr, "%s: cannot start the ZAP handler: %s\n", S_PROG,
                telem_strerror(err));
        return 1;
    }
    return 0;
}

/* Run directory, endpoints.  0, or an exit status. */
static int
s_finish(s_args_t *a, char *ipc, size_t ipc_size, char *tcp, size_t tcp_size)
{
    char why[TELEM_PATH_MAX + 200];
    if (!*a->rundir && telem_rundir_default(a->rundir, sizeof a->rundir)) {
        fprintf(stderr, "%s: run directory path too long\n", S_PROG);
        return 2;
    }
    if (telem_rundir_prepare(a->rundir, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", S_PROG, why);
        return 1;
    }
    if (snprintf(ipc, ipc_size, "ipc://%s/%s.sock", a->rundir, a->name)
        >= (int) ipc_size) {
        fprintf(stderr, "%s: ipc path too long\n", S_PROG);
        return 2;
    }
    a->cfg.ipc_bind = ipc;
    if (strcmp(a->bind_addr, "none") != 0) {
        snprintf(tcp, tcp_size, "tcp://%s:%ld", a->bind_addr, a->port);
        a->cfg.tcp_bind = tcp;
    }
    a->cfg.name = a->name;
    a->cfg.names = a->names;
    a->cfg.endpoints = (const char *const *) a->endpoints;
    a->cfg.ngroup = a->ngroup;
    return 0;
}

static void
s_report(relay_server_t *srv, const char *name)
{
    relay_server_stats_t st;
    relay_server_stats(srv, &st);
    telem_log(TELEM_LOG_INFO, "relay %s stopping: %llu requests, %llu "
              "served, %llu refused (not a read), %llu bad, %llu "
              "overloaded, %llu dropped", name,
              (unsigned long long) st.requests,
              (unsigned long long) st.served,
              (unsigned long long) st.refused, (unsigned long long) st.bad,
              (unsigned long long) st.overloaded,
              (unsigned long long) st.dropped);
}

static int
s_serve(s_args_t *a)
{
    char why[512];
    int err = 0;
    relay_server_t *srv = relay_server_new(&a->cfg, &err, why, sizeof why);
    if (!srv) {
        fprintf(stderr, "%s: %s\n", S_PROG, why);
        return 1;
    }
    printf("relay\t%s\n", a->name);
    if (*relay_server_tcp_endpoint(srv))
        printf("query\t%s\n", relay_server_tcp_endpoint(srv));
    printf("ipc\t%s\nready\n", relay_server_ipc_endpoint(srv));
    fflush(stdout);
    telem_log(TELEM_LOG_INFO, "relay %s ready for %zu nodes at %s, %d "
              "workers", a->name, a->ngroup,
              *relay_server_tcp_endpoint(srv) ? relay_server_tcp_endpoint(srv)
                                              : relay_server_ipc_endpoint(srv),
              a->cfg.workers);
    relay_server_run(srv);
    s_report(srv, a->name);
    relay_server_destroy(&srv);
    return 0;
}

int
main(int argc, char **argv)
{
    static s_args_t a;
    a.bind_addr = "127.0.0.1";
    a.cfg.workers = 4;
    a.cfg.max_pending = 64;
    a.cfg.max_tcp_peers = TELEM_TCP_PEERS_DEFAULT;
    telem_log_level_t loglevel = TELEM_LOG_INFO;
    int rc = s_parse(&a, argc, argv, &loglevel);
    if (rc)
        return rc == 1 ? 0 : rc;
    telem_log_init(S_PROG, loglevel);
    static char ipc[TELEM_PATH_MAX + 300], tcp[300];
    if ((rc = s_group(&a)) != 0 ||
        (rc = s_finish(&a, ipc, sizeof ipc, tcp, sizeof tcp)) != 0)
        goto out;
    a.cfg.max_tcp_peers = telem_limits_start(a.cfg.max_tcp_peers,
                                             a.cfg.tcp_bind != NULL);
    telem_keys_t *keys = NULL;
    telem_zap_t *zap = NULL;
    if ((rc = s_security(&a, &keys, &zap)) == 0)
        rc = s_serve(&a);
    telem_zap_destroy(&zap);
    telem_keys_destroy(&keys);
out:
    for (size_t i = 0; i < a.ngroup; i++)
        free(a.endpoints[i]);
    return rc;
}
