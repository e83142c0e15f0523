/* telem_watch.c - the watcher: find the hardware that hurts a job, say so,
 * and act.
 *
 *   telem_watch --detector slowgpu [--detector ...] [options]
 *   telem_watch ctl status|thresholds|set DET PARAM VALUE|pause DET|resume DET
 *   telem_watch --list
 *
 * Every --period it runs one tick of the core (watch.c: queries
 * through the analysis client with a deadline, the detectors), prints each
 * event (text, or JSON lines with --json), publishes it, and acts on those
 * of severity --act-on or higher: --exec runs a command, --restart-endpoint
 * asks a launcher to restart without the flagged nodes and waits for the
 * ack until a deadline.  Every event is also appended to
 * <rundir>/<name>/events.jsonl (watch_out.h), which telem_agg and
 * `telem_client report` read.  Between ticks it answers control requests.  One
 * thread, one zpoller, absolute tick times; no sleeps.  Every argument is
 * checked here before a socket is opened.
 */
#include "watch_cli.h"
#include "watch_net.h"
#include "watch_out.h"
#include "telem_limits.h"
#include "telem_paths.h"
#include "telem_log.h"
#include "telem_time.h"
#include "telem_why.h"
#include "telem_zap.h"

#include <czmq.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define S_CHILDREN_MAX 16

static volatile sig_atomic_t s_stop;

static void
s_on_signal(int sig)
{
    (void) sig;
    s_stop = 1;
}

static void
s_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

/* ---- a set of names ---------------------------------------------------- */

typedef struct {
    char **v;
    size_t n;
} s_names_t;

static int
s_names_has(const s_names_t *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0)
            return 1;
    return 0;
}

static int
s_names_add(s_names_t *s, const char *name)
{
    if (s_names_has(s, name))
        return 0;
    char **v = realloc(s->v, (s->n + 1) * sizeof *v);
    if (!v)
        return TELEM_ENOMEM;
    s->v = v;
    if (!(v[s->n] = strdup(name)))
        return TELEM_ENOMEM;
    s->n++;
    return 0;
}

static void
s_names_clear(s_names_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* ---- the running watcher ----------------------------------------------- */

typedef struct {
    watch_cli_t *cli;
    watch_t *watch;
    watch_net_t *net;
    telem_keys_t *keys;        /* the job's, where found */
    telem_zap_t *zap;          /* with keys and a TCP --pub or --ctl */
    zpoller_t *poller;
    ac_t *ac;                  /* the watch's analysis client */
    struct stat relays_st;     /* the relays file it read (zero: none) */
    uint64_t seq;
    size_t children;
    telem_ratelimit_t rl;
    FILE *events;              /* <dir>/events.jsonl, NULL if unwritable */
    char events_path[TELEM_PATH_MAX + 16];
    /* restart action */
    int pending;
    uint64_t pending_id;
    int64_t deadline;
    s_names_t asked, queued, done, qdets, qdevs;
    char reason[TELEM_TEXT_MAX];
    unsigned reason_dropped;   /* events' sentences left out of reason */
} s_run_t;

static int
s_rebuild_poller(s_run_t *r)
{
    zpoller_destroy(&r->poller);
    r->poller = zpoller_new(watch_net_ctl_sock(r->net), NULL);
    if (r->poller && watch_net_restart_sock(r->net))
        zpoller_add(r->poller, watch_net_restart_sock(r->net));
    return r->poller ? 0 : TELEM_ENOMEM;
}

/* Prints a restart line: status sent / accepted / refused / timeout. */
static void
s_print_restart(s_run_t *r, const char *status, const s_names_t *nodes,
                const char *msg)
{
    if (r->cli->json) {
        json_t *o = json_object(), *a = json_array();
        for (size_t i = 0; i < nodes->n; i++)
            json_array_append_new(a, watch_out_json_string(nodes->v[i]));
        json_object_set_new(o, "type", json_string("restart"));
        json_object_set_new(o, "id", json_integer((json_int_t) r->pending_id));
        json_object_set_new(o, "status", json_string(status));
        json_object_set_new(o, "exclude", a);
        json_object_set_new(o, "endpoint",
                            watch_out_json_string(r->cli->restart_ep));
        json_object_set_new(o, "message", watch_out_json_string(msg));
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        printf("restart %llx %s:", (unsigned long long) r->pending_id, status);
        for (size_t i = 0; i < nodes->n; i++)
            watch_cli_print_name(stdout, nodes->v[i], i ? ", " : " exclude ");
        printf("%s%s\n", *msg ? ": " : "", msg);
    }
    fflush(stdout);
}

/* Sends the queued nodes as one restart request. */
static void
s_restart_send(s_run_t *r)
{
    if (r->pending || r->queued.n == 0)
        return;
    telem_watch_dev_t *devs = calloc(r->qdevs.n + 1, sizeof *devs);
    for (size_t i = 0; devs && i < r->qdevs.n; i++) {
        char *tab = strchr(r->qdevs.v[i], '\t');
        *tab = '\0';                      /* "node\tdevice" kept in qdevs */
        devs[i] = (telem_watch_dev_t) { r->qdevs.v[i], tab + 1 };
    }
    telem_why_end(r->reason, sizeof r->reason, &r->reason_dropped);
    telem_restart_t m = {
        .ts_ns = telem_now_ns(), .reason = r->reason,
        .exclude = (const char *const *) r->queued.v,
        .nexclude = (uint32_t) r->queued.n, .devices = devs,
        .ndevices = devs ? (uint32_t) r->qdevs.n : 0,
        .detectors = (const char *const *) r->qdets.v,
        .ndetectors = (uint32_t) r->qdets.n,
    };
    int rc = watch_net_restart_send(r->net, &m);
    r->pending_id = m.id;
    free(devs);
    s_names_clear(&r->asked);
    r->asked = r->queued;
    r->queued = (s_names_t) { 0 };
    s_names_clear(&r->qdets);
    s_names_clear(&r->qdevs);
    if (rc) {
        char msg[256];
        snprintf(msg, sizeof msg, "could not send the request to %s: %s",
                 r->cli->restart_ep, telem_strerror(rc));
        telem_log(TELEM_LOG_ERROR, "restart: %s", msg);
        s_print_restart(r, "failed", &r->asked, msg);
        return;
    }
    r->pending = 1;
    r->deadline = telem_mono_ns() + r->cli->restart_timeout_ms * TELEM_NS_PER_MS;
    s_print_restart(r, "sent", &r->asked, r->reason);
}

static void
s_restart_ack(s_run_t *r)
{
    telem_restart_ack_t ack;
    int rc;
    while ((rc = watch_net_restart_recv(r->net, &ack)) != TELEM_ETIMEDOUT) {
        if (rc) {
            telem_log_limited(&r->rl, TELEM_LOG_WARN, "restart: a reply that "
                              "is not a restart_ack was dropped");
            continue;
        }
        if (!r->pending || ack.id != r->pending_id)
            continue;                     /* stale: not the request we wait for */
        r->pending = 0;
        if (ack.code == 0) {
            for (size_t i = 0; i < r->asked.n; i++)
                s_names_add(&r->done, r->asked.v[i]);
            s_print_restart(r, "accepted", &r->asked, ack.message);
        } else {
            char msg[TELEM_TEXT_MAX + 64];
            snprintf(msg, sizeof msg, "refused (%s): %s",
                     telem_strerror(ack.code), ack.message);
            telem_log(TELEM_LOG_ERROR, "restart: the launcher %s", msg);
            s_print_restart(r, "refused", &r->asked, msg);
        }
        s_restart_send(r);
    }
}

static void
s_restart_deadline(s_run_t *r)
{
    if (!r->pending || telem_mono_ns() < r->deadline)
        return;
    r->pending = 0;
    char msg[512];
    snprintf(msg, sizeof msg, "no acknowledgement from %s within %d ms; the "
             "job was not restarted by this request", r->cli->restart_ep,
             r->cli->restart_timeout_ms);
    telem_log(TELEM_LOG_ERROR, "restart: %s", msg);
    s_print_restart(r, "timeout", &r->asked, msg);
    if (watch_net_restart_reset(r->net) || s_rebuild_poller(r))
        telem_log(TELEM_LOG_ERROR, "restart: cannot reconnect to %s",
                  r->cli->restart_ep);
    s_restart_send(r);
}

/* Queues an event's nodes for the restart action.  The request's reason
 * is the sentence of every event that names one of its nodes (several
 * GPUs of a node, several nodes), joined with "; ", cut only between
 * sentences ("; and N more", telem_why_clause()). */
static void
s_restart_queue(s_run_t *r, const det_event_t *e)
{
    int mine = 0;
    for (size_t i = 0; i < e->nnodes; i++) {
        if (s_names_has(&r->done, e->nodes[i]) ||
            (r->pending && s_names_has(&r->asked, e->nodes[i])))
            continue;
        s_names_add(&r->queued, e->nodes[i]);
        mine = 1;
    }
    if (!mine)
        return;
    if (r->qdets.n == 0) {
        r->reason[0] = '\0';
        r->reason_dropped = 0;
    }
    telem_why_clause(r->reason, sizeof r->reason, "; ", e->text,
                     &r->reason_dropped);
    s_names_add(&r->qdets, e->detector);
    for (size_t i = 0; i < e->ndevices; i++) {
        char key[2 * TELEM_NAME_MAX + 4];
        snprintf(key, sizeof key, "%s\t%s", e->devices[i].node,
                 e->devices[i].device);
        s_names_add(&r->qdevs, key);
    }
}

/* ---- events and --exec ------------------------------------------------- */

static void
s_reap(s_run_t *r)
{
    int status;
    pid_t pid;
    while (r->children > 0 && (pid = waitpid(-1, &status, WNOHANG)) > 0) {
        r->children--;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            continue;
        telem_log_limited(&r->rl, TELEM_LOG_WARN, "--exec: command (pid %ld) "
                          "%s %d", (long) pid, WIFEXITED(status) ? "exited with"
                          : "killed by signal", WIFEXITED(status)
                          ? WEXITSTATUS(status) : WTERMSIG(status));
    }
}

static void
s_exec(s_run_t *r, const det_event_t *e)
{
    if (r->children >= S_CHILDREN_MAX) {
        telem_log_limited(&r->rl, TELEM_LOG_WARN, "--exec: %d commands still "
                          "running; event %llu not handed over",
                          S_CHILDREN_MAX, (unsigned long long) r->seq);
        return;
    }
    char why[512];
    pid_t pid;
    if (watch_out_exec(r->cli->exec_cmd, e, r->seq, &pid, why, sizeof why) == 0)
        r->children++;
    else
        telem_log_limited(&r->rl, TELEM_LOG_ERROR, "--exec: %s", why);
}

static void
s_print_event(s_run_t *r, const det_event_t *e)
{
    if (r->cli->json) {
        char *s = watch_out_event_json(e, r->seq);
        if (s)
            printf("%s\n", s);
        free(s);
        return;
    }
    char line[8192];
    watch_out_event_text(e, r->seq, line, sizeof line);
    printf("%s\n", line);
}

static void
s_handle_events(s_run_t *r)
{
    const det_events_t *evs = watch_events(r->watch);
    for (size_t i = 0; i < det_events_count(evs); i++) {
        const det_event_t *e = det_events_get(evs, i);
        r->seq++;
        s_print_event(r, e);
        if (watch_out_log_event(&r->events, r->events_path, e, r->seq))
            telem_log_limited(&r->rl, TELEM_LOG_WARN, "event %llu could not "
                              "be written to %s", (unsigned long long) r->seq,
                              r->events_path);
        if (watch_net_publish(r->net, e, r->seq))
            telem_log_limited(&r->rl, TELEM_LOG_WARN, "event %llu could not "
                              "be published", (unsigned long long) r->seq);
        if ((int) e->severity < (int) r->cli->act_on)
            continue;
        if (r->cli->exec_cmd)
            s_exec(r, e);
        if (r->cli->restart_ep)
            s_restart_queue(r, e);
    }
    fflush(stdout);
    if (r->cli->restart_ep)
        s_restart_send(r);
}

/* The relays file as it is now (all zero when there is none). */
static void
s_relays_stat(const s_run_t *r, struct stat *st)
{
    char path[TELEM_PATH_MAX];
    memset(st, 0, sizeof *st);
    if (ac_relays_path(r->cli->nodefile, path, sizeof path) != 1
        || stat(path, st) != 0)
        memset(st, 0, sizeof *st);
}

/* A relays file written or rewritten since the client was made (the
 * launcher writes it once its relays are ready, and again when it
 * regroups them): the client is made again, so that rounds go through
 * the relays it names.  On failure the old one is kept. */
static void
s_follow_relays(s_run_t *r)
{
    struct stat st;
    s_relays_stat(r, &st);
    if (st.st_dev == r->relays_st.st_dev && st.st_ino == r->relays_st.st_ino
        && st.st_size == r->relays_st.st_size
        && st.st_ctim.tv_sec == r->relays_st.st_ctim.tv_sec
        && st.st_ctim.tv_nsec == r->relays_st.st_ctim.tv_nsec)
        return;
    int err = 0;
    ac_t *ac = ac_connect(r->cli->nodefile, r->cli->timeout_ms, &err);
    if (!ac) {
        telem_log_limited(&r->rl, TELEM_LOG_WARN, "relays file changed; "
                          "cannot connect again: %s", telem_strerror(err));
        return;
    }
    telem_log(TELEM_LOG_INFO, "relays file changed: %zu relay(s) in use",
              ac_relay_count(ac));
    watch_set_ac(r->watch, ac);
    ac_close(&r->ac);
    r->ac = ac;
    r->relays_st = st;
}

static void
s_tick(s_run_t *r)
{
    s_follow_relays(r);
    int rc = watch_tick(r->watch, telem_now_ns());
    if (rc)
        telem_log_limited(&r->rl, TELEM_LOG_ERROR, "tick failed: %s",
                          telem_strerror(rc));
    size_t nm = watch_nmissing(r->watch);
    if (nm)
        telem_log_limited(&r->rl, TELEM_LOG_WARN, "%zu node%s did not answer "
                          "(first: %s)", nm, nm == 1 ? "" : "s",
                          watch_missing(r->watch, 0));
    s_handle_events(r);
}

/* ---- the loop ---------------------------------------------------------- */

static void
s_serve(s_run_t *r)
{
    char restart[16];
    snprintf(restart, sizeof restart, "%s", r->pending ? "pending" : "idle");
    const char *extra[] = {
        "pub", watch_net_pub_endpoint(r->net),
        "ctl", watch_net_ctl_endpoint(r->net),
        "act_on", r->cli->act_on == DET_SEV_ACT ? "act" : "warn",
        "exec", r->cli->exec_cmd ? r->cli->exec_cmd : "",
        "restart_endpoint", r->cli->restart_ep ? r->cli->restart_ep : "",
        "restart", restart,
    };
    if (watch_net_serve(r->net, r->watch, extra,
                        sizeof extra / sizeof extra[0]))
        telem_log_limited(&r->rl, TELEM_LOG_WARN, "a bad control request "
                          "was answered with an error (%llu so far)",
                          (unsigned long long)
                              watch_net_bad_requests(r->net));
}

/* ms until the earlier of the next tick and the restart deadline. */
static int
s_wait_ms(const s_run_t *r, int64_t next)
{
    int64_t until = next;
    if (r->pending && r->deadline < until)
        until = r->deadline;
    int64_t ms = (until - telem_mono_ns() + TELEM_NS_PER_MS - 1) / TELEM_NS_PER_MS;
    return ms < 0 ? 0 : ms > 60000 ? 60000 : (int) ms;
}

static int
s_loop(s_run_t *r)
{
    int64_t period = r->cli->period_ns, start = telem_mono_ns(), next = start;
    int64_t stop_at = r->cli->duration_ns ? start + r->cli->duration_ns : 0;
    uint64_t ticks = 0;
    while (!s_stop) {
        void *which = zpoller_wait(r->poller, s_wait_ms(r, next));
        if (which == watch_net_ctl_sock(r->net))
            s_serve(r);
        else if (which && which == watch_net_restart_sock(r->net))
            s_restart_ack(r);
        s_restart_deadline(r);
        s_reap(r);
        int64_t now = telem_mono_ns();
        int done = (r->cli->count && ticks >= r->cli->count) ||
                   (stop_at && now >= stop_at);
        if (done && !r->pending)
            break;
        if (done || now < next)
            continue;
        s_tick(r);
        ticks++;
        while (next <= telem_mono_ns())    /* absolute schedule, skip missed */
            next += period;
    }
    return 0;
}

/* Detectors first (a bad spec is a bad command line, exit 2), then the
 * node file and the sockets (exit 1). */
/* The job's keys and, when an endpoint of ours is TCP, the ZAP handler
   that checks them (docs/security.md).  0, or 1 with a logged reason. */
static int
s_security(s_run_t *r, char *why, size_t why_size)
{
    int err = telem_keys_find(r->cli->rundir, r->cli->nodefile, &r->keys,
                              why, why_size);
    if (err) {
        telem_log(TELEM_LOG_ERROR, "%s", why);
        return 1;
    }
    const char *pub = r->cli->pub_ep, *ctl = r->cli->ctl_ep;
    int tcp = (pub && strncmp(pub, "tcp://", 6) == 0)
              || (ctl && strncmp(ctl, "tcp://", 6) == 0);
    if (r->keys && tcp && !(r->zap = telem_zap_new(r->keys, &err))) {
        telem_log(TELEM_LOG_ERROR, "cannot start the ZAP handler: %s",
                  telem_strerror(err));
        return 1;
    }
    return 0;
}

static int
s_setup(s_run_t *r)
{
    char why[1024];
    int err = 0;
    if (!(r->watch = watch_new(NULL)))
        return 1;
    for (size_t i = 0; i < r->cli->ndetectors; i++)
        if (watch_add_detector(r->watch, r->cli->detectors[i], why,
                               sizeof why)) {
            fprintf(stderr, "telem_watch: --detector %s: %s\n",
                    r->cli->detectors[i], why);
            return 2;
        }
    for (size_t i = 0; i < r->cli->nsets; i++)
        if (watch_set_spec(r->watch, r->cli->sets[i], why, sizeof why)) {
            fprintf(stderr, "telem_watch: --set %s: %s\n", r->cli->sets[i],
                    why);
            return 2;
        }
    s_relays_stat(r, &r->relays_st);
    if (!(r->ac = ac_connect(r->cli->nodefile, r->cli->timeout_ms, &err))) {
        ac_nodefile_check(r->cli->nodefile, NULL, why, sizeof why);
        telem_log(TELEM_LOG_ERROR, "cannot use the node file: %s", why);
        return 1;
    }
    watch_set_ac(r->watch, r->ac);
    if (ac_relay_count(r->ac))
        telem_log(TELEM_LOG_INFO, "relays file read: %zu relay(s) in use",
                  ac_relay_count(r->ac));
    watch_set_timeout(r->watch, r->cli->timeout_ms);
    if (s_security(r, why, sizeof why))
        return 1;
    watch_net_opts_t no = { r->cli->rundir, r->cli->name, r->cli->pub_ep,
                            r->cli->ctl_ep, r->cli->restart_ep, r->keys,
                            r->cli->insecure };
    if (!(r->net = watch_net_new(&no, why, sizeof why, NULL))) {
        telem_log(TELEM_LOG_ERROR, "%s", why);
        return 1;
    }
    snprintf(r->events_path, sizeof r->events_path, "%s/events.jsonl",
             watch_net_dir(r->net));
    if (watch_out_log_open(r->events_path, &r->events, why, sizeof why))
        telem_log(TELEM_LOG_WARN, "%s; events go only to stdout and the "
                  "PUB socket", why);
    return s_rebuild_poller(r) ? 1 : 0;
}

static void
s_announce(const s_run_t *r)
{
    const char *pub = watch_net_pub_endpoint(r->net);
    const char *ctl = watch_net_ctl_endpoint(r->net);
    if (r->cli->json) {
        json_t *o = json_object();
        json_object_set_new(o, "type", json_string("start"));
        json_object_set_new(o, "pub", watch_out_json_string(pub));
        json_object_set_new(o, "ctl", watch_out_json_string(ctl));
        json_object_set_new(o, "detectors", json_integer(
                                (json_int_t) watch_ndetectors(r->watch)));
        json_object_set_new(o, "pid", json_integer((json_int_t) getpid()));
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        printf("telem_watch: %zu detector%s; events on %s; control on %s\n",
               watch_ndetectors(r->watch),
               watch_ndetectors(r->watch) == 1 ? "" : "s",
               pub, ctl);
    }
    fflush(stdout);
    telem_log(TELEM_LOG_INFO, "events on %s, control on %s, files in %s",
              pub, ctl, watch_net_dir(r->net));
}

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "ctl") == 0)
        return watch_cli_ctl_main(argc - 1, argv + 1);
    watch_cli_t cli;
    int rc = watch_cli_parse(argc, argv, &cli);
    if (rc >= 0) {
        watch_cli_free(&cli);
        return rc;
    }
    telem_log_init("telem_watch",
                   cli.verbose ? TELEM_LOG_DEBUG : TELEM_LOG_INFO);
    /* --pub and --ctl may be TCP endpoints: a table filled by idle peers
       would make libzmq abort at the next ipc accept (telem_limits.h). */
    if (telem_limits_raise_nofile(NULL))
        telem_log(TELEM_LOG_WARN, "cannot raise the open-file limit: %s",
                  strerror(errno));
    zsys_handler_set(NULL);
    s_signals();
    s_run_t r = { .cli = &cli, .rl = TELEM_RATELIMIT_INIT(10, 5) };
    rc = s_setup(&r);
    if (rc == 0) {
        s_announce(&r);
        rc = s_loop(&r);
    }
    zpoller_destroy(&r.poller);
    if (r.events)
        fclose(r.events);
    watch_net_destroy(&r.net);
    telem_zap_destroy(&r.zap);
    telem_keys_destroy(&r.keys);
    watch_destroy(&r.watch);
    ac_close(&r.ac);
    s_names_clear(&r.asked);
    s_names_clear(&r.queued);
    s_names_clear(&r.done);
    s_names_clear(&r.qdets);
    s_names_clear(&r.qdevs);
    watch_cli_free(&cli);
    return rc;
}
