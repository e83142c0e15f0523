/* test_dict_server.c - the dictionary server's logic without sockets.
 *
 * Servers (dict/dictd/ddict_server.h) are driven frame by frame through the
 * harness in dict_net.h.
 *
 * Covered: put/get/cas/del/len/keys on one server; replies held until the
 * flush (group commit); malformed and inconsistent requests counted and
 * answered, never crashing; a stale epoch refused with TELEM_ESTATE; two
 * servers with replication 2, where a put is answered only after the
 * replica acknowledged and the replica holds the value; a replica that
 * cannot be reached fails the write and the primary does not keep it;
 * events (a parked waiter woken by a set, a wait that expires on tick);
 * restart from the log; re-form admin phases (prepare, transfer, commit)
 * including a retry after a prepare that was never committed; log
 * compaction in steps while writes go on (small values, and replicated
 * values over 16 KiB, which the log holds until the burst ends), then a
 * restart from the compacted log; streamed gets (the value in frames of a
 * requested size, views that outlive the key's deletion; refused beside
 * other ops); small values inline in requests, replication and replies,
 * mixed with framed ones.
 */
#include "dict_net.h"

static void
test_single(void)
{
    s_net_t net;
    s_net_init(&net);
    const char *one[1] = { "n1" };
    s_start(&net, 0, one, 1, 1);
    /* The reply waits for the flush (group commit). */
    telem_dict_op_t put = s_op(TELEM_DOP_PUT, "a", 0);
    const char *vals[1] = { "hello" };
    s_request(&net, 0, 1, 0, "ns", &put, 1, vals);
    CHECK(net.nq == 0);
    s_pump(&net);
    uint64_t v = 0;
    char out[64] = "";
    CHECK(s_result(&net, 1, 0, &v, NULL, 0) == 0 && v == 1);
    CHECK(s_one(&net, 0, 2, TELEM_DOP_PUT, "a", "hello2", 0, &v, NULL, 0) == 0
          && v == 2);
    CHECK(s_one(&net, 0, 3, TELEM_DOP_GET, "a", NULL, 0, &v, out, sizeof out)
          == 0 && v == 2 && strcmp(out, "hello2") == 0);
    CHECK(s_one(&net, 0, 4, TELEM_DOP_CAS, "a", "x", 1, &v, NULL, 0)
          == TELEM_ECONFLICT && v == 2);
    /* The code is on the wire: its value is fixed, and it has a name. */
    CHECK(TELEM_ECONFLICT == -64);
    CHECK(strcmp(telem_strerror(TELEM_ECONFLICT),
                 "version differs (compare-and-set conflict)") == 0);
    CHECK(s_one(&net, 0, 5, TELEM_DOP_CAS, "a", "x", 2, &v, NULL, 0) == 0
          && v == 3);
    CHECK(s_one(&net, 0, 6, TELEM_DOP_CAS, "new", "n", 0, &v, NULL, 0) == 0
          && v == 1);
    CHECK(s_one(&net, 0, 7, TELEM_DOP_DEL, "a", NULL, 0, NULL, NULL, 0) == 0);
    CHECK(s_one(&net, 0, 8, TELEM_DOP_DEL, "a", NULL, 0, NULL, NULL, 0)
          == TELEM_ENOTFOUND);
    CHECK(s_one(&net, 0, 9, TELEM_DOP_GET, "a", NULL, 0, NULL, NULL, 0)
          == TELEM_ENOTFOUND);
    CHECK(s_one(&net, 0, 10, TELEM_DOP_LEN, "", NULL, 0, &v, NULL, 0) == 0
          && v == 1);
    CHECK(s_one(&net, 0, 11, TELEM_DOP_KEYS, "", NULL,
                ddict_hash_shard("new", 3), NULL, out, sizeof out) == 0);
    CHECK(out[0] == 3 && out[1] == 0 && strcmp(out + 4, "new") == 0);
    /* Several ops in one request: results in order, each sees the last. */
    telem_dict_op_t ops[3] = { s_op(TELEM_DOP_PUT, "x", 0),
                               s_op(TELEM_DOP_PUT, "y", 0),
                               s_op(TELEM_DOP_GET, "x", 0) };
    const char *v3[3] = { "vx", "vy", NULL };
    s_inbox_clear(&net);
    s_request(&net, 0, 12, 0, "ns", ops, 3, v3);
    s_pump(&net);
    CHECK(s_result(&net, 12, 1, &v, NULL, 0) == 0 && v == 1);
    CHECK(s_result(&net, 12, 2, &v, out, sizeof out) == 0
          && strcmp(out, "vx") == 0);
    s_net_fini(&net);
}

static void
test_bad_input(void)
{
    s_net_t net;
    s_net_init(&net);
    const char *one[1] = { "n1" };
    ddict_server_t *s = s_start(&net, 0, one, 1, 1);
    zmq_msg_t route, f;
    s_route(&route, "client");
    s_route(&f, "not msgpack at all");
    CHECK(ddict_server_request(s, &route, &f, 1) != 0);
    s_route(&route, "client");
    CHECK(ddict_server_request(s, &route, NULL, 0) != 0);
    /* A value flag without its frame; a replication-only op. */
    telem_dict_op_t put = s_op(TELEM_DOP_PUT, "a", 0);
    s_request(&net, 0, 1, 0, "ns", &put, 1, NULL);
    telem_dict_op_t rm = s_op(TELEM_DOP_REMOVE, "a", 0);
    s_request(&net, 0, 2, 0, "ns", &rm, 1, NULL);
    s_pump(&net);
    ddict_server_stats_t st;
    ddict_server_stats(s, &st);
    CHECK(st.bad_messages == 4 && st.keys == 0);
    /* A stale epoch is refused as a whole, retryably. */
    telem_dict_op_t get = s_op(TELEM_DOP_GET, "a", 0);
    s_inbox_clear(&net);
    s_request(&net, 0, 3, 999, "ns", &get, 1, NULL);
    s_pump(&net);
    CHECK(s_result(&net, 3, 0, NULL, NULL, 0) == TELEM_ESTATE);
    /* An acknowledgement nobody waits for is ignored. */
    telem_dict_rep_t ack = { 12345, 1, 0, NULL, 0 };
    const void *data;
    size_t size;
    CHECK(telem_proto_encode_dict_rep(net.enc, TELEM_MSG_DICT_ACK, &ack, &data,
                                      &size)
          == 0);
    zmq_msg_init_size(&f, size);
    memcpy(zmq_msg_data(&f), data, size);
    CHECK(ddict_server_peer_reply(s, "n2", &f, 1) == 0);
    /* The server still works. */
    CHECK(s_one(&net, 0, 4, TELEM_DOP_PUT, "a", "v", 0, NULL, NULL, 0) == 0);
    s_net_fini(&net);
}

static void
test_replication(void)
{
    s_net_t net;
    s_net_two(&net, 0);
    char key[32], other[32];
    s_key_on(s_pair, 2, 0, "k", key, sizeof key);
    s_key_on(s_pair, 2, 1, "o", other, sizeof other);
    /* The primary holds the reply until the replica acknowledged. */
    telem_dict_op_t put = s_op(TELEM_DOP_PUT, key, 0);
    const char *vals[1] = { "replicated" };
    s_request(&net, 0, 1, 0, "ns", &put, 1, vals);
    ddict_server_flush(net.srv[0]);
    CHECK(net.nq == 1 && net.q[0].to[0] == 'n');   /* only the REPL */
    s_pump(&net);
    CHECK(s_result(&net, 1, 0, NULL, NULL, 0) == 0);
    ddict_server_stats_t st;
    ddict_server_stats(net.srv[1], &st);
    CHECK(st.keys == 1);
    /* Only the primary serves a key. */
    CHECK(s_one(&net, 1, 2, TELEM_DOP_GET, key, NULL, 0, NULL, NULL, 0)
          == TELEM_ESTATE);
    CHECK(s_one(&net, 1, 3, TELEM_DOP_PUT, other, "o", 0, NULL, NULL, 0) == 0);
    ddict_server_stats(net.srv[0], &st);
    CHECK(st.keys == 2);
    CHECK(s_one(&net, 0, 4, TELEM_DOP_DEL, key, NULL, 0, NULL, NULL, 0) == 0);
    ddict_server_stats(net.srv[1], &st);
    CHECK(st.keys == 1);
    s_net_fini(&net);
}

static void
test_replica_down(void)
{
    s_net_t net;
    s_net_two(&net, 0);
    char key[32], fresh[32];
    s_key_on(s_pair, 2, 0, "k", key, sizeof key);
    s_key_on(s_pair, 2, 0, "f", fresh, sizeof fresh);
    char out[64] = "";
    uint64_t v = 0;
    CHECK(s_one(&net, 0, 1, TELEM_DOP_PUT, key, "v1", 0, NULL, NULL, 0) == 0);
    net.down[1] = 1;
    CHECK(s_one(&net, 0, 2, TELEM_DOP_PUT, key, "v2", 0, NULL, NULL, 0)
          == TELEM_ECONN);
    CHECK(s_one(&net, 0, 3, TELEM_DOP_PUT, fresh, "f", 0, NULL, NULL, 0)
          == TELEM_ECONN);
    CHECK(s_one(&net, 0, 4, TELEM_DOP_DEL, key, NULL, 0, NULL, NULL, 0)
          == TELEM_ECONN);
    /* The failed writes were rolled back on the primary. */
    CHECK(s_one(&net, 0, 5, TELEM_DOP_GET, key, NULL, 0, &v, out, sizeof out)
          == 0 && v == 1 && strcmp(out, "v1") == 0);
    CHECK(s_one(&net, 0, 6, TELEM_DOP_GET, fresh, NULL, 0, NULL, NULL, 0)
          == TELEM_ENOTFOUND);
    /* Also after a restart from the log. */
    ddict_server_destroy(&net.srv[0]);
    s_start(&net, 0, s_pair, 2, 2);
    CHECK(s_one(&net, 0, 7, TELEM_DOP_GET, key, NULL, 0, &v, out, sizeof out)
          == 0 && v == 1 && strcmp(out, "v1") == 0);
    CHECK(s_one(&net, 0, 8, TELEM_DOP_GET, fresh, NULL, 0, NULL, NULL, 0)
          == TELEM_ENOTFOUND);
    net.down[1] = 0;
    CHECK(s_one(&net, 0, 9, TELEM_DOP_PUT, key, "v3", 0, &v, NULL, 0) == 0
          && v == 2);
    s_net_fini(&net);
}

static void
test_events(void)
{
    s_net_t net;
    s_net_init(&net);
    const char *one[1] = { "n1" };
    ddict_server_t *s = s_start(&net, 0, one, 1, 1);
    telem_dict_op_t wait = s_op(TELEM_DOP_EVWAIT, "go", 60000);
    s_inbox_clear(&net);
    s_request(&net, 0, 1, 0, "", &wait, 1, NULL);
    s_pump(&net);
    CHECK(net.nin == 0);                          /* parked */
    telem_dict_op_t set = s_op(TELEM_DOP_EVSET, "go", 0);
    s_request(&net, 0, 2, 0, "", &set, 1, NULL);
    s_pump(&net);
    CHECK(s_result(&net, 1, 0, NULL, NULL, 0) == 0);   /* woken */
    CHECK(s_result(&net, 2, 0, NULL, NULL, 0) == 0);
    /* Already set: answered at once. */
    s_inbox_clear(&net);
    s_request(&net, 0, 3, 0, "", &wait, 1, NULL);
    s_pump(&net);
    CHECK(s_result(&net, 3, 0, NULL, NULL, 0) == 0);
    /* A wait that ends on the server's tick. */
    telem_dict_op_t w2 = s_op(TELEM_DOP_EVWAIT, "never", 5);
    s_inbox_clear(&net);
    s_request(&net, 0, 4, 0, "", &w2, 1, NULL);
    s_pump(&net);
    CHECK(net.nin == 0);
    int64_t next = ddict_server_tick(s, INT64_MAX / 2);
    CHECK(next > 0);
    s_pump(&net);
    CHECK(s_result(&net, 4, 0, NULL, NULL, 0) == TELEM_ETIMEDOUT);
    s_net_fini(&net);
}

static void
test_restart(void)
{
    s_net_t net;
    s_net_init(&net);
    const char *one[1] = { "n1" };
    s_start(&net, 0, one, 1, 1);
    CHECK(s_one(&net, 0, 1, TELEM_DOP_PUT, "a", "1", 0, NULL, NULL, 0) == 0);
    CHECK(s_one(&net, 0, 2, TELEM_DOP_PUT, "a", "2", 0, NULL, NULL, 0) == 0);
    CHECK(s_one(&net, 0, 3, TELEM_DOP_PUT, "b", "3", 0, NULL, NULL, 0) == 0);
    CHECK(s_one(&net, 0, 4, TELEM_DOP_DEL, "b", NULL, 0, NULL, NULL, 0) == 0);
    /* Checkpoint "ns" into "slot", then change "ns". */
    CHECK(s_one(&net, 0, 5, TELEM_DOP_CKPT, "slot", NULL, 0, NULL, NULL, 0)
          == 0);
    CHECK(s_one(&net, 0, 6, TELEM_DOP_PUT, "a", "3", 0, NULL, NULL, 0) == 0);
    /* Large values come back from the log's mapping without a copy. */
    size_t big_len = 100000;
    char *big = malloc(big_len + 1), *back = malloc(big_len + 16);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char) ('a' + i % 26);
    big[big_len] = '\0';
    CHECK(s_one(&net, 0, 60, TELEM_DOP_PUT, "big", big, 0, NULL, NULL, 0)
          == 0);
    CHECK(s_one(&net, 0, 61, TELEM_DOP_PUT, "big2", big, 0, NULL, NULL, 0)
          == 0);
    ddict_server_destroy(&net.srv[0]);
    ddict_server_t *s = s_start(&net, 0, one, 1, 1);
    CHECK(s_one(&net, 0, 62, TELEM_DOP_GET, "big", NULL, 0, NULL, back,
                big_len + 16) == 0 && strcmp(back, big) == 0);
    /* Replaced and deleted after replay: the mapping outlives neither
       too long nor too short (ASan checks). */
    CHECK(s_one(&net, 0, 63, TELEM_DOP_PUT, "big", "small", 0, NULL, NULL, 0)
          == 0);
    CHECK(s_one(&net, 0, 64, TELEM_DOP_GET, "big2", NULL, 0, NULL, back,
                big_len + 16) == 0 && strcmp(back, big) == 0);
    CHECK(s_one(&net, 0, 65, TELEM_DOP_DEL, "big2", NULL, 0, NULL, NULL, 0)
          == 0);
    CHECK(s_one(&net, 0, 66, TELEM_DOP_DEL, "big", NULL, 0, NULL, NULL, 0)
          == 0);
    free(big);
    free(back);
    ddict_server_stats_t st;
    ddict_server_stats(s, &st);
    CHECK(st.replayed >= 7 && st.dropped_bytes == 0 && st.keys == 2);
    char out[16] = "";
    uint64_t v = 0;
    CHECK(s_one(&net, 0, 7, TELEM_DOP_GET, "a", NULL, 0, &v, out, sizeof out)
          == 0 && v == 3 && strcmp(out, "3") == 0);
    CHECK(s_one(&net, 0, 8, TELEM_DOP_GET, "b", NULL, 0, NULL, NULL, 0)
          == TELEM_ENOTFOUND);
    s_net_fini(&net);
}

static void
test_reform_retry(void)
{
    s_net_t net;
    s_net_two(&net, 0);
    char key[32];
    s_key_on(s_pair, 2, 1, "r", key, sizeof key);
    CHECK(s_one(&net, 1, 1, TELEM_DOP_PUT, key, "kept", 0, NULL, NULL, 0) == 0);
    /* A re-form to epoch 2 reaches n1 only, then its coordinator dies. */
    telem_dict_admin_rep_t rep;
    CHECK(s_admin(&net, 0, 10, TELEM_DADM_PREPARE, 2, 1, s_pair, 2, &rep) == 0);
    CHECK(s_admin(&net, 0, 11, TELEM_DADM_HELLO, 0, 0, NULL, 0, &rep) == 0
          && rep.state == 1 && rep.epoch == 2 && rep.committed == 1);
    CHECK(s_one(&net, 0, 12, TELEM_DOP_LEN, "", NULL, 0, NULL, NULL, 0)
          == TELEM_ESTATE);
    /* A stale prepare is refused; the retry at a later epoch works and
       keeps the data of both servers. */
    CHECK(s_admin(&net, 0, 13, TELEM_DADM_PREPARE, 2, 1, s_pair, 2, NULL)
          == TELEM_ESTATE);
    for (int i = 0; i < 2; i++)
        CHECK(s_admin(&net, i, 20 + i, TELEM_DADM_PREPARE, 3, 1, s_pair, 2, NULL)
              == 0);
    for (int i = 0; i < 2; i++)
        CHECK(s_admin(&net, i, 30 + i, TELEM_DADM_TRANSFER, 3, 0, NULL, 0,
                      NULL) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(s_admin(&net, i, 40 + i, TELEM_DADM_COMMIT, 3, 0, NULL, 0,
                      &rep) == 0 && rep.state == 0 && rep.committed == 3);
    char out[16] = "";
    CHECK(s_one(&net, 1, 50, TELEM_DOP_GET, key, NULL, 0, NULL, out,
                sizeof out) == 0 && strcmp(out, "kept") == 0);
    s_net_fini(&net);
}

static void
test_compaction(void)
{
    s_net_t net;
    s_net_init(&net);
    net.compact_min = 4096;
    const char *one[1] = { "n1" };
    ddict_server_t *s = s_start(&net, 0, one, 1, 1);
    char val[101], key[16];
    uint64_t written = 0;
    for (int i = 1; i <= 300; i++) {
        snprintf(val, sizeof val, "%-99d", i);
        snprintf(key, sizeof key, "k%d", i % 40);
        CHECK(s_one(&net, 0, (uint64_t) i, TELEM_DOP_PUT, i % 2 ? "hot" : key,
                    val, 0, NULL, NULL, 0) == 0);
        written += 32 + 2 + 4 + 99;
    }
    CHECK(s_one(&net, 0, 1000, TELEM_DOP_DEL, "k0", NULL, 0, NULL, NULL, 0)
          == 0);
    ddict_server_stats_t st;
    ddict_server_stats(s, &st);
    CHECK(written > 40000 && st.log_bytes < 3 * 4096);
    ddict_server_destroy(&net.srv[0]);
    s = s_start(&net, 0, one, 1, 1);
    ddict_server_stats(s, &st);
    CHECK(st.keys == 20 && st.dropped_bytes == 0);   /* hot, k2..k38 */
    char out[128] = "";
    uint64_t v = 0;
    CHECK(s_one(&net, 0, 1001, TELEM_DOP_GET, "hot", NULL, 0, &v, out,
                sizeof out) == 0 && v == 150 && atoi(out) == 299);
    CHECK(s_one(&net, 0, 1002, TELEM_DOP_GET, "k38", NULL, 0, &v, out,
                sizeof out) == 0 && atoi(out) == 278);
    CHECK(s_one(&net, 0, 1003, TELEM_DOP_GET, "k0", NULL, 0, NULL, NULL, 0)
          == TELEM_ENOTFOUND);
    s_net_fini(&net);
}

static void
test_streamed_get(void)
{
    s_net_t net;
    s_net_init(&net);
    const char *one[1] = { "n1" };
    ddict_server_t *s = s_start(&net, 0, one, 1, 1);
    static char big[20001], got[20001];
    for (size_t i = 0; i < sizeof big - 1; i++)
        big[i] = (char) ('a' + (i * 7 + i / 4096) % 26);
    CHECK(s_one(&net, 0, 1, TELEM_DOP_PUT, "big", big, 0, NULL, NULL, 0)
          == 0);
    CHECK(s_one(&net, 0, 2, TELEM_DOP_PUT, "small", "tiny", 0, NULL, NULL, 0)
          == 0);
    /* Frames of 4096 bytes: 4 full ones and the rest, in order. */
    uint64_t v = 0;
    size_t sizes[S_MAXF];
    CHECK(s_one(&net, 0, 3, TELEM_DOP_GET, "big", NULL, 4096, &v, NULL, 0)
          == 0 && v == 1);
    CHECK_INT(s_frames(&net, 3, sizes, got, sizeof got), 5);
    CHECK(sizes[0] == 4096 && sizes[3] == 4096 && sizes[4] == 20000 - 16384);
    CHECK(strcmp(got, big) == 0);
    /* A frame size under the floor is raised to it (4 KiB); a value that
       fits one frame comes as one. */
    CHECK(s_one(&net, 0, 4, TELEM_DOP_GET, "big", NULL, 1, NULL, NULL, 0)
          == 0);
    CHECK_INT(s_frames(&net, 4, sizes, got, sizeof got), 5);
    CHECK(s_one(&net, 0, 5, TELEM_DOP_GET, "small", NULL, 4096, NULL, NULL,
                0) == 0);
    CHECK(s_frames(&net, 5, sizes, got, sizeof got) == 1
          && strcmp(got, "tiny") == 0);
    /* The frames are views of the stored value: they stay valid after the
       key is deleted, until they are closed. */
    telem_dict_op_t get = s_op(TELEM_DOP_GET, "big", 8192);
    s_inbox_clear(&net);
    s_request(&net, 0, 6, 0, "ns", &get, 1, NULL);
    s_pump(&net);
    s_out_t keep = net.inbox[0];
    net.nin = 0;                  /* the frames are ours now */
    CHECK(s_one(&net, 0, 7, TELEM_DOP_DEL, "big", NULL, 0, NULL, NULL, 0)
          == 0);
    CHECK_INT(keep.n, 4);
    net.inbox[net.nin++] = keep;
    CHECK(s_frames(&net, 6, sizes, got, sizeof got) == 3
          && strcmp(got, big) == 0);
    /* Streamed gets stand alone: beside another op, the request is bad. */
    ddict_server_stats_t st;
    ddict_server_stats(s, &st);
    uint64_t bad = st.bad_messages;
    telem_dict_op_t two[2] = { s_op(TELEM_DOP_GET, "small", 4096),
                               s_op(TELEM_DOP_GET, "small", 0) };
    s_request(&net, 0, 8, 0, "ns", two, 2, NULL);
    s_pump(&net);
    ddict_server_stats(s, &st);
    CHECK(st.bad_messages == bad + 1);
    s_net_fini(&net);
}

/* Values over 16 KiB are held by the logs until the end of the burst:
 * replicated, compacted in steps, then both servers restarted from their
 * logs with every last value intact. */
/* Small values travel inside headers (requests, replication, replies),
 * mixed with values in frames of their own; the results keep their order
 * and the replica gets the same bytes. */
static void
test_inline_values(void)
{
    s_net_t net;
    s_net_two(&net, 0);
    char key[3][32];
    s_key_on(s_pair, 2, 0, "i", key[0], sizeof key[0]);
    s_key_on(s_pair, 2, 0, "j", key[1], sizeof key[1]);
    s_key_on(s_pair, 2, 0, "e", key[2], sizeof key[2]);
    static char big[TELEM_DICT_INLINE_MAX + 2];
    memset(big, 'B', sizeof big - 1);
    telem_dict_op_t ops[6] = {
        { .op = TELEM_DOP_PUT, .key = (const uint8_t *) key[0],
          .klen = (uint32_t) strlen(key[0]),
          .ival = (const uint8_t *) "small", .ivlen = 5 },
        s_op(TELEM_DOP_PUT, key[1], 0),
        { .op = TELEM_DOP_PUT, .key = (const uint8_t *) key[2],
          .klen = (uint32_t) strlen(key[2]), .ival = (const uint8_t *) "" },
        s_op(TELEM_DOP_GET, key[0], 0), s_op(TELEM_DOP_GET, key[1], 0),
        s_op(TELEM_DOP_GET, key[2], 0) };
    const char *vals[6] = { NULL, big, NULL, NULL, NULL, NULL };
    s_inbox_clear(&net);
    s_request(&net, 0, 1, 0, "ns", ops, 6, vals);
    s_pump(&net);
    static char out[sizeof big + 1];
    uint64_t v = 0;
    CHECK(s_result(&net, 1, 0, &v, NULL, 0) == 0 && v == 1);
    CHECK(s_result(&net, 1, 3, &v, out, sizeof out) == 0
          && strcmp(out, "small") == 0);
    CHECK(s_result(&net, 1, 4, &v, out, sizeof out) == 0
          && strcmp(out, big) == 0);
    strcpy(out, "not cleared");
    CHECK(s_result(&net, 1, 5, &v, out, sizeof out) == 0 && out[0] == '\0');
    /* The reply: the small values in its header, one frame for the big. */
    CHECK(net.nin == 1 && net.inbox[0].n == 2);
    ddict_server_stats_t a, b;
    ddict_server_stats(net.srv[0], &a);
    ddict_server_stats(net.srv[1], &b);
    CHECK(a.keys == 3 && b.keys == 3 && a.bytes == b.bytes);
    /* Inline values whose frames do not add up: refused, nothing kept. */
    telem_dict_op_t bad[2] = { ops[0], s_op(TELEM_DOP_PUT, "other", 0) };
    bad[0].key = (const uint8_t *) "x";
    bad[0].klen = 1;
    s_request(&net, 0, 2, 0, "ns2", bad, 2, NULL);
    s_pump(&net);
    ddict_server_stats(net.srv[0], &a);
    CHECK(a.keys == 3 && a.bad_messages == 1);
    s_net_fini(&net);
}

static void
test_large_values(void)
{
    s_net_t net;
    s_net_two(&net, 64 << 10);
    static char val[20001], out[20002];
    char key[8][32], pre[2] = "a";
    for (int k = 0; k < 8; k++, pre[0]++)
        s_key_on(s_pair, 2, 0, pre, key[k], sizeof key[k]);
    for (int i = 0; i < 48; i++) {
        memset(val, 'A' + i % 26, sizeof val - 1);
        val[0] = (char) ('a' + i % 8);
        CHECK(s_one(&net, 0, 10 + (uint64_t) i, TELEM_DOP_PUT, key[i % 8],
                    val, 0, NULL, NULL, 0) == 0);
    }
    ddict_server_stats_t st;
    ddict_server_stats(net.srv[0], &st);
    CHECK(st.log_bytes < 48 * 20000);                /* compacted */
    ddict_server_destroy(&net.srv[0]);
    ddict_server_destroy(&net.srv[1]);
    s_start(&net, 0, s_pair, 2, 2);
    s_start(&net, 1, s_pair, 2, 2);
    ddict_server_stats(net.srv[1], &st);
    CHECK(st.keys == 8 && st.dropped_bytes == 0);
    for (int k = 0; k < 8; k++) {
        uint64_t v = 0;
        CHECK(s_one(&net, 0, 100 + (uint64_t) k, TELEM_DOP_GET, key[k], NULL,
                    0, &v, out, sizeof out) == 0 && v == 6);
        CHECK(strlen(out) == 20000 && out[0] == 'a' + k
              && out[19999] == 'A' + (40 + k) % 26);
    }
    s_net_fini(&net);
}

int
main(void)
{
    test_single();
    test_bad_input();
    test_replication();
    test_replica_down();
    test_events();
    test_restart();
    test_reform_retry();
    test_compaction();
    test_streamed_get();
    test_large_values();
    test_inline_values();
    return check_report("test_dict_server");
}
