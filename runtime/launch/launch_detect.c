/* launch_detect.c - every detector's data source checked before the job
 * starts (see launch_detect.h).
 *
 * A detector spec is NAME[:PARAM=VALUE,...] or LABEL=NAME[:...]
 * (telem_watch(1)); only the name and its metric parameter matter here.
 * The names telem_watch knows come from `telem_watch --list` itself, so
 * this file keeps no copy of the detector registry.
 */
#include "launch_detect.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch_argv.h"
#include "launch_proc.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_why.h"

#define S_LIST_MAX (64u << 10)      /* bytes of `telem_watch --list` */

typedef struct {
    char name[64];
    char metric[256];       /* "" when the spec does not set it */
    char kernels[256];      /* straggler's kernels= */
    int has_kernels;        /* kernels= given (its value may be "") */
} s_spec_t;

/* Splits a detector spec into its name and its metric and kernels
 * parameters. */
static void
s_parse(const char *spec, s_spec_t *out)
{
    memset(out, 0, sizeof *out);
    size_t colon = strcspn(spec, ":"), eq = strcspn(spec, "=");
    const char *name = eq < colon ? spec + eq + 1 : spec;
    size_t len = strcspn(name, ":");
    snprintf(out->name, sizeof out->name, "%.*s", (int) len, name);
    const char *p = name[len] == ':' ? name + len + 1 : "";
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n >= 7 && strncmp(p, "metric=", 7) == 0)
            snprintf(out->metric, sizeof out->metric, "%.*s", (int) n - 7,
                     p + 7);
        if (n >= 8 && strncmp(p, "kernels=", 8) == 0) {
            snprintf(out->kernels, sizeof out->kernels, "%.*s", (int) n - 8,
                     p + 8);
            out->has_kernels = 1;
        }
        p += n + (p[n] == ',');
    }
}

/* Whether `name` is a line of its own (a detector) in telem_watch's list. */
static int
s_known(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, "\n");
        if (n == len && strncmp(p, name, len) == 0)
            return 1;
        p += n + (p[n] == '\n');
    }
    return 0;
}

/* The collectors' kernel of a metric cg_<kernel>_seconds, else "". */
static void
s_kernel(const char *metric, char *out, size_t size)
{
    size_t n = strlen(metric);
    out[0] = '\0';
    if (n > 11 && strncmp(metric, "cg_", 3) == 0
        && strcmp(metric + n - 8, "_seconds") == 0)
        snprintf(out, size, "%.*s", (int) (n - 11), metric + 3);
}

/* The level the metric is collected at (1: the program's own). */
static int
s_metric_level(const char *metric)
{
    if (strncmp(metric, "gpu_", 4) == 0)
        return 3;
    if (strncmp(metric, "telemd_", 7) == 0)
        return 4;
    return 1;
}

/* Each collector backend's one kernel (telem_collect(1): cpu: dgemm;
 * cuda: fma). */
static const struct {
    const char *backend, *kernel;
} s_backends[] = { { "cpu", "dgemm" }, { "cuda", "fma" } };

/* The kernel of `backend`, or NULL for a backend telem_collect refuses. */
static const char *
s_backend_kernel(const char *backend, size_t len)
{
    for (size_t i = 0; i < sizeof s_backends / sizeof *s_backends; i++)
        if (strlen(s_backends[i].backend) == len
            && strncmp(s_backends[i].backend, backend, len) == 0)
            return s_backends[i].kernel;
    return NULL;
}

/* The value of option `lng` (--LNG V, --LNG=V) or `shrt` (-S V, -SV) at
 * words[*i], moving *i past it; NULL when words[*i] is not that option. */
static const char *
s_option(char **words, size_t n, size_t *i, const char *lng, char shrt)
{
    const char *w = words[*i];
    size_t len = strlen(lng);
    if (strncmp(w, lng, len) == 0 && w[len] == '=')
        return w + len + 1;
    if (strcmp(w, lng) == 0 || (w[0] == '-' && w[1] == shrt && !w[2]))
        return *i + 1 < n ? words[++*i] : NULL;
    if (w[0] == '-' && w[1] == shrt)
        return w + 2;
    return NULL;
}

/* Whether words[i] is one of telem_collect's other options that take a
 * value in the next word (--collector-arg -k, --name -b...): that word is
 * the option's, never --kernel or --backend. */
static int
s_takes_value(const char *w)
{
    static const char *const lng[] = {
        "--devices", "--period", "--reps", "--local-devices", "--name",
        "--nodefile", "--spawn", "--node", "--collector", "--collector-arg",
        "--stop-timeout", "--log-level", NULL
    };
    for (size_t i = 0; lng[i]; i++)
        if (strcmp(w, lng[i]) == 0)
            return 1;
    return w[0] == '-' && w[1] && strchr("dpRDgNsntl", w[1]) && !w[2];
}

/* Whether the collectors of `collect` (telem_collect's options) record
 * cg_<kernel>_seconds: their --kernel, else the kernel of a backend of
 * their --backend list (default cpu).  Otherwise sets `got` to the kernel
 * they run ("" if none) and `how` to the option that decides it. */
static int
s_collect_records(const char *collect, const char *kernel, char *got,
                  size_t got_size, char *how, size_t how_size)
{
    launch_argv_t a = { 0 };
    if (launch_argv_split(&a, collect, NULL) != 0) {
        launch_argv_clear(&a);
        return 1;               /* telem_launch refused it already */
    }
    const char *backends = "cpu", *want = NULL, *v;
    for (size_t i = 0; i < a.n; i++) {
        if (s_takes_value(a.v[i]))
            i++;
        else if ((v = s_option(a.v, a.n, &i, "--backend", 'b')))
            backends = v;
        else if ((v = s_option(a.v, a.n, &i, "--kernel", 'k')))
            want = v;
    }
    int ok = 0;
    got[0] = '\0';
    if (want) {
        ok = strcmp(want, kernel) == 0;
        snprintf(got, got_size, "%s", want);
        snprintf(how, how_size, "--kernel %s", want);
    } else {
        snprintf(how, how_size, "--backend %s", backends);
        for (const char *p = backends; *p && !ok;) {
            size_t n = strcspn(p, ",");
            const char *k = s_backend_kernel(p, n);
            if (k && strcmp(k, kernel) == 0)
                ok = 1;
            else if (k && !got[0])
                snprintf(got, got_size, "%s", k);
            p += n + (p[n] == ',');
        }
    }
    launch_argv_clear(&a);
    return ok;
}

/* The backend whose collectors run `kernel`, or NULL. */
static const char *
s_kernel_backend(const char *kernel)
{
    for (size_t i = 0; i < sizeof s_backends / sizeof *s_backends; i++)
        if (strcmp(s_backends[i].kernel, kernel) == 0)
            return s_backends[i].backend;
    return NULL;
}

/* Whether the collectors of cfg->collect (given, or started for another
 * detector when `started`) record cg_<kernel>_seconds, which detector `s`
 * reads through its parameter `param`; TELEM_EINVAL with the fix when
 * they do not. */
static int
s_collect_check(const launch_job_config_t *cfg, const s_spec_t *s,
                const char *param, const char *kernel, int started,
                char *why, size_t why_size)
{
    const char *backend = s_kernel_backend(kernel);
    char got[64], how[128];
    if (s_collect_records(cfg->collect, kernel, got, sizeof got, how,
                          sizeof how))
        return 0;
    if (*got)
        telem_why(why, why_size, "--detector %s reads cg_%s_seconds, but the "
                  "collectors %s (%s) record cg_%s_seconds: use "
                  "--detector %s:%s=cg_%s_seconds, or --collect '%s%s ...'",
                  s->name, kernel, started ? "the launcher starts"
                  : "of --collect", how, got, s->name, param, got,
                  backend ? "--backend " : "--kernel ",
                  backend ? backend : kernel);
    else
        telem_why(why, why_size, "--detector %s reads cg_%s_seconds, but "
                  "--collect '%s' names no backend telem_collect knows (cpu, "
                  "cuda)", s->name, kernel, how);
    return TELEM_EINVAL;
}

/* Collectors for `kernel` where none were asked for; where some were, a
 * check that they record it. */
static int
s_collectors(launch_job_config_t *cfg, const s_spec_t *s, const char *kernel,
             char *buf, size_t size, char *why, size_t why_size)
{
    const char *backend = s_kernel_backend(kernel);
    if (cfg->collect)
        return s_collect_check(cfg, s, "metric", kernel, 0, why, why_size);
    if (!backend) {
        telem_why(why, why_size, "--detector %s reads cg_%s_seconds, which "
                  "only collectors running kernel '%s' record: add --collect "
                  "'--kernel %s ...' (docs/collectors.md)", s->name, kernel,
                  kernel, kernel);
        return TELEM_EINVAL;
    }
    snprintf(buf, size, "--backend %s --kernel %s", backend, kernel);
    cfg->collect = buf;
    telem_log(TELEM_LOG_INFO, "--detector %s reads cg_%s_seconds from "
              "collectors and no --collect was given: starting telem_collect "
              "%s on every active node (--collect ARGS chooses%s)", s->name,
              kernel, buf, strcmp(kernel, "dgemm") == 0
              ? "; for GPUs use --detector slowgpu:metric=cg_fma_seconds" : "");
    return 0;
}

/* Checks one detector; 0 or TELEM_EINVAL with the reason. */
static int
s_check_one(launch_job_config_t *cfg, const char *spec, const char *list,
            char *buf, size_t size, char *why, size_t why_size)
{
    s_spec_t s;
    s_parse(spec, &s);
    if (list && !s_known(list, s.name)) {
        telem_why(why, why_size, "--detector %s: telem_watch has no detector "
                  "'%s' (telem_watch --list shows them)", spec, s.name);
        return TELEM_EINVAL;
    }
    const char *metric = *s.metric ? s.metric
                         : strcmp(s.name, "slowgpu") == 0 ? "cg_dgemm_seconds"
                         : strcmp(s.name, "proc-threshold") == 0
                         ? "num_running_processes"
                         : strcmp(s.name, "gpu-health") == 0
                         ? "gpu_xid_total and the other GPU health series"
                         : "";
    int need = strcmp(s.name, "proc-threshold") == 0 ? 2
               : s_metric_level(metric);
    if (cfg->level < need) {
        telem_why(why, why_size, "--detector %s reads %s, which telemd "
                  "collects at telemetry level %d and above; this job runs "
                  "at level %d: use --telemetry-level %d", spec,
                  *metric ? metric : "the job's data", need, cfg->level, need);
        return TELEM_EINVAL;
    }
    char kernel[128];
    s_kernel(metric, kernel, sizeof kernel);
    return *kernel ? s_collectors(cfg, &s, kernel, buf, size, why, why_size)
                   : 0;
}

/* straggler's test kernels (its kernels= parameter, cg_dgemm_seconds by
 * default), once every detector has been checked (slowgpu may have
 * started collectors): where collectors run, they must record them; where
 * none run, one line says that a straggler is then warned about, never
 * excluded, unless GPU health fields show the hardware. */
static int
s_check_straggler(const launch_job_config_t *cfg, const s_spec_t *s,
                  int started, char *why, size_t why_size)
{
    const char *metric = s->has_kernels ? s->kernels : "cg_dgemm_seconds";
    char kernel[128];
    s_kernel(metric, kernel, sizeof kernel);
    if (!*kernel)
        return 0;               /* none, or a series of the user's own */
    if (cfg->collect)
        return s_collect_check(cfg, s, "kernels", kernel, started, why,
                               why_size);
    telem_log(TELEM_LOG_INFO, "--detector %s tells the hardware from the "
              "rest by the nodes' test kernels (%s)%s, and this job runs no "
              "collectors: a straggler is %s; add --detector slowgpu (which "
              "starts them) or --collect ARGS (docs/detectors.md, "
              "straggler)", s->name, metric, cfg->level >= 3
              ? " or their GPU health fields" : "", cfg->level >= 3
              ? "excluded only on its GPU health fields"
              : "warned about and never excluded");
    return 0;
}

int
launch_detect_check(launch_job_config_t *cfg, const char *watch,
                    int check_bin, char *collect_buf, size_t collect_size,
                    char *why, size_t why_size)
{
    if (cfg->ndetectors == 0)
        return 0;
    if (check_bin && access(watch, X_OK) != 0) {
        telem_why(why, why_size, "--detector needs telem_watch, and %s: %s "
                  "(build it, or point --bindir at it)", watch,
                  strerror(errno));
        return TELEM_ENOTFOUND;
    }
    if (cfg->level < 1) {
        telem_why(why, why_size, "--detector: at telemetry level 0 telemd "
                  "keeps no data for a detector to read; use "
                  "--telemetry-level 1 or more");
        return TELEM_EINVAL;
    }
    char *list = check_bin ? malloc(S_LIST_MAX) : NULL;
    char *argv[] = { (char *) watch, "--list", NULL };
    if (list && launch_proc_run_capture(argv, list, S_LIST_MAX) != 0) {
        free(list);
        list = NULL;
    }
    int rc = 0;
    for (size_t i = 0; !rc && i < cfg->ndetectors; i++)
        rc = s_check_one(cfg, cfg->detectors[i], list, collect_buf,
                         collect_size, why, why_size);
    for (size_t i = 0; !rc && i < cfg->ndetectors; i++) {
        s_spec_t s;
        s_parse(cfg->detectors[i], &s);
        if (strcmp(s.name, "straggler") == 0)
            rc = s_check_straggler(cfg, &s, cfg->collect == collect_buf,
                                   why, why_size);
    }
    free(list);
    return rc;
}
