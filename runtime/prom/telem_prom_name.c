/* telem_prom_name.c - the character-level rules of the exposition: metric
 * and label names mapped to Prometheus's character set, escaping of label
 * values and HELP text, UTF-8 repair, values, and the output buffer they
 * write into.
 *
 * The lowest file of the module (telem_prom_int.h): it calls nothing else
 * of it.  Everything here runs once per byte of a scrape, so runs of bytes
 * that need nothing are copied at once.
 */
#include "telem_prom_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_grow.h"

/* --- the output buffer ---------------------------------------------------- */

bool
tprom_buf_reserve(tprom_buf_t *b, size_t more)
{
    if (b->failed)
        return false;
    if (more > SIZE_MAX - b->len - 1) {
        b->failed = true;
        return false;
    }
    size_t need = b->len + more + 1;
    if (need > b->cap &&
        telem_grow((void **) &b->p, &b->cap, need, 1, 4096) != 0) {
        b->failed = true;
        return false;
    }
    b->p[b->len] = '\0';
    return true;
}

void
tprom_buf_put(tprom_buf_t *b, const char *s, size_t n)
{
    if (!tprom_buf_reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void
tprom_buf_puts(tprom_buf_t *b, const char *s)
{
    tprom_buf_put(b, s, strlen(s));
}

void
tprom_buf_putc(tprom_buf_t *b, char c)
{
    if (!tprom_buf_reserve(b, 1))
        return;
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
}

/* --- names ---------------------------------------------------------------- */

static bool
s_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

static char
s_map(char c)
{
    return s_name_char((unsigned char) c) ? c : '_';
}

void
tprom_put_name(tprom_buf_t *b, const char *name, bool label)
{
    size_t n = strlen(name);
    if (!tprom_buf_reserve(b, n + 1))
        return;
    char *out = b->p + b->len;
    size_t k = 0;
    if (n == 0)
        out[k++] = '_';           /* never an empty name */
    else if (name[0] >= '0' && name[0] <= '9')
        out[k++] = '_';
    else if (label && n >= 2 && s_map(name[0]) == '_' &&
             s_map(name[1]) == '_')
        out[k++] = 'x';           /* would start with "__", reserved */
    for (size_t i = 0; i < n; i++)
        out[k++] = s_map(name[i]);
    b->len += k;
    b->p[b->len] = '\0';
}

static int
s_name_out(const char *name, char *out, size_t size, bool label)
{
    if (!name || !*name || (!out && size))
        return TELEM_EINVAL;
    tprom_buf_t b = { 0 };
    tprom_put_name(&b, name, label);
    int rc = b.failed ? TELEM_ENOMEM
             : b.len + 1 > size ? TELEM_ETOOBIG : (int) b.len;
    if (rc >= 0)
        memcpy(out, b.p, b.len + 1);
    else if (size)
        out[0] = '\0';
    free(b.p);
    return rc;
}

int
telem_prom_metric_name(const char *name, char *out, size_t size)
{
    return s_name_out(name, out, size, false);
}

int
telem_prom_label_name(const char *key, char *out, size_t size)
{
    return s_name_out(key, out, size, true);
}

/* --- escaping ------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlong forms,
 * no surrogates, nothing past U+10FFFF), 0 when it is not one. */
static size_t
s_utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c >= 0xc2 && c <= 0xdf)
        return (s[1] & 0xc0) == 0x80 ? 2 : 0;
    unsigned char lo = 0x80, hi = 0xbf;
    size_t len;
    if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

void
tprom_put_escaped(tprom_buf_t *b, const char *s, bool quote)
{
    const unsigned char *p = (const unsigned char *) s;
    while (*p) {
        const unsigned char *run = p;
        while (*p && *p < 0x80 && *p != '\\' && *p != '\n' &&
               !(quote && *p == '"'))
            p++;
        tprom_buf_put(b, (const char *) run, (size_t) (p - run));
        if (!*p)
            break;
        if (*p == '\\') {
            tprom_buf_put(b, "\\\\", 2);
        } else if (*p == '\n') {
            tprom_buf_put(b, "\\n", 2);
        } else if (*p == '"') {
            tprom_buf_put(b, "\\\"", 2);
        } else {
            size_t n = s_utf8_len(p);
            if (n) {
                tprom_buf_put(b, (const char *) p, n);
                p += n;
                continue;
            }
            tprom_buf_put(b, "\xef\xbf\xbd", 3);
        }
        p++;
    }
}

void
tprom_put_value(tprom_buf_t *b, double v)
{
    if (isnan(v)) {
        tprom_buf_put(b, "NaN", 3);
        return;
    }
    if (isinf(v)) {
        tprom_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (!tprom_buf_reserve(b, 32))
        return;
    int n = snprintf(b->p + b->len, 32, "%.17g", v);
    if (n > 0 && n < 32)
        b->len += (size_t) n;
    b->p[b->len] = '\0';
}
