/* telem_prom_http.c - what the exposition needs from HTTP: which format an
 * Accept header asks for, whether Accept-Encoding allows gzip, and the
 * gzip itself (zlib).
 *
 * Stands alone in the module (telem_prom_int.h): nothing else here is
 * called.  Headers are read in place, element by element, without copies
 * or allocation: a hostile header costs one pass over its bytes, which the
 * HTTP server already bounds (32 KiB of headers).
 */
#include "telem_prom_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

typedef struct {
    const char *p;
    size_t n;
} s_span_t;

static s_span_t
s_trim(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    return (s_span_t) { p, (size_t) (end - p) };
}

static bool
s_is(s_span_t s, const char *word)
{
    size_t n = strlen(word);
    return s.n == n && strncasecmp(s.p, word, n) == 0;
}

/* A quality value: "0" to "1" with up to three decimals (RFC 9110);
 * anything else is -1 (the element is ignored). */
static double
s_qvalue(s_span_t s)
{
    if (s.n == 0 || s.n > 5 || (s.p[0] != '0' && s.p[0] != '1'))
        return -1;
    double q = s.p[0] - '0', scale = 0.1;
    if (s.n > 1 && s.p[1] != '.')
        return -1;
    for (size_t i = 2; i < s.n; i++, scale /= 10) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return -1;
        q += (s.p[i] - '0') * scale;
    }
    return q > 1 ? -1 : q;
}

/* One element of a header list: its first word and the parameters
 * that matter here (q, version).  `version` is {NULL, 0} when absent. */
typedef struct {
    s_span_t word, version;
    double q;
} s_elem_t;

static void
s_param(s_elem_t *el, s_span_t param)
{
    const char *eq = memchr(param.p, '=', param.n);
    if (!eq)
        return;
    s_span_t key = s_trim(param.p, eq);
    s_span_t value = s_trim(eq + 1, param.p + param.n);
    if (value.n >= 2 && value.p[0] == '"' && value.p[value.n - 1] == '"')
        value = (s_span_t) { value.p + 1, value.n - 2 };
    if (s_is(key, "q"))
        el->q = s_qvalue(value);
    else if (s_is(key, "version"))
        el->version = value;
}

static s_elem_t
s_elem(const char *p, const char *end)
{
    s_elem_t el = { .q = 1 };
    const char *semi = memchr(p, ';', (size_t) (end - p));
    el.word = s_trim(p, semi ? semi : end);
    while (semi) {
        const char *start = semi + 1;
        semi = memchr(start, ';', (size_t) (end - start));
        s_param(&el, s_trim(start, semi ? semi : end));
    }
    return el;
}

/* Calls fn on every element of a comma-separated header value. */
static void
s_each(const char *header, void (*fn)(void *, const s_elem_t *), void *arg)
{
    const char *p = header;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        s_elem_t el = s_elem(p, end);
        if (el.word.n && el.q >= 0)
            fn(arg, &el);
        p = comma ? comma + 1 : NULL;
    }
}

typedef struct {
    double om, text;            /* best quality of each; -1: not listed */
} s_accept_t;

static void
s_on_accept(void *arg, const s_elem_t *el)
{
    s_accept_t *a = arg;
    if (s_is(el->word, "application/openmetrics-text")) {
        if ((!el->version.p || s_is(el->version, "1.0.0") ||
             s_is(el->version, "0.0.1")) && el->q > a->om)
            a->om = el->q;
    } else if (s_is(el->word, "text/plain")) {
        if ((!el->version.p || s_is(el->version, "0.0.4")) && el->q > a->text)
            a->text = el->q;
    } else if (s_is(el->word, "text/*") || s_is(el->word, "*/*")) {
        if (el->q > a->text)
            a->text = el->q;
    }
}

telem_prom_format_t
telem_prom_negotiate(const char *accept)
{
    s_accept_t a = { -1, -1 };
    s_each(accept, s_on_accept, &a);
    return a.om > 0 && a.om >= a.text ? TELEM_PROM_OPENMETRICS
                                      : TELEM_PROM_TEXT;
}

const char *
telem_prom_content_type(telem_prom_format_t format)
{
    return format == TELEM_PROM_OPENMETRICS
               ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
               : "text/plain; version=0.0.4; charset=utf-8";
}

typedef struct {
    double gzip, any;           /* -1: not listed */
} s_encoding_t;

static void
s_on_encoding(void *arg, const s_elem_t *el)
{
    s_encoding_t *e = arg;
    if (s_is(el->word, "gzip") || s_is(el->word, "x-gzip"))
        e->gzip = el->q > e->gzip ? el->q : e->gzip;
    else if (s_is(el->word, "*"))
        e->any = el->q > e->any ? el->q : e->any;
}

bool
telem_prom_gzip_accepted(const char *accept_encoding)
{
    s_encoding_t e = { -1, -1 };
    s_each(accept_encoding, s_on_encoding, &e);
    return e.gzip >= 0 ? e.gzip > 0 : e.any > 0;
}

int
telem_prom_gzip(const char *in, size_t len, char **out_p, size_t *out_len)
{
    if (!in || !out_p || !out_len || len > UINT_MAX)
        return TELEM_EINVAL;
    *out_p = NULL;
    z_stream z = { 0 };
    /* windowBits 15 + 16: a gzip header and trailer around the deflate. */
    if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return TELEM_ENOMEM;
    uLong bound = deflateBound(&z, (uLong) len);
    char *out = bound <= UINT_MAX ? malloc(bound) : NULL;
    if (!out) {
        deflateEnd(&z);
        return TELEM_ENOMEM;
    }
    z.next_in = (Bytef *) in;
    z.avail_in = (uInt) len;
    z.next_out = (Bytef *) out;
    z.avail_out = (uInt) bound;
    int zrc = deflate(&z, Z_FINISH);
    size_t n = (size_t) z.total_out;
    deflateEnd(&z);
    if (zrc != Z_STREAM_END) {    /* cannot happen within deflateBound */
        free(out);
        return TELEM_ENOMEM;
    }
    *out_p = out;
    *out_len = n;
    return 0;
}
