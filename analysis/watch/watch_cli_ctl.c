/* watch_cli_ctl.c - `telem_watch ctl`: talk to a running watcher.
 *
 *   telem_watch ctl [options] status
 *   telem_watch ctl [options] thresholds [DET]
 *   telem_watch ctl [options] set DET PARAM VALUE
 *   telem_watch ctl [options] pause DET | resume DET
 *
 * Finds the watcher's control endpoint in <rundir>/<name>/endpoints (or
 * takes --endpoint), sends one watch_ctl request on a DEALER, waits for the
 * reply until --timeout, and prints it as text or JSON.  A watcher that is
 * gone costs one timeout and exit status 1, never a hang.
 */
#include "watch_cli.h"
#include "watch_out.h"
#include "telem_cli.h"
#include "telem_paths.h"
#include "telem_keys.h"
#include "telem_sock.h"
#include "telem_time.h"

#include <czmq.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_PROG "telem_watch ctl"
/* A usage error: the message, the --help hint, exit status 2. */
#define S_BAD(...) telem_cli_error(S_PROG, __VA_ARGS__)

static const char s_usage[] =
"usage: telem_watch ctl [options] COMMAND\n"
"commands:\n"
"  status                    the watcher's counters, nodes that did not\n"
"                            answer, and each detector's state\n"
"  thresholds [DET]          every parameter of every detector (or DET's)\n"
"  set DET PARAM VALUE       change a parameter; takes effect next tick\n"
"  pause DET                 stop running DET (its state is kept)\n"
"  resume DET                run DET again\n"
"options:\n"
"  --name NAME               the watcher's name (default telem_watch)\n"
"  --rundir DIR              run directory (default $TELEM_RUNDIR, ...)\n"
"  --endpoint EP             control endpoint (instead of the files)\n"
"  --timeout MS              wait for the reply (default 2000)\n"
"  --json                    print the reply as JSON\n"
"  -h, --help                this text\n"
"exit: 0 done, 1 refused or no answer, 2 bad command line\n";

enum { O_NAME = 256, O_RUNDIR, O_EP, O_TIMEOUT, O_JSON };

typedef struct {
    const char *name, *rundir, *endpoint;
    int timeout_ms;
    int json;
    telem_watch_ctl_t req;
} s_ctl_t;

/* Reads the "ctl" line of the watcher's endpoints file into ep. */
static int
s_find_endpoint(const s_ctl_t *c, char *ep, size_t size)
{
    char rundir[TELEM_PATH_MAX], path[TELEM_PATH_MAX + 64];
    if (c->rundir ? telem_rundir_resolve(rundir, sizeof rundir, c->rundir)
                  : telem_rundir_default(rundir, sizeof rundir))
        return -1;
    telem_node_path(path, sizeof path, rundir,
                    c->name ? c->name : WATCH_NAME_DEFAULT, "endpoints");
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, S_PROG ": no running watcher: cannot read %s: %s\n",
                path, strerror(errno));
        return -1;
    }
    char line[TELEM_PATH_MAX + 64];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "ctl ", 4) == 0) {
            snprintf(ep, size, "%s", line + 4);
            found = 1;
        }
    }
    fclose(f);
    if (!found)
        fprintf(stderr, S_PROG ": %s has no ctl line\n", path);
    return found ? 0 : -1;
}

/* The command and its arguments, for telem_cli_parse_spec(): every word
   from the first operand on ('+' in the short options), so that a VALUE
   such as -1 is not read as a flag.  Returns 0 or 2. */
static int
s_command(void *arg, int argc, char **argv)
{
    s_ctl_t *c = arg;
    static const struct { const char *name; int op, nargs; } cmds[] = {
        { "status", TELEM_WCTL_STATUS, 0 },
        { "thresholds", TELEM_WCTL_THRESHOLDS, -1 },
        { "set", TELEM_WCTL_SET, 3 },
        { "pause", TELEM_WCTL_PAUSE, 1 },
        { "resume", TELEM_WCTL_RESUME, 1 },
    };
    if (argc < 1)
        return S_BAD("no command (status, thresholds, set, pause, resume)");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(argv[0], cmds[i].name) != 0)
            continue;
        int n = argc - 1;
        if ((cmds[i].nargs >= 0 && n != cmds[i].nargs) ||
            (cmds[i].nargs < 0 && n > 1))
            return S_BAD("wrong number of arguments for '%s'", argv[0]);
        c->req.op = cmds[i].op;
        c->req.detector = n >= 1 ? argv[1] : "";
        c->req.param = n >= 2 ? argv[2] : "";
        c->req.value = n >= 3 ? argv[3] : "";
        return 0;
    }
    return S_BAD("unknown command '%s'", argv[0]);
}

static int
s_flag(void *arg, int ch, char *v)
{
    s_ctl_t *c = arg;
    int64_t ms;
    switch (ch) {
    case O_NAME: c->name = v; return 0;
    case O_RUNDIR: c->rundir = v; return 0;
    case O_EP: c->endpoint = v; return 0;
    case O_JSON: c->json = 1; return 0;
    case O_TIMEOUT:
        if (telem_cli_int64(v, 1, 3600000, &ms))
            return S_BAD("--timeout '%s': expected 1..3600000 ms", v);
        c->timeout_ms = (int) ms;
        return 0;
    default:
        return telem_cli_hint(S_PROG);
    }
}

/* Returns -1 to go on, else the exit status. */
static int
s_parse(s_ctl_t *c, int argc, char **argv)
{
    static const struct option opts[] = {
        { "name", required_argument, NULL, O_NAME },
        { "rundir", required_argument, NULL, O_RUNDIR },
        { "endpoint", required_argument, NULL, O_EP },
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "json", no_argument, NULL, O_JSON },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage, .shortopts = "+:h",
        .longopts = opts, .option = s_flag, .operands = s_command,
    };
    int rc = telem_cli_parse_spec(&spec, argc, argv, c);
    if (rc)
        return rc == 1 ? 0 : rc;
    return -1;
}

/* ---- printing ---------------------------------------------------------- */

static void
s_print_json(const telem_watch_ctl_reply_t *r)
{
    json_t *o = json_object(), *rows = json_array();
    json_object_set_new(o, "code", json_integer(r->code));
    json_object_set_new(o, "message", watch_out_json_string(r->message));
    for (uint32_t i = 0; i < r->nrows; i++) {
        json_t *row = json_object();
        json_object_set_new(row, "detector",
                            watch_out_json_string(r->rows[i].detector));
        json_object_set_new(row, "key", watch_out_json_string(r->rows[i].key));
        json_object_set_new(row, "value",
                            watch_out_json_string(r->rows[i].value));
        json_array_append_new(rows, row);
    }
    json_object_set_new(o, "rows", rows);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s)
        printf("%s\n", s);
    free(s);
    json_decref(o);
}

static void
s_print_text(const s_ctl_t *c, const telem_watch_ctl_reply_t *r)
{
    if (c->req.op == TELEM_WCTL_SET) {
        printf("%s\n", r->message);
        return;
    }
    const char *group = NULL;
    for (uint32_t i = 0; i < r->nrows; i++) {
        const telem_watch_row_t *w = &r->rows[i];
        if (c->req.op == TELEM_WCTL_THRESHOLDS) {
            printf("%-16s %-16s %s\n", w->detector, w->key, w->value);
            continue;
        }
        if (!group || strcmp(group, w->detector) != 0) {
            if (*w->detector)
                watch_cli_print_name(stdout, w->detector, group ? "\n[" : "[");
            if (*w->detector)
                printf("]\n");
            group = w->detector;
        }
        printf("  %-18s %s\n", w->key, w->value);
    }
}

/* Prints a reply; returns the exit status. */
static int
s_show(const s_ctl_t *c, const telem_watch_ctl_reply_t *r)
{
    if (c->json)
        s_print_json(r);
    if (r->code != 0) {
        fprintf(stderr, S_PROG ": %s: %s\n", telem_strerror(r->code),
                r->message);
        return 1;
    }
    if (!c->json)
        s_print_text(c, r);
    return 0;
}

/* ---- the request ------------------------------------------------------- */

static int
s_exchange(s_ctl_t *c, const char *ep, const telem_keys_t *keys)
{
    int rc = 1;
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    zsock_t *s = NULL;
    zpoller_t *p = NULL;
    const void *data;
    size_t size;
    c->req.id = ((uint64_t) getpid() << 32) ^ (uint64_t) telem_mono_ns();
    if (!enc || !dec
        || telem_proto_encode_watch_ctl(enc, &c->req, &data, &size) != 0) {
        fprintf(stderr, S_PROG ": cannot build the request\n");
        goto out;
    }
    const telem_sock_opts_t o = {
        .max_msg = TELEM_PROTO_MAX_MSG, .sndhwm = TELEM_SOCK_KEEP,
        .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = 0,
        .sndtimeo_ms = TELEM_SOCK_KEEP, .keys = keys,
    };
    if (!(s = telem_sock_new_connect(ZMQ_DEALER, &o, ep))) {
        fprintf(stderr, S_PROG ": bad endpoint %s\n", ep);
        goto out;
    }
    zmq_send(zsock_resolve(s), data, size, 0);
    p = zpoller_new(s, NULL);
    int64_t end = telem_mono_ns() + c->timeout_ms * TELEM_NS_PER_MS;
    while (p && telem_mono_ns() < end) {
        int left = (int) ((end - telem_mono_ns()) / TELEM_NS_PER_MS) + 1;
        if (zpoller_wait(p, left) != s)
            continue;
        zframe_t *f = zframe_recv(s);
        telem_msg_t m;
        int drc = f ? telem_proto_decode(dec, zframe_data(f), zframe_size(f),
                                         &m) : TELEM_EIO;
        if (drc == 0 && (int) m.type == TELEM_MSG_WATCH_CTL_REPLY &&
            m.u.watch_ctl_reply.id == c->req.id) {
            rc = s_show(c, &m.u.watch_ctl_reply);
            zframe_destroy(&f);
            goto out;
        }
        zframe_destroy(&f);
    }
    fprintf(stderr, S_PROG ": no answer from %s within %d ms\n", ep,
            c->timeout_ms);
out:
    zpoller_destroy(&p);
    zsock_destroy(&s);
    telem_proto_encoder_destroy(&enc);
    telem_proto_decoder_destroy(&dec);
    return rc;
}

int
watch_cli_ctl_main(int argc, char **argv)
{
    s_ctl_t c = { .timeout_ms = 2000 };
    int rc = s_parse(&c, argc, argv);
    if (rc >= 0)
        return rc;
    char ep[TELEM_PATH_MAX + 64];
    if (c.endpoint)
        snprintf(ep, sizeof ep, "%s", c.endpoint);
    else if (s_find_endpoint(&c, ep, sizeof ep))
        return 1;
    /* A watcher's control on TCP is CURVE with the job's key. */
    char why[512];
    telem_keys_t *keys = NULL;
    if (telem_keys_find(c.rundir, NULL, &keys, why, sizeof why) != 0) {
        fprintf(stderr, S_PROG ": %s\n", why);
        return 1;
    }
    zsys_handler_set(NULL);
    rc = s_exchange(&c, ep, keys);
    telem_keys_destroy(&keys);
    return rc;
}
