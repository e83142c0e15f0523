/* test_push.c - the push calls of telem.h (telem_counter_add(),
 * telem_gauge_set()) from the application's side, through libtelem into a
 * real telemd actor running in this process.
 *
 * Scenarios:
 *   invalid input   malformed names, reserved and repeated labels, bad
 *                   values: TELEM_EINVAL, counted in telem_stats().invalid,
 *                   nothing queued; a name with labels describes its
 *                   metric; TELEM_LEVEL=0 gives 1; after finalize
 *                   TELEM_ESTATE.
 */
#include "tmpdir.h"

#include <czmq.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "telem.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_time.h"
#include "telem_promname.h"
#include "telemd_actor.h"

#define S_THREADS 4
#define S_ROUNDS 20000

static void
s_env(const char *rundir, const char *node)
{
    setenv("TELEM_RUNDIR", rundir, 1);
    setenv("TELEM_NODE", node, 1);
    setenv("TELEM_FINALIZE_MS", "20000", 1);
    unsetenv("TELEM_INGEST");
    unsetenv("TELEM_CTL");
    unsetenv("TELEM_RANK");
    unsetenv("TELEM_LEVEL");
}

static void
s_test_invalid(void)
{
    REQUIRE(telem_init() == 0);
    static const char *const bad[] = {
        "", "9x", "a-b", "m{", "m{a=1}", "m{a=\"1\"", "m{a=\"\\t\"}",
        "m{host=\"h\"}", "m{pid=\"1\"}", "m{a=\"1\",a=\"2\"}", "m{__a=\"1\"}",
        "m{a=\"1\"} ", "m{a=\"1\"}{b=\"2\"}",
        "m{a=\"1\",b=\"2\",c=\"3\",d=\"4\",e=\"5\",f=\"6\",g=\"7\",h=\"8\","
        "i=\"9\"}",
    };
    size_t nbad = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < nbad; i++) {
        CHECK_RC(telem_counter_add(bad[i], 1), TELEM_EINVAL);
        CHECK_RC(telem_gauge_set(bad[i], 1), TELEM_EINVAL);
    }
    CHECK_RC(telem_counter_add(NULL, 1), TELEM_EINVAL);
    CHECK_RC(telem_counter_add("c", -1), TELEM_EINVAL);
    CHECK_RC(telem_counter_add("c", NAN), TELEM_EINVAL);
    CHECK_RC(telem_counter_add("c", INFINITY), TELEM_EINVAL);
    CHECK_RC(telem_gauge_set("g", NAN), TELEM_EINVAL);
    CHECK_RC(telem_gauge_set("g", -INFINITY), TELEM_EINVAL);
    char *huge = malloc(TELEM_PROMNAME_TEXT_MAX + 2);
    REQUIRE(huge);
    memset(huge, 'm', TELEM_PROMNAME_TEXT_MAX + 1);
    huge[TELEM_PROMNAME_TEXT_MAX + 1] = '\0';
    CHECK_RC(telem_counter_add(huge, 1), TELEM_EINVAL);
    free(huge);
    CHECK_RC(telem_counter_add("c{a=\"1\"}", 0), 0);
    CHECK_RC(telem_gauge_set("g", -2.5), 0);
    CHECK_RC(telem_describe("c{a=\"1\"}", "counter", "", "doc"), 0);
    CHECK_RC(telem_describe("c{a=1}", "counter", "", "doc"), TELEM_EINVAL);
    telem_stats_t st;
    telem_stats(&st);
    CHECK_INT(st.invalid, 2 * nbad + 7 + 1);
    CHECK_INT(st.queued, 2);
    CHECK_RC(telem_set_level(0), 0);
    CHECK_RC(telem_counter_add("c", 1), 1);
    CHECK_RC(telem_gauge_set("g", 1), 1);
    CHECK_RC(telem_finalize(), TELEM_ECONN);     /* no telemd here */
    CHECK_RC(telem_counter_add("c", 1), TELEM_ESTATE);
    CHECK_RC(telem_gauge_set("g", 1), TELEM_ESTATE);
}

int
main(void)
{
    telem_log_init("test_push", TELEM_LOG_WARN);
    char dir[TELEM_PATH_MAX];
    REQUIRE(test_tmpdir(dir, sizeof dir, "test_push") == 0);
    s_env(dir, "nopush");
    s_test_invalid();
    test_rmtree(dir);
    return check_report("test_push");
}
