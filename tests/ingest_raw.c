/* ingest_raw.c - a sender to telemd's ingest socket that is not libtelem,
 * for tests/it_handover.sh.
 *
 *   ingest_raw ENDPOINT METRIC INTERVAL_MS UNTIL_FILE
 *
 * Connects a plain czmq PUSH (no ZMQ_IMMEDIATE, no hand-over following)
 * to ENDPOINT and sends one batch of one level-1 sample of METRIC every
 * INTERVAL_MS until UNTIL_FILE exists; then closes with a linger of 2 s
 * and prints "sent N".  Such a sender never moves to a successor by
 * itself: a telemd handing over must end its connection, and what it sent
 * must still all arrive, at the old telemd or the new one.  Exit status:
 * 0, or 2 on bad arguments or a failed send.
 */
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "telem_proto.h"
#include "telem_time.h"

#define S_LINGER_MS 2000

int
main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: ingest_raw ENDPOINT METRIC INTERVAL_MS "
                "UNTIL_FILE\n");
        return 2;
    }
    char *end;
    long ms = strtol(argv[3], &end, 10);
    if (*end || ms < 1 || ms > 10000) {
        fprintf(stderr, "ingest_raw: INTERVAL_MS must be 1 to 10000\n");
        return 2;
    }
    zsys_init();
    zsys_handler_set(NULL);
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    zsock_t *push = zsock_new_push(argv[1]);
    if (!enc || !push) {
        fprintf(stderr, "ingest_raw: cannot connect to %s\n", argv[1]);
        return 2;
    }
    uint64_t sent = 0;
    int rc = 0;
    while (access(argv[4], F_OK) != 0) {
        telem_sample_t s = { .metric = argv[2], .level = 1,
                             .ts_ns = telem_now_ns(), .value = (double) sent };
        telem_batch_t b = { .source = "ingest_raw", .samples = &s,
                            .nsamples = 1 };
        const void *data;
        size_t size;
        if (telem_proto_encode_batch(enc, &b, &data, &size) != 0
            || zsock_send(push, "b", data, size) != 0) {
            fprintf(stderr, "ingest_raw: send %llu failed\n",
                    (unsigned long long) sent);
            rc = 2;
            break;
        }
        sent++;
        zclock_sleep((int) ms);
    }
    zsock_set_linger(push, S_LINGER_MS);
    zsock_destroy(&push);
    telem_proto_encoder_destroy(&enc);
    printf("sent %llu\n", (unsigned long long) sent);
    return rc;
}
