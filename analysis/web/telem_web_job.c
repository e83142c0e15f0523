/* telem_web_job.c - the job data object from the run directory: the
 * launcher's job file, its restart log and the watcher's events, each
 * turned into its part of the object (telem_web.h), for telem_agg's
 * /telem/job and `telem_client report`.
 *
 *   <rundir>/launch/job             "# telem_launch pid P restart EP restarts N",
 *                                   then "<name>\t<state>\t<rank>\t<endpoint>"
 *   <rundir>/launch/restarts.log    "<YYYY-MM-DDTHH:MM:SSZ> <line>"
 *   <rundir>/telem_watch/events.jsonl   one event object a line
 *
 * Every file is optional and read bounded: at most its last S_MAX_BYTES
 * and, of those, its last S_MAX_LINES lines (the files of a long job only
 * grow).  A line that does not parse is skipped and counted; with a
 * program name given, each file gets at most one warning line for its
 * skipped lines and one for being cut, on stderr.
 */
#include "telem_web_job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "telem_error.h"
#include "telem_paths.h"
#include "telem_time.h"
#include "telem_types.h"

#define S_MAX_BYTES ((size_t) 16 << 20)
#define S_MAX_LINES 10000

/* One parsed line: 0, or -1 when malformed. */
typedef int (*s_line_fn)(void *ctx, char *line);

/* The last S_MAX_BYTES of path (starting after a newline when cut) into a
 * NUL-terminated buffer the caller frees; *cut is set when bytes were left
 * out.  NULL with errno set when it cannot be read. */
static char *
s_read_tail(const char *path, size_t *len, int *cut)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fileno(f), &st) != 0)
        goto out;
    off_t off = st.st_size > (off_t) S_MAX_BYTES
              ? st.st_size - (off_t) S_MAX_BYTES : 0;
    if (off && fseeko(f, off, SEEK_SET) != 0)
        goto out;
    /* What the file holds now (a line appended meanwhile waits for the
       next read). */
    size_t want = (size_t) (st.st_size - off);
    if (!(buf = malloc(want + 1)))
        goto out;
    *len = fread(buf, 1, want, f);
    buf[*len] = '\0';
    *cut = off > 0;
    if (ferror(f)) {
        free(buf);
        buf = NULL;
        errno = EIO;
    }
out:;
    int saved = errno;
    fclose(f);
    errno = saved;
    return buf;
}

/* Where the last S_MAX_LINES lines of buf (or after the first, partial
 * line when the tail was cut) begin. */
static char *
s_last_lines(char *buf, size_t len, int *cut)
{
    char *start = buf;
    if (*cut) {
        char *nl = memchr(buf, '\n', len);
        start = nl ? nl + 1 : buf + len;
    }
    size_t n = 0;
    char *end = buf + len;
    if (end > start && end[-1] == '\n')
        end--;
    for (char *p = end; p > start; p--)
        if (p[-1] == '\n' && ++n == S_MAX_LINES) {
            *cut = 1;
            return p;
        }
    return start;
}

/* Calls fn on every non-empty line of `what` at path (CR stripped).
 * Returns the number of lines read, or -1 when the file is missing or
 * unreadable (one warning said). */
static long
s_each_line(const char *what, const char *path, s_line_fn fn, void *ctx,
            const char *prog, size_t *skipped)
{
    size_t len = 0;
    int cut = 0;
    char *buf = s_read_tail(path, &len, &cut);
    if (!buf) {
        if (prog)
            fprintf(stderr, "%s: no %s (%s: %s)\n", prog, what, path,
                    strerror(errno));
        return -1;
    }
    long n = 0, nbad = 0, first_bad = 0, lineno = 0;
    char *next, *end = buf + len;
    for (char *line = s_last_lines(buf, len, &cut); line < end; line = next) {
        char *nl = memchr(line, '\n', (size_t) (end - line));
        next = nl ? nl + 1 : end;
        size_t l = (size_t) ((nl ? nl : end) - line);
        line[l] = '\0';
        lineno++;
        if (l && line[l - 1] == '\r')
            line[--l] = '\0';
        if (!l)
            continue;
        /* A NUL inside a line makes it malformed, not shorter. */
        if (strlen(line) == l && fn(ctx, line) == 0) {
            n++;
        } else if (nbad++ == 0) {
            first_bad = lineno;
        }
    }
    if (cut && prog)
        fprintf(stderr, "%s: %s: read only its last %d lines or 16 MiB\n",
                prog, path, S_MAX_LINES);
    if (nbad && prog)
        fprintf(stderr, "%s: %s: %ld malformed line%s skipped (the "
                "first is line %ld of those read)\n", prog, path, nbad,
                nbad == 1 ? "" : "s", first_bad);
    if (skipped)
        *skipped += (size_t) nbad;
    free(buf);
    return n;
}

/* ---- the job file ------------------------------------------------------ */

typedef struct {
    json_t *job;                /* {"launcher_pid", "restarts", "nodes"} */
} s_job_ctx_t;

static int
s_job_header(s_job_ctx_t *c, const char *line)
{
    long pid, restarts;
    if (sscanf(line, "# telem_launch pid %ld restart %*s restarts %ld",
               &pid, &restarts) != 2 || pid < 0 || restarts < 0)
        return strncmp(line, "# telem_launch", 14) == 0 ? -1 : 0;
    json_object_set_new(c->job, "launcher_pid", json_integer(pid));
    json_object_set_new(c->job, "restarts", json_integer(restarts));
    return 0;
}

/* "<name>\t<state>\t<rank>\t<endpoint>" */
static int
s_job_line(void *ctx, char *line)
{
    s_job_ctx_t *c = ctx;
    if (line[0] == '#')
        return s_job_header(c, line);
    char *f[4], *save = NULL;
    size_t n = 0;
    for (char *p = line; n < 4; p = NULL)
        if (!(f[n++] = strtok_r(p, "\t", &save)))
            return -1;
    if (strtok_r(NULL, "\t", &save) || strchr(f[0], '/')
        || strlen(f[0]) > TELEM_NAME_MAX)
        return -1;
    if (strcmp(f[1], "active") && strcmp(f[1], "idle") && strcmp(f[1], "down"))
        return -1;
    char *end;
    errno = 0;
    long rank = strtol(f[2], &end, 10);
    if (errno || *end || end == f[2] || rank < -1)
        return -1;
    json_t *node = json_pack("{s:s, s:s, s:i}", "name", f[0], "state", f[1],
                             "rank", (json_int_t) rank);
    return json_array_append_new(json_object_get(c->job, "nodes"), node);
}

json_t *
telem_web_job_nodes(const char *rundir, const char *prog, size_t *skipped)
{
    char path[TELEM_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/launch/job", rundir);
    s_job_ctx_t c = { json_pack("{s:s, s:i, s:i, s:[]}", "rundir", rundir,
                                "launcher_pid", 0, "restarts", 0, "nodes") };
    if (!c.job)
        return NULL;
    if (s_each_line("launcher job file", path, s_job_line, &c, prog,
                    skipped) < 0) {
        json_decref(c.job);
        return NULL;
    }
    return c.job;
}

/* ---- the restart log ------------------------------------------------------ */

/* "<YYYY-MM-DDTHH:MM:SSZ> <line>" */
static int
s_restart_line(void *ctx, char *line)
{
    struct tm tm = { 0 };
    char *rest = strptime(line, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (!rest || *rest != ' ' || !rest[1])
        return -1;
    time_t t = timegm(&tm);
    if (t == (time_t) -1)
        return -1;
    json_t *r = json_pack("{s:I, s:s}", "time_ms", (json_int_t) t * 1000,
                          "line", rest + 1);
    return json_array_append_new(ctx, r);
}

json_t *
telem_web_job_restarts(const char *rundir, const char *prog, size_t *skipped)
{
    char path[TELEM_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/launch/restarts.log", rundir);
    json_t *a = json_array();
    if (a)
        s_each_line("restart log", path, s_restart_line, a, prog, skipped);
    return a;
}

/* ---- the watcher's events -------------------------------------------------- */

/* Key `k` of o is absent or of the type test() accepts. */
static int
s_opt(const json_t *o, const char *k, int (*test)(const json_t *))
{
    const json_t *v = json_object_get(o, k);
    return !v || test(v);
}

static int s_is_str(const json_t *v) { return json_is_string(v); }
static int s_is_arr(const json_t *v) { return json_is_array(v); }

/* One event object: time_ms an integer, text a string, and detector,
 * severity (strings), nodes and devices (arrays) when present. */
static int
s_event_line(void *ctx, char *line)
{
    json_t *e = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(e) || !json_is_integer(json_object_get(e, "time_ms"))
        || !json_is_string(json_object_get(e, "text"))
        || !s_opt(e, "detector", s_is_str) || !s_opt(e, "severity", s_is_str)
        || !s_opt(e, "nodes", s_is_arr) || !s_opt(e, "devices", s_is_arr)) {
        json_decref(e);
        return -1;
    }
    return json_array_append_new(ctx, e);
}

json_t *
telem_web_job_events(const char *rundir, const char *prog, size_t *skipped)
{
    char path[TELEM_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/telem_watch/events.jsonl", rundir);
    json_t *a = json_array();
    if (a)
        s_each_line("detector events", path, s_event_line, a, prog,
                    skipped);
    return a;
}

json_t *
telem_web_job_read(const char *rundir)
{
    size_t skipped = 0;
    json_t *job = telem_web_job_nodes(rundir, NULL, &skipped);
    if (!job)
        job = json_pack("{s:s, s:i, s:i, s:[]}", "rundir", rundir,
                        "launcher_pid", 0, "restarts", 0, "nodes");
    json_t *o = json_pack("{s:i, s:I, s:o}", "version", 1, "generated_ms",
                          (json_int_t) (telem_now_ns() / TELEM_NS_PER_MS),
                          "job", job);
    if (!o)
        return NULL;
    json_object_set_new(o, "restarts",
                        telem_web_job_restarts(rundir, NULL, &skipped));
    json_object_set_new(o, "events",
                        telem_web_job_events(rundir, NULL, &skipped));
    json_object_set_new(o, "skipped", json_integer((json_int_t) skipped));
    return o;
}
