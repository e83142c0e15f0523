/* telem_client_fmt.c - telem_client's output formats: md, json, yaml, txt.
 *
 * JSON and YAML documents are one mapping: the rows under a key named by
 * the mode, then "missing", the nodes that did not answer.
 *
 * Rows of named cells go out as they come, so a tracking run that is
 * stopped by a signal only has to write the closing bracket to leave a
 * valid document.  JSON goes through jansson (escaping, numbers); YAML is
 * simple enough to write by hand: a sequence of mappings whose strings are
 * always double-quoted, with anything YAML cannot carry raw written as an
 * escape.  Plain text is the one format that needs to see rows before
 * writing them (to align columns): it keeps rows until
 * telem_client_fmt_flush().
 * Every string is made valid UTF-8 first (a bad byte becomes U+FFFD), since
 * node names and tag values are bytes from the wire.  Floats use "%.17g".
 *
 * Call order: the lowest of the tool's files; it calls none of the others.
 */
#include "telem_client.h"
#include "telem_grow.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S_REPLACEMENT "\xef\xbf\xbd"   /* U+FFFD */

typedef struct {
    char *text;              /* md/txt: the cell as shown; NULL = null */
    const int64_t *ts;       /* points cell */
    const double *v;
    uint32_t n;
    int is_points;
} s_cell_t;

struct telem_client_fmt {
    telem_client_fmt_kind_t kind;
    FILE *out;
    const char *key;         /* json/yaml: the document's key for the rows */
    int started;             /* json/yaml: the rows' key is written */
    const char *const *cols;
    size_t ncols;
    int points_col;          /* column of points cells, or -1 */
    size_t cell;             /* next cell of the current row */
    size_t nrows;
    int ended;
    int failed;
    json_t *row;             /* json: the row being built */
    s_cell_t *cells;         /* md/txt: the row being built (ncols) */
    const char **tcols;      /* md/txt: columns with "points" expanded */
    size_t ntcols;
    int header_done;
    char **lines;            /* txt: kept rows, ntcols cells each */
    size_t nlines;
    size_t caplines;
    size_t *width;           /* txt: column widths so far */
};

/* ---- UTF-8 ------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (its code point in *cp), or 0. */
static size_t
s_utf8(const unsigned char *p, uint32_t *cp)
{
    unsigned c = p[0];
    size_t n;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4;
    else
        return 0;
    uint32_t v = c & (n == 2 ? 0x1Fu : n == 3 ? 0x0Fu : 0x07u);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3Fu);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF))
        || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

/* A copy of s that is valid UTF-8; for md/txt (`plain`) control characters
 * become blanks and (md) '|' is escaped.  NULL when out of memory. */
static char *
s_clean(const char *s, int plain, int md)
{
    size_t cap = strlen(s) * 3 + 1, k = 0;
    char *o = malloc(cap);
    if (!o)
        return NULL;
    const unsigned char *p = (const unsigned char *) s;
    while (*p) {
        uint32_t cp;
        size_t n = s_utf8(p, &cp);
        if (n == 0) {
            memcpy(o + k, S_REPLACEMENT, 3);
            k += 3;
            p++;
            continue;
        }
        if (plain && (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028
                      || cp == 0x2029)) {
            o[k++] = ' ';
        } else if (md && cp == '|') {
            o[k++] = '\\';
            o[k++] = '|';
        } else {
            memcpy(o + k, p, n);
            k += n;
        }
        p += n;
    }
    o[k] = '\0';
    return o;
}

/* Display width: code points, not bytes. */
static size_t
s_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char) *s & 0xC0) != 0x80;
    return w;
}

/* ---- YAML -------------------------------------------------------------- */

static int
s_yaml_printable(uint32_t cp)
{
    /* Line breaks (LF, CR, NEL, LS, PS) are printable to YAML but would be
     * folded inside a quoted scalar: escape them, and tab too. */
    if (cp == 0x09 || cp == 0x0A || cp == 0x0D || cp == 0x85 || cp == 0x2028
        || cp == 0x2029 || cp == 0xFEFF)
        return 0;
    return (cp >= 0x20 && cp <= 0x7E) || (cp >= 0xA0 && cp <= 0xD7FF)
        || (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

/* Writes s as a YAML double-quoted scalar. */
static void
s_yaml_quote(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *) s;
    fputc('"', out);
    while (*p) {
        uint32_t cp;
        size_t n = s_utf8(p, &cp);
        if (n == 0) {
            fputs("\\uFFFD", out);
            p++;
            continue;
        }
        if (cp == '"' || cp == '\\')
            fprintf(out, "\\%c", (char) cp);
        else if (cp == '\n')
            fputs("\\n", out);
        else if (cp == '\t')
            fputs("\\t", out);
        else if (cp == '\r')
            fputs("\\r", out);
        else if (!s_yaml_printable(cp))
            fprintf(out, cp <= 0xFF ? "\\x%02X" : "\\u%04X", (unsigned) cp);
        else
            fwrite(p, 1, n, out);
        p += n;
    }
    fputc('"', out);
}

static void
s_yaml_double(FILE *out, double v)
{
    if (isnan(v))
        fputs(".nan", out);
    else if (isinf(v))
        fputs(v > 0 ? ".inf" : "-.inf", out);
    else
        fprintf(out, "%.17g", v);
}

/* json/yaml: writes the document's start and the rows' key, once. */
static void
s_begin(telem_client_fmt_t *f)
{
    if (f->started)
        return;
    f->started = 1;
    if (f->kind == TELEM_CLIENT_FMT_JSON)
        fprintf(f->out, "{\"%s\": [\n", f->key);
    else
        fprintf(f->out, "%s:\n", f->key);
}

/* Starts cell `col` of a row: "  - key:" for the first, "    key:" after. */
static void
s_yaml_key(telem_client_fmt_t *f)
{
    if (f->cell == 0)
        s_begin(f);
    fputs(f->cell == 0 ? "  - " : "    ", f->out);
    fputs(f->cols[f->cell], f->out);
    fputs(":", f->out);
}

/* ---- cells ------------------------------------------------------------- */

static int
s_skip(const telem_client_fmt_t *f)
{
    return f->ended || f->cell >= f->ncols;
}

static void
s_json_cell(telem_client_fmt_t *f, json_t *v)
{
    if (!f->row)
        f->row = json_object();
    if (!v || !f->row || json_object_set_new(f->row, f->cols[f->cell], v))
        f->failed = 1;
    f->cell++;
}

/* md/txt cell from text (NULL = null); the text is cleaned and copied. */
static void
s_plain_cell(telem_client_fmt_t *f, const char *text)
{
    s_cell_t *c = &f->cells[f->cell++];
    free(c->text);
    c->text = NULL;
    c->is_points = 0;
    if (text && !(c->text = s_clean(text, 1, f->kind == TELEM_CLIENT_FMT_MD)))
        f->failed = 1;
}

/* A scalar cell: text is a number or keyword written raw in YAML. */
static void
s_raw_cell(telem_client_fmt_t *f, const char *text)
{
    if (f->kind == TELEM_CLIENT_FMT_YAML) {
        s_yaml_key(f);
        fprintf(f->out, " %s\n", text);
        f->cell++;
    } else {
        s_plain_cell(f, text);
    }
}

void
telem_client_fmt_str(telem_client_fmt_t *f, const char *s)
{
    if (s_skip(f))
        return;
    if (!s) {
        telem_client_fmt_null(f);
    } else if (f->kind == TELEM_CLIENT_FMT_JSON) {
        char *c = s_clean(s, 0, 0);
        s_json_cell(f, c ? json_string(c) : NULL);
        free(c);
    } else if (f->kind == TELEM_CLIENT_FMT_YAML) {
        s_yaml_key(f);
        fputc(' ', f->out);
        s_yaml_quote(f->out, s);
        fputc('\n', f->out);
        f->cell++;
    } else {
        s_plain_cell(f, s);
    }
}

void
telem_client_fmt_null(telem_client_fmt_t *f)
{
    if (s_skip(f))
        return;
    if (f->kind == TELEM_CLIENT_FMT_JSON)
        s_json_cell(f, json_null());
    else if (f->kind == TELEM_CLIENT_FMT_YAML)
        s_raw_cell(f, "null");
    else
        s_plain_cell(f, NULL);
}

void
telem_client_fmt_i64(telem_client_fmt_t *f, int64_t v)
{
    char b[32];
    if (s_skip(f))
        return;
    snprintf(b, sizeof b, "%" PRId64, v);
    if (f->kind == TELEM_CLIENT_FMT_JSON)
        s_json_cell(f, json_integer((json_int_t) v));
    else
        s_raw_cell(f, b);
}

void
telem_client_fmt_u64(telem_client_fmt_t *f, uint64_t v)
{
    char b[32];
    if (s_skip(f))
        return;
    snprintf(b, sizeof b, "%" PRIu64, v);
    if (f->kind != TELEM_CLIENT_FMT_JSON)
        s_raw_cell(f, b);
    else if (v <= (uint64_t) INT64_MAX)
        s_json_cell(f, json_integer((json_int_t) v));
    else
        s_json_cell(f, json_real((double) v));
}

void
telem_client_fmt_dbl(telem_client_fmt_t *f, double v)
{
    char b[40];
    if (s_skip(f))
        return;
    snprintf(b, sizeof b, "%.17g", v);
    if (f->kind == TELEM_CLIENT_FMT_JSON) {
        s_json_cell(f, isfinite(v) ? json_real(v) : json_null());
    } else if (f->kind == TELEM_CLIENT_FMT_YAML) {
        s_yaml_key(f);
        fputc(' ', f->out);
        s_yaml_double(f->out, v);
        fputc('\n', f->out);
        f->cell++;
    } else {
        s_plain_cell(f, b);
    }
}

/* Joins n strings with ','. */
static char *
s_join(const char *const *items, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(items[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    *p = '\0';
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s%s", i ? "," : "", items[i]);
    return s;
}

/* Joins tags as "k=v,k=v". */
static char *
s_join_tags(const telem_tag_t *tags, uint32_t n)
{
    size_t len = 1;
    for (uint32_t i = 0; i < n; i++)
        len += strlen(tags[i].key) + strlen(tags[i].value) + 2;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    *p = '\0';
    for (uint32_t i = 0; i < n; i++)
        p += sprintf(p, "%s%s=%s", i ? "," : "", tags[i].key, tags[i].value);
    return s;
}

static json_t *
s_json_str(const char *s)
{
    char *c = s_clean(s, 0, 0);
    json_t *j = c ? json_string(c) : NULL;
    free(c);
    return j;
}

void
telem_client_fmt_tags(telem_client_fmt_t *f, const telem_tag_t *tags,
                      uint32_t n)
{
    if (s_skip(f))
        return;
    if (f->kind == TELEM_CLIENT_FMT_JSON) {
        json_t *o = json_object();
        for (uint32_t i = 0; o && i < n; i++)
            if (json_object_set_new(o, tags[i].key, s_json_str(tags[i].value)))
                f->failed = 1;
        s_json_cell(f, o);
    } else if (f->kind == TELEM_CLIENT_FMT_YAML) {
        s_yaml_key(f);
        fputs(" {", f->out);
        for (uint32_t i = 0; i < n; i++) {
            fputs(i ? ", " : "", f->out);
            s_yaml_quote(f->out, tags[i].key);
            fputs(": ", f->out);
            s_yaml_quote(f->out, tags[i].value);
        }
        fputs("}\n", f->out);
        f->cell++;
    } else {
        char *s = s_join_tags(tags, n);
        s_plain_cell(f, s ? s : "");
        free(s);
    }
}

void
telem_client_fmt_list(telem_client_fmt_t *f, const char *const *items,
                      size_t n)
{
    if (s_skip(f))
        return;
    if (f->kind == TELEM_CLIENT_FMT_JSON) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
            if (json_array_append_new(a, s_json_str(items[i])))
                f->failed = 1;
        s_json_cell(f, a);
    } else if (f->kind == TELEM_CLIENT_FMT_YAML) {
        s_yaml_key(f);
        fputs(" [", f->out);
        for (size_t i = 0; i < n; i++) {
            fputs(i ? ", " : "", f->out);
            s_yaml_quote(f->out, items[i]);
        }
        fputs("]\n", f->out);
        f->cell++;
    } else {
        char *s = s_join(items, n);
        s_plain_cell(f, s ? s : "");
        free(s);
    }
}

void
telem_client_fmt_points(telem_client_fmt_t *f, const int64_t *ts,
                        const double *v, uint32_t n)
{
    if (s_skip(f))
        return;
    if (f->kind == TELEM_CLIENT_FMT_JSON) {
        json_t *a = json_array();
        for (uint32_t i = 0; a && i < n; i++) {
            json_t *pt = json_pack("[Io]", (json_int_t) ts[i],
                                   isfinite(v[i]) ? json_real(v[i])
                                                  : json_null());
            if (json_array_append_new(a, pt))
                f->failed = 1;
        }
        s_json_cell(f, a);
    } else if (f->kind == TELEM_CLIENT_FMT_YAML) {
        s_yaml_key(f);
        fputs(n ? "\n" : " []\n", f->out);
        for (uint32_t i = 0; i < n; i++) {
            fprintf(f->out, "      - [%" PRId64 ", ", ts[i]);
            s_yaml_double(f->out, v[i]);
            fputs("]\n", f->out);
        }
        f->cell++;
    } else {
        s_cell_t *c = &f->cells[f->cell++];
        free(c->text);
        *c = (s_cell_t) { .ts = ts, .v = v, .n = n, .is_points = 1 };
    }
}

/* ---- rows -------------------------------------------------------------- */

static void
s_md_line(telem_client_fmt_t *f, const char *const *cells)
{
    for (size_t i = 0; i < f->ntcols; i++)
        fprintf(f->out, "| %s ", cells[i] ? cells[i] : "");
    fputs("|\n", f->out);
}

static void
s_md_header(telem_client_fmt_t *f)
{
    if (f->header_done)
        return;
    f->header_done = 1;
    s_md_line(f, f->tcols);
    for (size_t i = 0; i < f->ntcols; i++)
        fputs("| --- ", f->out);
    fputs("|\n", f->out);
}

/* txt: keeps one line of ntcols cells (copied). */
static void
s_txt_keep(telem_client_fmt_t *f, const char *const *cells)
{
    /* A line is one element of ntcols cell pointers. */
    if (telem_grow((void **) &f->lines, &f->caplines, f->nlines + 1,
                   f->ntcols * sizeof *f->lines, 64)) {
        f->failed = 1;
        return;
    }
    char **line = &f->lines[f->nlines++ * f->ntcols];
    for (size_t i = 0; i < f->ntcols; i++) {
        line[i] = strdup(cells[i] ? cells[i] : "-");
        if (!line[i])
            f->failed = 1;
    }
}

/* md/txt: one output line per point of the points cell (or one line). */
static void
s_plain_row(telem_client_fmt_t *f)
{
    const char *line[64];
    char tsb[32], vb[40];
    size_t npts = 1, k = 0;
    const s_cell_t *pts = NULL;
    for (size_t i = 0; i < f->ncols; i++)
        if (f->cells[i].is_points) {
            pts = &f->cells[i];
            npts = pts->n ? pts->n : 1;
        }
    for (size_t p = 0; p < npts; p++) {
        k = 0;
        for (size_t i = 0; i < f->ncols && k + 2 <= 64; i++) {
            if ((int) i != f->points_col) {
                line[k++] = f->cells[i].text;
                continue;
            }
            if (!f->cells[i].is_points || pts->n == 0) {
                line[k++] = NULL;
                line[k++] = NULL;
                continue;
            }
            snprintf(tsb, sizeof tsb, "%" PRId64, pts->ts[p]);
            snprintf(vb, sizeof vb, "%.17g", pts->v[p]);
            line[k++] = tsb;
            line[k++] = vb;
        }
        if (f->kind == TELEM_CLIENT_FMT_MD) {
            s_md_header(f);
            s_md_line(f, line);
        } else {
            s_txt_keep(f, line);
        }
    }
}

void
telem_client_fmt_row_end(telem_client_fmt_t *f)
{
    if (f->ended)
        return;
    while (f->cell < f->ncols)
        telem_client_fmt_null(f);
    if (f->kind == TELEM_CLIENT_FMT_JSON) {
        s_begin(f);
        fputs(f->nrows ? ",\n  " : "  ", f->out);
        if (!f->row || json_dumpf(f->row, f->out, JSON_REAL_PRECISION(17)))
            f->failed = 1;
        json_decref(f->row);
        f->row = NULL;
    } else if (f->kind != TELEM_CLIENT_FMT_YAML) {
        s_plain_row(f);
    }
    f->nrows++;
    f->cell = 0;
}

/* ---- document ---------------------------------------------------------- */

static void
s_txt_line(telem_client_fmt_t *f, char *const *cells)
{
    for (size_t i = 0; i < f->ntcols; i++) {
        int last = i + 1 == f->ntcols;
        fputs(cells[i], f->out);
        if (!last)
            for (size_t w = s_width(cells[i]); w < f->width[i] + 2; w++)
                fputc(' ', f->out);
    }
    fputc('\n', f->out);
}

static void
s_txt_flush(telem_client_fmt_t *f)
{
    for (size_t i = 0; i < f->ntcols; i++) {
        size_t w = s_width(f->tcols[i]);
        if (w > f->width[i])
            f->width[i] = w;
        for (size_t l = 0; l < f->nlines; l++) {
            w = s_width(f->lines[l * f->ntcols + i]);
            if (w > f->width[i])
                f->width[i] = w;
        }
    }
    if (!f->header_done) {
        f->header_done = 1;
        s_txt_line(f, (char *const *) f->tcols);
    }
    for (size_t l = 0; l < f->nlines; l++) {
        s_txt_line(f, &f->lines[l * f->ntcols]);
        for (size_t i = 0; i < f->ntcols; i++)
            free(f->lines[l * f->ntcols + i]);
    }
    f->nlines = 0;
}

int
telem_client_fmt_flush(telem_client_fmt_t *f)
{
    if (!f->ended && f->kind == TELEM_CLIENT_FMT_TXT && f->nlines)
        s_txt_flush(f);
    if (fflush(f->out) != 0 || ferror(f->out))
        f->failed = 1;
    return f->failed ? TELEM_EIO : 0;
}

/* json/yaml: the rows' end and the list of missing nodes. */
static void
s_end_doc(telem_client_fmt_t *f, const char *const *missing, size_t nmissing)
{
    if (f->kind == TELEM_CLIENT_FMT_JSON) {
        fputs(f->started ? "\n],\n" : "", f->out);
        if (!f->started)
            fprintf(f->out, "{\"%s\": [],\n", f->key);
        json_t *m = json_array();
        for (size_t i = 0; m && i < nmissing; i++)
            if (json_array_append_new(m, s_json_str(missing[i])))
                f->failed = 1;
        fputs("\"missing\": ", f->out);
        if (!m || json_dumpf(m, f->out, 0))
            f->failed = 1;
        json_decref(m);
        fputs("\n}\n", f->out);
        return;
    }
    if (!f->started)
        fprintf(f->out, "%s: []\n", f->key);
    fputs("missing: [", f->out);
    for (size_t i = 0; i < nmissing; i++) {
        fputs(i ? ", " : "", f->out);
        s_yaml_quote(f->out, missing[i]);
    }
    fputs("]\n", f->out);
}

int
telem_client_fmt_end(telem_client_fmt_t *f, const char *const *missing,
                     size_t nmissing)
{
    if (f->ended)
        return f->failed ? TELEM_EIO : 0;
    if (f->cell)
        telem_client_fmt_row_end(f);
    switch (f->kind) {
    case TELEM_CLIENT_FMT_JSON:
    case TELEM_CLIENT_FMT_YAML:
        s_end_doc(f, missing, nmissing);
        break;
    case TELEM_CLIENT_FMT_MD:
        s_md_header(f);
        break;
    case TELEM_CLIENT_FMT_TXT:
        s_txt_flush(f);
        break;
    }
    int rc = telem_client_fmt_flush(f);
    f->ended = 1;
    return rc;
}

int
telem_client_fmt_parse(const char *name, telem_client_fmt_kind_t *kind)
{
    static const char *const names[] = { "md", "json", "yaml", "txt" };
    for (int i = 0; i < 4; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *kind = (telem_client_fmt_kind_t) i;
            return 0;
        }
    return TELEM_EINVAL;
}

telem_client_fmt_t *
telem_client_fmt_new(telem_client_fmt_kind_t kind, FILE *out,
                     const char *key, const char *const *cols, size_t ncols,
                     int points_col)
{
    telem_client_fmt_t *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->kind = kind;
    f->out = out;
    f->key = key;
    f->cols = cols;
    f->ncols = ncols;
    f->points_col = points_col;
    f->cells = calloc(ncols + 1, sizeof *f->cells);
    f->tcols = calloc(ncols * 2 + 1, sizeof *f->tcols);
    f->width = calloc(ncols * 2 + 1, sizeof *f->width);
    if (!f->cells || !f->tcols || !f->width) {
        telem_client_fmt_destroy(&f);
        return NULL;
    }
    for (size_t i = 0; i < ncols; i++) {
        if ((int) i == points_col) {
            f->tcols[f->ntcols++] = "time_ns";
            f->tcols[f->ntcols++] = "value";
        } else {
            f->tcols[f->ntcols++] = cols[i];
        }
    }
    return f;
}

void
telem_client_fmt_destroy(telem_client_fmt_t **f_p)
{
    if (!f_p || !*f_p)
        return;
    telem_client_fmt_t *f = *f_p;
    for (size_t i = 0; f->cells && i < f->ncols; i++)
        free(f->cells[i].text);
    for (size_t i = 0; i < f->nlines * f->ntcols; i++)
        free(f->lines[i]);
    json_decref(f->row);
    free(f->lines);
    free(f->cells);
    free(f->tcols);
    free(f->width);
    free(f);
    *f_p = NULL;
}

char *
telem_client_fmt_utf8(const char *s)
{
    return s_clean(s, 0, 0);
}

void
telem_client_fmt_yaml_quote(FILE *out, const char *s)
{
    s_yaml_quote(out, s);
}
