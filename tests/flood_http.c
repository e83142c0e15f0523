/* flood_http.c - malformed HTTP for tests/it_flood.sh (flood_peer.h):
 * telem_agg's API and telemd's /metrics, with good requests between.
 *
 * Each malformed request goes on a connection of its own, made with plain
 * sockets so that anything can be sent: a request line that is garbage
 * (random bytes, NUL bytes, no version, an unknown version), headers
 * without a colon or with a space in their name, one header of 64 KiB,
 * 2,000 headers, a URL of 16 KiB, a Content-Length that is not a number,
 * negative, past 2^64 or given twice, a body over the server's limit, a
 * body cut short, a chunked body with a bad chunk size, a
 * body that is not JSON, JSON nested 10,000 deep or of the wrong shape,
 * bad points for /api/put, and, for telem_agg, a wrong token, a Basic
 * scheme, a wrong token= argument or none.  After each, the connection's
 * writing side is shut, so a server that waits for more sees its end, and
 * the answer (a status code, or the connection closed without one) is
 * read to the end and counted.  Three kinds are sent and the connection
 * reset at once, unread: libmicrohttpd keeps a connection whose request
 * line starts with NUL bytes, whose URL is 16 KiB or whose body was cut
 * short until its 10 s timeout now and then, even after the peer shut its
 * side (a reset ends it at once).
 *
 * Meanwhile `slow` connections hold a request whose headers never end
 * (slowloris), one more header line on each after every 500 requests;
 * they are few enough to leave room under the server's connection cap.
 * A good request after every `every` malformed ones must be answered 200
 * with a body naming the good metric.
 */
#include "flood_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "telem_time.h"

#define S_RESP_MAX (4u << 20)         /* bytes of an answer read */
#define S_IO_TIMEOUT_S 20             /* a stalled exchange fails */
#define S_SLOW_MAX 64
#define S_BIG 65536
#define S_KINDS 24

typedef struct {
    const flood_http_opts_t *o;
    flood_rng_t rng;
    char *resp;
    char *req;                        /* a request being made */
    size_t len;
    int reset;                        /* close at once, read no answer */
    long codes[6];                    /* answers by class: 1xx..5xx */
    long closed;                      /* no answer, connection closed */
    long reset_sent;                  /* sent, then reset unread */
    long good, good_ok;
    int slow[S_SLOW_MAX], nslow;
} s_http_t;

/* ---- connections ------------------------------------------------------- */

static int
s_connect(const flood_http_opts_t *o)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons((uint16_t) o->port) };
    inet_pton(AF_INET, o->host, &a.sin_addr);
    struct timeval tv = { S_IO_TIMEOUT_S, 0 };
    struct linger lg = { 1, 0 };      /* close with a reset: no TIME_WAIT */
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    if (connect(fd, (struct sockaddr *) &a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends the request made in h->req (then shuts the connection's writing
 * side when `shut`, so that a server waiting for more sees its end at
 * once), reads the answer until the server closes; returns the answer's
 * status code, 0 when none came, -1 when no connection could be made, -2
 * when h->reset asked for a reset right after the request. */
static int
s_exchange(s_http_t *h, int shut)
{
    int fd = s_connect(h->o);
    if (fd < 0)
        return -1;
    size_t off = 0, got = 0;
    while (off < h->len) {
        ssize_t n = send(fd, h->req + off, h->len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;                    /* the server may close early */
        off += (size_t) n;
    }
    if (h->reset) {                   /* SO_LINGER 0: a reset */
        close(fd);
        return -2;
    }
    if (shut)
        shutdown(fd, SHUT_WR);
    for (;;) {
        ssize_t n = recv(fd, h->resp + got, S_RESP_MAX - 1 - got, 0);
        if (n <= 0 || (got += (size_t) n) == S_RESP_MAX - 1)
            break;
    }
    close(fd);
    h->resp[got] = '\0';
    int code = 0;
    if (sscanf(h->resp, "HTTP/1.%*d %d", &code) != 1)
        code = 0;
    return code;
}

/* ---- requests ---------------------------------------------------------- */

static void
s_add(s_http_t *h, const char *s, size_t n)
{
    memcpy(h->req + h->len, s, n);
    h->len += n;
}

static void
s_str(s_http_t *h, const char *s)
{
    s_add(h, s, strlen(s));
}

static void
s_addf(s_http_t *h, const char *fmt, const char *a)
{
    h->len += (size_t) sprintf(h->req + h->len, fmt, a);
}

/* A request line and Host, with the token when `auth`. */
static void
s_head(s_http_t *h, const char *method, const char *path, int auth)
{
    h->len = (size_t) sprintf(h->req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Connection: close\r\n", method, path);
    if (auth && h->o->token)
        s_addf(h, "Authorization: Bearer %s\r\n", h->o->token);
}

/* A POST of `body` to the API (telem_agg) or /metrics, with its length. */
static void
s_post(s_http_t *h, const char *path, const char *body, size_t len)
{
    char cl[64];
    s_head(h, "POST", h->o->metrics ? "/metrics" : path, 1);
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\n\r\n", len);
    s_add(h, cl, strlen(cl));
    s_add(h, body, len);
}

static void
s_fill(s_http_t *h, char c, size_t n)
{
    memset(h->req + h->len, c, n);
    h->len += n;
}

/* Malformed at the HTTP level: request line, headers, lengths. */
static void
s_bad_http(s_http_t *h, int kind)
{
    const char *api = h->o->metrics ? "/metrics" : "/api/version";
    switch (kind) {
    case 0:                           /* random printable garbage */
        h->len = 0;
        for (int i = 0, n = (int) flood_between(&h->rng, 1, 200); i < n; i++)
            h->req[h->len++] = (char) flood_between(&h->rng, 33, 126);
        s_str(h, "\r\n\r\n");
        break;
    case 1: h->len = 0; s_str(h, "GET\r\n\r\n"); break;
    case 2: h->len = 0; s_addf(h, "GET %s HTTP/9.9\r\nHost: x\r\n\r\n", api);
        break;
    case 3:                           /* NUL bytes first */
        h->len = 0;
        s_add(h, "\0\1\2GET / HTTP/1.1\r\n\r\n", 21);
        h->reset = 1;
        break;
    case 4: s_head(h, "GET", api, 1); s_str(h, "NoColonHere\r\n\r\n");
        break;
    case 5: s_head(h, "GET", api, 1); s_str(h, "Bad Name: x\r\n\r\n");
        break;
    case 6:                           /* one header of 64 KiB */
        s_head(h, "GET", api, 1);
        s_str(h, "X-Big: ");
        s_fill(h, 'a', S_BIG);
        s_str(h, "\r\n\r\n");
        break;
    case 7:                           /* 2,000 headers */
        s_head(h, "GET", api, 1);
        for (int i = 0; i < 2000; i++)
            s_str(h, "X-h: v\r\n");
        s_str(h, "\r\n");
        break;
    case 8:                           /* a URL of 16 KiB */
        h->len = 0;
        s_str(h, "GET /");
        s_fill(h, 'u', 16384);
        s_str(h, " HTTP/1.1\r\nHost: x\r\n\r\n");
        h->reset = 1;
        break;
    case 9: s_head(h, "POST", "/api/query", 1);
        s_str(h, "Content-Length: abc\r\n\r\n");
        break;
    case 10: s_head(h, "POST", "/api/query", 1);
        s_str(h, "Content-Length: -5\r\n\r\n");
        break;
    default:                          /* 11 */
        s_head(h, "POST", "/api/query", 1);
        s_str(h, "Content-Length: 99999999999999999999999\r\n\r\n");
        break;
    }
}

/* Malformed lengths and bodies, and (telem_agg) bad tokens. */
static void
s_bad_api(s_http_t *h, int kind)
{
    int tok = !h->o->metrics;
    switch (kind) {
    case 12: s_head(h, "POST", "/api/query", 1);
        s_str(h, "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}");
        break;
    case 13: s_head(h, "POST", "/api/put", 1);   /* over --max-body */
        s_str(h, "Content-Length: 10737418240\r\n\r\n");
        break;
    case 14: s_head(h, "POST", "/api/query", 1);  /* cut short */
        s_str(h, "Content-Length: 1000\r\n\r\n{\"start\"");
        h->reset = 1;
        break;
    case 15: s_head(h, "POST", "/api/put", 1);
        s_str(h, "Transfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n");
        break;
    case 16: s_post(h, "/api/query", "{[}", 3); break;
    case 17:                          /* JSON 10,000 deep */
        s_head(h, "POST", h->o->metrics ? "/metrics" : "/api/query", 1);
        s_str(h, "Content-Length: 10000\r\n\r\n");
        s_fill(h, '[', 10000);
        break;
    case 18: s_post(h, "/api/query", "{\"queries\": 5}", 14); break;
    case 19: s_post(h, "/api/put", "[{\"metric\": 5, \"timestamp\": \"x\"}]",
                    33);
        break;
    case 20: s_head(h, "GET", tok ? "/api/suggest?type=metrics" : "/nope", 0);
        if (tok)
            s_str(h, "Authorization: Bearer wrong-token\r\n");
        s_str(h, "\r\n");
        break;
    case 21: s_head(h, tok ? "GET" : "PUT", tok ? "/api/suggest" : "/metrics",
                    0);
        if (tok)
            s_str(h, "Authorization: Basic Zm9vOmJhcg==\r\n");
        s_str(h, "\r\n");
        break;
    case 22: s_head(h, tok ? "GET" : "DELETE", tok ?
                    "/api/suggest?type=metrics&token=wrong" : "/metrics", 0);
        s_str(h, "\r\n");
        break;
    default:                          /* 23: no token at all */
        s_head(h, "GET", tok ? "/api/suggest?type=metrics" : "/metrics/x",
               0);
        s_str(h, "\r\n");
        break;
    }
}

/* The good request after every `every` malformed ones: 200 and a body that
 * names the good metric. */
static int
s_good(s_http_t *h)
{
    char body[256];
    h->reset = 0;
    if (h->o->metrics) {
        s_head(h, "GET", "/metrics", 0);
        s_str(h, "\r\n");
    } else if (h->good % 2) {
        s_head(h, "GET", "/api/suggest?type=metrics&q=flood", 1);
        s_str(h, "\r\n");
    } else {
        int n = snprintf(body, sizeof body, "{\"start\":\"1h-ago\","
                         "\"queries\":[{\"metric\":\"%s\","
                         "\"aggregator\":\"sum\"}]}", h->o->good_metric);
        s_post(h, "/api/query", body, (size_t) n);
    }
    h->good++;
    int code = s_exchange(h, 0);
    int ok = code == 200 && strstr(h->resp, h->o->good_metric);
    if (!ok)
        fprintf(stderr, "http: good request %ld: answer %d: %.200s\n",
                h->good, code, h->resp);
    h->good_ok += ok;
    return ok;
}

/* ---- partial requests held open ---------------------------------------- */

static void
s_slow_open(s_http_t *h)
{
    static const char part[] = "GET /api/version HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < h->o->slow && h->nslow < S_SLOW_MAX; i++) {
        int fd = s_connect(h->o);
        if (fd < 0)
            break;
        if (send(fd, part, sizeof part - 1, MSG_NOSIGNAL) < 0) {
            close(fd);
            break;
        }
        h->slow[h->nslow++] = fd;
    }
}

/* One more header line on each; returns how many were still open. */
static int
s_slow_step(s_http_t *h)
{
    int open = 0;
    for (int i = 0; i < h->nslow; i++)
        if (h->slow[i] >= 0
            && send(h->slow[i], "X-a: b\r\n", 8, MSG_NOSIGNAL) == 8)
            open++;
    return open;
}

static void
s_slow_close(s_http_t *h)
{
    for (int i = 0; i < h->nslow; i++)
        close(h->slow[i]);
    h->nslow = 0;
}

/* ---- the run ------------------------------------------------------------ */

static void
s_count(s_http_t *h, int code)
{
    if (code >= 100 && code < 600)
        h->codes[code / 100]++;
    else if (code == -2)
        h->reset_sent++;
    else
        h->closed++;
}

static void
s_report(const s_http_t *h, long sent, double secs, int slow_open)
{
    const char *who = h->o->metrics ? "telemd /metrics" : "telem_agg";
    printf("http: %s: %ld malformed requests in %.1f s (%.0f/s); answers: "
           "2xx %ld, 3xx %ld, 4xx %ld, 5xx %ld, closed without one %ld, "
           "reset unread %ld\n", who, sent, secs,
           secs > 0 ? (double) sent / secs : 0.0, h->codes[2], h->codes[3],
           h->codes[4], h->codes[5], h->closed, h->reset_sent);
    printf("http: %s: %ld good requests answered correctly of %ld; %d "
           "partial requests held, %d still open at the end\n", who,
           h->good_ok, h->good, h->nslow, slow_open);
}

int
flood_http_run(const flood_http_opts_t *o)
{
    s_http_t h = { .o = o, .rng = { o->seed ? o->seed : 1 } };
    h.resp = malloc(S_RESP_MAX);
    h.req = malloc(2 * S_BIG + 4096);
    if (!h.resp || !h.req)
        return 1;
    int64_t t0 = telem_mono_ns();
    long sent = 0;
    if (!o->clean)
        s_slow_open(&h);
    int slow_open = h.nslow;
    for (long i = 1; i <= o->bad; i++) {
        if (!o->clean) {
            int kind = (int) ((i - 1) % S_KINDS);
            h.reset = 0;
            if (kind < 12)
                s_bad_http(&h, kind);
            else
                s_bad_api(&h, kind);
            int64_t t = telem_mono_ns();
            s_count(&h, s_exchange(&h, 1));
            if (telem_mono_ns() - t > TELEM_NS_PER_SEC)
                fprintf(stderr, "http: malformed request %ld (kind %d) took "
                        "%.1f s\n", i, kind,
                        (double) (telem_mono_ns() - t) / 1e9);
            sent++;
        }
        if (i % o->every == 0)
            s_good(&h);
        if (i % 500 == 0 && h.nslow)
            slow_open = s_slow_step(&h);
    }
    double secs = (double) (telem_mono_ns() - t0) / 1e9;
    s_report(&h, sent, secs, slow_open);
    s_slow_close(&h);
    free(h.resp);
    free(h.req);
    return h.good_ok == h.good && h.good > 0 ? 0 : 1;
}
