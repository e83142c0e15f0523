/* test_paths.c - unit tests for the node file (telem_paths.h): lines
 * written by telem_nodefile_register are found by telem_nodefile_lookup,
 * a re-registered node has its new endpoint, comments and malformed lines
 * are skipped, and a missing file, a missing node and a buffer too small
 * for the endpoint each give their own code.  A node lock is exclusive
 * (a second holder gets TELEM_ESTATE) and carries the holder's pid.  A
 * relative run directory (--rundir or $TELEM_RUNDIR) is made absolute
 * against the current directory; telem_rundir_prepare creates the last
 * component only (mode 0700), refuses a relative path, and names the
 * missing parent when there is one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "telem_error.h"
#include "telem_paths.h"

static void
test_node_lock(const char *dir)
{
    char lock[600], again[600], pid[32] = "";
    int fd = -1, fd2 = -1;
    CHECK_RC(telem_node_lock(lock, sizeof lock, dir, ".", "x.lock", &fd), 0);
    CHECK(fd >= 0);
    FILE *f = fopen(lock, "r");
    REQUIRE(f);
    CHECK(fgets(pid, sizeof pid, f) && atoi(pid) == (int) getpid());
    fclose(f);
    /* flock() locks belong to the open file: a second open conflicts even
       within one process, as another daemon's would. */
    CHECK_RC(telem_node_lock(again, sizeof again, dir, ".", "x.lock", &fd2),
             TELEM_ESTATE);
    CHECK(fd2 >= 0);
    close(fd2);
    close(fd);
    CHECK_RC(telem_node_lock(again, sizeof again, dir, ".", "x.lock", &fd2), 0);
    close(fd2);
    unlink(lock);
    CHECK_RC(telem_node_lock(lock, 8, dir, ".", "x.lock", &fd), TELEM_ETOOBIG);
    CHECK(fd == -1);
}

/* Relative run directories become absolute against the current one. */
static void
test_rundir_resolve(const char *dir)
{
    char cwd[TELEM_PATH_MAX], here[TELEM_PATH_MAX], got[TELEM_PATH_MAX];
    char want[TELEM_PATH_MAX + 16];
    REQUIRE(getcwd(cwd, sizeof cwd));
    REQUIRE(chdir(dir) == 0);
    REQUIRE(getcwd(here, sizeof here));     /* dir with links resolved */
    CHECK_RC(telem_rundir_resolve(got, sizeof got, "/abs/run"), 0);
    CHECK_STR(got, "/abs/run");
    snprintf(want, sizeof want, "%s/run", here);
    CHECK_RC(telem_rundir_resolve(got, sizeof got, "run"), 0);
    CHECK_STR(got, want);
    CHECK_RC(telem_rundir_resolve(got, sizeof got, ".//./run"), 0);
    CHECK_STR(got, want);
    CHECK_RC(telem_rundir_resolve(got, sizeof got, "."), 0);
    CHECK_STR(got, here);
    CHECK_RC(telem_rundir_resolve(got, sizeof got, ""), TELEM_EINVAL);
    CHECK_RC(telem_rundir_resolve(got, 8, "run"), TELEM_ETOOBIG);
    /* $TELEM_RUNDIR, and the node file under it, the same way. */
    setenv("TELEM_RUNDIR", "run", 1);
    unsetenv("TELEM_NODEFILE");
    CHECK_RC(telem_rundir_default(got, sizeof got), 0);
    CHECK_STR(got, want);
    snprintf(want, sizeof want, "%s/run/nodes", here);
    CHECK_RC(telem_nodefile_default(got, sizeof got), 0);
    CHECK_STR(got, want);
    unsetenv("TELEM_RUNDIR");
    REQUIRE(chdir(cwd) == 0);
}

/* Only the last component is created; a missing parent is named. */
static void
test_rundir_prepare(const char *dir)
{
    char path[2 * TELEM_PATH_MAX], parent[TELEM_PATH_MAX];
    char why[3 * TELEM_PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/run", dir);
    CHECK_RC(telem_rundir_prepare(path, why, sizeof why), 0);
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode)
          && (st.st_mode & 0777) == 0700);
    CHECK_RC(telem_rundir_prepare(path, NULL, 0), 0);       /* exists */
    CHECK(chmod(path, 0755) == 0);
    CHECK_RC(telem_rundir_prepare(path, why, sizeof why), 0); /* closed */
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700);
    rmdir(path);

    snprintf(parent, sizeof parent, "%s/no/such", dir);
    snprintf(path, sizeof path, "%s/run/", parent);
    errno = 0;
    CHECK_RC(telem_rundir_prepare(path, why, sizeof why), TELEM_EIO);
    CHECK_INT(errno, ENOENT);
    CHECK(strstr(why, parent) && strstr(why, "does not exist"));
    snprintf(path, sizeof path, "%s/no", dir);
    CHECK(stat(path, &st) != 0);                  /* no parent was made */

    CHECK_RC(telem_rundir_prepare("run", why, sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "not an absolute path") != NULL);
    CHECK_RC(telem_rundir_prepare("", NULL, 0), TELEM_EINVAL);
    snprintf(path, sizeof path, "%s/file", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fclose(f);
    CHECK_RC(telem_rundir_prepare(path, why, sizeof why), TELEM_EINVAL);
    CHECK(strstr(why, "not a private directory") != NULL);
    unlink(path);
}

/* Writes text as the whole file at path. */
static void
spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(text, f);
    fclose(f);
}

/* The endpoint a lookup finds is the one the analysis client reads
 * (ac_nodes.c): blanks around it are not part of it (found by
 * fuzz_nodefile: a trailing tab came back with the endpoint). */
static void
test_lookup_blanks(const char *path)
{
    char ep[TELEM_PATH_MAX];
    spit(path, "n4\t ipc:///c/n4 \t\r\nn5\tipc:///c/n5\t\n");
    CHECK_RC(telem_nodefile_lookup(path, "n4", ep, sizeof ep), 0);
    CHECK_STR(ep, "ipc:///c/n4");
    CHECK_RC(telem_nodefile_lookup(path, "n5", ep, sizeof ep), 0);
    CHECK_STR(ep, "ipc:///c/n5");
    unlink(path);
}

/* A node file whose last line has no newline (written by hand or by a
 * script) keeps that line whole when a node is registered after it
 * (found by fuzz_nodefile: the new line ran into it). */
static void
test_register_unterminated(const char *path)
{
    char ep[TELEM_PATH_MAX];
    spit(path, "n5\tipc:///e/n5");
    CHECK_RC(telem_nodefile_register(path, "n6", "ipc:///e/n6"), 0);
    CHECK_RC(telem_nodefile_lookup(path, "n5", ep, sizeof ep), 0);
    CHECK_STR(ep, "ipc:///e/n5");
    CHECK_RC(telem_nodefile_lookup(path, "n6", ep, sizeof ep), 0);
    CHECK_STR(ep, "ipc:///e/n6");
    FILE *f = fopen(path, "r");
    char line[64] = "";
    REQUIRE(f);
    CHECK(fgets(line, sizeof line, f) && strcmp(line, "n5\tipc:///e/n5\n") == 0);
    fclose(f);
    unlink(path);
}

/* A node name starting with '#' cannot have a line (it would read as a
 * comment): register and unregister refuse it, and comment lines stay
 * (found by fuzz_nodefile: a registered "#..." node was not listed). */
static void
test_comment_name(const char *path)
{
    char ep[TELEM_PATH_MAX];
    spit(path, "#x\tipc:///kept\n");
    CHECK_RC(telem_nodefile_register(path, "#x", "ipc:///f/x"), TELEM_EINVAL);
    CHECK_RC(telem_nodefile_unregister(path, "#x"), TELEM_EINVAL);
    CHECK_RC(telem_nodefile_register(path, "x#", "ipc:///f/x"), 0);
    CHECK_RC(telem_nodefile_lookup(path, "x#", ep, sizeof ep), 0);
    FILE *f = fopen(path, "r");
    char line[64] = "";
    REQUIRE(f);
    CHECK(fgets(line, sizeof line, f) && strcmp(line, "#x\tipc:///kept\n") == 0);
    fclose(f);
    unlink(path);
}

/* Lines longer than any fixed buffer: the client accepts endpoints up to
 * 1,023 bytes and names up to 255; a lookup returns such an endpoint
 * whole (it returned the first 760 bytes as the endpoint, found by
 * fuzz_nodefile's oracle on a long seed), and a rewrite keeps the line
 * whole. */
static void
test_long_lines(const char *path)
{
    char name[201], want[1024], line[1300], ep[1024];
    memset(name, 'n', 200);
    name[200] = '\0';
    snprintf(want, sizeof want, "ipc:///%0985d/n7", 0);
    snprintf(line, sizeof line, "%s\t%s\n", name, want);
    spit(path, line);
    CHECK_RC(telem_nodefile_lookup(path, name, ep, sizeof ep), 0);
    CHECK_STR(ep, want);
    CHECK_RC(telem_nodefile_register(path, "n8", "ipc:///g/n8"), 0);
    CHECK_RC(telem_nodefile_lookup(path, name, ep, sizeof ep), 0);
    CHECK_STR(ep, want);
    CHECK_RC(telem_nodefile_lookup(path, name, ep, 100), TELEM_ETOOBIG);
    unlink(path);
}

/* A line of blanks is no node for the analysis client, so neither for a
 * lookup: " \t \n" named node " " with an empty endpoint, ahead of the
 * real line of " " (found by fuzz_nodefile). */
static void
test_blank_line(const char *path)
{
    char ep[TELEM_PATH_MAX];
    spit(path, " \t \n \t\tipc:///h/sp\n\t\n");
    CHECK_RC(telem_nodefile_lookup(path, " ", ep, sizeof ep), 0);
    CHECK_STR(ep, "ipc:///h/sp");
    CHECK_RC(telem_nodefile_lookup(path, "", ep, sizeof ep), TELEM_ENOTFOUND);
    unlink(path);
}

int
main(void)
{
    char dir[] = "/tmp/test_paths.XXXXXX", path[600], ep[TELEM_PATH_MAX];
    REQUIRE(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/nodes", dir);
    CHECK_RC(telem_nodefile_lookup(path, "n1", ep, sizeof ep),
             TELEM_ENOTFOUND);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs("# comment\tipc:///nowhere\nno tab here\n", f);
    fclose(f);
    CHECK_RC(telem_nodefile_register(path, "n1", "ipc:///a/n1"), 0);
    CHECK_RC(telem_nodefile_register(path, "n 2", "tcp://127.0.0.1:7"), 0);
    CHECK_RC(telem_nodefile_register(path, "n1", "ipc:///b/n1"), 0);
    CHECK_RC(telem_nodefile_lookup(path, "n1", ep, sizeof ep), 0);
    CHECK_STR(ep, "ipc:///b/n1");
    CHECK_RC(telem_nodefile_lookup(path, "n 2", ep, sizeof ep), 0);
    CHECK_STR(ep, "tcp://127.0.0.1:7");
    CHECK_RC(telem_nodefile_lookup(path, "n3", ep, sizeof ep),
             TELEM_ENOTFOUND);
    CHECK_RC(telem_nodefile_lookup(path, "# comment", ep, sizeof ep),
             TELEM_ENOTFOUND);
    CHECK_RC(telem_nodefile_lookup(path, "n1", ep, 5), TELEM_ETOOBIG);
    unlink(path);
    test_lookup_blanks(path);
    test_register_unterminated(path);
    test_comment_name(path);
    test_long_lines(path);
    test_blank_line(path);
    test_node_lock(dir);
    test_rundir_resolve(dir);
    test_rundir_prepare(dir);
    rmdir(dir);
    return check_report("test_paths");
}
