/* test_launch_step.c - unit tests for the text of a multi-node Slurm step
 * (launch_step.h): step files written and read back (every character an
 * argument may hold), malformed step files, srun's labels (a bad rank, an
 * overlong number, no label), srun's own lines (the ones Slurm 22.05
 * writes, and near misses that must not end a task), rank lists, and
 * telem_step's start line; plus the srun words of a step
 * (launch_source_step_command()).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "launch_argv.h"
#include "launch_source.h"
#include "launch_step.h"
#include "telem_error.h"
#include "check.h"

/* Writes lines through launch_step_file_line into a memory buffer. */
static char *
s_file(size_t *len, int (*fill)(FILE *))
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    REQUIRE(f != NULL);
    CHECK_RC(fill(f), 0);
    fclose(f);
    return buf;
}

static int
s_fill(FILE *f)
{
    const char *env1[] = { "TELEM_NODE=n1", "TELEM_RANK=0", "X=a=b", NULL };
    const char *argv1[] = { "/bin/prog", "two words", "tab\there",
                            "new\nline", "back\\slash", "cr\rx", "", NULL };
    const char *argv2[] = { "/bin/prog", "--node", "n2", NULL };
    return launch_step_file_line(f, "n1", 0, env1, argv1)
           || launch_step_file_line(f, "n2", 1, NULL, argv2)
           || launch_step_file_line(f, "n10", 2, NULL, argv2);
}

static void
test_file_roundtrip(void)
{
    size_t len = 0, rank = 99;
    char *buf = s_file(&len, s_fill);
    launch_argv_t env = { 0 }, argv = { 0 };
    CHECK_RC(launch_step_file_find(buf, len, "n1", &rank, &env, &argv), 0);
    CHECK_INT(rank, 0);
    CHECK_INT(env.n, 3);
    CHECK_STR(env.v[2], "X=a=b");
    CHECK_INT(argv.n, 7);
    CHECK_STR(argv.v[1], "two words");
    CHECK_STR(argv.v[2], "tab\there");
    CHECK_STR(argv.v[3], "new\nline");
    CHECK_STR(argv.v[4], "back\\slash");
    CHECK_STR(argv.v[5], "cr\rx");
    CHECK_STR(argv.v[6], "");
    launch_argv_clear(&env);
    launch_argv_clear(&argv);
    /* "n1" is not a prefix match of "n10". */
    CHECK_RC(launch_step_file_find(buf, len, "n10", &rank, &env, &argv), 0);
    CHECK_INT(rank, 2);
    CHECK_INT(env.n, 0);
    launch_argv_clear(&argv);
    CHECK_RC(launch_step_file_find(buf, len, "n3", &rank, &env, &argv),
             TELEM_ENOTFOUND);
    CHECK_RC(launch_step_file_find(buf, len, "n", &rank, &env, &argv),
             TELEM_ENOTFOUND);
    CHECK_RC(launch_step_file_find(buf, len, "", &rank, &env, &argv),
             TELEM_ENOTFOUND);
    free(buf);
}

static void
test_file_write_refuses(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f != NULL);
    const char *argv[] = { "/bin/true", NULL }, *none[] = { NULL };
    const char *bad_env[] = { "NOEQUALS", NULL }, *empty_key[] = { "=v", NULL };
    CHECK_RC(launch_step_file_line(f, "n1", 0, NULL, none), TELEM_EINVAL);
    CHECK_RC(launch_step_file_line(f, "n1", 0, NULL, NULL), TELEM_EINVAL);
    CHECK_RC(launch_step_file_line(f, "n\t1", 0, NULL, argv), TELEM_EINVAL);
    CHECK_RC(launch_step_file_line(f, "#n1", 0, NULL, argv), TELEM_EINVAL);
    CHECK_RC(launch_step_file_line(f, "", 0, NULL, argv), TELEM_EINVAL);
    CHECK_RC(launch_step_file_line(f, "n1", 0, bad_env, argv), TELEM_EINVAL);
    CHECK_RC(launch_step_file_line(f, "n1", 0, empty_key, argv),
             TELEM_EINVAL);
    fclose(f);
    CHECK_INT(len, 0);          /* nothing written for a refused line */
    free(buf);
}

/* One malformed line for node n1 must be refused, not half-run. */
static void
s_bad(const char *text)
{
    size_t rank;
    launch_argv_t env = { 0 }, argv = { 0 };
    int rc = launch_step_file_find(text, strlen(text), "n1", &rank, &env,
                                   &argv);
    if (rc != TELEM_EPROTO)
        fprintf(stderr, "accepted or misread (%d): '%s'\n", rc, text);
    CHECK_RC(rc, TELEM_EPROTO);
    launch_argv_clear(&env);
    launch_argv_clear(&argv);
}

static void
test_file_malformed(void)
{
    s_bad("n1\t0\n");                       /* no command */
    s_bad("n1\t0\te:A=1\n");                /* environment only */
    s_bad("n1\t\ta:/bin/true\n");           /* empty rank */
    s_bad("n1\tx\ta:/bin/true\n");          /* rank not a number */
    s_bad("n1\t-1\ta:/bin/true\n");
    s_bad("n1\t1234567890\ta:/bin/true\n"); /* rank too long */
    s_bad("n1\t0\tb:/bin/true\n");          /* unknown word kind */
    s_bad("n1\t0\ta\n");                    /* word without kind */
    s_bad("n1\t0\te:NOEQ\ta:/bin/true\n");  /* env without '=' */
    s_bad("n1\t0\te:=v\ta:/bin/true\n");    /* env with empty key */
    s_bad("n1\t0\ta:bad\\escape\n");        /* unknown escape */
    s_bad("n1\t0\ta:trailing\\\n");         /* escape at the end */
    s_bad("n1\t0\ta:/bin/true\nn1\t1\ta:/bin/false\n");  /* twice */
    s_bad("n1\t0");                         /* no tab after the rank,
                                               no command, no newline */
    /* Other nodes' bad lines and comments do not matter to n1. */
    const char *ok = "# comment\tn1\nn2\tgarbage\\q\nn1\t3\ta:/bin/true";
    size_t rank;
    launch_argv_t env = { 0 }, argv = { 0 };
    CHECK_RC(launch_step_file_find(ok, strlen(ok), "n1", &rank, &env, &argv),
             0);
    CHECK_INT(rank, 3);
    CHECK_STR(argv.v[0], "/bin/true");
    launch_argv_clear(&argv);
    CHECK_RC(launch_step_file_find(NULL, 0, "n1", &rank, &env, &argv),
             TELEM_ENOTFOUND);
}

static void
test_label(void)
{
    size_t rank = 99;
    const char *text = NULL;
    CHECK_RC(launch_step_label("0: ready", 3, &rank, &text), 0);
    CHECK_INT(rank, 0);
    CHECK_STR(text, "ready");
    CHECK_RC(launch_step_label(" 7: query\ttcp://x:1", 12, &rank, &text), 0);
    CHECK_INT(rank, 7);
    CHECK_STR(text, "query\ttcp://x:1");
    CHECK_RC(launch_step_label("11: ", 12, &rank, &text), 0);
    CHECK_STR(text, "");
    CHECK_RC(launch_step_label("2:", 3, &rank, &text), 0);
    CHECK_STR(text, "");
    CHECK_RC(launch_step_label("1: 2: nested", 3, &rank, &text), 0);
    CHECK_STR(text, "2: nested");
    /* A rank the step does not have, a number too long. */
    CHECK_RC(launch_step_label("3: x", 3, &rank, &text), TELEM_EPROTO);
    CHECK_RC(launch_step_label("99999999999999999999: x", 3, &rank, &text),
             TELEM_EPROTO);
    /* Not labels: srun's own lines, text without the colon and space. */
    CHECK_RC(launch_step_label("srun: error: x", 3, &rank, &text),
             TELEM_ENOTFOUND);
    CHECK_RC(launch_step_label("1:x", 3, &rank, &text), TELEM_ENOTFOUND);
    CHECK_RC(launch_step_label("", 3, &rank, &text), TELEM_ENOTFOUND);
    CHECK_RC(launch_step_label(": x", 3, &rank, &text), TELEM_ENOTFOUND);
    CHECK_RC(launch_step_label("x1: x", 3, &rank, &text), TELEM_ENOTFOUND);
    CHECK_RC(launch_step_label("0: x", 0, &rank, &text), TELEM_EPROTO);
}

static void
test_srun_lines(void)
{
    launch_step_srun_t ev;
    launch_step_srun_parse("srun: launch/slurm: _task_finish: Received task "
                           "exit notification for 1 task of StepId=10.0 "
                           "(status=0x8200).", &ev);
    CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_STATUS);
    CHECK_INT(ev.status, 0x8200);
    launch_step_srun_parse("srun: error: n2: task 1: Exited with exit code 3",
                           &ev);
    CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_TASKS);
    CHECK(WIFEXITED(ev.status) && WEXITSTATUS(ev.status) == 3);
    CHECK(ev.ranks_len == 1 && ev.ranks[0] == '1');
    launch_step_srun_parse("srun: launch/slurm: _task_finish: n3: task 2: "
                           "Completed", &ev);
    CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_TASKS);
    CHECK_INT(ev.status, 0);
    launch_step_srun_parse("srun: error: n[1-2]: tasks 0-1,4: Killed", &ev);
    CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_TASKS);
    CHECK(WIFSIGNALED(ev.status) && WTERMSIG(ev.status) == SIGKILL);
    CHECK(ev.ranks_len == 5 && strncmp(ev.ranks, "0-1,4", 5) == 0);
    launch_step_srun_parse("srun: error: n1: task 0: Segmentation fault "
                           "(core dumped)", &ev);
    CHECK(WIFSIGNALED(ev.status) && WTERMSIG(ev.status) == SIGSEGV);
    launch_step_srun_parse("srun: error: n1: task 0: Interrupt", &ev);
    CHECK(WIFSIGNALED(ev.status) && WTERMSIG(ev.status) == SIGINT);
    /* Words this C library does not know: a task line, status unknown. */
    launch_step_srun_parse("srun: error: n1: task 0: Frobnicated", &ev);
    CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_TASKS);
    CHECK_INT(ev.status, -1);
    CHECK_STR(ev.what, "Frobnicated");
    launch_step_srun_parse("srun: error: n1: task 0: Exited with exit code "
                           "x", &ev);
    CHECK_INT(ev.status, -1);
    launch_step_srun_parse("srun: error: n1: task 0: Exited with exit code "
                           "300", &ev);
    CHECK_INT(ev.status, -1);
    launch_step_srun_parse("srun: error: Node failure on n2", &ev);
    CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_NODE_FAILURE);
    CHECK(ev.node_len == 2 && strncmp(ev.node, "n2", 2) == 0);
    launch_step_srun_parse("srun: error: Unable to create step for job 8: "
                           "More processors requested than permitted", &ev);
    CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_ERROR);
    CHECK(strncmp(ev.what, "Unable to create step", 21) == 0);
    launch_step_srun_parse("srun: fatal: Invalid node name specified", &ev);
    CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_ERROR);
}

/* Lines that must end no task: near misses of the ones above. */
static void
test_srun_near_misses(void)
{
    static const char *const other[] = {
        "srun: launch/slurm: _task_start: Node n1, 1 tasks started",
        "srun: launching StepId=10.0 on host n1, 1 tasks: 0",
        "srun: Force Terminated StepId=10.0",
        "srun: sending Ctrl-C to StepId=10.0",
        "srun: got SIGCONT",
        "srun: jobid 10: nodes(3):`n[1-3]', cpu counts: 1(x3)",
        "srun: launch/slurm: _task_finish: Received task exit notification "
        "for 1 task of StepId=1.0 (status=0x1ffff).",
        "srun: launch/slurm: _task_finish: Received task exit notification "
        "for 1 task of StepId=1.0 (status=0xzz).",
        "srun: launch/slurm: _task_finish: Received task exit notification",
        "srun: launch/slurm: _task_finish: n1: task x: Completed",
        "srun: launch/slurm: _task_finish: n1: task 0: ",
        "srun: launch/slurm: _task_finish: : task 0: Completed",
        "srun: launch/slurm: _task_finish: n1: task 0 Completed",
        "0: srun: error: n1: task 0: Killed",    /* a task's own line */
        "srun:error: n1: task 0: Killed",
        "slurmstepd: error: *** STEP 1.0 ON n1 CANCELLED ***",
        "srun: warning: n1: task 0: Killed",
        "",
        "srun: ",
    };
    launch_step_srun_t ev;
    for (size_t k = 0; k < sizeof other / sizeof *other; k++) {
        launch_step_srun_parse(other[k], &ev);
        if (ev.kind != LAUNCH_STEP_SRUN_OTHER)
            fprintf(stderr, "not OTHER (%d): '%s'\n", (int) ev.kind,
                    other[k]);
        CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_OTHER);
    }
    /* An error line that is not about tasks stays an error line. */
    launch_step_srun_parse("srun: error: n1: task 0 x: Killed", &ev);
    CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_ERROR);
    launch_step_srun_parse("srun: error: Node failure on ", &ev);
    CHECK_INT(ev.kind, LAUNCH_STEP_SRUN_ERROR);
}

static int
s_ranks(const char *list, size_t n, unsigned char *hit)
{
    memset(hit, 0, n);
    return launch_step_ranks(list, strlen(list), n, hit);
}

static void
test_ranks(void)
{
    unsigned char hit[8];
    CHECK_RC(s_ranks("3", 8, hit), 0);
    CHECK(hit[3] && !hit[2] && !hit[4]);
    CHECK_RC(s_ranks("0-2,5,7", 8, hit), 0);
    CHECK(hit[0] && hit[1] && hit[2] && !hit[3] && hit[5] && hit[7]);
    static const char *const bad[] = {
        "", "8", "0-8", "2-1", "1,", ",1", "1,,2", "-1", "1-", "a",
        "1-2-3", "99999999999", "0,1 ", NULL
    };
    for (size_t k = 0; bad[k]; k++) {
        int rc = s_ranks(bad[k], 8, hit);
        int any = 0;
        for (size_t r = 0; r < 8; r++)
            any |= hit[r];
        if (rc != TELEM_EPROTO || any)
            fprintf(stderr, "rank list '%s' accepted\n", bad[k]);
        CHECK(rc == TELEM_EPROTO && !any);
    }
}

static void
test_start_line(void)
{
    long pid = 0;
    char step[32];
    CHECK_RC(launch_step_start_parse("telem_step\tstart\t4242\t11.3\tn2", &pid,
                                     step, sizeof step), 0);
    CHECK_INT(pid, 4242);
    CHECK_STR(step, "11.3");
    CHECK_RC(launch_step_start_parse("ready", &pid, step, sizeof step),
             TELEM_ENOTFOUND);
    static const char *const bad[] = {
        "telem_step\tstart\t\t11.3\tn2", "telem_step\tstart\tx\t11.3\tn2",
        "telem_step\tstart\t1\t11.3\tn2", "telem_step\tstart\t42\t11.3",
        "telem_step\tstart\t42\t113\tn2", "telem_step\tstart\t42\t1;3\tn2",
        "telem_step\tstart\t99999999999\t1.3\tn2",
        "telem_step\tstart\t42\t1111111111111111111111111111111.3\tn2", NULL
    };
    for (size_t k = 0; bad[k]; k++)
        CHECK_RC(launch_step_start_parse(bad[k], &pid, step, sizeof step),
                 TELEM_EPROTO);
}

static void
test_step_command(void)
{
    int err = 0;
    launch_source_t *local = launch_source_new_local(2, &err);
    REQUIRE(local != NULL);
    const char *argv[] = { "/bin/telem_step", "/run/steps/telemd.1.tasks",
                           NULL };
    launch_argv_t out = { 0 };
    CHECK_RC(launch_source_step_command(local, 2, "telemd", argv, &out),
             TELEM_EUNSUPPORTED);
    launch_source_destroy(&local);
    /* A Slurm source needs scontrol; its words are checked where Slurm
       runs (tests/it_slurm_steps.sh). */
}

int
main(void)
{
    test_file_roundtrip();
    test_file_write_refuses();
    test_file_malformed();
    test_label();
    test_srun_lines();
    test_srun_near_misses();
    test_ranks();
    test_start_line();
    test_step_command();
    return check_report("test_launch_step");
}
