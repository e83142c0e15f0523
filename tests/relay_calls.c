/* relay_calls.c - several status calls from one analysis client, for
 * tests/it_relay.sh: what a long-lived client (a watcher) sees when a relay
 * stops answering, and that it then skips the relay for its back-off.
 *
 *   relay_calls N TIMEOUT_MS BACKOFF_MS
 *
 * Connects with ac_connect() (the node file and relays file of the
 * environment), sets the relay back-off, makes N ac_status() calls and
 * prints one line per call: "call K ms=ELAPSED answered=A missing=M".
 * Exit 0, or 2 on bad usage or when no client could be made.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ac.h"
#include "telem_time.h"

int
main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: relay_calls N TIMEOUT_MS BACKOFF_MS\n");
        return 2;
    }
    int n = atoi(argv[1]), timeout = atoi(argv[2]), backoff = atoi(argv[3]);
    int err = 0;
    ac_t *ac = ac_connect(NULL, timeout, &err);
    if (!ac || ac_set_relay_backoff(ac, backoff) != 0) {
        fprintf(stderr, "relay_calls: %s\n", ac_strerror(err));
        return 2;
    }
    printf("relays %zu\n", ac_relay_count(ac));
    for (int k = 1; k <= n; k++) {
        ac_status_result_t *r = NULL;
        int64_t t0 = telem_mono_ns();
        ac_status(ac, &r);
        int64_t ms = (telem_mono_ns() - t0) / 1000000;
        size_t miss = ac_status_result_nmissing(r);
        printf("call %d ms=%lld answered=%zu missing=%zu\n", k, (long long) ms,
               ac_status_result_count(r) - miss, miss);
        fflush(stdout);
        ac_status_result_destroy(&r);
    }
    ac_close(&ac);
    return 0;
}
