/* test_telemd_http.c - telemd's GET /metrics (runtime/telemd/telemd_http.h)
 * in one process: a real telemd with an HTTP port, samples pushed on its
 * ingest socket, answers read with a plain-socket client.
 *
 * Covered: the pushed sample in the text format, OpenMetrics when asked,
 * gzip when allowed, HEAD without a body, ?timestamps=1; 404 and 405;
 * four threads scraping while batches keep arriving (the snapshot path
 * from the HTTP threads through the actor, every answer whole and 200);
 * a telemd whose actor has stopped answers 503 at once (told it stopped,
 * not waiting for the snapshot deadline); a bad address and
 * a port in use refused at start with their codes; the metrics URL in the
 * endpoints file.  tests/it_prometheus.sh checks the same output with
 * promtool and a real Prometheus.
 */
#include "tmpdir.h"

#include <arpa/inet.h>
#include <czmq.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_proto.h"
#include "telem_time.h"
#include "telemd_actor.h"

#define S_WAIT_MS 10000
#define S_SCRAPERS 4
#define S_SCRAPES 25

typedef struct {
    int status;
    char head[4096];
    char *body;
    size_t body_len;
} s_resp_t;

static int
s_port(const char *url)
{
    const char *colon = strrchr(url, ':');
    return colon ? atoi(colon + 1) : -1;
}

/* One request on a new connection ("Connection: close"); reads the whole
 * answer.  status 0 when nothing came. */
static void
s_http(int port, const char *method, const char *path, const char *headers,
       s_resp_t *r)
{
    memset(r, 0, sizeof *r);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons((uint16_t) port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(fd >= 0 && connect(fd, (struct sockaddr *) &a, sizeof a) == 0);
    char req[1024];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: x\r\n%s"
                     "Connection: close\r\n\r\n", method, path, headers);
    REQUIRE(write(fd, req, (size_t) n) == n);
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap + 1);
    REQUIRE(buf);
    for (;;) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, S_WAIT_MS) <= 0)
            break;
        if (len == cap && !(buf = realloc(buf, (cap *= 2) + 1)))
            abort();
        ssize_t got = read(fd, buf + len, cap - len);
        if (got <= 0)
            break;
        len += (size_t) got;
    }
    close(fd);
    buf[len] = '\0';
    char *end = strstr(buf, "\r\n\r\n");
    if (end && sscanf(buf, "HTTP/1.%*d %d", &r->status) == 1) {
        size_t hl = (size_t) (end - buf);
        snprintf(r->head, sizeof r->head, "%.*s", (int) hl, buf);
        r->body_len = len - hl - 4;
        r->body = malloc(r->body_len + 1);
        memcpy(r->body, end + 4, r->body_len + 1);
    }
    free(buf);
}

static void
s_resp_free(s_resp_t *r)
{
    free(r->body);
    r->body = NULL;
}

/* --- a telemd and its ingest ---------------------------------------------- */

typedef struct {
    telemd_t *d;
    zsock_t *push;
    telem_proto_encoder_t *enc;
    int port;
} s_node_t;

static void
s_push(s_node_t *nd, const char *metric, double value, uint64_t token)
{
    telem_sample_t s = { .metric = metric, .level = 1,
                         .ts_ns = telem_now_ns(), .value = value };
    telem_tag_t tags[] = { { "where", "a\"b\\c" } };
    telem_batch_t b = { .source = "test", .tags = tags, .ntags = 1,
                        .samples = &s, .nsamples = 1, .fin_token = token };
    const void *data;
    size_t size;
    REQUIRE(telem_proto_encode_batch(nd->enc, &b, &data, &size) == 0);
    REQUIRE(zsock_send(nd->push, "b", data, size) == 0);
}

/* Waits until /metrics shows `line` (the pushed sample arrived). */
static bool
s_wait_line(int port, const char *line)
{
    for (int i = 0; i < 2000; i++) {
        s_resp_t r;
        s_http(port, "GET", "/metrics", "", &r);
        bool ok = r.status == 200 && r.body && strstr(r.body, line);
        s_resp_free(&r);
        if (ok)
            return true;
        zclock_sleep(5);
    }
    return false;
}

static void
test_answers(s_node_t *nd)
{
    s_push(nd, "http_test", 42.5, 0);
    REQUIRE(s_wait_line(nd->port,
                        "http_test{host=\"h1\",where=\"a\\\"b\\\\c\"} 42.5\n"));
    s_resp_t r;
    s_http(nd->port, "GET", "/metrics", "", &r);
    CHECK(strstr(r.head, "Content-Type: text/plain; version=0.0.4"));
    CHECK(strstr(r.body, "# TYPE http_test untyped\n"));
    s_resp_free(&r);
    s_http(nd->port, "GET", "/metrics",
           "Accept: application/openmetrics-text; version=1.0.0\r\n", &r);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.head, "Content-Type: application/openmetrics-text"));
    CHECK(r.body_len >= 6 &&
          strcmp(r.body + r.body_len - 6, "# EOF\n") == 0);
    CHECK(strstr(r.body, "# TYPE http_test unknown\n"));
    s_resp_free(&r);
    s_http(nd->port, "GET", "/metrics", "Accept-Encoding: gzip\r\n", &r);
    CHECK(strstr(r.head, "Content-Encoding: gzip"));
    CHECK(r.body_len > 2 && (unsigned char) r.body[0] == 0x1f);
    s_resp_free(&r);
    s_http(nd->port, "HEAD", "/metrics", "", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.body_len, 0);
    s_resp_free(&r);
    s_http(nd->port, "GET", "/metrics?timestamps=1", "", &r);
    CHECK(strstr(r.body,
                 "http_test{host=\"h1\",where=\"a\\\"b\\\\c\"} 42.5 1"));
    s_resp_free(&r);
    s_http(nd->port, "POST", "/metrics", "", &r);
    CHECK_INT(r.status, 405);
    CHECK(strstr(r.head, "Allow: GET, HEAD"));
    s_resp_free(&r);
    s_http(nd->port, "GET", "/", "", &r);
    CHECK_INT(r.status, 404);
    s_resp_free(&r);
}

typedef struct {
    int port;
    int ok;
} s_scraper_t;

static void *
s_scrape(void *arg)
{
    s_scraper_t *sc = arg;
    for (int i = 0; i < S_SCRAPES; i++) {
        s_resp_t r;
        s_http(sc->port, "GET", "/metrics",
               i % 2 ? "Accept: application/openmetrics-text\r\n" : "", &r);
        sc->ok += r.status == 200 && r.body &&
                  strstr(r.body, "# TYPE busy gauge") == NULL &&
                  strstr(r.body, "busy{") != NULL &&
                  (i % 2 == 0 || strstr(r.body, "# EOF\n"));
        s_resp_free(&r);
    }
    return NULL;
}

/* Scrapes from several threads while samples keep arriving. */
static void
test_concurrent(s_node_t *nd)
{
    s_push(nd, "busy", 0, 0);
    REQUIRE(s_wait_line(nd->port, "busy{"));
    pthread_t t[S_SCRAPERS];
    s_scraper_t sc[S_SCRAPERS];
    for (int i = 0; i < S_SCRAPERS; i++) {
        sc[i] = (s_scraper_t) { nd->port, 0 };
        REQUIRE(pthread_create(&t[i], NULL, s_scrape, &sc[i]) == 0);
    }
    for (int i = 0; i < 2000; i++)
        s_push(nd, "busy", i, 0);
    for (int i = 0; i < S_SCRAPERS; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(sc[i].ok, S_SCRAPES);
    }
}

static void
test_start_errors(const char *dir, int port_in_use)
{
    telemd_config_t cfg = {
        .node = "h2", .rundir = dir, .level = 1,
        .window_ns = 60 * TELEM_NS_PER_SEC, .interval_ns = TELEM_NS_PER_SEC,
        .http_bind = "localhost", .http_port = 0,
    };
    int err = 0;
    telemd_t *d = telemd_new(&cfg, &err);
    CHECK(d == NULL);
    CHECK_RC(err, TELEM_EINVAL);
    cfg.http_bind = "127.0.0.1";
    cfg.http_port = port_in_use;
    d = telemd_new(&cfg, &err);
    CHECK(d == NULL);
    CHECK_RC(err, TELEM_EIO);
    char path[512];
    snprintf(path, sizeof path, "%s/h2/telemd.lock", dir);
    CHECK(access(path, F_OK) != 0);             /* cleaned up */
}

int
main(void)
{
    telem_log_init("test_telemd_http", TELEM_LOG_WARN);
    char dir[64];
    REQUIRE(test_tmpdir(dir, sizeof dir, "telemd-http") == 0);
    telemd_config_t cfg = {
        .node = "h1", .rundir = dir, .level = 1,
        .window_ns = 60 * TELEM_NS_PER_SEC, .interval_ns = TELEM_NS_PER_SEC,
        .http_bind = "127.0.0.1", .http_port = 0,
    };
    int err = 0;
    s_node_t nd = { .d = telemd_new(&cfg, &err) };
    REQUIRE(nd.d);
    nd.port = s_port(telemd_metrics_url(nd.d));
    CHECK(strncmp(telemd_metrics_url(nd.d), "http://127.0.0.1:", 17) == 0);
    nd.enc = telem_proto_encoder_new();
    nd.push = zsock_new_push(telemd_ingest_endpoint(nd.d));
    REQUIRE(nd.enc && nd.push && nd.port > 0);
    char path[512], line[512] = "";
    snprintf(path, sizeof path, "%s/h1/endpoints", dir);
    FILE *f = fopen(path, "r");
    bool listed = false;
    while (f && fgets(line, sizeof line, f))
        listed |= strncmp(line, "metrics\thttp://127.0.0.1:", 25) == 0;
    if (f)
        fclose(f);
    CHECK(listed);
    test_answers(&nd);
    test_concurrent(&nd);
    test_start_errors(dir, nd.port);
    /* Once the actor stops, /metrics answers 503 without waiting. */
    zsock_t *ctl = zsock_new_dealer(telemd_ctl_endpoint(nd.d));
    telem_control_t c = { .id = 1, .op = TELEM_CTL_SHUTDOWN };
    const void *data;
    size_t size;
    REQUIRE(telem_proto_encode_control(nd.enc, &c, &data, &size) == 0);
    REQUIRE(zsock_send(ctl, "b", data, size) == 0);
    CHECK(telemd_wait(nd.d, S_WAIT_MS) == 1);
    s_resp_t r;
    s_http(nd.port, "GET", "/metrics", "", &r);
    CHECK_INT(r.status, 503);
    CHECK(r.body && strstr(r.body, "telemd is stopping"));   /* not the
                                                               deadline */
    s_resp_free(&r);
    zsock_destroy(&ctl);
    zsock_destroy(&nd.push);
    telem_proto_encoder_destroy(&nd.enc);
    telemd_destroy(&nd.d);
    test_rmtree(dir);
    return check_report("test_telemd_http");
}
