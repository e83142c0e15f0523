/* telem_client_snapshot.c - `telem_client snapshot [NODE]`: each node's
 * one-time system snapshot (ac_snapshot(), docs/protocol.md "sysinfo").
 *
 *   json  {"snapshots": [{"node": N, "snapshot": {...}}, ...],
 *          "missing": [...]}: each node's document as it sent it
 *   yaml  the same tree
 *   txt   per node, an lscpu-like summary: "Label:   value" lines, with
 *         lscpu's own labels where lscpu shows the same thing
 *   md    the same lines as one table of node, field, value
 * A node whose snapshot is not a JSON object counts as missing.
 *
 * Call order: called by telem_client.c; calls telem_client_result.c and
 * telem_client_fmt.c.
 */
#include "telem_client.h"
#include "telem_hist.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_VALUE_MAX 8192

/* One summary line: a label and its text. */
typedef void (*s_line_fn)(void *arg, const char *label, const char *value);

/* ---- small formatters -------------------------------------------------- */

static const char *
s_get_str(const json_t *o, const char *path)
{
    const json_t *v = json_object_get(o, path);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int
s_get_int(const json_t *o, const char *key, json_int_t *v)
{
    const json_t *j = json_object_get(o, key);
    if (!json_is_integer(j))
        return -1;
    *v = json_integer_value(j);
    return 0;
}

/* Bytes as lscpu writes sizes: "96 KiB", "2 MiB", "23.5 GiB". */
static void
s_bytes(char *buf, size_t size, json_int_t v)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB",
                                         "PiB" };
    double d = (double) v;
    size_t u = 0;
    while (d >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        d /= 1024;
        u++;
    }
    if (d == (double) (int64_t) d)
        snprintf(buf, size, "%" PRId64 " %s", (int64_t) d, units[u]);
    else
        snprintf(buf, size, "%.1f %s", d, units[u]);
}

/* A line whose value is an integer member of o, when it has one. */
static void
s_int_line(s_line_fn fn, void *arg, const char *label, const json_t *o,
           const char *key)
{
    json_int_t v;
    char buf[32];
    if (s_get_int(o, key, &v) == 0) {
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, v);
        fn(arg, label, buf);
    }
}

static void
s_str_line(s_line_fn fn, void *arg, const char *label, const json_t *o,
           const char *key)
{
    const char *s = s_get_str(o, key);
    if (s)
        fn(arg, label, s);
}

/* ---- the summary ------------------------------------------------------- */

static void
s_caches(s_line_fn fn, void *arg, const json_t *caches)
{
    size_t i;
    const json_t *c;
    json_array_foreach(caches, i, c) {
        json_int_t level = 0, total = 0, inst = 0;
        const char *type = s_get_str(c, "type");
        if (s_get_int(c, "level", &level) || s_get_int(c, "total_bytes", &total)
            || s_get_int(c, "instances", &inst) || !type)
            continue;
        const char *suffix = strcmp(type, "Data") == 0 ? "d"
                           : strcmp(type, "Instruction") == 0 ? "i" : "";
        char label[64], size[48], value[96];
        snprintf(label, sizeof label, "L%" JSON_INTEGER_FORMAT "%s cache",
                 level, suffix);
        s_bytes(size, sizeof size, total);
        snprintf(value, sizeof value, "%s (%" JSON_INTEGER_FORMAT
                 " instance%s)", size, inst, inst == 1 ? "" : "s");
        fn(arg, label, value);
    }
}

static void
s_cpu(s_line_fn fn, void *arg, const json_t *doc)
{
    const json_t *cpu = json_object_get(doc, "cpu");
    const json_t *kernel = json_object_get(doc, "kernel");
    s_str_line(fn, arg, "Architecture", kernel, "machine");
    s_int_line(fn, arg, "CPU(s)", cpu, "threads");
    s_str_line(fn, arg, "On-line CPU(s) list", cpu, "online");
    s_str_line(fn, arg, "Vendor ID", cpu, "vendor");
    s_str_line(fn, arg, "Model name", cpu, "model_name");
    s_int_line(fn, arg, "CPU family", cpu, "family");
    s_int_line(fn, arg, "Model", cpu, "model");
    s_int_line(fn, arg, "Thread(s) per core", cpu, "threads_per_core");
    s_int_line(fn, arg, "Core(s) per socket", cpu, "cores_per_socket");
    s_int_line(fn, arg, "Socket(s)", cpu, "sockets");
    s_int_line(fn, arg, "Stepping", cpu, "stepping");
    s_caches(fn, arg, json_object_get(cpu, "caches"));
    const json_t *numa = json_object_get(doc, "numa");
    if (json_is_array(numa)) {
        char buf[32], label[64];
        snprintf(buf, sizeof buf, "%zu", json_array_size(numa));
        fn(arg, "NUMA node(s)", buf);
        size_t i;
        const json_t *n;
        json_array_foreach(numa, i, n) {
            json_int_t id;
            if (s_get_int(n, "node", &id) == 0 && s_get_str(n, "cpus")) {
                snprintf(label, sizeof label, "NUMA node%" JSON_INTEGER_FORMAT
                         " CPU(s)", id);
                fn(arg, label, s_get_str(n, "cpus"));
            }
        }
    }
    const json_t *flags = json_object_get(cpu, "flags");
    char *line = malloc(S_VALUE_MAX);
    size_t len = 0, i;
    const json_t *f;
    if (line && json_is_array(flags)) {
        line[0] = '\0';
        json_array_foreach(flags, i, f)
            if (json_is_string(f) && len + json_string_length(f) + 2 < S_VALUE_MAX)
                len += (size_t) snprintf(line + len, S_VALUE_MAX - len, "%s%s",
                                         len ? " " : "", json_string_value(f));
        fn(arg, "Flags", line);
    }
    free(line);
}

static void
s_memory_boot(s_line_fn fn, void *arg, const json_t *doc)
{
    const json_t *mem = json_object_get(doc, "memory");
    json_int_t v, acc;
    char a[48], b[48], buf[160];
    if (s_get_int(mem, "total_bytes", &v) == 0) {
        s_bytes(a, sizeof a, v);
        if (s_get_int(mem, "available_bytes", &acc) == 0) {
            s_bytes(b, sizeof b, acc);
            snprintf(buf, sizeof buf, "%s (%s available)", a, b);
        } else {
            snprintf(buf, sizeof buf, "%s", a);
        }
        fn(arg, "Memory", buf);
    }
    const json_t *boot = json_object_get(doc, "boot");
    if (s_get_int(boot, "time_ns", &v) == 0 && v >= 0) {
        time_t sec = (time_t) (v / 1000000000);
        struct tm tm;
        gmtime_r(&sec, &tm);
        strftime(a, sizeof a, "%Y-%m-%dT%H:%M:%S", &tm);
        if (s_get_int(boot, "accuracy_ns", &acc) != 0)
            acc = -1;
        snprintf(buf, sizeof buf, "%s.%09" PRId64 "Z (+/- %" JSON_INTEGER_FORMAT
                 " ns)", a, (int64_t) (v % 1000000000), acc);
        fn(arg, "Boot time", buf);
    }
}

static void
s_system(s_line_fn fn, void *arg, const json_t *doc)
{
    const json_t *k = json_object_get(doc, "kernel");
    char buf[S_VALUE_MAX];
    if (s_get_str(k, "sysname") && s_get_str(k, "release")) {
        snprintf(buf, sizeof buf, "%s %s %s", s_get_str(k, "sysname"),
                 s_get_str(k, "release"),
                 s_get_str(k, "version") ? s_get_str(k, "version") : "");
        fn(arg, "Kernel", buf);
    }
    s_str_line(fn, arg, "Hostname", k, "hostname");
    const json_t *os = json_object_get(doc, "os");
    if (s_get_str(os, "pretty_name"))
        s_str_line(fn, arg, "OS", os, "pretty_name");
    else
        s_str_line(fn, arg, "OS", os, "name");
}

/* ---- devices ----------------------------------------------------------- */

static void
s_block(s_line_fn fn, void *arg, const json_t *doc)
{
    size_t i;
    const json_t *b;
    json_array_foreach(json_object_get(doc, "block"), i, b) {
        json_int_t size;
        const char *name = s_get_str(b, "name"), *model = s_get_str(b, "model");
        if (!name || s_get_int(b, "size_bytes", &size))
            continue;
        char label[300], sz[48], buf[600];
        snprintf(label, sizeof label, "Disk %s", name);
        s_bytes(sz, sizeof sz, size);
        snprintf(buf, sizeof buf, "%s, %s%s%s", sz,
                 json_is_true(json_object_get(b, "rotational")) ? "rotational"
                                                                : "solid state",
                 json_is_true(json_object_get(b, "nvme")) ? ", NVMe" : "",
                 model ? ", " : "");
        if (model)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s", model);
        fn(arg, label, buf);
    }
}

static void
s_addresses(char *buf, size_t size, const json_t *addrs)
{
    size_t i, len = strlen(buf);
    const json_t *a;
    json_array_foreach(addrs, i, a) {
        json_int_t prefix = 0;
        const char *text = s_get_str(a, "address");
        if (!text || len + 64 >= size)
            continue;
        s_get_int(a, "prefix", &prefix);
        len += (size_t) snprintf(buf + len, size - len, ", %s/%"
                                 JSON_INTEGER_FORMAT, text, prefix);
    }
}

static void
s_net(s_line_fn fn, void *arg, const json_t *doc)
{
    size_t i;
    const json_t *n;
    json_array_foreach(json_object_get(doc, "net"), i, n) {
        const char *name = s_get_str(n, "name");
        if (!name)
            continue;
        json_int_t mtu = 0, speed;
        char label[300], sp[48], buf[1024];
        snprintf(label, sizeof label, "Net %s", name);
        s_get_int(n, "mtu", &mtu);
        if (s_get_int(n, "speed_mbps", &speed) == 0)
            snprintf(sp, sizeof sp, "%" JSON_INTEGER_FORMAT " Mb/s", speed);
        else
            snprintf(sp, sizeof sp, "speed unknown");
        snprintf(buf, sizeof buf, "%s, mtu %" JSON_INTEGER_FORMAT ", %s, mac %s",
                 s_get_str(n, "state") ? s_get_str(n, "state") : "?", mtu, sp,
                 s_get_str(n, "mac") ? s_get_str(n, "mac") : "-");
        s_addresses(buf, sizeof buf, json_object_get(n, "addresses"));
        fn(arg, label, buf);
    }
}

static void
s_gpus(s_line_fn fn, void *arg, const json_t *doc)
{
    size_t i;
    const json_t *g;
    s_str_line(fn, arg, "GPU driver", doc, "gpu_driver");
    json_array_foreach(json_object_get(doc, "gpus"), i, g) {
        json_int_t idx = (json_int_t) i, mem;
        char label[64], sz[48] = "?", buf[700];
        s_get_int(g, "index", &idx);
        snprintf(label, sizeof label, "GPU %" JSON_INTEGER_FORMAT, idx);
        if (s_get_int(g, "memory_total_bytes", &mem) == 0)
            s_bytes(sz, sizeof sz, mem);
        snprintf(buf, sizeof buf, "%s, %s, %s",
                 s_get_str(g, "name") ? s_get_str(g, "name") : "?", sz,
                 s_get_str(g, "uuid") ? s_get_str(g, "uuid") : "?");
        fn(arg, label, buf);
    }
}

static void
s_telem(s_line_fn fn, void *arg, const json_t *doc)
{
    const json_t *t = json_object_get(doc, "telem");
    s_str_line(fn, arg, "telem version", t, "version");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *) json_object_get(t, "config"), key, v) {
        char label[300], *text = json_is_string(v) ? NULL
                               : json_dumps(v, JSON_ENCODE_ANY);
        snprintf(label, sizeof label, "telem %s", key);
        fn(arg, label, json_is_string(v) ? json_string_value(v)
                       : text ? text : "?");
        free(text);
    }
    size_t i;
    json_array_foreach(json_object_get(doc, "skipped"), i, v) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s (%s)",
                 s_get_str(v, "source") ? s_get_str(v, "source") : "?",
                 s_get_str(v, "why") ? s_get_str(v, "why") : "?");
        fn(arg, "Skipped", buf);
    }
}

/* Every line of one node's summary, in order. */
static void
s_summary(s_line_fn fn, void *arg, const json_t *doc)
{
    s_cpu(fn, arg, doc);
    s_memory_boot(fn, arg, doc);
    s_system(fn, arg, doc);
    s_block(fn, arg, doc);
    s_net(fn, arg, doc);
    s_gpus(fn, arg, doc);
    s_telem(fn, arg, doc);
}

/* ---- writers ----------------------------------------------------------- */

typedef struct {
    FILE *out;
    telem_client_fmt_t *fmt;    /* md */
    const char *node;
} s_out_t;

static void
s_txt_line(void *arg, const char *label, const char *value)
{
    s_out_t *o = arg;
    char *l = telem_client_fmt_utf8(label), *v = telem_client_fmt_utf8(value);
    if (l && v) {
        fprintf(o->out, "%s:%*s%s\n", l, (int) (strlen(l) < 28 ? 28 - strlen(l) : 1),
                "", v);
    }
    free(l);
    free(v);
}

static void
s_md_line(void *arg, const char *label, const char *value)
{
    s_out_t *o = arg;
    telem_client_fmt_str(o->fmt, o->node);
    telem_client_fmt_str(o->fmt, label);
    telem_client_fmt_str(o->fmt, value);
    telem_client_fmt_row_end(o->fmt);
}

/* YAML of a JSON value at indentation `ind` (block style, strings always
 * quoted). */
static void
s_yaml(FILE *out, const json_t *v, int ind)
{
    size_t i;
    const char *key;
    const json_t *x;
    if (json_is_object(v) && json_object_size(v)) {
        json_object_foreach((json_t *) v, key, x) {
            fprintf(out, "\n%*s", ind, "");
            telem_client_fmt_yaml_quote(out, key);
            fputc(':', out);
            s_yaml(out, x, ind + 2);
        }
    } else if (json_is_array(v) && json_array_size(v)) {
        json_array_foreach(v, i, x) {
            fprintf(out, "\n%*s-", ind, "");
            s_yaml(out, x, ind + 2);
        }
    } else if (json_is_string(v)) {
        fputc(' ', out);
        telem_client_fmt_yaml_quote(out, json_string_value(v));
    } else {
        char *text = json_dumps(v, JSON_ENCODE_ANY);
        fprintf(out, " %s", text ? text : "null");
        free(text);
    }
}

/* ---- the mode ---------------------------------------------------------- */

/* One node's snapshot as either source gives it: text NULL when it has
 * none, why then completing "node 'N' ...". */
typedef struct {
    const char *node;
    const char *text;
    size_t len;
    const char *why;
} s_snap_t;

/* v's snapshot as a JSON object, or NULL (with a line on stderr). */
static json_t *
s_load(const s_snap_t *v)
{
    if (!v->text) {
        fprintf(stderr, "telem_client: node '%s' %s\n", v->node, v->why);
        return NULL;
    }
    json_error_t err;
    json_t *doc = json_loadb(v->text, v->len, 0, &err);
    if (!json_is_object(doc)) {
        fprintf(stderr, "telem_client: node '%s' has a snapshot that is not "
                "a JSON object: %s\n", v->node,
                doc ? "another value" : err.text);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

static void
s_write_node(telem_client_fmt_kind_t kind, s_out_t *o, json_t *doc,
             json_t *rows, size_t nth)
{
    switch (kind) {
    case TELEM_CLIENT_FMT_JSON:
        json_array_append_new(rows, json_pack("{s:s, s:O}", "node", o->node,
                                              "snapshot", doc));
        break;
    case TELEM_CLIENT_FMT_YAML:
        fputs("\n- \"node\": ", o->out);
        telem_client_fmt_yaml_quote(o->out, o->node);
        fputs("\n  \"snapshot\":", o->out);
        s_yaml(o->out, doc, 4);
        break;
    case TELEM_CLIENT_FMT_TXT:
        fputs(nth ? "\n" : "", o->out);
        s_txt_line(o, "Node", o->node);
        s_summary(s_txt_line, o, doc);
        break;
    default:
        s_summary(s_md_line, o, doc);
        break;
    }
}

/* The closing part of a json or yaml document. */
static void
s_end(telem_client_fmt_kind_t kind, FILE *out, json_t *rows,
      const char **missing, size_t nm)
{
    if (kind == TELEM_CLIENT_FMT_JSON) {
        json_t *m = json_array();
        for (size_t i = 0; i < nm; i++)
            json_array_append_new(m, json_string(missing[i]));
        json_t *top = json_pack("{s:O, s:o}", "snapshots", rows, "missing", m);
        json_dumpf(top, out, JSON_INDENT(2));
        fputc('\n', out);
        json_decref(top);
    } else if (kind == TELEM_CLIENT_FMT_YAML) {
        fputs(nm ? "\n\"missing\":" : "\n\"missing\": []\n", out);
        for (size_t i = 0; i < nm; i++) {
            fputs("\n- ", out);
            telem_client_fmt_yaml_quote(out, missing[i]);
        }
        fputs(nm ? "\n" : "", out);
    }
}

/* Writes the n snapshots v in o->fmt; rc: how they were fetched.
 * Returns the exit code. */
static int
s_show(const telem_client_opts_t *o, const s_snap_t *v, size_t n, int rc)
{
    static const char *const cols[] = { "node", "field", "value" };
    size_t nm = 0;
    const char **missing = calloc(n + 1, sizeof *missing);
    json_t *rows = json_array();
    s_out_t out = { .out = o->out };
    if (o->fmt == TELEM_CLIENT_FMT_MD)
        out.fmt = telem_client_fmt_new(o->fmt, o->out, "snapshots", cols, 3, -1);
    if (!missing || !rows || (o->fmt == TELEM_CLIENT_FMT_MD && !out.fmt))
        rc = TELEM_ENOMEM;
    if (o->fmt == TELEM_CLIENT_FMT_YAML && rc != TELEM_ENOMEM)
        fputs("\"snapshots\":", o->out);
    for (size_t i = 0, shown = 0; rc != TELEM_ENOMEM && i < n; i++) {
        json_t *doc = s_load(&v[i]);
        out.node = v[i].node;
        if (!doc) {
            missing[nm++] = out.node;
            continue;
        }
        s_write_node(o->fmt, &out, doc, rows, shown++);
        json_decref(doc);
    }
    if (o->fmt == TELEM_CLIENT_FMT_YAML && rc != TELEM_ENOMEM && nm == n)
        fputs(" []", o->out);
    if (rc != TELEM_ENOMEM)
        s_end(o->fmt, o->out, rows, missing, nm);
    int wrc = out.fmt ? telem_client_fmt_end(out.fmt, missing, nm) : 0;
    if (rc == 0 && nm)      /* answered, but not with a usable document */
        rc = nm == n ? TELEM_EPROTO : TELEM_EPARTIAL;
    int code = telem_client_result_exit_code(rc);
    if (wrc || fflush(o->out) != 0 || ferror(o->out)) {
        fprintf(stderr, "telem_client: writing the output failed\n");
        code = 1;
    }
    telem_client_fmt_destroy(&out.fmt);
    json_decref(rows);
    free(missing);
    return code;
}

int
telem_client_snapshot(ac_t *ac, const telem_client_opts_t *o, long node)
{
    ac_snapshot_result_t *r = NULL;
    int rc = ac_snapshot(ac, node, o->timeout_ms, &r);
    size_t n = ac_snapshot_result_count(r);
    s_snap_t *v = calloc(n + 1, sizeof *v);
    char (*why)[300] = calloc(n + 1, sizeof *why);
    int code = 1;
    if (v && why) {
        for (size_t i = 0; i < n; i++) {
            v[i].node = ac_snapshot_result_node(r, i);
            v[i].text = ac_snapshot_result_json(r, i, &v[i].len);
            snprintf(why[i], sizeof why[i], "did not answer: %s (%s)",
                     ac_snapshot_result_message(r, i),
                     ac_strerror(ac_snapshot_result_code(r, i)));
            v[i].why = why[i];
        }
        code = s_show(o, v, n, rc);
    } else {
        fprintf(stderr, "telem_client: out of memory\n");
    }
    free(v);
    free(why);
    ac_snapshot_result_destroy(&r);
    return code;
}

int
telem_client_snapshot_dump(const char *const *dumps, size_t ndumps,
                           const telem_client_opts_t *o, const char *node)
{
    telem_hist_t *h = telem_client_hist_open(dumps, ndumps, "the output");
    if (!h)
        return 1;
    uint32_t n = telem_hist_nnodes(h);
    s_snap_t *v = calloc(n + 1, sizeof *v);
    size_t k = 0;
    int code = 1;
    for (uint32_t i = 0; v && i < n; i++) {
        const char *name = telem_hist_node(h, i);
        if (node && strcmp(node, name) != 0)
            continue;
        v[k].node = name;
        v[k].why = "has no snapshot in the dump files";
        if (telem_hist_snapshot(h, name, &v[k].text, &v[k].len, NULL) != 0)
            v[k].text = NULL;
        k++;
    }
    if (!v)
        fprintf(stderr, "telem_client: out of memory\n");
    else if (node && k == 0)
        fprintf(stderr, "telem_client: no node '%s' in the dump\n", node);
    else
        code = s_show(o, v, k, 0);
    free(v);
    telem_hist_destroy(&h);
    return code;
}
