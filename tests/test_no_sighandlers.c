/* test_no_sighandlers.c - the client libraries leave the host program's
 * signal handling alone.
 *
 * A program that links the dictionary client (ddict.h) or the analysis
 * client (ac.h) must still stop on SIGINT and SIGTERM by their default
 * action: the launcher stops job programs with them, and a library has no
 * business catching them.  czmq installs handlers for both the first time
 * it makes a socket, so neither client may touch czmq.  This test opens
 * both clients for real, against endpoints where nothing listens (their
 * sockets are made and connect in the background; the calls time out),
 * and checks that SIGINT and SIGTERM are still SIG_DFL afterwards.  As a
 * control, it then makes one czmq socket and checks that the same test
 * does see czmq's handlers, so a pass means something.
 */
#include "tmpdir.h"

#include <czmq.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ac.h"
#include "check.h"
#include "ddict.h"
#include "telem_error.h"

static int
s_default(int sig)
{
    struct sigaction old;
    return sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL;
}

/* ddict_open connects to the one server of the node file, asks it for the
 * map and gives up at the deadline; the calls after it fail the same. */
static void
test_ddict(const char *dir)
{
    char nodefile[256], ep[256];
    snprintf(nodefile, sizeof nodefile, "%s/dict_nodes", dir);
    snprintf(ep, sizeof ep, "ipc://%s/nobody.sock", dir);
    FILE *f = fopen(nodefile, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "n1\t%s\n", ep);
    fclose(f);
    int err = 0;
    ddict_t *d = ddict_open(nodefile, "t", 200, &err);
    CHECK(d == NULL && err == TELEM_ETIMEDOUT);
    ddict_close(&d);
    ddict_batch_t *b = ddict_batch_new();
    CHECK(b && ddict_batch_put(b, "k", 1, "v", 1) == 0);
    ddict_batch_destroy(&b);
}

/* ac_connect_nodes makes a socket per node; a status call then waits for
 * the node that is not there and reports it missing. */
static void
test_ac(const char *dir)
{
    char ep[256];
    snprintf(ep, sizeof ep, "ipc://%s/nobody-ac.sock", dir);
    const char *names[1] = { "n1" };
    const char *eps[1] = { ep };
    int err = -1;
    ac_t *ac = ac_connect_nodes(names, eps, 1, 200, &err);
    CHECK(ac != NULL && err == 0);
    if (!ac)
        return;
    ac_status_result_t *st = NULL;
    int rc = ac_status(ac, &st);
    CHECK(rc != 0);
    ac_status_result_destroy(&st);
    ac_close(&ac);
}

int
main(void)
{
    char dir[64];
    CHECK(test_tmpdir(dir, sizeof dir, "test_no_sighandlers") == 0);
    CHECK(s_default(SIGINT) && s_default(SIGTERM));
    test_ddict(dir);
    CHECK(s_default(SIGINT));
    CHECK(s_default(SIGTERM));
    test_ac(dir);
    CHECK(s_default(SIGINT));
    CHECK(s_default(SIGTERM));
    /* Control: czmq's first socket does install its handlers (unless the
       environment turned them off), so the checks above can fail. */
    const char *env = getenv("ZSYS_SIGHANDLER");
    if (!env || strcmp(env, "false") != 0) {
        zsock_t *s = zsock_new(ZMQ_DEALER);
        CHECK(s != NULL);
        CHECK(!s_default(SIGINT) && !s_default(SIGTERM));
        zsock_destroy(&s);
    }
    test_rmtree(dir);
    return check_report("test_no_sighandlers");
}
