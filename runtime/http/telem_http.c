/* telem_http.c - the HTTP server of telem_http (telem_http.h) over
 * libmicrohttpd: options, the listening socket, the daemon and its
 * thread pool, the connection cap, the checks made before a handler runs
 * (token, body size, CORS preflight) and the call of the handler.
 *
 * The upper file of the module (telem_http_int.h): it calls
 * telem_http_req.c for everything about one request.
 *
 * Why the socket is made here and handed to libmicrohttpd: binding it
 * ourselves tells a port in use (TELEM_EIO) from a bad option
 * (TELEM_EINVAL) with errno's own sentence, which libmicrohttpd's NULL
 * from MHD_start_daemon does not.
 *
 * Why the connection cap is an accept policy and not libmicrohttpd's
 * connection limit alone: at its limit libmicrohttpd stops accepting, so
 * extra clients wait unserved in the kernel's backlog until they time out.
 * Here each extra connection is accepted and closed at once, the client
 * sees the refusal, and libmicrohttpd's own limit is set above ours.  The
 * count is kept from its connection notices; workers accept in parallel,
 * so it may pass max_conns by at most threads - 1 for an instant.
 */
#include "telem_http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "telem_log.h"
#include "telem_why.h"

#define S_DEFAULT_MAX_BODY ((size_t) 1 << 20)
#define S_DEFAULT_MAX_CONNS 64u
#define S_DEFAULT_TIMEOUT_S 10u
#define S_DEFAULT_THREADS 4u
/* Body bytes past max_body read and dropped before the connection is
 * closed without a 413: as much again as the limit, at least 64 KiB (one
 * read of libmicrohttpd's may pass a small limit by that much). */
#define S_DROP_MAX(max_body) ((max_body) < 65536 ? 65536 : (max_body))
#define S_LIMIT_MAX_CONNS 65536u
#define S_LIMIT_THREADS 256u
#define S_LIMIT_TIMEOUT_S 86400u

struct telem_http {
    struct MHD_Daemon *daemon;
    telem_http_fn fn;
    void *arg;
    char *name;
    char *token;                /* NULL: no token */
    const char *const *open_paths;  /* served without it (GET, HEAD) */
    size_t token_len;
    size_t max_body;
    unsigned max_conns;
    bool cors;
    int port;
    atomic_uint open;           /* connections libmicrohttpd holds */
    pthread_mutex_t log_mu;     /* guards rl */
    telem_ratelimit_t rl;
};

typedef struct {
    struct sockaddr_storage ss;
    socklen_t len;
} s_addr_t;

/* --- logging (rate-limited, shared by every server thread) ------------- */

static void
s_vlog(telem_http_t *self, telem_log_level_t level, const char *fmt,
       va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    for (char *p = line; *p; p++)     /* a decoded path may hold any byte */
        if ((unsigned char) *p < 0x20 || *p == 0x7f)
            *p = '?';
    pthread_mutex_lock(&self->log_mu);
    telem_log_limited(&self->rl, level, "%s: http: %s", self->name, line);
    pthread_mutex_unlock(&self->log_mu);
}

static void s_log(telem_http_t *self, telem_log_level_t level,
                  const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
s_log(telem_http_t *self, telem_log_level_t level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_vlog(self, level, fmt, ap);
    va_end(ap);
}

/* libmicrohttpd's own messages (MHD_OPTION_EXTERNAL_LOGGER). */
static void
s_mhd_log(void *cls, const char *fmt, va_list ap)
{
    s_vlog(cls, TELEM_LOG_INFO, fmt, ap);
}

/* --- options ------------------------------------------------------------ */

/* A numeric IPv4 or IPv6 address ("[::1]" too); never a name. */
static int
s_parse_bind(const char *bind, int port, s_addr_t *a, char *why,
             size_t why_size)
{
    char host[INET6_ADDRSTRLEN + 2];
    size_t n = strlen(bind);
    if (n >= 2 && bind[0] == '[' && bind[n - 1] == ']' && n - 2 < sizeof host) {
        memcpy(host, bind + 1, n - 2);
        host[n - 2] = '\0';
    } else if (n < sizeof host) {
        memcpy(host, bind, n + 1);
    } else {
        host[0] = '\0';
    }
    memset(a, 0, sizeof *a);
    struct sockaddr_in *v4 = (struct sockaddr_in *) &a->ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *) &a->ss;
    if (host[0] && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t) port);
        a->len = sizeof *v4;
        return 0;
    }
    if (host[0] && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t) port);
        a->len = sizeof *v6;
        return 0;
    }
    telem_why(why, why_size,
              "bind address \"%s\" is not a numeric IPv4 or IPv6 address",
              bind);
    return TELEM_EINVAL;
}

static bool
s_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return false;
    for (; *s; s++)
        if (!(strchr("._-", *s) || (*s >= '0' && *s <= '9') ||
              (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
            return false;
    return true;
}

/* Visible ASCII, no space: what can follow "Bearer " on one line. */
static bool
s_token_text_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if ((unsigned char) *s <= 0x20 || (unsigned char) *s >= 0x7f)
            return false;
    return true;
}

/* The one line a failed start logs; the caller's strings are shown only
 * as far as they are printable. */
static void
s_log_start_failure(const telem_http_opts_t *o, const char *msg)
{
    char bind[48] = "127.0.0.1";
    if (o->bind) {
        snprintf(bind, sizeof bind, "%s", o->bind);
        for (char *p = bind; *p; p++)
            if ((unsigned char) *p <= 0x20 || (unsigned char) *p >= 0x7f)
                *p = '?';
    }
    telem_log(TELEM_LOG_ERROR, "%s: cannot serve HTTP on \"%s\" port %d: %s",
              o->name && s_name_ok(o->name) ? o->name : "telem", bind,
              o->port, msg);
}

static int
s_check_opts(const telem_http_opts_t *o, telem_http_fn fn, s_addr_t *a,
             char *why, size_t why_size)
{
    if (!fn) {
        telem_why(why, why_size, "no request handler");
        return TELEM_EINVAL;
    }
    if (o->port < 0 || o->port > 65535) {
        telem_why(why, why_size, "port %d is not in 0..65535", o->port);
        return TELEM_EINVAL;
    }
    if (o->name && !s_name_ok(o->name)) {
        telem_why(why, why_size,
                  "server name must be 1 to 64 of [A-Za-z0-9._-]");
        return TELEM_EINVAL;
    }
    if (o->token && !s_token_text_ok(o->token)) {
        telem_why(why, why_size, "the token is empty or holds a space or "
                                 "a control or non-ASCII byte");
        return TELEM_EINVAL;
    }
    if (o->max_conns > S_LIMIT_MAX_CONNS || o->threads > S_LIMIT_THREADS ||
        o->timeout_s > S_LIMIT_TIMEOUT_S) {
        telem_why(why, why_size,
                  "max_conns, threads or timeout_s over its limit "
                  "(%u, %u, %u s)", S_LIMIT_MAX_CONNS, S_LIMIT_THREADS,
                  S_LIMIT_TIMEOUT_S);
        return TELEM_EINVAL;
    }
    return s_parse_bind(o->bind ? o->bind : "127.0.0.1", o->port, a, why,
                        why_size);
}

/* --- the listening socket ---------------------------------------------- */

static int
s_listen(const s_addr_t *a, unsigned backlog, int *fd_out, int *port,
         char *why, size_t why_size)
{
    int family = a->ss.ss_family;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        telem_why(why, why_size, "socket: %s", strerror(errno));
        return TELEM_EIO;
    }
    int one = 1, zero = 0;
    const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *) &a->ss;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (family == AF_INET6 &&
        memcmp(&v6->sin6_addr, &in6addr_any, sizeof in6addr_any) == 0)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    struct sockaddr_storage got;
    socklen_t got_len = sizeof got;
    const char *what = "bind";
    if (bind(fd, (const struct sockaddr *) &a->ss, a->len) != 0 ||
        (what = "listen", listen(fd, (int) backlog)) != 0 ||
        (what = "getsockname",
         getsockname(fd, (struct sockaddr *) &got, &got_len)) != 0) {
        telem_why(why, why_size, "%s: %s", what, strerror(errno));
        close(fd);
        return TELEM_EIO;
    }
    *port = family == AF_INET6
                ? ntohs(((struct sockaddr_in6 *) &got)->sin6_port)
                : ntohs(((struct sockaddr_in *) &got)->sin_port);
    *fd_out = fd;
    return 0;
}

/* --- the connection cap ------------------------------------------------- */

static enum MHD_Result
s_accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void) addr;
    (void) addrlen;
    telem_http_t *self = cls;
    if (atomic_load(&self->open) < self->max_conns)
        return MHD_YES;
    s_log(self, TELEM_LOG_WARN, "%u connections open: refusing one more",
          self->max_conns);
    return MHD_NO;
}

static void
s_conn_notice(void *cls, struct MHD_Connection *conn, void **socket_ctx,
              enum MHD_ConnectionNotificationCode code)
{
    (void) conn;
    (void) socket_ctx;
    telem_http_t *self = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        atomic_fetch_add(&self->open, 1);
    else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
        atomic_fetch_sub(&self->open, 1);
}

/* --- a request, from the first call to the handler --------------------- */

static enum MHD_Result
s_queue(telem_http_req_t *r)
{
    unsigned status;
    struct MHD_Response *resp = thttp_req_take_response(r, &status);
    if (!resp)
        return MHD_NO;
    enum MHD_Result ok = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    r->queued = true;
    return ok;
}

/* Constant-time in the token's content: every byte of the expected token
 * is compared whatever the first difference. */
static bool
s_token_eq(const telem_http_t *self, const char *got, size_t got_len)
{
    unsigned diff = got_len != self->token_len;
    for (size_t i = 0; i < self->token_len; i++)
        diff |= (unsigned) (unsigned char) self->token[i] ^
                (unsigned) (unsigned char) (i < got_len ? got[i] : 0);
    return diff == 0;
}

/* The token of "Authorization: Bearer T", or of a "token=T" query
 * argument (how a browser opening the dashboard's URL proves it; the
 * page then sends the header itself). */
static bool
s_token_ok(const telem_http_t *self, const char *auth, const char *arg)
{
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return arg && s_token_eq(self, arg, strlen(arg));
    const char *got = auth + 7;
    while (*got == ' ')
        got++;
    size_t got_len = strlen(got);
    while (got_len && (got[got_len - 1] == ' ' || got[got_len - 1] == '\t'))
        got_len--;
    return s_token_eq(self, got, got_len);
}

static enum MHD_Result
s_refuse_token(telem_http_t *self, telem_http_req_t *r, bool had_auth)
{
    char challenge[128];
    snprintf(challenge, sizeof challenge, "Bearer realm=\"%s\"%s",
             self->name, had_auth ? ", error=\"invalid_token\"" : "");
    telem_http_req_add_header(r, "WWW-Authenticate", challenge);
    telem_http_reply_error(r, 401, "Unauthorized",
                           had_auth ? "the bearer token is wrong"
                                    : "a bearer token is required");
    s_log(self, TELEM_LOG_INFO, "401 for %s %s from %s: %s token", r->method,
          r->path, r->peer, had_auth ? "wrong" : "no");
    return s_queue(r);
}

static enum MHD_Result
s_refuse_size(telem_http_t *self, telem_http_req_t *r)
{
    char details[96];
    snprintf(details, sizeof details,
             "the request body is over %zu bytes", self->max_body);
    telem_http_reply_error(r, 413, "Request Entity Too Large", details);
    s_log(self, TELEM_LOG_INFO, "413 for %s %s from %s", r->method, r->path,
          r->peer);
    return s_queue(r);
}

static enum MHD_Result
s_refuse_nesting(telem_http_t *self, telem_http_req_t *r)
{
    char details[96];
    snprintf(details, sizeof details, "the request body nests deeper than "
             "%d levels", TELEM_HTTP_NESTING_MAX);
    telem_http_reply_error(r, 400, "Bad Request", details);
    s_log(self, TELEM_LOG_INFO, "400 for %s %s from %s: %s", r->method,
          r->path, r->peer, details);
    return s_queue(r);
}

static enum MHD_Result
s_preflight(telem_http_req_t *r)
{
    telem_http_req_add_header(r, "Access-Control-Allow-Methods",
                              "GET, POST, PUT, DELETE, OPTIONS");
    telem_http_req_add_header(r, "Access-Control-Allow-Headers",
                              "Authorization, Content-Type");
    telem_http_req_add_header(r, "Access-Control-Max-Age", "600");
    telem_http_reply(r, 204, NULL, NULL, 0);
    return s_queue(r);
}

/* 1 when `url` is one of the paths served without the token. */
static bool
s_open_path(const telem_http_t *self, const char *method, const char *url)
{
    if (!self->open_paths || (strcmp(method, "GET") && strcmp(method, "HEAD")))
        return false;
    for (size_t i = 0; self->open_paths[i]; i++)
        if (strcmp(url, self->open_paths[i]) == 0)
            return true;
    return false;
}

/* The first call, headers read and no body yet: the checks that need no
 * body answer now, before a byte of it is read. */
static enum MHD_Result
s_first(telem_http_t *self, struct MHD_Connection *conn, const char *url,
        const char *method, void **con_cls)
{
    telem_http_req_t *r = thttp_req_new(conn, method, url, self->name,
                                        self->cors, self->max_body);
    if (!r)
        return MHD_NO;
    *con_cls = r;
    if (self->cors && strcmp(method, "OPTIONS") == 0)
        return s_preflight(r);
    if (self->token && !s_open_path(self, method, url)) {
        const char *auth = telem_http_req_header(r, "Authorization");
        const char *arg = MHD_lookup_connection_value(
            conn, MHD_GET_ARGUMENT_KIND, "token");
        if (!s_token_ok(self, auth, arg))
            return s_refuse_token(self, r, auth != NULL || arg != NULL);
    }
    const char *cl = telem_http_req_header(r, "Content-Length");
    if (cl) {
        errno = 0;
        unsigned long long n = strtoull(cl, NULL, 10);
        if (errno == ERANGE || n > self->max_body)
            return s_refuse_size(self, r);
    }
    return MHD_YES;
}

static enum MHD_Result
s_last(telem_http_t *self, telem_http_req_t *r)
{
    if (r->too_large)
        return s_refuse_size(self, r);
    if (thttp_req_nesting(r, TELEM_HTTP_NESTING_MAX + 1)
        > TELEM_HTTP_NESTING_MAX)
        return s_refuse_nesting(self, r);
    if (thttp_req_collect_args(r) != 0)
        return MHD_NO;
    self->fn(r, self->arg);
    if (!r->replied)
        s_log(self, TELEM_LOG_ERROR, "the handler made no reply to %s %s",
              r->method, r->path);
    return s_queue(r);
}

static enum MHD_Result
s_access(void *cls, struct MHD_Connection *conn, const char *url,
         const char *method, const char *version, const char *upload_data,
         size_t *upload_data_size, void **con_cls)
{
    (void) version;
    telem_http_t *self = cls;
    telem_http_req_t *r = *con_cls;
    if (!r)
        return s_first(self, conn, url, method, con_cls);
    size_t n = *upload_data_size;
    *upload_data_size = 0;
    if (r->queued)
        return MHD_YES;
    if (n == 0)
        return s_last(self, r);
    if (thttp_req_append(r, upload_data, n) != 0)
        return MHD_NO;
    if (r->dropped > S_DROP_MAX(self->max_body)) {
        s_log(self, TELEM_LOG_INFO,
              "closing %s %s from %s: body far past its limit", r->method,
              r->path, r->peer);
        return MHD_NO;
    }
    return MHD_YES;
}

static void
s_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
            enum MHD_RequestTerminationCode code)
{
    (void) cls;
    (void) conn;
    (void) code;
    thttp_req_destroy((telem_http_req_t **) con_cls);
}

/* --- life cycle ---------------------------------------------------------- */

static telem_http_t *
s_alloc(const telem_http_opts_t *o, telem_http_fn fn, void *arg)
{
    telem_http_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->fn = fn;
    self->arg = arg;
    self->name = strdup(o->name ? o->name : "telem");
    self->token = o->token ? strdup(o->token) : NULL;
    self->token_len = o->token ? strlen(o->token) : 0;
    self->open_paths = o->open_paths;
    self->max_body = o->max_body ? o->max_body : S_DEFAULT_MAX_BODY;
    self->max_conns = o->max_conns ? o->max_conns : S_DEFAULT_MAX_CONNS;
    self->cors = o->cors;
    self->port = -1;
    atomic_init(&self->open, 0);
    self->rl = (telem_ratelimit_t) TELEM_RATELIMIT_INIT(10, 10);
    pthread_mutex_init(&self->log_mu, NULL);
    if (!self->name || (o->token && !self->token)) {
        telem_http_destroy(&self);
        return NULL;
    }
    return self;
}

/* Binds, then hands libmicrohttpd a duplicate of the socket: on its
 * failure some of its paths close the socket they were given and some do
 * not, so ours is closed here either way. */
static int
s_serve(telem_http_t *self, const telem_http_opts_t *o, const s_addr_t *a,
        char *why, size_t why_size)
{
    unsigned threads = o->threads ? o->threads : S_DEFAULT_THREADS;
    unsigned timeout = o->timeout_s ? o->timeout_s : S_DEFAULT_TIMEOUT_S;
    unsigned backlog = self->max_conns < 64 ? 64 : self->max_conns;
    int fd = -1;
    int rc = s_listen(a, backlog, &fd, &self->port, why, why_size);
    if (rc != 0)
        return rc;
    int mhd_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (a->ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* One thread is libmicrohttpd's own polling thread, not a pool. */
    struct MHD_OptionItem pool[] = {
        {threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END,
         (intptr_t) threads, NULL},
        {MHD_OPTION_END, 0, NULL}};
    if (mhd_fd >= 0)
        self->daemon = MHD_start_daemon(
            flags, 0, s_accept_policy, self, s_access, self,
            MHD_OPTION_EXTERNAL_LOGGER, (MHD_LogCallback) s_mhd_log, self,
            MHD_OPTION_LISTEN_SOCKET, (MHD_socket) mhd_fd,
            MHD_OPTION_CONNECTION_LIMIT, (self->max_conns + 1) * threads,
            MHD_OPTION_CONNECTION_TIMEOUT, timeout,
            MHD_OPTION_ARRAY, pool,
            MHD_OPTION_NOTIFY_COMPLETED,
            (MHD_RequestCompletedCallback) s_completed, self,
            MHD_OPTION_NOTIFY_CONNECTION,
            (MHD_NotifyConnectionCallback) s_conn_notice, self,
            MHD_OPTION_END);
    close(fd);
    if (!self->daemon) {
        telem_why(why, why_size, "libmicrohttpd did not start (%s)",
                  mhd_fd < 0 ? strerror(errno) : "threads or memory");
        return TELEM_EIO;
    }
    return 0;
}

telem_http_t *
telem_http_new(const telem_http_opts_t *o, telem_http_fn fn, void *arg,
               int *err, char *why, size_t why_size)
{
    static const telem_http_opts_t defaults = {0};
    char msg[256] = "";
    s_addr_t addr;
    telem_http_t *self = NULL;
    if (!o)
        o = &defaults;
    int rc = s_check_opts(o, fn, &addr, msg, sizeof msg);
    if (rc == 0 && !(self = s_alloc(o, fn, arg))) {
        snprintf(msg, sizeof msg, "out of memory");
        rc = TELEM_ENOMEM;
    }
    if (rc == 0)
        rc = s_serve(self, o, &addr, msg, sizeof msg);
    if (rc != 0) {
        s_log_start_failure(o, msg);
        telem_why(why, why_size, "%s", msg);
        telem_http_destroy(&self);
    }
    if (err)
        *err = rc;
    return self;
}

int
telem_http_port(const telem_http_t *self)
{
    return self->port;
}

void
telem_http_destroy(telem_http_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_http_t *self = *self_p;
    if (self->daemon)
        MHD_stop_daemon(self->daemon);
    pthread_mutex_destroy(&self->log_mu);
    free(self->name);
    free(self->token);
    free(self);
    *self_p = NULL;
}
