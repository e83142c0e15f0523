/* watch_out.c - how the watcher shows and hands over an event: a text
 * line, a JSON line, a wire message, and the --exec action.
 *
 * Node names may hold any byte but '/', tab, CR, LF and NUL, and detector
 * texts quote them, so nothing here trusts a string: text output escapes
 * control bytes and quotes names; JSON goes through jansson, with invalid
 * UTF-8 replaced by U+FFFD first (jansson refuses it, and a JSON line must
 * stay valid whatever a host is called).  The --exec command gets the
 * event twice, as environment variables for shell one-liners and as JSON
 * on stdin for programs; it is started with posix_spawn and never waited
 * for here (the main loop reaps children without blocking).
 */
#include "watch_out.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- strings ----------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p, or 0. */
static size_t
s_utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
             : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    unsigned lo = 0x80, hi = 0xbf;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
    if (n == 0 || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

void *
watch_out_json_string(const char *s)
{
    json_t *j = json_string(s ? s : "");
    if (j)
        return j;
    size_t n = strlen(s);
    char *c = malloc(3 * n + 1), *o = c;
    if (!c)
        return NULL;
    for (const unsigned char *p = (const unsigned char *) s; *p;) {
        size_t k = s_utf8_len(p);
        if (k) {
            memcpy(o, p, k);
            o += k;
            p += k;
        } else {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            p++;
        }
    }
    *o = '\0';
    j = json_string(c);
    free(c);
    return j;
}

static json_t *
s_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static void
s_iso_time(int64_t ts_ns, char *buf, size_t size)
{
    time_t sec = (time_t) (ts_ns / 1000000000);
    int ms = (int) ((ts_ns % 1000000000) / 1000000);
    if (ms < 0) {
        sec--;
        ms += 1000;
    }
    struct tm tm;
    gmtime_r(&sec, &tm);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%03dZ", date, ms);
}

/* ---- JSON -------------------------------------------------------------- */

static json_t *
s_json_lists(const det_event_t *e)
{
    json_t *o = json_object(), *nodes = json_array(), *devs = json_array(),
           *ev = json_object();
    for (size_t i = 0; i < e->nnodes; i++)
        json_array_append_new(nodes, watch_out_json_string(e->nodes[i]));
    for (size_t i = 0; i < e->ndevices; i++) {
        json_t *d = json_object();
        json_object_set_new(d, "node",
                            watch_out_json_string(e->devices[i].node));
        json_object_set_new(d, "device",
                            watch_out_json_string(e->devices[i].device));
        json_array_append_new(devs, d);
    }
    for (size_t i = 0; i < e->nevidence; i++) {
        json_t *k = watch_out_json_string(e->evidence[i].name);
        if (k)
            json_object_set_new(ev, json_string_value(k),
                                s_num(e->evidence[i].value));
        json_decref(k);
    }
    json_object_set_new(o, "nodes", nodes);
    json_object_set_new(o, "devices", devs);
    json_object_set_new(o, "evidence", ev);
    return o;
}

char *
watch_out_event_json(const det_event_t *e, uint64_t seq)
{
    char when[64];
    s_iso_time(e->ts_ns, when, sizeof when);
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "type", json_string("event"));
    json_object_set_new(o, "seq", json_integer((json_int_t) seq));
    json_object_set_new(o, "detector", watch_out_json_string(e->detector));
    json_object_set_new(o, "severity",
                        json_string(det_severity_name(e->severity)));
    json_object_set_new(o, "ts_ns", json_integer(e->ts_ns));
    json_object_set_new(o, "time", json_string(when));
    json_object_set_new(o, "time_ms", json_integer(e->ts_ns / 1000000));
    json_t *lists = s_json_lists(e);
    json_object_update(o, lists);
    json_decref(lists);
    json_object_set_new(o, "score", s_num(e->score));
    json_object_set_new(o, "text", watch_out_json_string(e->text));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

/* ---- text -------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t left;
} s_out_t;

static void
s_put(s_out_t *o, const char *s, size_t n)
{
    if (o->left <= 1)
        return;
    if (n > o->left - 1)
        n = o->left - 1;
    memcpy(o->p, s, n);
    o->p += n;
    o->left -= n;
    *o->p = '\0';
}

/* Copies s with control bytes as \xNN; quoted: inside "..." with " and \
 * escaped too. */
static void
s_put_escaped(s_out_t *o, const char *s, int quoted)
{
    if (quoted)
        s_put(o, "\"", 1);
    for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
        char hex[8];
        if (*p < 0x20 || *p == 0x7f) {
            snprintf(hex, sizeof hex, "\\x%02x", *p);
            s_put(o, hex, 4);
        } else if (quoted && (*p == '"' || *p == '\\')) {
            s_put(o, "\\", 1);
            s_put(o, (const char *) p, 1);
        } else {
            s_put(o, (const char *) p, 1);
        }
    }
    if (quoted)
        s_put(o, "\"", 1);
}

size_t
watch_out_event_text(const det_event_t *e, uint64_t seq, char *buf, size_t size)
{
    if (size == 0)
        return 0;
    s_out_t o = { buf, size };
    char head[128];
    buf[0] = '\0';
    s_iso_time(e->ts_ns, head, sizeof head);
    s_put(&o, head, strlen(head));
    snprintf(head, sizeof head, " #%llu %s ", (unsigned long long) seq,
             e->severity == DET_SEV_ACT ? "ACT " : "WARN");
    s_put(&o, head, strlen(head));
    s_put_escaped(&o, e->detector, 0);
    s_put(&o, " nodes=", 7);
    for (size_t i = 0; i < e->nnodes; i++) {
        if (i)
            s_put(&o, ",", 1);
        s_put_escaped(&o, e->nodes[i], 1);
    }
    for (size_t i = 0; i < e->ndevices; i++) {
        s_put(&o, i ? "," : " devices=", i ? 1 : 9);
        s_put_escaped(&o, e->devices[i].node, 1);
        s_put(&o, "/", 1);
        s_put_escaped(&o, e->devices[i].device, 0);
    }
    snprintf(head, sizeof head, " score=%.4g: ", e->score);
    s_put(&o, head, strlen(head));
    s_put_escaped(&o, e->text, 0);
    return size - o.left;
}

/* ---- --exec ------------------------------------------------------------ */

/* Appends "NAME=value" to env (a NULL-terminated vector being built). */
static int
s_env(char **env, size_t *n, const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 2;
    if (!(env[*n] = malloc(len)))
        return TELEM_ENOMEM;
    snprintf(env[*n], len, "%s=%s", name, value);
    (*n)++;
    return 0;
}

/* "a\nb\nc" of the event's nodes, or of "node\tdevice" pairs. */
static char *
s_join(const det_event_t *e, int devices)
{
    size_t len = 1;
    size_t n = devices ? e->ndevices : e->nnodes;
    for (size_t i = 0; i < n; i++)
        len += devices ? strlen(e->devices[i].node) +
                         strlen(e->devices[i].device) + 2
                       : strlen(e->nodes[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    *p = '\0';
    for (size_t i = 0; i < n; i++)
        p += devices ? sprintf(p, "%s%s\t%s", i ? "\n" : "",
                               e->devices[i].node, e->devices[i].device)
                     : sprintf(p, "%s%s", i ? "\n" : "", e->nodes[i]);
    return s;
}

/* The child's environment: ours, minus any TELEM_EVENT_*, plus the event. */
static char **
s_event_env(const det_event_t *e, uint64_t seq, const char *json)
{
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 12, sizeof *env);
    char *nodes = s_join(e, 0), *devs = s_join(e, 1), num[64];
    int rc = env && nodes && devs ? 0 : TELEM_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (strncmp(environ[i], "TELEM_EVENT_", 12) != 0 &&
            !(env[k++] = strdup(environ[i])))
            rc = TELEM_ENOMEM;
    snprintf(num, sizeof num, "%llu", (unsigned long long) seq);
    rc = rc ? rc : s_env(env, &k, "TELEM_EVENT_SEQ", num);
    rc = rc ? rc : s_env(env, &k, "TELEM_EVENT_DETECTOR", e->detector);
    rc = rc ? rc : s_env(env, &k, "TELEM_EVENT_SEVERITY",
                         det_severity_name(e->severity));
    rc = rc ? rc : s_env(env, &k, "TELEM_EVENT_NODES", nodes);
    rc = rc ? rc : s_env(env, &k, "TELEM_EVENT_DEVICES", devs);
    snprintf(num, sizeof num, "%.17g", e->score);
    rc = rc ? rc : s_env(env, &k, "TELEM_EVENT_SCORE", num);
    snprintf(num, sizeof num, "%lld", (long long) e->ts_ns);
    rc = rc ? rc : s_env(env, &k, "TELEM_EVENT_TS_NS", num);
    rc = rc ? rc : s_env(env, &k, "TELEM_EVENT_TEXT", e->text);
    rc = rc ? rc : s_env(env, &k, "TELEM_EVENT_JSON", json);
    free(nodes);
    free(devs);
    if (rc && env) {
        for (size_t i = 0; i < k; i++)
            free(env[i]);
        free(env);
        return NULL;
    }
    return env;
}

static void
s_env_free(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
}

/* Starts sh -c cmd with its stdin the read end of a new pipe; *wfd gets
 * the write end. */
static int
s_spawn(const char *cmd, char **env, pid_t *pid, int *wfd)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return errno;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    char *argv[] = { "sh", "-c", (char *) cmd, NULL };
    int err = posix_spawn(pid, "/bin/sh", &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[0]);
    if (err) {
        close(fds[1]);
        return err;
    }
    *wfd = fds[1];
    return 0;
}

/* Writes the JSON line without blocking and without SIGPIPE: an event is a
 * few kB, well under a pipe's buffer, and a child that has exited or does
 * not read just misses it.  SIGPIPE is blocked around the write and a
 * pending one consumed, so the caller's disposition never matters. */
static void
s_write_quietly(int fd, char *json)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    size_t len = strlen(json);
    json[len] = '\n';
    ssize_t w = write(fd, json, len + 1);
    json[len] = '\0';
    if (w < 0 && errno == EPIPE) {
        struct timespec zero = { 0, 0 };
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int
watch_out_exec(const char *cmd, const det_event_t *e, uint64_t seq, pid_t *pid,
               char *why, size_t why_size)
{
    char *json = watch_out_event_json(e, seq);
    char **env = json ? s_event_env(e, seq, json) : NULL;
    int wfd = -1, err = env ? s_spawn(cmd, env, pid, &wfd) : ENOMEM;
    if (err == 0) {
        s_write_quietly(wfd, json);
        close(wfd);
    } else {
        snprintf(why, why_size, "cannot run '%s': %s", cmd, strerror(err));
    }
    s_env_free(env);
    free(json);
    return err ? TELEM_EIO : 0;
}

/* ---- the wire event ---------------------------------------------------- */

int
watch_out_event_to_wire(const det_event_t *e, uint64_t seq, watch_out_wire_t *b,
                        telem_watch_event_t *m)
{
    if (e->ndevices > b->cap_devs) {
        telem_watch_dev_t *d = realloc(b->devs, e->ndevices * sizeof *d);
        if (!d)
            return TELEM_ENOMEM;
        b->devs = d;
        b->cap_devs = e->ndevices;
    }
    if (e->nevidence > b->cap_ev) {
        telem_watch_evidence_t *v = realloc(b->ev, e->nevidence * sizeof *v);
        if (!v)
            return TELEM_ENOMEM;
        b->ev = v;
        b->cap_ev = e->nevidence;
    }
    for (size_t i = 0; i < e->ndevices; i++)
        b->devs[i] = (telem_watch_dev_t) { e->devices[i].node,
                                           e->devices[i].device };
    for (size_t i = 0; i < e->nevidence; i++)
        b->ev[i] = (telem_watch_evidence_t) { e->evidence[i].name,
                                              e->evidence[i].value };
    *m = (telem_watch_event_t) {
        .seq = seq, .detector = e->detector, .severity = e->severity,
        .ts_ns = e->ts_ns, .score = e->score, .text = e->text,
        .nodes = e->nodes, .nnodes = (uint32_t) e->nnodes,
        .devices = b->devs, .ndevices = (uint32_t) e->ndevices,
        .evidence = b->ev, .nevidence = (uint32_t) e->nevidence,
    };
    return 0;
}

void
watch_out_wire_free(watch_out_wire_t *b)
{
    free(b->devs);
    free(b->ev);
    memset(b, 0, sizeof *b);
}

/* ---- the events file --------------------------------------------------- */

int
watch_out_log_open(const char *path, FILE **f_p, char *why, size_t why_size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (!f) {
        snprintf(why, why_size, "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return TELEM_EIO;
    }
    *f_p = f;
    return 0;
}

int
watch_out_log_event(FILE **f_p, const char *path, const det_event_t *e,
                    uint64_t seq)
{
    char *s = watch_out_event_json(e, seq);
    if (!s)
        return TELEM_ENOMEM;
    int rc = 0;
    if (*f_p && ftell(*f_p) > WATCH_OUT_LOG_MAX) {
        /* One older file is kept beside the current one. */
        char old[4096];
        snprintf(old, sizeof old, "%s.1", path);
        fclose(*f_p);
        *f_p = NULL;
        char why[256];
        rc = rename(path, old) == 0 ? watch_out_log_open(path, f_p, why,
                                                         sizeof why)
                                    : TELEM_EIO;
    }
    if (*f_p && (fprintf(*f_p, "%s\n", s) < 0 || fflush(*f_p) != 0))
        rc = TELEM_EIO;
    free(s);
    return rc;
}
