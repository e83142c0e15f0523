/* test_launch_state.c - unit tests for the launcher's node state machine.
 *
 * Drives launch_state_* directly (no processes): validation of --nodes/--idle
 * against the allocation, ranks, promotion of reserves in order, exclusion
 * of any node (the first one included), --exhaust-resources down to one
 * node, the boot-loop brake, the restart budget and its back-off.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "launch_state.h"
#include "telem_error.h"
#include "check.h"


#define SEC INT64_C(1000000000)

static const char *const s_names[] = { "n1", "n2", "n3", "n4", "n5" };

static launch_state_config_t
s_cfg(long nodes, long idle)
{
    launch_state_config_t c;
    launch_state_config_defaults(&c);
    if (nodes >= 0) {
        c.nodes = nodes;
        c.nodes_given = 1;
    }
    if (idle >= 0) {
        c.idle = idle;
        c.idle_given = 1;
    }
    return c;
}

/* "a,i,d" string of the node states, e.g. "AAID". */
static const char *
s_states(const launch_state_t *st)
{
    static char buf[16];
    size_t i;
    for (i = 0; i < launch_state_size(st) && i < sizeof buf - 1; i++)
        buf[i] = "AID"[launch_state_node(st, i)];
    buf[i] = '\0';
    return buf;
}

static void
test_validation(void)
{
    char why[256];
    launch_state_config_t c = s_cfg(3, 2);
    CHECK(launch_state_config_check(&c, 4, why, sizeof why) == TELEM_EINVAL);
    CHECK(strstr(why, "--nodes 3 plus --idle 2 needs 5 nodes") != NULL);
    CHECK(strstr(why, "has 4") != NULL);
    c = s_cfg(0, -1);
    CHECK(launch_state_config_check(&c, 4, why, sizeof why) == TELEM_EINVAL);
    CHECK(strstr(why, "at least one node") != NULL);
    c = s_cfg(5, -1);
    CHECK(launch_state_config_check(&c, 4, why, sizeof why) == TELEM_EINVAL);
    CHECK(strstr(why, "more than the 4 nodes") != NULL);
    c = s_cfg(-1, 4);
    CHECK(launch_state_config_check(&c, 4, why, sizeof why) == TELEM_EINVAL);
    CHECK(strstr(why, "leaves no node") != NULL);
    c = s_cfg(2, -1);
    c.idle = -3;
    c.idle_given = 1;
    CHECK(launch_state_config_check(&c, 4, why, sizeof why) == TELEM_EINVAL);
    CHECK(strstr(why, "negative") != NULL);
    c = s_cfg(-1, -1);
    CHECK(launch_state_config_check(&c, 0, why, sizeof why) == TELEM_EINVAL);
    CHECK(launch_state_config_check(&c, 1, why,
                                    sizeof why) == 0 && why[0] == '\0');
    c = s_cfg(2, 2);
    CHECK(launch_state_config_check(&c, 4, NULL, 0) == 0);
    int err = 0;
    c = s_cfg(9, -1);
    CHECK(launch_state_new(s_names, 5, &c,
                           &err) == NULL && err == TELEM_EINVAL);
}

static void
test_defaults_and_ranks(void)
{
    launch_state_config_t c = s_cfg(-1, -1);
    launch_state_t *st = launch_state_new(s_names, 4, &c, NULL);
    CHECK(st && strcmp(s_states(st), "AAAA") == 0);
    launch_state_destroy(&st);
    CHECK(st == NULL);
    launch_state_destroy(&st);

    c = s_cfg(2, -1);           /* K = allocation minus N */
    st = launch_state_new(s_names, 5, &c, NULL);
    CHECK(st && strcmp(s_states(st), "AAIII") == 0);
    CHECK(launch_state_rank(st, 0) == 0 && launch_state_rank(st, 1) == 1);
    CHECK(launch_state_rank(st, 2) == -1 && launch_state_rank(st, 9) == -1);
    CHECK(launch_state_find(st, "n3") == 2 && launch_state_find(st,
                                                                "zz") == -1);
    CHECK(launch_state_count(st, LAUNCH_NODE_IDLE) == 3);
    launch_state_destroy(&st);

    c = s_cfg(-1, 1);           /* N = allocation minus K */
    st = launch_state_new(s_names, 3, &c, NULL);
    CHECK(st && strcmp(s_states(st), "AAI") == 0);
    launch_state_destroy(&st);

    c = s_cfg(1, 1);            /* nodes past N + K are not used */
    st = launch_state_new(s_names, 5, &c, NULL);
    CHECK(st && launch_state_size(st) == 2 && strcmp(s_states(st), "AI") == 0);
    launch_state_destroy(&st);
}

static void
test_promotion_and_first_node(void)
{
    launch_state_config_t c = s_cfg(2, 2);
    launch_state_t *st = launch_state_new(s_names, 4, &c, NULL);
    launch_state_outcome_t o;
    size_t first = 0;
    CHECK(launch_state_fail(st, &first, 1, &o) == 0);
    CHECK(o.verdict == LAUNCH_VERDICT_RESTART && o.restart == 1);
    CHECK(o.downed_active == 1 && o.promoted == 1 && o.backoff_ns == 0);
    CHECK(strcmp(s_states(st), "DAAI") == 0);
    CHECK(launch_state_rank(st, 1) == 0 && launch_state_rank(st, 2) == 1);
    /* The same node again changes nothing; a reserve failing does not
       touch the program. */
    size_t idle = 3;
    CHECK(launch_state_fail(st, &idle, 1, &o) == 0);
    CHECK(o.verdict == LAUNCH_VERDICT_NONE && o.downed_idle == 1);
    CHECK(strcmp(s_states(st), "DAAD") == 0 && launch_state_restarts(st) == 1);
    /* Two active nodes at once with no reserve left: unrecoverable. */
    size_t both[] = { 1, 2, 77 };
    CHECK(launch_state_fail(st, both, 3, &o) == 0);
    CHECK(o.verdict == LAUNCH_VERDICT_UNRECOVERABLE && o.downed_active == 2);
    CHECK(launch_state_count(st, LAUNCH_NODE_ACTIVE) == 0);
    CHECK(launch_state_fail(st, NULL, 1, &o) == TELEM_EINVAL);
    CHECK(launch_state_fail(st, both, 1, NULL) == TELEM_EINVAL);
    launch_state_destroy(&st);
}

static void
test_exhaust(void)
{
    launch_state_config_t c = s_cfg(3, 0);
    launch_state_t *st = launch_state_new(s_names, 3, &c, NULL);
    launch_state_outcome_t o;
    size_t i = 1;
    launch_state_fail(st, &i, 1, &o);
    CHECK(o.verdict == LAUNCH_VERDICT_UNRECOVERABLE);   /* no exhaust */
    launch_state_destroy(&st);

    c.exhaust = 1;
    st = launch_state_new(s_names, 3, &c, NULL);
    launch_state_fail(st, &i, 1, &o);
    CHECK(o.verdict == LAUNCH_VERDICT_RESTART && o.promoted == 0);
    CHECK(strcmp(s_states(st), "ADA") == 0 && launch_state_rank(st, 2) == 1);
    i = 0;
    launch_state_fail(st, &i, 1, &o);
    CHECK(o.verdict == LAUNCH_VERDICT_RESTART && strcmp(s_states(st),
                                                        "DDA") == 0);
    CHECK(launch_state_rank(st, 2) == 0);
    i = 2;
    launch_state_fail(st, &i, 1, &o);                   /* none left */
    CHECK(o.verdict == LAUNCH_VERDICT_UNRECOVERABLE);
    launch_state_destroy(&st);

    /* With reserves, exhaust promotes first and shrinks only after. */
    c = s_cfg(2, 1);
    c.exhaust = 1;
    st = launch_state_new(s_names, 3, &c, NULL);
    size_t two[] = { 0, 1 };
    launch_state_fail(st, two, 2, &o);
    CHECK(o.verdict == LAUNCH_VERDICT_RESTART && o.promoted == 1);
    CHECK(strcmp(s_states(st), "DDA") == 0);
    launch_state_destroy(&st);
}

static void
test_bootloop(void)
{
    launch_state_config_t c = s_cfg(2, 1);
    launch_state_t *st = launch_state_new(s_names, 3, &c, NULL);
    launch_state_outcome_t o;
    launch_state_fail(st, NULL, 0, &o);                 /* blames no node */
    CHECK(o.verdict == LAUNCH_VERDICT_RESTART && o.restart == 1);
    CHECK(strcmp(s_states(st), "AAI") == 0);
    size_t down = 0;
    launch_state_fail(st, &down, 1, &o);                /* a real failure */
    CHECK(o.verdict == LAUNCH_VERDICT_RESTART && o.restart == 2);
    launch_state_fail(st, &down, 1, &o);                /* already down */
    CHECK(o.verdict == LAUNCH_VERDICT_BOOTLOOP);
    CHECK(launch_state_restarts(st) == 2);
    CHECK(strcmp(launch_state_verdict_name(o.verdict), "bootloop") == 0);
    launch_state_destroy(&st);
}

static void
test_budget_and_backoff(void)
{
    launch_state_config_t c = s_cfg(1, 4);
    c.max_restarts = 3;
    c.backoff_ns = 2 * SEC;
    c.backoff_max_ns = 3 * SEC;
    launch_state_t *st = launch_state_new(s_names, 5, &c, NULL);
    launch_state_outcome_t o;
    int64_t want[] = { 0, 2 * SEC, 3 * SEC };
    for (size_t i = 0; i < 3; i++) {
        launch_state_fail(st, &i, 1, &o);
        CHECK(o.verdict == LAUNCH_VERDICT_RESTART);
        CHECK(o.restart == (long) i + 1 && o.backoff_ns == want[i]);
        CHECK(launch_state_node(st, i + 1) == LAUNCH_NODE_ACTIVE);
    }
    size_t i = 3;
    launch_state_fail(st, &i, 1, &o);
    CHECK(o.verdict == LAUNCH_VERDICT_BUDGET && launch_state_restarts(st) == 3);
    launch_state_destroy(&st);

    c.max_restarts = 0;
    st = launch_state_new(s_names, 5, &c, NULL);
    i = 0;
    launch_state_fail(st, &i, 1, &o);
    CHECK(o.verdict == LAUNCH_VERDICT_BUDGET);
    launch_state_destroy(&st);

    c.max_restarts = -1;                            /* unlimited */
    c.backoff_ns = SEC;
    c.backoff_max_ns = 8 * SEC;
    st = launch_state_new(s_names, 5, &c, NULL);
    launch_state_fail(st, NULL, 0, &o);                 /* one noop restart */
    CHECK(o.verdict == LAUNCH_VERDICT_RESTART && o.backoff_ns == 0);
    int64_t want2[] = { SEC, 2 * SEC, 4 * SEC, 8 * SEC };
    for (size_t k = 0; k < 4; k++) {                /* the active node fails */
        launch_state_fail(st, &k, 1, &o);
        CHECK(o.verdict == LAUNCH_VERDICT_RESTART && o.restart == (long) k + 2);
        CHECK(o.backoff_ns == want2[k]);
    }
    launch_state_fail(st, NULL, 0, &o);
    CHECK(o.verdict == LAUNCH_VERDICT_BOOTLOOP);
    launch_state_destroy(&st);
}

int
main(void)
{
    test_validation();
    test_defaults_and_ranks();
    test_promotion_and_first_node();
    test_exhaust();
    test_bootloop();
    test_budget_and_backoff();
    return check_report("test_launch_state");
}
