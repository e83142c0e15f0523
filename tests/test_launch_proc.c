/* test_launch_proc.c - unit tests for the launcher's process helpers and
 * node sources: environments, word splitting with {node}, the commands
 * each source builds, posix_spawn into a process group (one at a time and
 * many at once) and signals to the whole group, and capturing a helper command's output.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch_argv.h"
#include "launch_env.h"
#include "launch_proc.h"
#include "launch_source.h"
#include "telem_error.h"
#include "check.h"


static void
test_env(void)
{
    char *base[] = { "A=1", "TELEM_NODE=old", "PATH=/bin", NULL };
    launch_env_t *e = launch_env_new(base);
    CHECK(e && strcmp(launch_env_get(e, "A"), "1") == 0);
    CHECK(launch_env_set(e, "TELEM_NODE", "n2") == 0);
    CHECK(strcmp(launch_env_get(e, "TELEM_NODE"), "n2") == 0);
    CHECK(launch_env_setf(e, "TELEM_RANK", "%d", 7) == 0);
    CHECK(strcmp(launch_env_get(e, "TELEM_RANK"), "7") == 0);
    launch_env_unset(e, "A");
    launch_env_unset(e, "NOPE");
    CHECK(launch_env_get(e, "A") == NULL && launch_env_get(e, "AB") == NULL);
    CHECK(launch_env_set(e, "", "x") == TELEM_EINVAL);
    CHECK(launch_env_set(e, "A=B", "x") == TELEM_EINVAL);
    size_t n = 0;
    for (char *const *v = launch_env_array(e); *v; v++)
        n++;
    CHECK(n == 3);                  /* TELEM_NODE, PATH, TELEM_RANK */
    launch_env_destroy(&e);
    CHECK(e == NULL);
    e = launch_env_new(NULL);
    CHECK(e && launch_env_array(e)[0] == NULL);
    launch_env_destroy(&e);
}

static void
test_split(void)
{
    launch_argv_t a = { 0 };
    CHECK(launch_argv_split(&a, "ssh -o 'Opt=a b' {node} x{node}y",
                            "h 1") == 0);
    CHECK(a.n == 5 && a.v[5] == NULL);
    CHECK(strcmp(a.v[0], "ssh") == 0 && strcmp(a.v[2], "Opt=a b") == 0);
    CHECK(strcmp(a.v[3], "h 1") == 0 && strcmp(a.v[4], "xh 1y") == 0);
    launch_argv_clear(&a);
    CHECK(launch_argv_split(&a, "echo $(id)", "n") == TELEM_EINVAL);
    CHECK(launch_argv_split(&a, "'unbalanced", "n") == TELEM_EINVAL);
    CHECK(launch_argv_split(&a, "   ", "n") == TELEM_EINVAL);
    launch_argv_clear(&a);
    /* one word, not split: a path with a space stays one */
    CHECK(launch_argv_add_node(&a, "/fx/{node}/sys {node}", "n2") == 0);
    CHECK(a.n == 1 && a.v[1] == NULL && strcmp(a.v[0], "/fx/n2/sys n2") == 0);
    launch_argv_clear(&a);
}

static void
test_sources(void)
{
    char why[256];
    int err = 0;
    launch_source_t *s = launch_source_new_local(3, &err);
    CHECK(s && launch_source_count(s) == 3 && err == 0);
    CHECK(strcmp(launch_source_names(s)[2], "n3") == 0);
    CHECK(!launch_source_daemon_names_itself(s));
    const char *argv[] = { "prog", "a b", NULL };
    const char *kv[] = { "TELEM_NODE=n1", NULL };
    launch_argv_t cmd = { 0 };
    CHECK(launch_source_command(s, "n1", "program", argv, kv, &cmd) == 0);
    CHECK(cmd.n == 2 && strcmp(cmd.v[1], "a b") == 0);
    launch_argv_clear(&cmd);
    launch_source_destroy(&s);
    CHECK(launch_source_new_local(0, &err) == NULL && err == TELEM_EINVAL);

    s = launch_source_new_template("ssh -x {node}", "h1,h2", why, sizeof why,
                                   &err);
    CHECK(s && launch_source_count(s) == 2
          && launch_source_kind(s) == LAUNCH_SOURCE_TEMPLATE);
    CHECK(launch_source_command(s, "h2", "telemd", argv, kv, &cmd) == 0);
    const char *want[] = { "ssh", "-x", "h2", "env", "TELEM_NODE=n1", "prog",
                           "a b" };
    CHECK(cmd.n == 7);
    for (size_t i = 0; i < 7 && i < cmd.n; i++)
        CHECK(strcmp(cmd.v[i], want[i]) == 0);
    launch_argv_clear(&cmd);
    launch_source_destroy(&s);
    s = launch_source_new_template("ssh {node}", "h1,h1", why, sizeof why,
                                   &err);
    CHECK(!s && err == TELEM_EINVAL && strstr(why, "twice"));
    s = launch_source_new_template("ssh {node}", "a/b", why, sizeof why, &err);
    CHECK(!s && err == TELEM_EINVAL && strstr(why, "a/b"));
    s = launch_source_new_template("ssh {node}", ",", why, sizeof why, &err);
    CHECK(!s && err == TELEM_EINVAL && strstr(why, "empty"));
    s = launch_source_new_template("'ssh", "h", why, sizeof why, &err);
    CHECK(!s && err == TELEM_EINVAL && strstr(why, "template"));
}

static void
test_spawn_group(void)
{
    /* A shell whose child stays in the group: one signal ends both. */
    CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    int fds[2];
    CHECK(pipe(fds) == 0);
    char *argv[] = { "sh", "-c", "sleep 60 & echo $!; wait", NULL };
    launch_proc_spawn_t s = { argv, NULL, -1, fds[1], -1 };
    pid_t pid = 0;
    CHECK(launch_proc_spawn(&s, &pid) == 0 && pid > 0);
    close(fds[1]);
    char buf[32] = "";
    ssize_t r = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    CHECK(r > 0);
    pid_t child = (pid_t) atol(buf);
    CHECK(child > 0 && getpgid(child) == pid && getpgid(pid) == pid);
    CHECK(launch_proc_signal_group(pid, SIGTERM) == 0);
    int sh_status = 0, status = 0;
    CHECK(waitpid(pid, &sh_status, 0) == pid);
    CHECK(WIFSIGNALED(sh_status) && WTERMSIG(sh_status) == SIGTERM);
    /* The orphaned sleep is reparented to this process (a subreaper):
       waiting for it proves the group signal reached it. */
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    char desc[64];
    launch_proc_status_describe(sh_status, desc, sizeof desc);
    CHECK(strstr(desc, "killed by signal 15") != NULL);
    launch_proc_status_describe(3 << 8, desc, sizeof desc);
    CHECK(strcmp(desc, "exited 3") == 0);
    CHECK(launch_proc_signal_group(1, SIGTERM) == TELEM_EINVAL);

    char *missing[] = { "/nonexistent/telem-program", NULL };
    s.argv = missing;
    s.stdout_fd = -1;
    CHECK(launch_proc_spawn(&s, &pid) == TELEM_EIO && errno == ENOENT);
}

static void
test_capture(void)
{
    char buf[64];
    char *ok[] = { "printf", "n1\\nn2\\n", NULL };
    CHECK(launch_proc_run_capture(ok, buf, sizeof buf) == 0);
    CHECK(strcmp(buf, "n1\nn2\n") == 0);
    char small[4];
    CHECK(launch_proc_run_capture(ok, small, sizeof small) == TELEM_ETOOBIG);
    CHECK(strcmp(small, "n1\n") == 0);
    char *bad[] = { "false", NULL };
    CHECK(launch_proc_run_capture(bad, buf, sizeof buf) == TELEM_EIO);
}

/* 40 processes at once (several spawner threads), one of them a program
 * that does not exist: every other one runs, with its own argument, and
 * the bad one alone fails with ENOENT. */
static void
test_spawn_many(void)
{
    enum { N = 40 };
    launch_proc_spawn_t s[N];
    char code[N][8];
    char *argv[N][4];
    pid_t pids[N];
    int rcs[N], errs[N];
    for (int i = 0; i < N; i++) {
        snprintf(code[i], sizeof code[i], "exit %d", i);
        argv[i][0] = i == 7 ? "/nonexistent/telem-nope" : "/bin/sh";
        argv[i][1] = "-c";
        argv[i][2] = code[i];
        argv[i][3] = NULL;
        s[i] = (launch_proc_spawn_t) { argv[i], NULL, -1, -1, -1 };
    }
    CHECK(launch_proc_spawn_many(s, N, pids, rcs, errs) == 1);
    for (int i = 0; i < N; i++) {
        if (i == 7) {
            CHECK(rcs[i] == TELEM_EIO && errs[i] == ENOENT);
            continue;
        }
        CHECK(rcs[i] == 0 && errs[i] == 0);
        CHECK(getpgid(pids[i]) == pids[i]);     /* a zombie still has it */
        int status = -1;
        CHECK(waitpid(pids[i], &status, 0) == pids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == i);
    }
    CHECK(launch_proc_spawn_many(s, 0, pids, rcs, errs) == 0);
}

int
main(void)
{
    test_env();
    test_split();
    test_sources();
    test_spawn_group();
    test_spawn_many();
    test_capture();
    return check_report("test_launch_proc");
}
