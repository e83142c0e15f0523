/* tsdb_out.c - the results of an /api/query and their JSON text
 * (tsdb_out.h).
 *
 * The text is built in one growing buffer.  Each result's head (a few
 * members) goes through jansson's dump, which escapes strings; its dps go
 * through s_dps, which writes the integer keys with a two-digits-at-a-time
 * conversion and the values with tsdb_fmt_double.  Most values telem
 * holds have few decimal places (counters, percentages, degrees, times
 * taken as whole nanoseconds and divided by 1e9), so tsdb_fmt_double
 * tries that form first: m = round(|v| * 1e9), and if m / 1e9 is v again,
 * the decimal m * 10^-9 (trailing zeros dropped) reads back as v, because
 * m and 1e9 are exact doubles and both IEEE division and strtod round
 * the same exact quotient to nearest.  Any other value is printed with
 * "%.17g", which always reads back. */
#include "tsdb_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"

typedef struct {
    json_t *head;
    int64_t *ts;
    double *v;
    size_t n;
    int flags;
} s_result_t;

struct tsdb_results {
    s_result_t *r;
    size_t n, cap;
};

typedef struct {
    char *p;
    size_t len, cap;
    int failed;
} s_buf_t;

/* ---- the results ---- */

tsdb_results_t *
tsdb_results_new(void)
{
    return calloc(1, sizeof(tsdb_results_t));
}

void
tsdb_results_destroy(tsdb_results_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tsdb_results_t *self = *self_p;
    for (size_t i = 0; i < self->n; i++) {
        json_decref(self->r[i].head);
        free(self->r[i].ts);
        free(self->r[i].v);
    }
    free(self->r);
    free(self);
    *self_p = NULL;
}

int
tsdb_results_add(tsdb_results_t *self, json_t **head_p, int64_t **ts_p,
                 double **v_p, size_t n, int flags)
{
    s_result_t r = { *head_p, *ts_p, *v_p, n, flags };
    *head_p = NULL;
    *ts_p = NULL;
    *v_p = NULL;
    if (self->n == self->cap) {
        size_t cap = self->cap ? 2 * self->cap : 8;
        s_result_t *g = realloc(self->r, cap * sizeof *g);
        if (!g) {
            json_decref(r.head);
            free(r.ts);
            free(r.v);
            return TELEM_ENOMEM;
        }
        self->r = g;
        self->cap = cap;
    }
    self->r[self->n++] = r;
    return 0;
}

size_t
tsdb_results_count(const tsdb_results_t *self)
{
    return self ? self->n : 0;
}

int
tsdb_results_set(tsdb_results_t *self, const char *key, json_t *value)
{
    for (size_t i = 0; i < self->n; i++)
        if (json_object_set(self->r[i].head, key, value))
            return TELEM_ENOMEM;
    return 0;
}

/* ---- numbers ---- */

static const char s_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* Writes x in decimal at p; returns the end. */
static char *
s_u64(char *p, uint64_t x)
{
    char tmp[20];
    char *e = tmp + sizeof tmp, *q = e;
    while (x >= 100) {
        const char *d = s_pairs + 2 * (x % 100);
        x /= 100;
        *--q = d[1];
        *--q = d[0];
    }
    if (x >= 10) {
        *--q = s_pairs[2 * x + 1];
        *--q = s_pairs[2 * x];
    } else
        *--q = (char) ('0' + x);
    memcpy(p, q, (size_t) (e - q));
    return p + (e - q);
}

static char *
s_i64(char *p, int64_t x)
{
    if (x < 0) {
        *p++ = '-';
        return s_u64(p, (uint64_t) 0 - (uint64_t) x);
    }
    return s_u64(p, (uint64_t) x);
}

size_t
tsdb_fmt_double(char *buf, double v)
{
    double a = fabs(v);
    char *p = buf;
    if (a < 1e15 && a == floor(a)) {             /* a whole number */
        if (signbit(v))
            *p++ = '-';
        p = s_u64(p, (uint64_t) a);
        memcpy(p, ".0", 3);
        return (size_t) (p + 2 - buf);
    }
    double m = nearbyint(a * 1e9);
    if (a < 9e6 && m / 1e9 == a) {               /* <= 9 decimal places */
        uint64_t mi = (uint64_t) m;
        uint64_t ip = mi / 1000000000u, fp = mi % 1000000000u;
        int digits = 9;
        while (fp % 10 == 0) {                   /* fp > 0: a is not whole */
            fp /= 10;
            digits--;
        }
        if (signbit(v))
            *p++ = '-';
        p = s_u64(p, ip);
        *p++ = '.';
        char frac[10];
        char *e = s_u64(frac, fp);
        size_t w = (size_t) (e - frac);
        memset(p, '0', (size_t) digits - w);     /* leading zeros */
        p += (size_t) digits - w;
        memcpy(p, frac, w);
        p += w;
        *p = '\0';
        return (size_t) (p - buf);
    }
    int len = snprintf(buf, TSDB_FMT_DOUBLE_MAX, "%.17g", v);
    if (!strpbrk(buf, ".eEn")) {                 /* "1e+20" has one */
        memcpy(buf + len, ".0", 3);
        len += 2;
    }
    return (size_t) len;
}

/* ---- the text ---- */

static char *
s_reserve(s_buf_t *b, size_t more)
{
    if (b->failed)
        return NULL;
    if (b->cap - b->len < more + 1) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < more + 1)
            cap *= 2;
        char *g = realloc(b->p, cap);
        if (!g) {
            b->failed = 1;
            return NULL;
        }
        b->p = g;
        b->cap = cap;
    }
    return b->p + b->len;
}

static void
s_put(s_buf_t *b, const char *s, size_t n)
{
    char *p = s_reserve(b, n);
    if (p) {
        memcpy(p, s, n);
        b->len += n;
    }
}

static int
s_dump_cb(const char *s, size_t n, void *data)
{
    s_put(data, s, n);
    return ((s_buf_t *) data)->failed ? -1 : 0;
}

/* One value; at most TSDB_FMT_DOUBLE_MAX bytes at p.  Returns the end. */
static char *
s_value(char *p, double v, int flags)
{
    if (isnan(v)) {
        const char *t = flags & TSDB_OUT_NAN_NULL ? "null" : "\"NaN\"";
        size_t n = strlen(t);
        memcpy(p, t, n);
        return p + n;
    }
    if (isinf(v)) {
        const char *t = v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
        size_t n = strlen(t);
        memcpy(p, t, n);
        return p + n;
    }
    return p + tsdb_fmt_double(p, v);
}

/* The longest point: ",[" key "," value "]" or ",\"" key "\":" value. */
#define S_POINT_MAX (6 + 21 + TSDB_FMT_DOUBLE_MAX)

static void
s_dps(s_buf_t *b, const s_result_t *r)
{
    int arrays = r->flags & TSDB_OUT_ARRAYS;
    s_put(b, arrays ? "[" : "{", 1);
    for (size_t i = 0; i < r->n; i++) {
        char *p = s_reserve(b, S_POINT_MAX), *p0 = p;
        if (!p)
            return;
        if (i)
            *p++ = ',';
        if (arrays) {
            *p++ = '[';
            p = s_i64(p, r->ts[i]);
            *p++ = ',';
            p = s_value(p, r->v[i], r->flags);
            *p++ = ']';
        } else {
            *p++ = '"';
            p = s_i64(p, r->ts[i]);
            *p++ = '"';
            *p++ = ':';
            p = s_value(p, r->v[i], r->flags);
        }
        b->len += (size_t) (p - p0);
    }
    s_put(b, arrays ? "]" : "}", 1);
}

char *
tsdb_results_dump(const tsdb_results_t *self, size_t *len)
{
    s_buf_t b = { 0 };
    size_t points = 0;
    for (size_t i = 0; i < self->n; i++)
        points += self->r[i].n;
    s_reserve(&b, 256 * self->n + 24 * points);
    s_put(&b, "[", 1);
    for (size_t i = 0; i < self->n && !b.failed; i++) {
        const s_result_t *r = &self->r[i];
        if (i)
            s_put(&b, ",", 1);
        size_t at = b.len;
        if (json_dump_callback(r->head, s_dump_cb, &b, JSON_COMPACT) != 0) {
            b.failed = 1;
            break;
        }
        /* "{...}": the closing brace gives way to "dps". */
        b.len--;
        if (b.len - at > 1)
            s_put(&b, ",", 1);
        s_put(&b, "\"dps\":", 6);
        s_dps(&b, r);
        s_put(&b, "}", 1);
    }
    s_put(&b, "]", 1);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    b.p[b.len] = '\0';
    if (len)
        *len = b.len;
    return b.p;
}

static json_t *
s_value_json(double v, int flags)
{
    if (isnan(v))
        return flags & TSDB_OUT_NAN_NULL ? json_null() : json_string("NaN");
    if (isinf(v))
        return json_string(v > 0 ? "Infinity" : "-Infinity");
    return json_real(v);
}

static json_t *
s_dps_json(const s_result_t *r)
{
    int arrays = r->flags & TSDB_OUT_ARRAYS;
    json_t *d = arrays ? json_array() : json_object();
    for (size_t i = 0; d && i < r->n; i++) {
        json_t *v = s_value_json(r->v[i], r->flags);
        int rc;
        if (arrays)
            rc = json_array_append_new(d, json_pack("[I, o]",
                                                    (json_int_t) r->ts[i], v));
        else {
            char key[24];
            *s_i64(key, r->ts[i]) = '\0';
            rc = json_object_set_new(d, key, v);
        }
        if (rc) {
            json_decref(d);
            return NULL;
        }
    }
    return d;
}

json_t *
tsdb_results_json(const tsdb_results_t *self)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < self->n; i++) {
        json_t *o = json_copy(self->r[i].head);
        int rc = !o || json_object_set_new(o, "dps", s_dps_json(&self->r[i]));
        if (rc)
            json_decref(o);
        if (rc || json_array_append_new(a, o)) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}
