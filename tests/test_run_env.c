/* test_run_env.c - telem_run's environment (run_env.h): -u's forms (an
 * endpoint as it is, a node's directory) become TELEM_INGEST (and the
 * node's name TELEM_NODE); an empty or over-long value, a missing path and
 * a file that is no socket are refused with a sentence and leave the
 * environment alone; the endpoint shown in messages follows TELEM_INGEST
 * or the run directory and node; the MPI library is found from
 * TELEM_MPI_LIB, and a missing one is named, with LD_PRELOAD untouched; a
 * found one goes after what LD_PRELOAD already holds.
 */
#include "tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "run_env.h"
#include "telem_error.h"

static void
test_ingest(const char *dir)
{
    char why[256] = "";
    unsetenv("TELEM_INGEST");
    CHECK_RC(run_env_ingest(NULL, why, sizeof why), 0);
    CHECK(getenv("TELEM_INGEST") == NULL);
    CHECK_RC(run_env_ingest("tcp://127.0.0.1:5555", why, sizeof why), 0);
    CHECK_STR(getenv("TELEM_INGEST"), "tcp://127.0.0.1:5555");
    char want[600], path[512];
    snprintf(want, sizeof want, "ipc://%s/ingest.sock", dir);
    CHECK_RC(run_env_ingest(dir, why, sizeof why), 0);
    CHECK_STR(getenv("TELEM_INGEST"), want);
    snprintf(path, sizeof path, "%s/", dir);
    CHECK_RC(run_env_ingest(path, why, sizeof why), 0);
    CHECK_STR(getenv("TELEM_INGEST"), want);
    const char *base = strrchr(dir, '/') + 1;
    CHECK_STR(getenv("TELEM_NODE"), base);        /* the directory's name */
    snprintf(path, sizeof path, "%s/other.sock", dir);
    CHECK_RC(run_env_ingest(path, why, sizeof why), TELEM_ENOTFOUND);
    FILE *f = fopen(path, "w");                   /* a file, not a socket */
    REQUIRE(f);
    fclose(f);
    CHECK_RC(run_env_ingest(path, why, sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "not a node") != NULL);
    remove(path);

    CHECK_RC(run_env_ingest("", why, sizeof why), TELEM_EINVAL);
    CHECK(why[0] != '\0');
    char *huge = malloc(5000);
    REQUIRE(huge);
    memcpy(huge, "ipc://", 6);
    memset(huge + 6, 'x', 4993);
    huge[4999] = '\0';
    why[0] = '\0';
    CHECK_RC(run_env_ingest(huge, why, sizeof why), TELEM_ETOOBIG);
    CHECK(strstr(why, "too long") != NULL);
    CHECK_STR(getenv("TELEM_INGEST"), want);     /* left alone */
    free(huge);

    char shown[600];
    run_env_ingest_shown(shown, sizeof shown);
    CHECK_STR(shown, want);
    unsetenv("TELEM_INGEST");
    setenv("TELEM_RUNDIR", dir, 1);
    setenv("TELEM_NODE", "n7", 1);
    snprintf(want, sizeof want, "ipc://%s/n7/ingest.sock", dir);
    run_env_ingest_shown(shown, sizeof shown);
    CHECK_STR(shown, want);
}

static void
test_mpi(const char *dir)
{
    char why[256] = "", lib[512], want[1100];
    setenv("LD_PRELOAD", "libfirst.so", 1);
    snprintf(lib, sizeof lib, "%s/nothere.so", dir);
    setenv("TELEM_MPI_LIB", lib, 1);
    CHECK_RC(run_env_mpi(2, 0, why, sizeof why), TELEM_ENOTFOUND);
    CHECK(strstr(why, "TELEM_MPI_LIB") != NULL);
    CHECK_STR(getenv("LD_PRELOAD"), "libfirst.so");
    snprintf(lib, sizeof lib, "%s/libtelem_mpi.so", dir);
    FILE *f = fopen(lib, "w");
    REQUIRE(f);
    fclose(f);
    setenv("TELEM_MPI_LIB", lib, 1);
    CHECK_RC(run_env_mpi(2.5, 1, why, sizeof why), 0);
    snprintf(want, sizeof want, "libfirst.so:%s", lib);
    CHECK_STR(getenv("LD_PRELOAD"), want);
    CHECK_STR(getenv("TELEM_RUN_RATE"), "2.5");
    CHECK_STR(getenv("TELEM_RUN_VERBOSE"), "1");
    unsetenv("LD_PRELOAD");
    CHECK_RC(run_env_mpi(1, 0, why, sizeof why), 0);
    CHECK_STR(getenv("LD_PRELOAD"), lib);
    CHECK_STR(getenv("TELEM_RUN_VERBOSE"), "0");
    unsetenv("LD_PRELOAD");
    unsetenv("TELEM_MPI_LIB");
}

int
main(void)
{
    char dir[256];
    REQUIRE(test_tmpdir(dir, sizeof dir, "run_env") == 0);
    test_ingest(dir);
    test_mpi(dir);
    test_rmtree(dir);
    return check_report("test_run_env");
}
