/* run_env.c - telem_run's environment (run_env.h).
 *
 * The installed library directory relative to the installed program
 * directory comes from the build (RUN_ENV_LIBDIR_REL, e.g. "../lib" or
 * "../lib/x86_64-linux-gnu"); a build tree keeps programs in bin/ and
 * libraries in lib/.
 */
#include "run_env.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_nodesock.h"
#include "telem_paths.h"
#include "telem_types.h"
#include "telem_why.h"

#ifndef RUN_ENV_LIBDIR_REL
#define RUN_ENV_LIBDIR_REL "../lib"
#endif
#define S_MPI_LIB "libtelem_mpi.so"

int
run_env_ingest(const char *where, char *why, size_t why_size)
{
    if (!where)
        return 0;
    char ep[TELEM_PATH_MAX], node[TELEM_NAME_MAX + 1] = "";
    if (!*where) {
        telem_why(why, why_size, "an empty endpoint");
        return TELEM_EINVAL;
    }
    int rc = 0;
    if (!strstr(where, "://"))
        rc = telem_nodesock_resolve(where, "ingest.sock", ep, sizeof ep, node,
                                    sizeof node, why, why_size);
    else if (snprintf(ep, sizeof ep, "%s", where) >= (int) sizeof ep)
        rc = TELEM_ETOOBIG;
    if (rc == TELEM_ETOOBIG)
        telem_why(why, why_size, "the endpoint is too long (%zu bytes, at"
                  " most %d)", strlen(where), TELEM_PATH_MAX - 16);
    if (rc)
        return rc;
    if (setenv("TELEM_INGEST", ep, 1) != 0
        || (*node && setenv("TELEM_NODE", node, 1) != 0)) {
        telem_why(why, why_size, "%s", strerror(errno));
        return TELEM_EIO;
    }
    return 0;
}

void
run_env_ingest_shown(char *buf, size_t size)
{
    const char *env = getenv("TELEM_INGEST");
    char rundir[TELEM_PATH_MAX], node[TELEM_NAME_MAX + 1];
    if (env && *env)
        snprintf(buf, size, "%s", env);
    else if (telem_rundir_default(rundir, sizeof rundir)
             || telem_node_default(node, sizeof node)
             || telem_node_endpoint(buf, size, rundir, node, "ingest.sock"))
        snprintf(buf, size, "(unknown)");
}

/* The library beside this program, in `rel` from its directory. */
static int
s_beside(char *buf, size_t size, const char *rel)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return TELEM_EIO;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return TELEM_EIO;
    *slash = '\0';
    int m = snprintf(buf, size, "%s/%s/%s", exe, rel, S_MPI_LIB);
    if (m < 0 || (size_t) m >= size)
        return TELEM_ETOOBIG;
    return access(buf, R_OK) == 0 ? 0 : TELEM_ENOTFOUND;
}

static int
s_find_mpi(char *buf, size_t size, char *why, size_t why_size)
{
    const char *env = getenv("TELEM_MPI_LIB");
    if (env && *env) {
        int n = snprintf(buf, size, "%s", env);
        if (n > 0 && (size_t) n < size && access(buf, R_OK) == 0)
            return 0;
        telem_why(why, why_size, "TELEM_MPI_LIB=%s: cannot read it", env);
        return TELEM_ENOTFOUND;
    }
    if (s_beside(buf, size, RUN_ENV_LIBDIR_REL) == 0
        || s_beside(buf, size, "../lib") == 0)
        return 0;
    telem_why(why, why_size,
              S_MPI_LIB " not found beside telem_run (it is built only where"
              " Open MPI's development files are; TELEM_MPI_LIB may name"
              " it)");
    return TELEM_ENOTFOUND;
}

int
run_env_mpi(double rate_hz, int verbose, char *why, size_t why_size)
{
    char lib[PATH_MAX], pre[2 * PATH_MAX], rate[32];
    int rc = s_find_mpi(lib, sizeof lib, why, why_size);
    if (rc)
        return rc;
    const char *old = getenv("LD_PRELOAD");
    int n = old && *old ? snprintf(pre, sizeof pre, "%s:%s", old, lib)
                        : snprintf(pre, sizeof pre, "%s", lib);
    if (n < 0 || (size_t) n >= sizeof pre) {
        telem_why(why, why_size, "LD_PRELOAD would be too long");
        return TELEM_ETOOBIG;
    }
    snprintf(rate, sizeof rate, "%.17g", rate_hz);
    if (setenv("LD_PRELOAD", pre, 1) || setenv("TELEM_RUN_RATE", rate, 1)
        || setenv("TELEM_RUN_VERBOSE", verbose ? "1" : "0", 1)) {
        telem_why(why, why_size, "%s", strerror(errno));
        return TELEM_EIO;
    }
    return 0;
}
