/* bench_sqlite_server.c - the baseline that bench_app_cost compares
 * telem_add_data() with: a small HTTP server that commits every sample it
 * is POSTed into SQLite before it answers, which is what Dragon's add_data
 * does (a synchronous HTTP POST per point, a SQLite commit per row).
 *
 *   bench_sqlite_server DBFILE
 *
 * Listens on 127.0.0.1 at an ephemeral port (libmicrohttpd, its own polling
 * thread), prints "port<TAB>N" then "ready" on stdout, and serves
 *   POST /api/add_data   body "METRIC VALUE TS_NS": one INSERT in its own
 *                        transaction (SQLite's defaults: rollback journal,
 *                        synchronous=FULL), answered 200 "ok" after the
 *                        commit, 400 on a malformed body, 500 when SQLite
 *                        fails
 * until SIGTERM or SIGINT; then prints "rows N" and exits 0.  Written for the
 * benchmark only (bench/); exit 2 on bad usage, 1 when it cannot start.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_BODY_MAX 512

typedef struct {
    sqlite3 *db;
    sqlite3_stmt *ins;
    long rows, bad;
} s_server_t;

typedef struct {
    char body[S_BODY_MAX + 1];
    size_t len;
    int too_long;
} s_req_t;

static int
s_answer(struct MHD_Connection *c, unsigned code, const char *text)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        strlen(text), (void *) text, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    int rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

/* Parses "METRIC VALUE TS_NS" and commits it; returns the HTTP status. */
static unsigned
s_commit(s_server_t *s, const s_req_t *q)
{
    char metric[256];
    double value;
    long long ts;
    if (q->too_long || sscanf(q->body, "%255s %lf %lld", metric, &value,
                              &ts) != 3) {
        s->bad++;
        return MHD_HTTP_BAD_REQUEST;
    }
    sqlite3_reset(s->ins);
    sqlite3_bind_text(s->ins, 1, metric, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s->ins, 2, ts);
    sqlite3_bind_double(s->ins, 3, value);
    if (sqlite3_step(s->ins) != SQLITE_DONE)
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    s->rows++;
    return MHD_HTTP_OK;
}

static enum MHD_Result
s_access(void *cls, struct MHD_Connection *c, const char *url,
         const char *method, const char *version, const char *data,
         size_t *data_size, void **con_cls)
{
    s_server_t *s = cls;
    (void) version;
    if (strcmp(method, "POST") || strcmp(url, "/api/add_data"))
        return s_answer(c, MHD_HTTP_NOT_FOUND, "not found\n");
    s_req_t *q = *con_cls;
    if (!q) {
        if (!(q = calloc(1, sizeof *q)))
            return MHD_NO;
        *con_cls = q;
        return MHD_YES;
    }
    if (*data_size) {
        if (q->len + *data_size > S_BODY_MAX)
            q->too_long = 1;
        else {
            memcpy(q->body + q->len, data, *data_size);
            q->len += *data_size;
            q->body[q->len] = '\0';
        }
        *data_size = 0;
        return MHD_YES;
    }
    unsigned code = s_commit(s, q);
    return s_answer(c, code, code == MHD_HTTP_OK ? "ok\n" : "error\n");
}

static void
s_completed(void *cls, struct MHD_Connection *c, void **con_cls,
            enum MHD_RequestTerminationCode toe)
{
    (void) cls, (void) c, (void) toe;
    free(*con_cls);
    *con_cls = NULL;
}

static int
s_open(s_server_t *s, const char *path)
{
    if (sqlite3_open(path, &s->db) != SQLITE_OK ||
        sqlite3_exec(s->db, "CREATE TABLE IF NOT EXISTS samples (metric TEXT,"
                     " ts INTEGER, value REAL)", NULL, NULL, NULL)
            != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT INTO samples VALUES (?, ?, ?)", -1,
                           &s->ins, NULL) != SQLITE_OK) {
        fprintf(stderr, "bench_sqlite_server: %s: %s\n", path,
                s->db ? sqlite3_errmsg(s->db) : "cannot open");
        return -1;
    }
    return 0;
}

/* libmicrohttpd on 127.0.0.1 at an ephemeral port, its own polling
 * thread; *port gets the port.  NULL when it did not start. */
static struct MHD_Daemon *
s_start(s_server_t *s, unsigned *port)
{
    struct sockaddr_in lo = {.sin_family = AF_INET};
    lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        s_access, s, MHD_OPTION_NOTIFY_COMPLETED, s_completed, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &lo, MHD_OPTION_END);
    const union MHD_DaemonInfo *info =
        d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
    if (!info) {
        if (d)
            MHD_stop_daemon(d);
        return NULL;
    }
    *port = info->port;
    return d;
}

int
main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--help")) {
        puts("usage: bench_sqlite_server DBFILE   (see the source's header)");
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        fputs("usage: bench_sqlite_server DBFILE\n", stderr);
        return 2;
    }
    s_server_t s = {0};
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);   /* before MHD's thread */
    unsigned port = 0;
    struct MHD_Daemon *d = NULL;
    if (s_open(&s, argv[1]) != 0)
        return 1;
    if (!(d = s_start(&s, &port))) {
        fputs("bench_sqlite_server: libmicrohttpd did not start\n", stderr);
        return 1;
    }
    printf("port\t%u\nready\n", port);
    fflush(stdout);
    int sig;
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    printf("rows %ld bad %ld\n", s.rows, s.bad);
    sqlite3_finalize(s.ins);
    sqlite3_close(s.db);
    return 0;
}
