/* test_slurmd.c - telemd's watch of its node's slurmd (telemd_slurmd.h),
 * on proc trees built here: which slurmd is the node's (named with -N,
 * the one in telemd's network namespace, the only one), ambiguity, death
 * (the process gone, its pid reused, a zombie), and malformed stat and
 * cmdline files, which must be skipped without harm.
 */
#include "tmpdir.h"

#include <string.h>
#include <unistd.h>

#include "check.h"
#include "telemd_slurmd.h"

static char s_root[128];

static void
s_write(const char *rel, const char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", s_root, rel);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    REQUIRE(fwrite(data, 1, len, f) == len);
    fclose(f);
}

static void
s_mkdir(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", s_root, rel);
    REQUIRE(mkdir(path, 0755) == 0);
}

/* A process `pid` named comm, in state st, started at `start`, with the
 * NUL-separated command line `cmd` (cmd_len bytes) and network namespace
 * `net` (a link target such as "net:[1]"). */
static void
s_proc(int pid, const char *comm, char st, unsigned long long start,
       const char *cmd, size_t cmd_len, const char *net)
{
    char rel[64], stat[512], link[512];
    snprintf(rel, sizeof rel, "%d", pid);
    s_mkdir(rel);
    snprintf(rel, sizeof rel, "%d/ns", pid);
    s_mkdir(rel);
    int n = snprintf(stat, sizeof stat, "%d (%s) %c 1 %d %d 0 -1 4194560 "
                     "100 0 0 0 5 3 0 0 20 0 1 0 %llu 1000 200", pid, comm,
                     st, pid, pid, start);
    snprintf(rel, sizeof rel, "%d/stat", pid);
    s_write(rel, stat, (size_t) n);
    snprintf(rel, sizeof rel, "%d/cmdline", pid);
    s_write(rel, cmd, cmd_len);
    snprintf(link, sizeof link, "%s/%d/ns/net", s_root, pid);
    REQUIRE(symlink(net, link) == 0);
}

static void
s_fresh(const char *self_net)
{
    if (*s_root)
        test_rmtree(s_root);
    REQUIRE(test_tmpdir(s_root, sizeof s_root, "telem-slurmd") == 0);
    char link[512];
    s_mkdir("self");
    s_mkdir("self/ns");
    snprintf(link, sizeof link, "%s/self/ns/net", s_root);
    REQUIRE(symlink(self_net, link) == 0);
}

#define CMD(s) s, sizeof(s) - 1

static void
test_named(void)
{
    char why[256] = "";
    s_fresh("net:[100]");
    s_proc(11, "slurmd", 'S', 500, CMD("slurmd\0-N\0n1\0"), "net:[100]");
    s_proc(12, "slurmd", 'S', 600, CMD("slurmd\0-Nn2\0"), "net:[100]");
    s_proc(13, "sleep", 'S', 700, CMD("sleep\0-N\0n2\0"), "net:[100]");
    telemd_slurmd_t *w = telemd_slurmd_find(s_root, "n2", why, sizeof why);
    REQUIRE(w);
    CHECK_INT(telemd_slurmd_pid(w), 12);
    CHECK_INT(telemd_slurmd_alive(w, why, sizeof why), 1);
    telemd_slurmd_destroy(&w);
    CHECK(w == NULL);
    w = telemd_slurmd_find(s_root, "n1", why, sizeof why);
    REQUIRE(w);
    CHECK_INT(telemd_slurmd_pid(w), 11);
    telemd_slurmd_destroy(&w);
    /* Two clusters on one host: the n2 of telemd's namespace. */
    s_proc(14, "slurmd", 'S', 650, CMD("slurmd\0-N\0n2\0"), "net:[900]");
    w = telemd_slurmd_find(s_root, "n2", why, sizeof why);
    REQUIRE(w);
    CHECK_INT(telemd_slurmd_pid(w), 12);
    telemd_slurmd_destroy(&w);
    /* Started for other nodes only: none is n3's. */
    w = telemd_slurmd_find(s_root, "n3", why, sizeof why);
    CHECK(w == NULL);
    CHECK(strstr(why, "3 slurmd processes") != NULL);
}

static void
test_namespace(void)
{
    char why[256] = "";
    s_fresh("net:[200]");
    s_proc(21, "slurmd", 'S', 500, CMD("/usr/sbin/slurmd\0-D\0"), "net:[100]");
    s_proc(22, "slurmd", 'S', 600, CMD("/usr/sbin/slurmd\0"), "net:[200]");
    telemd_slurmd_t *w = telemd_slurmd_find(s_root, "n5", why, sizeof why);
    REQUIRE(w);
    CHECK_INT(telemd_slurmd_pid(w), 22);
    telemd_slurmd_destroy(&w);
    /* Two in other namespaces and none named: ambiguous. */
    s_fresh("net:[300]");
    s_proc(21, "slurmd", 'S', 500, CMD("slurmd\0"), "net:[100]");
    s_proc(22, "slurmd", 'S', 600, CMD("slurmd\0"), "net:[200]");
    CHECK(telemd_slurmd_find(s_root, "n5", why, sizeof why) == NULL);
    CHECK(strstr(why, "none is node n5's alone") != NULL);
    /* The only one, wherever it is. */
    s_fresh("net:[300]");
    s_proc(31, "slurmd", 'S', 500, CMD("slurmd\0"), "net:[100]");
    w = telemd_slurmd_find(s_root, "n5", why, sizeof why);
    REQUIRE(w);
    CHECK_INT(telemd_slurmd_pid(w), 31);
    telemd_slurmd_destroy(&w);
    /* None at all. */
    s_fresh("net:[300]");
    s_proc(41, "slurmctld", 'S', 500, CMD("slurmctld\0"), "net:[300]");
    CHECK(telemd_slurmd_find(s_root, "n5", why, sizeof why) == NULL);
    CHECK(strstr(why, "no slurmd process") != NULL);
}

/* Rewrites pid's stat with another state or start time. */
static void
s_restat(int pid, char st, unsigned long long start)
{
    char rel[64], stat[256];
    int n = snprintf(stat, sizeof stat, "%d (slurmd) %c 1 2 3 0 -1 0 0 0 0 "
                     "0 0 0 0 0 20 0 1 0 %llu 1 2", pid, st, start);
    snprintf(rel, sizeof rel, "%d/stat", pid);
    s_write(rel, stat, (size_t) n);
}

static void
test_death(void)
{
    char why[256] = "", rel[256];
    s_fresh("net:[1]");
    s_proc(51, "slurmd", 'S', 500, CMD("slurmd\0"), "net:[1]");
    telemd_slurmd_t *w = telemd_slurmd_find(s_root, "n1", why, sizeof why);
    REQUIRE(w);
    CHECK_INT(telemd_slurmd_alive(w, why, sizeof why), 1);
    s_restat(51, 'R', 500);
    CHECK_INT(telemd_slurmd_alive(w, why, sizeof why), 1);
    s_restat(51, 'Z', 500);                 /* a zombie is dead */
    CHECK_INT(telemd_slurmd_alive(w, why, sizeof why), 0);
    CHECK(strstr(why, "slurmd (pid 51) is gone") != NULL);
    s_restat(51, 'S', 500);                 /* gone stays gone */
    CHECK_INT(telemd_slurmd_alive(w, why, sizeof why), 0);
    telemd_slurmd_destroy(&w);
    /* The pid reused by a later process. */
    w = telemd_slurmd_find(s_root, "n1", why, sizeof why);
    REQUIRE(w);
    s_restat(51, 'S', 900);
    CHECK_INT(telemd_slurmd_alive(w, why, sizeof why), 0);
    telemd_slurmd_destroy(&w);
    /* The process gone altogether. */
    s_restat(51, 'S', 500);
    w = telemd_slurmd_find(s_root, "n1", why, sizeof why);
    REQUIRE(w);
    snprintf(rel, sizeof rel, "%s/51/stat", s_root);
    REQUIRE(unlink(rel) == 0);
    CHECK_INT(telemd_slurmd_alive(w, why, sizeof why), 0);
    telemd_slurmd_destroy(&w);
    telemd_slurmd_destroy(&w);              /* NULL is fine */
    telemd_slurmd_destroy(NULL);
}

static void
test_malformed(void)
{
    char why[256] = "";
    static const char *const bad[] = {
        "", "garbage", "61 (slurmd", "61 slurmd) S", "61 (slurmd) S 1 2",
        "61 (slurmd) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x",
        "61 ((slurmd)) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 5",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s_fresh("net:[1]");
        s_mkdir("61");
        s_write("61/stat", bad[i], strlen(bad[i]));
        s_write("61/cmdline", "-N", 2);     /* cut after the flag */
        telemd_slurmd_t *w = telemd_slurmd_find(s_root, "n1", why, sizeof why);
        CHECK(w == NULL);
        telemd_slurmd_destroy(&w);
    }
    /* A huge comm and a command line without a NUL. */
    s_fresh("net:[1]");
    char big[3000];
    memset(big, 'x', sizeof big);
    s_proc(62, "slurmd", 'S', 7, big, sizeof big, "net:[1]");
    telemd_slurmd_t *w = telemd_slurmd_find(s_root, "n1", why, sizeof why);
    REQUIRE(w);
    CHECK_INT(telemd_slurmd_pid(w), 62);
    telemd_slurmd_destroy(&w);
    /* A proc root that does not exist. */
    CHECK(telemd_slurmd_find("/nonexistent/proc", "n1", why, sizeof why)
          == NULL);
    /* This machine's real /proc: either answer, never a crash. */
    w = telemd_slurmd_find(NULL, "n1", why, sizeof why);
    telemd_slurmd_destroy(&w);
}

int
main(void)
{
    test_named();
    test_namespace();
    test_death();
    test_malformed();
    test_rmtree(s_root);
    return check_report("test_slurmd");
}
