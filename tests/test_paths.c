/* test_paths.c - unit tests for the node file (telem_paths.h): lines
 * written by telem_nodefile_register are found by telem_nodefile_lookup,
 * a re-registered node has its new endpoint, comments and malformed lines
 * are skipped, and a missing file, a missing node and a buffer too small
 * for the endpoint each give their own code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "telem_error.h"
#include "telem_paths.h"

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
    rmdir(dir);
    return check_report("test_paths");
}
