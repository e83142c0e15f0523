/* test_http.c - the HTTP front end (runtime/http/telem_http.h) against
 * real servers on 127.0.0.1 with ephemeral ports, driven by clients made of
 * plain sockets so that malformed and partial HTTP can be sent.
 *
 * Covered: arguments (order, duplicates, percent-encoding, '+', a key
 * without '='), the decoded path, headers by any case, a JSON body; a body
 * of exactly max_body served and one byte more refused 413 before it is
 * sent; a body nested 64 deep served, 65 deep refused 400 (brackets in
 * strings not counted); a chunked body within the limit assembled, past it 413, and the
 * server serving after; malformed requests (a request line, a header line,
 * a Content-Length) answered 400 or closed, the server serving after; a
 * client stalled in the middle of its headers does not hold another's
 * request and is closed after timeout_s; connections past max_conns closed
 * at once, the server serving again once the flood leaves; the bearer
 * token (none, wrong, wrong of the same length, right, "bearer"); a name,
 * a bad literal and a port in use refused at start; a handler that makes
 * no reply answered 500; header injection and reserved headers refused;
 * CORS off by default and preflights answered when on.
 *
 * Every wait is on behaviour (poll on a socket, a response), bounded by
 * S_WAIT_MS only to fail instead of hanging.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "telem_error.h"
#include "telem_http.h"

#define S_WAIT_MS 10000
#define S_MAX_BODY 1000

typedef struct {
    int status;            /* 0: closed (or reset) with no response */
    char head[8192];
    char body[65536];
    size_t body_len;
} s_resp_t;

static int64_t
s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- the server side: one handler for every test ---------------------- */

/* /none: no reply.  /inject: header checks, the codes in the reply.
 * Anything else: the request echoed as JSON. */
static void
s_inject(telem_http_req_t *r)
{
    char codes[128];
    snprintf(codes, sizeof codes, "%d %d %d %d %d %d",
             telem_http_req_add_header(r, "X-A", "v\r\nSet-Cookie: x=1"),
             telem_http_req_add_header(r, "X-A\r\nSet-Cookie", "x"),
             telem_http_req_add_header(r, "Content-Length", "5"),
             telem_http_req_add_header(r, "", "v"),
             telem_http_req_add_header(r, "X-Ok", "fine"),
             telem_http_reply(r, 200, "text/plain\r\nX-Evil: 1", "x", 1));
    CHECK_RC(telem_http_reply(r, 200, "text/plain", codes, strlen(codes)),
             0);
    CHECK_RC(telem_http_reply(r, 200, "text/plain", "", 0), TELEM_ESTATE);
    CHECK_RC(telem_http_req_add_header(r, "X-Late", "1"), TELEM_ESTATE);
}

static json_t *
s_echo_args(telem_http_req_t *r)
{
    json_t *args = json_array();
    for (size_t i = 0; i < telem_http_req_nargs(r); i++)
        json_array_append_new(args,
                              json_pack("[ss]", telem_http_req_arg_key(r, i),
                                        telem_http_req_arg_value(r, i)));
    CHECK(telem_http_req_arg_key(r, telem_http_req_nargs(r)) == NULL);
    return args;
}

static void
s_handler(telem_http_req_t *r, void *arg)
{
    (void) arg;
    const char *path = telem_http_req_path(r);
    if (strcmp(path, "/none") == 0)
        return;
    if (strcmp(path, "/inject") == 0) {
        s_inject(r);
        return;
    }
    if (strcmp(path, "/error") == 0) {
        telem_http_reply_error(r, 404, "no such thing", NULL);
        return;
    }
    size_t len;
    const char *body = telem_http_req_body(r, &len);
    const char *x = telem_http_req_arg(r, "x");
    const char *hdr = telem_http_req_header(r, "X-Test");
    json_t *j = json_pack("{s:s,s:s,s:o,s:s%,s:s?,s:s?,s:s}", "method",
                          telem_http_req_method(r), "path", path, "args",
                          s_echo_args(r), "body", body, len, "x", x, "hdr",
                          hdr, "peer", telem_http_req_peer(r));
    REQUIRE(j);
    CHECK_RC(telem_http_reply_json(r, 200, j), 0);
}

static telem_http_t *
s_server(telem_http_opts_t o)
{
    int err = 1;
    char why[256] = "";
    o.name = o.name ? o.name : "test_http";
    telem_http_t *h = telem_http_new(&o, s_handler, NULL, &err, why,
                                     sizeof why);
    if (!h)
        fprintf(stderr, "telem_http_new: %d %s\n", err, why);
    REQUIRE(h);
    CHECK_RC(err, 0);
    CHECK(telem_http_port(h) > 0);
    return h;
}

/* --- the client side: plain sockets ------------------------------------- */

static int
s_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t) port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd, (struct sockaddr *) &a, sizeof a) == 0);
    return fd;
}

static void
s_send(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the server closed: the response says why */
        data += n;
        len -= (size_t) n;
    }
}

/* True when the headers and the Content-Length of body are all in. */
static bool
s_resp_complete(const char *buf, size_t len)
{
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (!end)
        return false;
    size_t hlen = (size_t) (end - buf) + 4;
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (!cl || cl > end)
        return false;
    size_t want = strtoul(cl + 17, NULL, 10);
    return len - hlen >= want;
}

static void
s_resp_parse(s_resp_t *rs, const char *buf, size_t len)
{
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || !end)
        return;
    rs->status = atoi(buf + 9);
    size_t hlen = (size_t) (end - buf) + 2;
    memcpy(rs->head, buf, hlen < sizeof rs->head ? hlen : 0);
    rs->body_len = len - hlen - 2;
    if (rs->body_len >= sizeof rs->body)
        rs->body_len = sizeof rs->body - 1;
    memcpy(rs->body, end + 4, rs->body_len);
}

/* Reads one response (or to EOF) within S_WAIT_MS.  Returns its status, 0
 * when the connection closed or was reset before one, -1 on time-out. */
static int
s_read(int fd, s_resp_t *rs)
{
    static char buf[1 << 17];
    size_t len = 0;
    int64_t deadline = s_now_ms() + S_WAIT_MS;
    memset(rs, 0, sizeof *rs);
    while (!s_resp_complete(buf, len)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int) (deadline - s_now_ms());
        if (left <= 0 || poll(&p, 1, left) == 0)
            return -1;
        ssize_t n = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t) n;
    }
    buf[len] = '\0';
    s_resp_parse(rs, buf, len);
    return rs->status;
}

/* One request on a new connection; the response in *rs. */
static int
s_request(int port, const char *raw, size_t len, s_resp_t *rs)
{
    int fd = s_connect(port);
    s_send(fd, raw, len);
    int st = s_read(fd, rs);
    close(fd);
    return st;
}

static int
s_get(int port, const char *target, const char *extra, s_resp_t *rs)
{
    char req[4096];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                     "%s\r\n", target, extra ? extra : "");
    return s_request(port, req, (size_t) n, rs);
}

/* A response header's value (first one), or NULL. */
static const char *
s_header(const s_resp_t *rs, const char *name, char *out, size_t size)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\r\n%s:", name);
    const char *h = strcasestr(rs->head, pat);
    if (!h)
        return NULL;
    h += strlen(pat);
    while (*h == ' ')
        h++;
    size_t n = strcspn(h, "\r");
    if (n >= size)
        n = size - 1;
    memcpy(out, h, n);
    out[n] = '\0';
    return out;
}

static json_t *
s_json(const s_resp_t *rs)
{
    json_t *j = json_loadb(rs->body, rs->body_len, 0, NULL);
    if (!j)
        fprintf(stderr, "not JSON: %.*s\n", (int) rs->body_len, rs->body);
    return j;
}

/* The OpenTSDB error shape with `code`, as application/json. */
static void
s_check_error(const s_resp_t *rs, int code)
{
    char v[128];
    CHECK_INT(rs->status, code);
    CHECK_STR(s_header(rs, "Content-Type", v, sizeof v), "application/json");
    json_t *j = s_json(rs);
    json_int_t got = -1;
    const char *msg = NULL;
    CHECK(j && json_unpack(j, "{s:{s:I,s:s}}", "error", "code", &got,
                           "message", &msg) == 0);
    CHECK_INT(got, code);
    json_decref(j);
}

/* --- the tests ------------------------------------------------------------ */

static void
test_get_args(int port)
{
    s_resp_t rs;
    char v[128];
    CHECK_INT(s_get(port, "/a%20b/c?x=1&x=2&y&z=a%26b+c%2Fd&%C3%A9=%zz",
                    "x-TeSt: hello\r\n", &rs), 200);
    CHECK_STR(s_header(&rs, "Server", v, sizeof v), "test_http");
    CHECK_STR(s_header(&rs, "Content-Type", v, sizeof v), "application/json");
    CHECK(!s_header(&rs, "Access-Control-Allow-Origin", v, sizeof v));
    json_t *j = s_json(&rs);
    json_t *want = json_loads("[[\"x\",\"1\"],[\"x\",\"2\"],[\"y\",\"\"],"
                              "[\"z\",\"a&b c/d\"],[\"\xc3\xa9\",\"%zz\"]]",
                              0, NULL);
    REQUIRE(j && want);
    CHECK_STR(json_string_value(json_object_get(j, "method")), "GET");
    CHECK_STR(json_string_value(json_object_get(j, "path")), "/a b/c");
    CHECK(json_equal(json_object_get(j, "args"), want));
    CHECK_STR(json_string_value(json_object_get(j, "x")), "1");
    CHECK_STR(json_string_value(json_object_get(j, "hdr")), "hello");
    CHECK_STR(json_string_value(json_object_get(j, "body")), "");
    CHECK_STR(json_string_value(json_object_get(j, "peer")), "127.0.0.1");
    json_decref(j);
    json_decref(want);

    const char *head = "HEAD /h HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    CHECK_INT(s_request(port, head, strlen(head), &rs), 200);
    CHECK_INT(rs.body_len, 0);

    CHECK_INT(s_get(port, "/plain", NULL, &rs), 200);
    j = s_json(&rs);
    CHECK(j && json_array_size(json_object_get(j, "args")) == 0);
    CHECK(j && json_is_null(json_object_get(j, "x")));
    json_decref(j);

    CHECK_INT(s_get(port, "/error", NULL, &rs), 404);
    s_check_error(&rs, 404);
    j = s_json(&rs);
    CHECK(j && !json_object_get(json_object_get(j, "error"), "details"));
    json_decref(j);
}

static int
s_post(int port, const char *body, size_t len, s_resp_t *rs)
{
    char req[S_MAX_BODY * 2 + 512];
    int n = snprintf(req, sizeof req,
                     "POST /api/query HTTP/1.1\r\nHost: t\r\n"
                     "Content-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n", len);
    REQUIRE(n > 0 && (size_t) n + len < sizeof req);
    memcpy(req + n, body, len);
    return s_request(port, req, (size_t) n + len, rs);
}

static void
test_post(int port)
{
    s_resp_t rs;
    const char *q = "{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\"}]}";
    CHECK_INT(s_post(port, q, strlen(q), &rs), 200);
    json_t *j = s_json(&rs);
    CHECK(j && strcmp(json_string_value(json_object_get(j, "body")), q) == 0);
    CHECK(j && strcmp(json_string_value(json_object_get(j, "method")),
                      "POST") == 0);
    json_decref(j);

    char big[S_MAX_BODY];
    memset(big, 'a', sizeof big);
    CHECK_INT(s_post(port, big, sizeof big, &rs), 200);
    j = s_json(&rs);
    CHECK(j && strlen(json_string_value(json_object_get(j, "body"))) ==
                   S_MAX_BODY);
    json_decref(j);

    /* One byte more: refused on the headers alone, before the body. */
    char head[256];
    int n = snprintf(head, sizeof head,
                     "POST /api/put HTTP/1.1\r\nHost: t\r\n"
                     "Content-Length: %d\r\n\r\n", S_MAX_BODY + 1);
    CHECK_INT(s_request(port, head, (size_t) n, &rs), 413);
    s_check_error(&rs, 413);
    /* With Expect: 100-continue, no "100 Continue" comes first. */
    n = snprintf(head, sizeof head,
                 "POST /api/put HTTP/1.1\r\nHost: t\r\nExpect: 100-continue"
                 "\r\nContent-Length: 99999999999\r\n\r\n");
    CHECK_INT(s_request(port, head, (size_t) n, &rs), 413);
}

/* A body nested 64 deep reaches the handler; 65 is answered 400 before
 * it; brackets inside strings do not count. */
static void
test_nesting(int port)
{
    char body[512];
    s_resp_t rs;
    size_t n = 0;
    for (int i = 0; i < TELEM_HTTP_NESTING_MAX; i++)
        body[n++] = '[';
    for (int i = 0; i < TELEM_HTTP_NESTING_MAX; i++)
        body[n++] = ']';
    CHECK_INT(s_post(port, body, n, &rs), 200);
    memmove(body + 1, body, n);
    body[0] = '[';
    body[++n] = ']';
    CHECK_INT(s_post(port, body, ++n, &rs), 400);
    s_check_error(&rs, 400);
    n = (size_t) snprintf(body, sizeof body, "[\"");
    for (int i = 0; i < 200; i++)
        body[n++] = i % 2 ? '{' : '[';
    n += (size_t) snprintf(body + n, sizeof body - n, "\\\"\"]");
    CHECK_INT(s_post(port, body, n, &rs), 200);
}

/* A chunked POST of `total` bytes in chunks of 100. */
static int
s_chunked(int port, size_t total, s_resp_t *rs)
{
    int fd = s_connect(port);
    const char *head = "POST /up HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n";
    s_send(fd, head, strlen(head));
    char chunk[128];
    for (size_t sent = 0; sent < total; sent += 100) {
        size_t n = total - sent < 100 ? total - sent : 100;
        int h = snprintf(chunk, sizeof chunk, "%zx\r\n", n);
        memset(chunk + h, 'c', n);
        memcpy(chunk + h + n, "\r\n", 2);
        s_send(fd, chunk, (size_t) h + n + 2);
    }
    s_send(fd, "0\r\n\r\n", 5);
    int st = s_read(fd, rs);
    close(fd);
    return st;
}

static void
test_chunked(int port)
{
    s_resp_t rs;
    CHECK_INT(s_chunked(port, 950, &rs), 200);
    json_t *j = s_json(&rs);
    CHECK(j && strlen(json_string_value(json_object_get(j, "body"))) == 950);
    json_decref(j);
    CHECK_INT(s_chunked(port, S_MAX_BODY + 100, &rs), 413);
    s_check_error(&rs, 413);
    CHECK_INT(s_get(port, "/after-chunked", NULL, &rs), 200);
}

static void
test_malformed(int port)
{
    static const char *const bad[] = {
        "GARBAGE\r\n\r\n",
        "GET / HTTP/1.1\r\nNo colon in this header\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 12x\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        "zz\r\nabc\r\n0\r\n\r\n",
        "GET / HTTP/7.0\r\nHost: t\r\n\r\n",
        NULL, /* headers past libmicrohttpd's buffer: made below */
    };
    static char big[40000];
    int n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nHost: t\r\nX-Big: ");
    memset(big + n, 'b', sizeof big - (size_t) n - 5);
    memcpy(big + sizeof big - 5, "\r\n\r\n", 5); /* ends with a NUL */
    s_resp_t rs;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *req = bad[i] ? bad[i] : big;
        int st = s_request(port, req, strlen(req), &rs);
        /* libmicrohttpd answers 400 (505 for the version, 431 for the
           headers), or closes when it cannot even read a request line (or
           resets before the answer is read, the rest of a big request
           unread). */
        bool ok = st == 0 || st == 400 || st == 505 || (!bad[i] && st == 431);
        if (!ok)
            fprintf(stderr, "malformed request %zu: status %d\n", i, st);
        CHECK(ok);
        CHECK_INT(s_get(port, "/still-up", NULL, &rs), 200);
    }
}

/* One thread, a 1 s timeout: a client stalled in its headers holds
 * nothing, and is closed once the timeout passes. */
static void
test_slow_client(void)
{
    telem_http_t *h = s_server((telem_http_opts_t){.threads = 1,
                                                   .timeout_s = 1});
    int port = telem_http_port(h);
    int slow = s_connect(port);
    const char *half = "GET /slow HTTP/1.1\r\nHost: t\r\nX-Half: abc";
    s_send(slow, half, strlen(half));
    s_resp_t rs;
    CHECK_INT(s_get(port, "/other", NULL, &rs), 200);
    struct pollfd p = {.fd = slow, .events = POLLIN};
    CHECK_INT(poll(&p, 1, 0), 0); /* still open, nothing answered */
    CHECK_INT(s_read(slow, &rs), 0); /* then closed, with no response */
    close(slow);
    CHECK_INT(s_get(port, "/after-slow", NULL, &rs), 200);
    telem_http_destroy(&h);
    CHECK(h == NULL);
}

static int
s_held_conn(int port)
{
    int fd = s_connect(port);
    const char *req = "GET /held HTTP/1.1\r\nHost: t\r\n\r\n";
    s_send(fd, req, strlen(req));
    s_resp_t rs;
    CHECK_INT(s_read(fd, &rs), 200); /* kept alive: HTTP/1.1 */
    return fd;
}

static void
test_flood(void)
{
    enum { MAX = 4, EXTRA = 3 };
    telem_http_t *h = s_server((telem_http_opts_t){.max_conns = MAX,
                                                   .threads = 2});
    int port = telem_http_port(h);
    int held[MAX];
    for (int i = 0; i < MAX; i++)
        held[i] = s_held_conn(port);
    s_resp_t rs;
    for (int i = 0; i < EXTRA; i++) {
        int fd = s_connect(port);
        CHECK_INT(s_read(fd, &rs), 0); /* closed at once, no queueing */
        close(fd);
    }
    for (int i = 0; i < MAX; i++)
        close(held[i]);
    /* The server learns of the closes on its own threads: retry until it
       has (bounded by S_WAIT_MS). */
    int64_t deadline = s_now_ms() + S_WAIT_MS;
    int st = 0;
    while ((st = s_get(port, "/after-flood", NULL, &rs)) != 200 &&
           s_now_ms() < deadline)
        poll(NULL, 0, 10);
    CHECK_INT(st, 200);
    telem_http_destroy(&h);
}

static void
test_token(void)
{
    telem_http_t *h = s_server((telem_http_opts_t){.token = "s3cret-token"});
    int port = telem_http_port(h);
    s_resp_t rs;
    char v[128];
    CHECK_INT(s_get(port, "/q", NULL, &rs), 401);
    s_check_error(&rs, 401);
    CHECK(s_header(&rs, "WWW-Authenticate", v, sizeof v) &&
          strncmp(v, "Bearer", 6) == 0);
    CHECK_INT(s_get(port, "/q", "Authorization: Bearer wrong\r\n", &rs), 401);
    CHECK(s_header(&rs, "WWW-Authenticate", v, sizeof v) &&
          strstr(v, "invalid_token"));
    CHECK_INT(s_get(port, "/q", "Authorization: Bearer s3cret-tokeN\r\n", &rs),
              401);
    CHECK_INT(s_get(port, "/q", "Authorization: Bearer s3cret-token2\r\n",
                    &rs), 401);
    CHECK_INT(s_get(port, "/q", "Authorization: Basic czNjcmV0\r\n", &rs),
              401);
    CHECK_INT(s_get(port, "/q", "Authorization: Bearer s3cret-token\r\n",
                    &rs), 200);
    CHECK_INT(s_get(port, "/q", "authorization: bearer s3cret-token\r\n",
                    &rs), 200);
    /* A refused upload is refused on its headers. */
    const char *up = "POST /api/put HTTP/1.1\r\nHost: t\r\n"
                     "Content-Length: 10\r\n\r\n";
    CHECK_INT(s_request(port, up, strlen(up), &rs), 401);
    telem_http_destroy(&h);
}

static void
s_check_start_fails(telem_http_opts_t o, telem_http_fn fn, int want)
{
    int err = 0;
    char why[256] = "";
    telem_http_t *h = telem_http_new(&o, fn, NULL, &err, why, sizeof why);
    CHECK(h == NULL);
    CHECK_RC(err, want);
    CHECK(why[0] != '\0');
    telem_http_destroy(&h);
}

static void
test_start_errors(void)
{
    s_check_start_fails((telem_http_opts_t){.bind = "localhost"}, s_handler,
                        TELEM_EINVAL);
    s_check_start_fails((telem_http_opts_t){.bind = "127.0.0"}, s_handler,
                        TELEM_EINVAL);
    s_check_start_fails((telem_http_opts_t){.bind = ""}, s_handler,
                        TELEM_EINVAL);
    s_check_start_fails((telem_http_opts_t){.port = 65536}, s_handler,
                        TELEM_EINVAL);
    s_check_start_fails((telem_http_opts_t){.token = ""}, s_handler,
                        TELEM_EINVAL);
    s_check_start_fails((telem_http_opts_t){.token = "a b"}, s_handler,
                        TELEM_EINVAL);
    s_check_start_fails((telem_http_opts_t){.name = "a\r\nb"}, s_handler,
                        TELEM_EINVAL);
    s_check_start_fails((telem_http_opts_t){0}, NULL, TELEM_EINVAL);

    telem_http_t *h = s_server((telem_http_opts_t){0});
    int err = 0;
    char why[256] = "";
    telem_http_t *h2 = telem_http_new(
        &(telem_http_opts_t){.port = telem_http_port(h)}, s_handler, NULL,
        &err, why, sizeof why);
    CHECK(h2 == NULL);
    CHECK_RC(err, TELEM_EIO);
    CHECK(strstr(why, "in use") != NULL);
    telem_http_destroy(&h);
    telem_http_destroy(&h2);
    telem_http_destroy(NULL);
}

/* IPv6 loopback where the host has it. */
static void
test_ipv6(void)
{
    int err = 0;
    telem_http_t *h = telem_http_new(&(telem_http_opts_t){.bind = "[::1]"},
                                     s_handler, NULL, &err, NULL, 0);
    if (!h) {
        CHECK_RC(err, TELEM_EIO); /* no IPv6 here: not a bad option */
        return;
    }
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6,
                             .sin6_port = htons((uint16_t)
                                                    telem_http_port(h)),
                             .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    REQUIRE(fd >= 0 && connect(fd, (struct sockaddr *) &a, sizeof a) == 0);
    const char *req = "GET /v6 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    s_send(fd, req, strlen(req));
    s_resp_t rs;
    CHECK_INT(s_read(fd, &rs), 200);
    json_t *j = s_json(&rs);
    CHECK(j && strcmp(json_string_value(json_object_get(j, "peer")),
                      "::1") == 0);
    json_decref(j);
    close(fd);
    telem_http_destroy(&h);
}

static void
test_keep_alive(int port)
{
    s_resp_t rs;
    /* Two requests on one kept-alive connection: each its own state. */
    int fd = s_connect(port);
    const char *r1 = "POST /k1?a=1 HTTP/1.1\r\nHost: t\r\n"
                     "Content-Length: 3\r\n\r\nabc";
    const char *r2 = "GET /k2 HTTP/1.1\r\nHost: t\r\n\r\n";
    s_send(fd, r1, strlen(r1));
    CHECK_INT(s_read(fd, &rs), 200);
    s_send(fd, r2, strlen(r2));
    CHECK_INT(s_read(fd, &rs), 200);
    json_t *j = s_json(&rs);
    CHECK(j && strcmp(json_string_value(json_object_get(j, "path")),
                      "/k2") == 0);
    CHECK(j && strcmp(json_string_value(json_object_get(j, "body")), "") ==
                   0);
    CHECK(j && json_array_size(json_object_get(j, "args")) == 0);
    json_decref(j);
    close(fd);
}

static void
test_handler_rules(int port)
{
    s_resp_t rs;
    char v[128];
    CHECK_INT(s_get(port, "/none", NULL, &rs), 500);
    s_check_error(&rs, 500);
    CHECK_INT(s_get(port, "/inject", NULL, &rs), 200);
    CHECK_INT(rs.body_len, strlen("-1 -1 -1 -1 0 -1"));
    CHECK(memcmp(rs.body, "-1 -1 -1 -1 0 -1", rs.body_len) == 0);
    CHECK_STR(s_header(&rs, "X-Ok", v, sizeof v), "fine");
    CHECK_STR(s_header(&rs, "Content-Type", v, sizeof v), "text/plain");
    CHECK(!s_header(&rs, "Set-Cookie", v, sizeof v));
    CHECK(!s_header(&rs, "X-Evil", v, sizeof v));
    CHECK(!s_header(&rs, "X-Late", v, sizeof v));
    /* Without cors, OPTIONS is the handler's like any method. */
    const char *opt = "OPTIONS /api/query HTTP/1.1\r\nHost: t\r\n"
                      "Origin: http://x\r\nConnection: close\r\n\r\n";
    CHECK_INT(s_request(port, opt, strlen(opt), &rs), 200);
    CHECK(!s_header(&rs, "Access-Control-Allow-Origin", v, sizeof v));
}

static void
test_cors(void)
{
    telem_http_t *h = s_server((telem_http_opts_t){.token = "tok",
                                                   .cors = true});
    int port = telem_http_port(h);
    s_resp_t rs;
    char v[128];
    const char *opt = "OPTIONS /api/query HTTP/1.1\r\nHost: t\r\n"
                      "Origin: http://grafana\r\n"
                      "Access-Control-Request-Method: POST\r\n"
                      "Access-Control-Request-Headers: authorization\r\n"
                      "Connection: close\r\n\r\n";
    CHECK_INT(s_request(port, opt, strlen(opt), &rs), 204);
    CHECK_STR(s_header(&rs, "Access-Control-Allow-Origin", v, sizeof v), "*");
    CHECK(s_header(&rs, "Access-Control-Allow-Headers", v, sizeof v) &&
          strstr(v, "Authorization"));
    CHECK_INT(s_get(port, "/q", "Authorization: Bearer tok\r\n", &rs), 200);
    CHECK_STR(s_header(&rs, "Access-Control-Allow-Origin", v, sizeof v), "*");
    CHECK_INT(s_get(port, "/q", NULL, &rs), 401);
    CHECK_STR(s_header(&rs, "Access-Control-Allow-Origin", v, sizeof v), "*");
    telem_http_destroy(&h);
}

int
main(void)
{
    telem_http_t *h = s_server((telem_http_opts_t){.max_body = S_MAX_BODY});
    int port = telem_http_port(h);
    test_get_args(port);
    test_post(port);
    test_nesting(port);
    test_chunked(port);
    test_malformed(port);
    test_handler_rules(port);
    test_keep_alive(port);
    telem_http_destroy(&h);
    test_slow_client();
    test_flood();
    test_token();
    test_start_errors();
    test_ipv6();
    test_cors();
    return check_report("test_http");
}
