/* telem_prom_render.c - a snapshot written as Prometheus text 0.0.4 or
 * OpenMetrics 1.0 (telem_prom.h says what the output holds).
 *
 * The upper file of the module: it reads the block with
 * tprom_block_parse() (telem_prom_snap.c) and writes with the name and
 * escaping rules of telem_prom_name.c.  Three passes: every series gets
 * its family key (the mapped name, a counter's without "_total") and its
 * label text in one arena; the series are sorted by family key, original
 * metric name and label text, which puts each family's series together
 * and makes the output a function of the input alone; then each family
 * is written, leaving out what would make the exposition invalid (a type
 * conflict, a duplicate sample name or label set) and counting it.
 */
#include "telem_prom_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_TOTAL "_total"
#define S_TOTAL_LEN 6

typedef struct {
    const tprom_ent_t *e;
    const char *base;           /* family key, in the arena */
    const char *labels;         /* "{...}" or "", in the arena */
    size_t base_off, labels_off;
} s_item_t;

typedef struct {
    telem_prom_opts_t o;
    tprom_buf_t out;
    tprom_buf_t arena;
    s_item_t *items;
    size_t n;
    telem_prom_stats_t st;
} s_render_t;

/* --- pass 1: family keys and label texts ---------------------------------- */

static size_t
s_put_base(tprom_buf_t *a, const tprom_ent_t *e)
{
    size_t off = a->len;
    tprom_put_name(a, e->metric, false);
    size_t len = a->len - off;
    if (!a->failed && e->type == TPROM_COUNTER && len > S_TOTAL_LEN &&
        memcmp(a->p + a->len - S_TOTAL_LEN, S_TOTAL, S_TOTAL_LEN) == 0)
        a->len -= S_TOTAL_LEN;
    tprom_buf_putc(a, '\0');
    return off;
}

/* True when the label name just written at a->p[off..a->len) repeats one
 * of names[0..n) (offsets into the arena, each ended by '=' there). */
static bool
s_label_seen(const tprom_buf_t *a, size_t off, const size_t *names, size_t n)
{
    size_t len = a->len - off;
    for (size_t i = 0; i < n; i++)
        if (memcmp(a->p + names[i], a->p + off, len) == 0 &&
            a->p[names[i] + len] == '=')
            return true;
    return false;
}

static size_t
s_put_labels(tprom_buf_t *a, const tprom_ent_t *e)
{
    size_t start = a->len, names[256], nnames = 0;
    const char *p = e->tags;
    for (uint32_t i = 0; i < e->ntags; i++) {
        const char *key = p;
        const char *value = key + strlen(key) + 1;
        p = value + strlen(value) + 1;
        if (!*value)
            continue;                 /* empty: absent in Prometheus */
        size_t mark = a->len;
        tprom_buf_putc(a, nnames ? ',' : '{');
        size_t off = a->len;
        tprom_put_name(a, key, true);
        if (a->failed || s_label_seen(a, off, names, nnames)) {
            a->len = mark;
            continue;
        }
        names[nnames++] = off;
        tprom_buf_put(a, "=\"", 2);
        tprom_put_escaped(a, value, true);
        tprom_buf_putc(a, '"');
    }
    if (nnames)
        tprom_buf_putc(a, '}');
    tprom_buf_putc(a, '\0');
    return start;
}

static int
s_prepare(s_render_t *r, const tprom_ent_t *ents)
{
    size_t base_off = 0;
    for (size_t i = 0; i < r->n; i++) {
        const tprom_ent_t *e = &ents[i];
        if (i == 0 || strcmp(e->metric, ents[i - 1].metric) != 0 ||
            e->type != ents[i - 1].type)
            base_off = s_put_base(&r->arena, e);
        r->items[i] = (s_item_t) { .e = e, .base_off = base_off,
                                   .labels_off = s_put_labels(&r->arena, e) };
    }
    if (r->arena.failed)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < r->n; i++) {
        r->items[i].base = r->arena.p + r->items[i].base_off;
        r->items[i].labels = r->arena.p + r->items[i].labels_off;
    }
    return 0;
}

/* --- pass 2: order -------------------------------------------------------- */

/* The original tags, pair by pair (fewer tags first on a tie): the last
 * key, so that which of two equal label sets is kept never depends on
 * the order the store walked them in. */
static int
s_cmp_tags(const tprom_ent_t *a, const tprom_ent_t *b)
{
    const char *pa = a->tags, *pb = b->tags;
    for (uint32_t i = 0; i < 2 * a->ntags && i < 2 * b->ntags; i++) {
        int c = strcmp(pa, pb);
        if (c)
            return c;
        pa += strlen(pa) + 1;
        pb += strlen(pb) + 1;
    }
    return (a->ntags > b->ntags) - (a->ntags < b->ntags);
}

static int
s_cmp_items(const void *pa, const void *pb)
{
    const s_item_t *a = pa, *b = pb;
    int c = strcmp(a->base, b->base);
    if (!c)
        c = strcmp(a->e->metric, b->e->metric);
    if (!c)
        c = strcmp(a->labels, b->labels);
    if (!c)
        c = s_cmp_tags(a->e, b->e);
    return c;
}

/* --- pass 3: writing ------------------------------------------------------ */

/* strcmp(a, b[0..len)) for a b without a NUL in its first len bytes. */
static int
s_cmp_prefix(const char *a, const char *b, size_t len)
{
    int c = strncmp(a, b, len);
    return c ? c : a[len] != '\0';
}

/* The first item of the family keyed base[0..len), or NULL. */
static const s_item_t *
s_find_family(const s_render_t *r, const char *base, size_t len)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s_cmp_prefix(r->items[mid].base, base, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->n && s_cmp_prefix(r->items[lo].base, base, len) == 0)
        return &r->items[lo];
    return NULL;
}

/* A family that is not a counter but whose name is a counter's sample
 * name ("x_total" beside counter x): left out, the counter kept. */
static bool
s_shadowed(const s_render_t *r, const s_item_t *first)
{
    size_t len = strlen(first->base);
    if (first->e->type == TPROM_COUNTER || len <= S_TOTAL_LEN ||
        strcmp(first->base + len - S_TOTAL_LEN, S_TOTAL) != 0)
        return false;
    const s_item_t *c = s_find_family(r, first->base, len - S_TOTAL_LEN);
    return c && c->e->type == TPROM_COUNTER;
}

static const char *
s_type_name(const s_render_t *r, uint8_t type)
{
    if (type == TPROM_COUNTER)
        return "counter";
    if (type == TPROM_GAUGE)
        return "gauge";
    return r->o.format == TELEM_PROM_OPENMETRICS ? "unknown" : "untyped";
}

/* The exposed family name: a counter's carries "_total" in text 0.0.4. */
static void
s_put_family(s_render_t *r, const s_item_t *first)
{
    tprom_buf_puts(&r->out, first->base);
    if (first->e->type == TPROM_COUNTER && r->o.format == TELEM_PROM_TEXT)
        tprom_buf_put(&r->out, S_TOTAL, S_TOTAL_LEN);
}

/* OpenMetrics' UNIT: a plain word that the family name ends with. */
static bool
s_unit_ok(const char *base, const char *unit)
{
    size_t bl = strlen(base), ul = strlen(unit);
    if (ul == 0 || ul + 1 >= bl || base[bl - ul - 1] != '_' ||
        strcmp(base + bl - ul, unit) != 0)
        return false;
    for (const char *p = unit; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

static void
s_put_meta(s_render_t *r, const s_item_t *first)
{
    tprom_buf_t *o = &r->out;
    bool om = r->o.format == TELEM_PROM_OPENMETRICS;
    tprom_buf_put(o, "# HELP ", 7);
    s_put_family(r, first);
    tprom_buf_putc(o, ' ');
    if (*first->e->doc) {
        tprom_put_escaped(o, first->e->doc, om);
    } else {
        tprom_buf_puts(o, "telem metric ");
        tprom_put_escaped(o, first->e->metric, om);
    }
    tprom_buf_put(o, "\n# TYPE ", 8);
    s_put_family(r, first);
    tprom_buf_putc(o, ' ');
    tprom_buf_puts(o, s_type_name(r, first->e->type));
    tprom_buf_putc(o, '\n');
    if (om && s_unit_ok(first->base, first->e->unit)) {
        tprom_buf_put(o, "# UNIT ", 7);
        s_put_family(r, first);
        tprom_buf_putc(o, ' ');
        tprom_buf_puts(o, first->e->unit);
        tprom_buf_putc(o, '\n');
    }
}

/* Milliseconds (text) or seconds with three decimals (OpenMetrics),
 * rounded down. */
static void
s_put_ts(s_render_t *r, int64_t ts_ns)
{
    int64_t ms = ts_ns / 1000000;
    if (ts_ns % 1000000 < 0)
        ms--;
    char buf[40];
    if (r->o.format == TELEM_PROM_TEXT) {
        snprintf(buf, sizeof buf, " %" PRId64, ms);
    } else {
        int64_t s = ms / 1000, frac = ms % 1000;
        if (frac < 0) {
            s--;
            frac += 1000;
        }
        snprintf(buf, sizeof buf, " %" PRId64 ".%03" PRId64, s, frac);
    }
    tprom_buf_puts(&r->out, buf);
}

static void
s_put_sample(s_render_t *r, const s_item_t *it)
{
    tprom_buf_t *o = &r->out;
    tprom_buf_puts(o, it->base);
    if (it->e->type == TPROM_COUNTER)
        tprom_buf_put(o, S_TOTAL, S_TOTAL_LEN);
    tprom_buf_puts(o, it->labels);
    tprom_buf_putc(o, ' ');
    tprom_put_value(o, it->e->value);
    if (r->o.timestamps)
        s_put_ts(r, it->e->ts_ns);
    tprom_buf_putc(o, '\n');
}

/* Writes the family of items[i..end); returns end. */
static size_t
s_put_group(s_render_t *r, size_t i)
{
    const s_item_t *first = &r->items[i];
    size_t end = i + 1;
    while (end < r->n && strcmp(r->items[end].base, first->base) == 0)
        end++;
    if (s_shadowed(r, first)) {
        r->st.skipped += end - i;
        return end;
    }
    s_put_meta(r, first);
    r->st.families++;
    const s_item_t *last = NULL;
    for (size_t k = i; k < end; k++) {
        const s_item_t *it = &r->items[k];
        if (it->e->type != first->e->type ||
            (last && strcmp(last->labels, it->labels) == 0)) {
            r->st.skipped++;
            continue;
        }
        s_put_sample(r, it);
        r->st.series++;
        last = it;
    }
    return end;
}

static int
s_write(s_render_t *r)
{
    /* About 80 bytes a sample line, plus the families' lines. */
    tprom_buf_reserve(&r->out, r->n * 96 + 64);
    for (size_t i = 0; i < r->n;)
        i = s_put_group(r, i);
    if (r->o.format == TELEM_PROM_OPENMETRICS)
        tprom_buf_put(&r->out, "# EOF\n", 6);
    else
        tprom_buf_reserve(&r->out, 0);    /* a NUL even for no series */
    return r->out.failed ? TELEM_ENOMEM : 0;
}

int
telem_prom_render(const void *block, size_t len,
                  const telem_prom_opts_t *opts, char **out_p,
                  size_t *out_len, telem_prom_stats_t *stats)
{
    if (out_p)
        *out_p = NULL;
    if (!block || !out_p || !out_len)
        return TELEM_EINVAL;
    s_render_t r = { .o = opts ? *opts : (telem_prom_opts_t) { 0 } };
    tprom_ent_t *ents = NULL;
    int rc = tprom_block_parse(block, len, &ents, &r.n);
    if (!rc && r.n && !(r.items = malloc(r.n * sizeof *r.items)))
        rc = TELEM_ENOMEM;
    if (!rc)
        rc = s_prepare(&r, ents);
    if (!rc) {
        if (r.n)
            qsort(r.items, r.n, sizeof *r.items, s_cmp_items);
        rc = s_write(&r);
    }
    free(ents);
    free(r.items);
    free(r.arena.p);
    if (rc) {
        free(r.out.p);
        return rc;
    }
    *out_p = r.out.p;
    *out_len = r.out.len;
    if (stats)
        *stats = r.st;
    return 0;
}
