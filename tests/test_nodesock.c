/* test_nodesock.c - what a "-u PATH" names (telem_nodesock.h): a node's
 * directory or any socket in it gives that node's name and the endpoint
 * of the socket asked for; a missing path, a regular file, the root
 * directory and an over-long result are refused with a sentence.
 */
#include "tmpdir.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "telem_error.h"
#include "telem_nodesock.h"

/* Binds a UNIX socket at path (the file stays after close). */
static void
s_socket_file(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    REQUIRE(strlen(path) < sizeof a.sun_path);
    strcpy(a.sun_path, path);
    REQUIRE(bind(fd, (struct sockaddr *) &a, sizeof a) == 0);
    close(fd);
}

int
main(void)
{
    char dir[256], node[300], path[600], ep[700], name[64], why[256];
    REQUIRE(test_tmpdir(dir, sizeof dir, "nodesock") == 0);
    snprintf(node, sizeof node, "%s/n1", dir);
    REQUIRE(mkdir(node, 0700) == 0);
    snprintf(path, sizeof path, "%s/ingest.sock", node);
    s_socket_file(path);

    /* the directory, with or without a trailing slash, or via "." */
    CHECK_RC(telem_nodesock_resolve(node, "ctl.sock", ep, sizeof ep, name,
                                    sizeof name, why, sizeof why), 0);
    char want[700];
    snprintf(want, sizeof want, "ipc://%s/ctl.sock", node);
    CHECK_STR(ep, want);
    CHECK_STR(name, "n1");
    snprintf(path, sizeof path, "%s/", node);
    CHECK_RC(telem_nodesock_resolve(path, "ctl.sock", ep, sizeof ep, name,
                                    sizeof name, NULL, 0), 0);
    CHECK_STR(ep, want);
    /* a socket in it: the one asked for is found beside it */
    snprintf(path, sizeof path, "%s/ingest.sock", node);
    CHECK_RC(telem_nodesock_resolve(path, "ctl.sock", ep, sizeof ep, name,
                                    sizeof name, NULL, 0), 0);
    CHECK_STR(ep, want);
    CHECK_STR(name, "n1");
    CHECK_RC(telem_nodesock_resolve(path, "ingest.sock", ep, sizeof ep, NULL,
                                    0, NULL, 0), 0);
    snprintf(want, sizeof want, "ipc://%s/ingest.sock", node);
    CHECK_STR(ep, want);
    char cwd[512];
    REQUIRE(getcwd(cwd, sizeof cwd));
    REQUIRE(chdir(node) == 0);
    CHECK_RC(telem_nodesock_resolve(".", "ctl.sock", NULL, 0, name,
                                    sizeof name, NULL, 0), 0);
    CHECK_STR(name, "n1");
    REQUIRE(chdir(cwd) == 0);

    /* refusals */
    snprintf(path, sizeof path, "%s/missing", node);
    CHECK_RC(telem_nodesock_resolve(path, "ctl.sock", ep, sizeof ep, name,
                                    sizeof name, why, sizeof why),
             TELEM_ENOTFOUND);
    CHECK(strstr(why, "missing") != NULL);
    snprintf(path, sizeof path, "%s/file", node);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fclose(f);
    CHECK_RC(telem_nodesock_resolve(path, "ctl.sock", ep, sizeof ep, name,
                                    sizeof name, why, sizeof why),
             TELEM_EINVAL);
    CHECK(strstr(why, "not a node's directory") != NULL);
    CHECK_RC(telem_nodesock_resolve("/", "ctl.sock", ep, sizeof ep, name,
                                    sizeof name, NULL, 0), TELEM_EINVAL);
    CHECK_RC(telem_nodesock_resolve(node, "ctl.sock", ep, 8, name,
                                    sizeof name, NULL, 0), TELEM_ETOOBIG);
    CHECK_RC(telem_nodesock_resolve(node, "ctl.sock", ep, sizeof ep, name, 2,
                                    NULL, 0), TELEM_ETOOBIG);
    CHECK_RC(telem_nodesock_resolve(NULL, "ctl.sock", ep, sizeof ep, name,
                                    sizeof name, NULL, 0), TELEM_EINVAL);
    CHECK_RC(telem_nodesock_resolve(node, "", ep, sizeof ep, name,
                                    sizeof name, NULL, 0), TELEM_EINVAL);
    test_rmtree(dir);
    return check_report("test_nodesock");
}
