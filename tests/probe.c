/* probe.c - one request to one endpoint of a job, as anyone could send it:
 * the helper of tests/it_auth.sh.
 *
 *   probe EP WHAT [TIMEOUT_MS]
 *
 * A DEALER from the socket factory connects to EP and sends one request;
 * with $TELEM_KEYS set it holds that key (CURVE on a tcp:// endpoint),
 * without it, it is a plain ZeroMQ client that knows nothing of the job.
 *   WHAT   status | level:N | window:NS | shutdown | handover  (telemd)
 *          put:KEY:VALUE | get:KEY                              (dictionary)
 *          restart:NODE                                         (launcher)
 *          relay:NODE:WHAT    WHAT (status, level:N, ...) for NODE,
 *                             wrapped in a relay request       (telem_relay)
 * Prints one line: "control code=0 level=L window=W" (a control reply,
 * with the node's level and window), "error code=C MESSAGE", "dict
 * code=C value=V", "ack code=C MESSAGE", or "timeout" when nothing came
 * back in TIMEOUT_MS (default 2000); a relay's answer is printed one item
 * a line, "via NODE: " and the node's reply as above, or "via NODE:
 * missing code=C MESSAGE"; exit 0, or 2 on bad usage or when
 * the request could not be made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "telem_error.h"
#include "telem_keys.h"
#include "telem_proto.h"
#include "telem_proto_dict.h"
#include "telem_proto_watch.h"
#include "telem_sock_raw.h"

#define S_ID 4242

static int
s_usage(void)
{
    fprintf(stderr, "usage: probe EP status|level:N|window:NS|shutdown|"
            "handover|put:KEY:VALUE|get:KEY|restart:NODE [TIMEOUT_MS]\n");
    return 2;
}

static int
s_control(telem_proto_encoder_t *e, const char *what, const void **data,
          size_t *size)
{
    telem_control_t c = { .id = S_ID };
    if (strcmp(what, "status") == 0)
        c.op = TELEM_CTL_STATUS;
    else if (strcmp(what, "shutdown") == 0)
        c.op = TELEM_CTL_SHUTDOWN;
    else if (strcmp(what, "handover") == 0)
        c.op = TELEM_CTL_HANDOVER;
    else if (strncmp(what, "level:", 6) == 0)
        c.op = TELEM_CTL_SET_LEVEL, c.arg = atoll(what + 6);
    else if (strncmp(what, "window:", 7) == 0)
        c.op = TELEM_CTL_SET_WINDOW, c.arg = atoll(what + 7);
    else
        return TELEM_EINVAL;
    return telem_proto_encode_control(e, &c, data, size);
}

static int
s_dict(telem_proto_encoder_t *e, const char *what, const void **data,
       size_t *size)
{
    char key[128];
    const char *val = NULL;
    telem_dict_op_t op = { .op = TELEM_DOP_GET };
    if (strncmp(what, "put:", 4) == 0 && (val = strchr(what + 4, ':'))) {
        snprintf(key, sizeof key, "%.*s", (int) (val - what - 4), what + 4);
        op.op = TELEM_DOP_PUT;
        op.ival = (const uint8_t *) ++val;
        op.ivlen = (uint32_t) strlen(val);
    } else if (strncmp(what, "get:", 4) == 0) {
        snprintf(key, sizeof key, "%s", what + 4);
    } else {
        return TELEM_EINVAL;
    }
    op.key = (const uint8_t *) key;
    op.klen = (uint32_t) strlen(key);
    telem_dict_req_t r = { .id = S_ID, .ns = "", .ops = &op, .nops = 1 };
    return telem_proto_encode_dict_req(e, TELEM_MSG_DICT_REQ, &r, data, size);
}

static int s_request(telem_proto_encoder_t *e, const char *what,
                     const void **data, size_t *size);

/* relay:NODE:WHAT: WHAT's frame inside a relay request for NODE. */
static int
s_relay(telem_proto_encoder_t *e, const char *what, const void **data,
        size_t *size)
{
    static unsigned char inner[4096];
    char node[256];
    const char *colon = strchr(what, ':');
    if (!colon || colon - what >= (long) sizeof node)
        return TELEM_EINVAL;
    snprintf(node, sizeof node, "%.*s", (int) (colon - what), what);
    const void *d;
    size_t n;
    int rc = s_request(e, colon + 1, &d, &n);
    if (rc || n > sizeof inner)
        return rc ? rc : TELEM_ETOOBIG;
    memcpy(inner, d, n);
    const char *nodes[] = { node };
    telem_relay_req_t r = { .id = S_ID, .nodes = nodes, .nnodes = 1,
                            .deadline_ms = 1000, .inner = inner,
                            .inner_size = n };
    return telem_proto_encode_relay(e, &r, data, size);
}

static int
s_request(telem_proto_encoder_t *e, const char *what, const void **data,
          size_t *size)
{
    if (strncmp(what, "relay:", 6) == 0)
        return s_relay(e, what + 6, data, size);
    if (strncmp(what, "restart:", 8) == 0) {
        const char *node = what + 8;
        telem_restart_t r = { .id = S_ID, .reason = "probe", .exclude = &node,
                              .nexclude = 1 };
        return telem_proto_encode_restart(e, &r, data, size);
    }
    if (strncmp(what, "put:", 4) == 0 || strncmp(what, "get:", 4) == 0)
        return s_dict(e, what, data, size);
    return s_control(e, what, data, size);
}

static void s_print(const telem_msg_t *m);

/* One line per item of a relay's answer. */
static void
s_print_relay(const telem_relay_rep_t *r)
{
    telem_proto_decoder_t *d = telem_proto_decoder_new();
    for (uint32_t i = 0; d && i < r->nitems; i++) {
        const telem_relay_item_t *it = &r->items[i];
        printf("via %s: ", it->node);
        telem_msg_t m;
        if (it->code)
            printf("missing code=%d %s\n", (int) it->code, it->message);
        else if (telem_proto_decode(d, it->frame, it->size, &m) == 0)
            s_print(&m);
        else
            printf("reply undecodable\n");
    }
    telem_proto_decoder_destroy(&d);
}

static void
s_print(const telem_msg_t *m)
{
    switch ((int) m->type) {
    case TELEM_MSG_RELAY_REPLY:
        s_print_relay(&m->u.relay_reply);
        break;
    case TELEM_MSG_CONTROL_REPLY:
        printf("control code=0 level=%d window=%lld\n",
               (int) m->u.control_reply.status.level,
               (long long) m->u.control_reply.status.window_ns);
        break;
    case TELEM_MSG_ERROR:
        printf("error code=%d %s\n", (int) m->u.error.code,
               m->u.error.message ? m->u.error.message : "");
        break;
    case TELEM_MSG_DICT_REP: {
        const telem_dict_rep_t *r = &m->u.dict_rep;
        int code = r->nres ? r->res[0].code : r->code;
        printf("dict code=%d value=%.*s\n", code,
               r->nres && r->res[0].ival ? (int) r->res[0].ivlen : 0,
               r->nres && r->res[0].ival ? (const char *) r->res[0].ival : "");
        break;
    }
    case TELEM_MSG_RESTART_ACK:
        printf("ack code=%d %s\n", (int) m->u.restart_ack.code,
               m->u.restart_ack.message ? m->u.restart_ack.message : "");
        break;
    default:
        printf("reply type=%d\n", (int) m->type);
    }
}

/* Waits for the reply's last frame and prints it. */
static void
s_wait(void *sock, telem_proto_decoder_t *d, int timeout_ms)
{
    zmq_pollitem_t it = { sock, 0, ZMQ_POLLIN, 0 };
    if (zmq_poll(&it, 1, timeout_ms) <= 0) {
        printf("timeout\n");
        return;
    }
    zmq_msg_t f;
    zmq_msg_init(&f);
    while (zmq_msg_recv(&f, sock, 0) >= 0 && zmq_msg_more(&f))
        ;
    telem_msg_t m;
    if (telem_proto_decode(d, zmq_msg_data(&f), zmq_msg_size(&f), &m) == 0)
        s_print(&m);
    else
        printf("reply undecodable\n");
    zmq_msg_close(&f);
}

int
main(int argc, char **argv)
{
    if (argc < 3 || argc > 4)
        return s_usage();
    int timeout_ms = argc == 4 ? atoi(argv[3]) : 2000;
    telem_keys_t *keys = NULL;
    char why[512];
    if (telem_keys_find(NULL, NULL, &keys, why, sizeof why) != 0) {
        fprintf(stderr, "probe: %s\n", why);
        return 2;
    }
    telem_proto_encoder_t *e = telem_proto_encoder_new();
    telem_proto_decoder_t *d = telem_proto_decoder_new();
    void *ctx = zmq_ctx_new();
    const void *data = NULL;
    size_t size = 0;
    const telem_sock_opts_t o = {
        .max_msg = 1 << 20, .sndhwm = TELEM_SOCK_KEEP,
        .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = 0,
        .sndtimeo_ms = TELEM_SOCK_KEEP, .keys = keys,
    };
    void *sock = ctx ? telem_sock_raw_new(ctx, ZMQ_DEALER, &o, argv[1], NULL)
                     : NULL;
    int rc = 2;
    if (e && d && sock && s_request(e, argv[2], &data, &size) == 0) {
        /* Queued on the connection libzmq made at once (a DEALER does not
           wait for the handshake), so a refused peer just never answers. */
        zmq_send(sock, data, size, 0);
        s_wait(sock, d, timeout_ms);
        rc = 0;
    } else {
        s_usage();
    }
    if (sock)
        zmq_close(sock);
    if (ctx)
        zmq_ctx_term(ctx);
    telem_proto_encoder_destroy(&e);
    telem_proto_decoder_destroy(&d);
    telem_keys_destroy(&keys);
    return rc;
}
