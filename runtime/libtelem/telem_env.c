/* telem_env.c - libtelem's configuration from the environment (telem.h):
 * numbers such as TELEM_LEVEL, the rank sections carry (the launchers'
 * rank variables), and the node's endpoints from TELEM_INGEST, TELEM_CTL,
 * TELEM_NODE and TELEM_RUNDIR.
 *
 * Call order: telem.c calls this file (telem_int.h); it calls nothing of
 * the API's own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_int.h"
#include "telem_paths.h"
#include "telem_types.h"

int
tapi_env_int(const char *name, int lo, int hi, int dflt)
{
    const char *env = getenv(name);
    if (!env || !*env)
        return dflt;
    char *end;
    long v = strtol(env, &end, 10);
    return (*end || v < lo || v > hi) ? dflt : (int) v;
}

static int
s_copy(char *dst, size_t size, const char *src)
{
    int n = snprintf(dst, size, "%s", src);
    return n < 0 || (size_t) n >= size ? TELEM_ETOOBIG : 0;
}

/* TELEM_CTL, else the ctl.sock beside an ipc TELEM_INGEST ending in
 * "/ingest.sock", else <rundir>/<node>/ctl.sock. */
static void
s_ctl_endpoint(char *ctl, size_t size, const char *rundir, const char *node)
{
    const char *env = getenv("TELEM_CTL");
    const char *ingest = getenv("TELEM_INGEST");
    static const char tail[] = "/ingest.sock";
    size_t n = ingest ? strlen(ingest) : 0;
    if (env && *env) {
        if (!s_copy(ctl, size, env))
            return;
    } else if (n > sizeof tail && strncmp(ingest, "ipc://", 6) == 0
               && strcmp(ingest + n - (sizeof tail - 1), tail) == 0) {
        if (snprintf(ctl, size, "%.*s/ctl.sock",
                     (int) (n - (sizeof tail - 1)), ingest) < (int) size)
            return;
    } else if (*rundir && *node
               && !telem_node_endpoint(ctl, size, rundir, node, "ctl.sock")) {
        return;
    }
    ctl[0] = '\0';
}

void
tapi_endpoints(char *node, char *ingest, char *ctl)
{
    char rundir[TELEM_PATH_MAX];
    if (telem_node_default(node, TELEM_NAME_MAX + 1) || !telem_node_valid(node))
        node[0] = '\0';
    if (telem_rundir_default(rundir, sizeof rundir))
        rundir[0] = '\0';
    const char *env = getenv("TELEM_INGEST");
    if (env && *env) {
        if (s_copy(ingest, TELEM_PATH_MAX, env))
            ingest[0] = '\0';
    } else if (!*rundir || !*node
               || telem_node_endpoint(ingest, TELEM_PATH_MAX, rundir, node,
                                      "ingest.sock")) {
        ingest[0] = '\0';
    }
    s_ctl_endpoint(ctl, TELEM_PATH_MAX, rundir, node);
}

/* A non-negative decimal integer that fits an int64 and a tag. */
static int
s_rank_ok(const char *s)
{
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    return n > 0 && n <= 18 && s[n] == '\0';
}

void
tapi_env_rank(char *out, size_t size)
{
    static const char *const vars[] = { "TELEM_RANK", "SLURM_PROCID",
                                        "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                        "RANK" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && s_rank_ok(v) && !s_copy(out, size, v))
            return;
    }
    s_copy(out, size, "0");
}
