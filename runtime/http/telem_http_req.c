/* telem_http_req.c - one HTTP request of telem_http (telem_http.h): the
 * body as it arrives, the arguments and headers a handler reads, and the
 * one reply it makes.
 *
 * The lower file of the module (telem_http_int.h): telem_http.c calls in,
 * this file never calls back.  A reply is built here as a libmicrohttpd
 * response and kept in the request; the server queues it once the handler
 * has returned, on the connection's own thread, so a handler never touches
 * libmicrohttpd's connection state.  Header names and values are checked
 * here (no CR or LF ever reaches the wire from a handler).
 */
#include "telem_http_int.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "telem_grow.h"

telem_http_req_t *
thttp_req_new(struct MHD_Connection *conn, const char *method,
              const char *path, const char *server_name, bool cors,
              size_t max_body)
{
    telem_http_req_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->conn = conn;
    r->method = method;
    r->path = path;
    r->server_name = server_name;
    r->cors = cors;
    r->max_body = max_body;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr,
                  r->peer, sizeof r->peer);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) sa)->sin6_addr,
                  r->peer, sizeof r->peer);
    return r;
}

void
thttp_req_destroy(telem_http_req_t **r_p)
{
    if (!r_p || !*r_p)
        return;
    telem_http_req_t *r = *r_p;
    for (size_t i = 0; i < r->nhdrs; i++) {
        free(r->hdrs[i].name);
        free(r->hdrs[i].value);
    }
    free(r->hdrs);
    free(r->args);
    free(r->body);
    if (r->resp)
        MHD_destroy_response(r->resp);
    free(r);
    *r_p = NULL;
}

int
thttp_req_append(telem_http_req_t *r, const char *data, size_t len)
{
    if (r->too_large || len > r->max_body - r->body_len) {
        r->too_large = true;
        r->dropped += len;
        return 0;
    }
    size_t need = r->body_len + len + 1;
    if (need > r->body_cap &&
        telem_grow((void **) &r->body, &r->body_cap, need, 1, 1024))
        return TELEM_ENOMEM;
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
    r->body[r->body_len] = '\0';
    return 0;
}

static enum MHD_Result
s_arg_cb(void *cls, enum MHD_ValueKind kind, const char *key,
         const char *value)
{
    (void) kind;
    telem_http_req_t *r = cls;
    if (r->nargs + 1 > r->args_cap &&
        telem_grow((void **) &r->args, &r->args_cap, r->nargs + 1,
                   sizeof *r->args, 8)) {
        r->args_failed = true;
        return MHD_NO;
    }
    r->args[r->nargs].key = key ? key : "";
    r->args[r->nargs].value = value ? value : "";
    r->nargs++;
    return MHD_YES;
}

int
thttp_req_collect_args(telem_http_req_t *r)
{
    r->nargs = 0;
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, s_arg_cb, r);
    return r->args_failed ? TELEM_ENOMEM : 0;
}

/* --- getters ------------------------------------------------------------ */

const char *
telem_http_req_method(const telem_http_req_t *r)
{
    return r->method;
}

const char *
telem_http_req_path(const telem_http_req_t *r)
{
    return r->path;
}

size_t
telem_http_req_nargs(const telem_http_req_t *r)
{
    return r->nargs;
}

const char *
telem_http_req_arg_key(const telem_http_req_t *r, size_t i)
{
    return i < r->nargs ? r->args[i].key : NULL;
}

const char *
telem_http_req_arg_value(const telem_http_req_t *r, size_t i)
{
    return i < r->nargs ? r->args[i].value : NULL;
}

const char *
telem_http_req_arg(const telem_http_req_t *r, const char *key)
{
    for (size_t i = 0; key && i < r->nargs; i++)
        if (strcmp(r->args[i].key, key) == 0)
            return r->args[i].value;
    return NULL;
}

const char *
telem_http_req_header(const telem_http_req_t *r, const char *name)
{
    if (!name)
        return NULL;
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

size_t
thttp_req_nesting(const telem_http_req_t *r, size_t stop)
{
    size_t depth = 0, deepest = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < r->body_len && deepest < stop; i++) {
        char c = r->body[i];
        if (in_str) {
            in_str = esc || c != '"';
            esc = !esc && c == '\\';
        } else if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest)
                deepest = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return deepest;
}

const char *
telem_http_req_body(const telem_http_req_t *r, size_t *len)
{
    if (len)
        *len = r->body_len;
    return r->body ? r->body : "";
}

const char *
telem_http_req_peer(const telem_http_req_t *r)
{
    return r->peer;
}

/* --- the reply ---------------------------------------------------------- */

/* RFC 9110's token: the only bytes a header name may hold. */
static bool
s_is_token(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                  (c >= 'A' && c <= 'Z') || strchr("!#$%&'*+-.^_`|~", c);
        if (!ok)
            return false;
    }
    return true;
}

/* A field value: visible bytes, spaces and tabs; no CR, LF or NUL. */
static bool
s_is_field_value(const char *s)
{
    if (!s)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

static bool
s_is_reserved(const char *name)
{
    static const char *const reserved[] = {
        "Content-Length", "Transfer-Encoding", "Connection", "Date",
        "Server"};
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcasecmp(name, reserved[i]) == 0)
            return true;
    return false;
}

int
telem_http_req_add_header(telem_http_req_t *r, const char *name,
                          const char *value)
{
    if (!s_is_token(name) || !s_is_field_value(value) ||
        s_is_reserved(name))
        return TELEM_EINVAL;
    if (r->replied)
        return TELEM_ESTATE;
    if (r->nhdrs + 1 > r->hdrs_cap &&
        telem_grow((void **) &r->hdrs, &r->hdrs_cap, r->nhdrs + 1,
                   sizeof *r->hdrs, 4))
        return TELEM_ENOMEM;
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return TELEM_ENOMEM;
    }
    r->hdrs[r->nhdrs].name = n;
    r->hdrs[r->nhdrs].value = v;
    r->nhdrs++;
    return 0;
}

/* The headers every response carries, then the handler's. */
static int
s_add_headers(telem_http_req_t *r, struct MHD_Response *resp,
              const char *content_type)
{
    if (content_type &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                content_type) != MHD_YES)
        return TELEM_ENOMEM;
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_SERVER,
                                r->server_name) != MHD_YES)
        return TELEM_ENOMEM;
    if (r->cors &&
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*") !=
            MHD_YES)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < r->nhdrs; i++)
        if (MHD_add_response_header(resp, r->hdrs[i].name,
                                    r->hdrs[i].value) != MHD_YES)
            return TELEM_ENOMEM;
    return 0;
}

/* The reply for body[0..len), copied or (owned) freed with it once sent;
 * an owned body is freed here when no reply is made. */
static int
s_reply(telem_http_req_t *r, int status, const char *content_type,
        void *body, size_t len, int owned)
{
    int bad = status < 100 || status > 599 || (!body && len) ||
              (content_type && !s_is_field_value(content_type));
    if (bad || r->replied) {
        if (owned)
            free(body);
        return bad ? TELEM_EINVAL : TELEM_ESTATE;
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, body ? body : (void *) "",
        owned && body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
    if (!resp) {
        if (owned)
            free(body);
        return TELEM_ENOMEM;
    }
    int rc = s_add_headers(r, resp, content_type);
    if (rc) {
        MHD_destroy_response(resp);
        return rc;
    }
    r->resp = resp;
    r->status = (unsigned) status;
    r->replied = true;
    return 0;
}

int
telem_http_reply(telem_http_req_t *r, int status, const char *content_type,
                 const void *body, size_t len)
{
    return s_reply(r, status, content_type, (void *) body, len, 0);
}

int
telem_http_reply_take(telem_http_req_t *r, int status,
                      const char *content_type, char **body_p, size_t len)
{
    char *body = *body_p;
    *body_p = NULL;
    return s_reply(r, status, content_type, body, len, 1);
}

int
telem_http_reply_json(telem_http_req_t *r, int status, json_t *json)
{
    if (!json)
        return TELEM_EINVAL;
    char *text = json_dumps(json, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(json);
    if (!text)
        return TELEM_ENOMEM;
    return telem_http_reply_take(r, status, "application/json", &text,
                                 strlen(text));
}

/* A JSON string of `s`; bytes that are not UTF-8 (a client's input echoed
 * in a message) become '?'. */
static json_t *
s_json_text(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    for (char *p = copy; *p; p++)
        if ((unsigned char) *p >= 0x80)
            *p = '?';
    j = json_string(copy);
    free(copy);
    return j;
}

int
telem_http_reply_error(telem_http_req_t *r, int status, const char *message,
                       const char *details)
{
    json_t *err = json_object();
    json_t *root = json_object();
    if (!err || !root ||
        json_object_set_new(err, "code", json_integer(status)) ||
        json_object_set_new(err, "message",
                            s_json_text(message ? message : "")) ||
        (details && *details &&
         json_object_set_new(err, "details", s_json_text(details)))) {
        json_decref(err);
        json_decref(root);
        return TELEM_ENOMEM;
    }
    json_object_set_new(root, "error", err);
    return telem_http_reply_json(r, status, root);
}

struct MHD_Response *
thttp_req_take_response(telem_http_req_t *r, unsigned *status)
{
    if (!r->replied &&
        telem_http_reply_error(r, 500, "Internal server error",
                               "the handler made no reply") != 0)
        return NULL;
    struct MHD_Response *resp = r->resp;
    r->resp = NULL;
    *status = r->status;
    return resp;
}
