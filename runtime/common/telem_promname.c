/* telem_promname.c - metric names with labels in Prometheus syntax
 * (telem_promname.h): a one-pass parser with a cursor, and the writer.
 *
 * The parser copies as it reads: the metric name, then each key and its
 * unescaped value, NUL-terminated, one after another into the result's
 * own buffer, whose size bounds every part (each at most TELEM_NAME_MAX
 * bytes, at most TELEM_PROMNAME_LABELS labels), so no input can make it
 * write out of bounds or allocate.
 */
#include "telem_promname.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "telem_error.h"
#include "telem_why.h"

typedef struct {
    const char *p;              /* next byte of the text */
    telem_promname_t *out;
    unsigned flags;
    char *why;
    size_t why_size;
} s_cur_t;

static bool
s_name_start(unsigned char c, bool colon)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'
           || (colon && c == ':');
}

static bool
s_name_char(unsigned char c, bool colon)
{
    return s_name_start(c, colon) || (c >= '0' && c <= '9');
}

/* Length of a name at s ([a-zA-Z_(:)][a-zA-Z0-9_(:)]*), 0 if none. */
static size_t
s_name_len(const char *s, bool colon)
{
    const unsigned char *p = (const unsigned char *) s;
    if (!s_name_start(*p, colon))
        return 0;
    size_t n = 1;
    while (s_name_char(p[n], colon))
        n++;
    return n;
}

static int
s_fail(s_cur_t *c, const char *what, uint32_t label)
{
    if (label)
        telem_why(c->why, c->why_size, "label %u: %s", label, what);
    else
        telem_why(c->why, c->why_size, "%s", what);
    return TELEM_EINVAL;
}

/* Appends n bytes and a NUL to the result's buffer; NULL if they do not
 * fit (the buffer is sized for the limits, so only a bug gets NULL). */
static char *
s_put(telem_promname_t *o, const char *s, size_t n)
{
    if (o->bytes + n + 1 > sizeof o->buf)
        return NULL;
    char *at = o->buf + o->bytes;
    memcpy(at, s, n);
    at[n] = '\0';
    o->bytes += n + 1;
    return at;
}

/* Length of the valid UTF-8 sequence at p, 0 if it is not one. */
static size_t
s_utf8_len(const unsigned char *p)
{
    size_t n = p[0] < 0x80 ? 1 : p[0] >= 0xC2 && p[0] <= 0xDF ? 2
             : p[0] >= 0xE0 && p[0] <= 0xEF ? 3
             : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    /* Overlong forms, surrogates and code points past U+10FFFF. */
    if ((n == 3 && p[0] == 0xE0 && p[1] < 0xA0)
        || (n == 3 && p[0] == 0xED && p[1] >= 0xA0)
        || (n == 4 && p[0] == 0xF0 && p[1] < 0x90)
        || (n == 4 && p[0] == 0xF4 && p[1] >= 0x90))
        return 0;
    return n;
}

/* One value byte sequence at c->p into v (len *n); a quoted value ends at
 * its closing quote, a bare one before ',' or '}'.  Returns 0 or the
 * error. */
static int
s_value_char(s_cur_t *c, bool quoted, char *v, size_t *n, uint32_t label)
{
    const unsigned char *p = (const unsigned char *) c->p;
    char ch = (char) *p;
    size_t len = 1;
    if (quoted && ch == '\\') {
        ch = p[1] == '\\' ? '\\' : p[1] == '"' ? '"' : p[1] == 'n' ? '\n' : 0;
        if (!ch)
            return s_fail(c, p[1] ? "unknown escape (only \\\\ \\\" \\n)"
                                  : "unterminated value", label);
        len = 2;
    } else if (*p == '\n') {
        return s_fail(c, "raw line feed in a value (write \\n)", label);
    } else if (!quoted && (ch == '"' || ch == '\\')) {
        return s_fail(c, "quote or backslash in an unquoted value", label);
    } else if ((len = s_utf8_len(p)) == 0) {
        return s_fail(c, "value is not valid UTF-8", label);
    }
    if (*n + (len == 2 && p[0] == '\\' ? 1 : len) > TELEM_NAME_MAX)
        return s_fail(c, "value longer than 255 bytes", label);
    if (len == 2 && p[0] == '\\')
        v[(*n)++] = ch;
    else
        for (size_t i = 0; i < len; i++)
            v[(*n)++] = (char) p[i];
    c->p += len;
    return 0;
}

/* The value after "key=": quoted, or bare with TELEM_PROMNAME_BARE. */
static int
s_value(s_cur_t *c, char *v, size_t *n, uint32_t label)
{
    bool quoted = *c->p == '"';
    if (!quoted && !(c->flags & TELEM_PROMNAME_BARE))
        return s_fail(c, "value must be in double quotes", label);
    c->p += quoted;
    *n = 0;
    for (;;) {
        char ch = *c->p;
        if (ch == '\0')
            return s_fail(c, quoted ? "unterminated value" : "missing '}'",
                          label);
        if (quoted && ch == '"') {
            c->p++;
            return 0;
        }
        if (!quoted && (ch == ',' || ch == '}'))
            return 0;
        int rc = s_value_char(c, quoted, v, n, label);
        if (rc)
            return rc;
    }
}

/* Checks key (len klen) against the reserved names and earlier keys. */
static int
s_key_check(s_cur_t *c, const char *key, size_t klen, uint32_t label,
            char keys[][TELEM_NAME_MAX + 1], uint32_t nkeys)
{
    if (klen > TELEM_NAME_MAX)
        return s_fail(c, "label name longer than 255 bytes", label);
    if (klen >= 2 && key[0] == '_' && key[1] == '_')
        return s_fail(c, "label names starting with \"__\" are reserved",
                      label);
    if (!(c->flags & TELEM_PROMNAME_OWN)
        && ((klen == 4 && memcmp(key, "host", 4) == 0)
            || (klen == 3 && memcmp(key, "pid", 3) == 0)))
        return s_fail(c, "labels \"host\" and \"pid\" are telem's own",
                      label);
    for (uint32_t i = 0; i < nkeys; i++)
        if (strlen(keys[i]) == klen && memcmp(keys[i], key, klen) == 0)
            return s_fail(c, "label name repeated", label);
    return 0;
}

/* One label "key=value" at c->p; keeps it unless its value is empty. */
static int
s_label(s_cur_t *c, uint32_t label, char keys[][TELEM_NAME_MAX + 1],
        uint32_t *nkeys)
{
    const char *key = c->p;
    size_t klen = s_name_len(key, false);
    if (klen == 0)
        return s_fail(c, "label name expected ([a-zA-Z_][a-zA-Z0-9_]*)",
                      label);
    int rc = s_key_check(c, key, klen, label, keys, *nkeys);
    if (rc)
        return rc;
    if (*nkeys == TELEM_PROMNAME_LABELS)
        return s_fail(c, "more than 8 labels", label);
    memcpy(keys[*nkeys], key, klen);
    keys[(*nkeys)++][klen] = '\0';
    c->p += klen;
    if (*c->p != '=')
        return s_fail(c, "'=' expected after the label name", label);
    c->p++;
    char v[TELEM_NAME_MAX + 1];
    size_t vlen;
    if ((rc = s_value(c, v, &vlen, label)) != 0)
        return rc;
    if (vlen == 0)
        return 0;                       /* empty: absent, as in Prometheus */
    telem_promname_t *o = c->out;
    o->labels[o->nlabels].key = s_put(o, key, klen);
    o->labels[o->nlabels].value = s_put(o, v, vlen);
    o->nlabels++;
    return 0;
}

/* The label set after the metric name, from '{' to the end. */
static int
s_labels(s_cur_t *c)
{
    char keys[TELEM_PROMNAME_LABELS][TELEM_NAME_MAX + 1];
    uint32_t nkeys = 0;
    c->p++;                              /* '{' */
    for (uint32_t label = 1;; label++) {
        if (*c->p == '}')
            break;
        int rc = s_label(c, label, keys, &nkeys);
        if (rc)
            return rc;
        if (*c->p == ',') {
            c->p++;
            continue;
        }
        if (*c->p != '}')
            return s_fail(c, *c->p ? "',' or '}' expected after a value"
                                   : "missing '}'", label);
    }
    c->p++;                              /* '}' */
    return *c->p ? s_fail(c, "text after '}'", 0) : 0;
}

int
telem_promname_parse(const char *text, unsigned flags, telem_promname_t *out,
                     char *why, size_t why_size)
{
    s_cur_t c = { text, out, flags, why, why_size };
    if (!text || !out)
        return s_fail(&c, "no name", 0);
    if (strnlen(text, TELEM_PROMNAME_TEXT_MAX + 1) > TELEM_PROMNAME_TEXT_MAX)
        return s_fail(&c, "longer than 4096 bytes", 0);
    out->nlabels = 0;
    out->bytes = 0;
    size_t mlen = s_name_len(text, true);
    if (mlen == 0)
        return s_fail(&c, "metric name expected ([a-zA-Z_:][a-zA-Z0-9_:]*)",
                      0);
    if (mlen > TELEM_NAME_MAX)
        return s_fail(&c, "metric name longer than 255 bytes", 0);
    out->metric = s_put(out, text, mlen);
    c.p = text + mlen;
    if (*c.p == '\0')
        return 0;
    if (*c.p != '{')
        return s_fail(&c, "metric name followed by something else than '{'",
                      0);
    return s_labels(&c);
}

int
telem_promname_metric_ok(const char *s)
{
    if (!s)
        return 0;
    size_t n = s_name_len(s, true);
    return n > 0 && n <= TELEM_NAME_MAX && s[n] == '\0';
}

int
telem_promname_label_ok(const char *s)
{
    if (!s)
        return 0;
    size_t n = s_name_len(s, false);
    return n > 0 && n <= TELEM_NAME_MAX && s[n] == '\0'
           && strncmp(s, "__", 2) != 0 && strcmp(s, "host") != 0
           && strcmp(s, "pid") != 0;
}

static bool
s_skipped(const char *key, const char *const *skip)
{
    for (; skip && *skip; skip++)
        if (strcmp(key, *skip) == 0)
            return true;
    return false;
}

/* Appends s to buf at *at (escaping a label value when `esc`); false once
 * it no longer fits. */
static bool
s_emit(char *buf, size_t size, size_t *at, const char *s, bool esc)
{
    for (; *s; s++) {
        const char *rep = !esc ? NULL : *s == '\\' ? "\\\\"
                        : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
        size_t n = rep ? 2 : 1;
        if (*at + n >= size)
            return false;
        memcpy(buf + *at, rep ? rep : s, n);
        *at += n;
    }
    buf[*at] = '\0';
    return true;
}

int
telem_promname_format(char *buf, size_t size, const char *metric,
                      const telem_tag_t *tags, uint32_t ntags,
                      const char *const *skip)
{
    if (!buf || !size || !metric)
        return TELEM_EINVAL;
    size_t at = 0;
    buf[0] = '\0';
    bool ok = s_emit(buf, size, &at, metric, false);
    uint32_t written = 0;
    for (uint32_t i = 0; ok && i < ntags; i++) {
        if (s_skipped(tags[i].key, skip))
            continue;
        ok = s_emit(buf, size, &at, written++ ? "," : "{", false)
             && s_emit(buf, size, &at, tags[i].key, false)
             && s_emit(buf, size, &at, "=\"", false)
             && s_emit(buf, size, &at, tags[i].value, true)
             && s_emit(buf, size, &at, "\"", false);
    }
    if (ok && written)
        ok = s_emit(buf, size, &at, "}", false);
    return ok ? (int) at : TELEM_ETOOBIG;
}
