/* fuzz_promname.c - libFuzzer target: metric names with labels in
 * Prometheus syntax (runtime/common/telem_promname.c: what pushes and
 * command lines name series with) and the Prometheus exposition's name
 * side (runtime/prom: metric and label name mapping, the render of the
 * names and values it escapes, Accept and Accept-Encoding negotiation).
 *
 * Input: a flag byte, then lines: a name text, an Accept header, an
 * Accept-Encoding header, tag keys and values for the render.  Flag bits
 * 0-1 are telem_promname_parse's flags (BARE, OWN); with bit 7 the rest
 * of the input is also handed to telem_prom_render() as a snapshot block
 * (which must refuse what is not one).  Oracles beyond the sanitizers:
 *   - a parsed name's metric and keys are valid by the module's own
 *     checks, and what telem_promname_format() writes of it parses back
 *     to the same metric and labels;
 *   - mapped Prometheus names hold only [a-zA-Z0-9_:] (labels: no ':')
 *     and do not start with a digit;
 *   - a snapshot of a series named by the input renders in both formats.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "telem_error.h"
#include "telem_prom.h"
#include "telem_promname.h"

static void
s_round_trip(const telem_promname_t *p, unsigned flags)
{
    FZ_CHECK(telem_promname_metric_ok(p->metric));
    for (uint32_t i = 0; i < p->nlabels; i++)
        FZ_CHECK(p->labels[i].value[0] != '\0'
                 && (telem_promname_label_ok(p->labels[i].key)
                     || (flags & TELEM_PROMNAME_OWN)));
    static char text[2 * TELEM_PROMNAME_TEXT_MAX];
    int n = telem_promname_format(text, sizeof text, p->metric, p->labels,
                                  p->nlabels, NULL);
    FZ_CHECK(n > 0);
    static telem_promname_t q;
    char why[128];
    int rc = telem_promname_parse(text, flags & TELEM_PROMNAME_OWN, &q, why,
                                  sizeof why);
    if (rc != 0) {
        fprintf(stderr, "fuzz_promname: '%s' does not parse back: %s\n", text,
                why);
        abort();
    }
    FZ_CHECK(strcmp(q.metric, p->metric) == 0 && q.nlabels == p->nlabels);
    for (uint32_t i = 0; i < p->nlabels; i++)
        FZ_CHECK(strcmp(q.labels[i].key, p->labels[i].key) == 0
                 && strcmp(q.labels[i].value, p->labels[i].value) == 0);
}

static void
s_mapped(const char *name, int label)
{
    char out[2 * TELEM_NAME_MAX + 16];
    int n = label ? telem_prom_label_name(name, out, sizeof out)
                  : telem_prom_metric_name(name, out, sizeof out);
    if (n < 0)
        return;
    FZ_CHECK((size_t) n == strlen(out) && n > 0);
    FZ_CHECK(!isdigit((unsigned char) out[0]));
    for (int i = 0; i < n; i++)
        FZ_CHECK(isalnum((unsigned char) out[i]) || out[i] == '_'
                 || (!label && out[i] == ':'));
}

/* A one-series snapshot, rendered in both formats. */
static void
s_render(const char *metric, const telem_tag_t *tags, uint32_t ntags)
{
    telem_prom_snap_t *snap = telem_prom_snap_new();
    if (!snap)
        abort();
    int64_t ts = INT64_C(1700000000000000000);
    double v = 42.5;
    telem_series_t s = { .metric = metric, .tags = tags, .ntags = ntags,
                         .type = TELEM_METRIC_COUNTER, .unit = "bytes",
                         .doc = metric, .ts = &ts, .values = &v, .npoints = 1 };
    void *block = NULL;
    size_t len = 0;
    if (telem_prom_snap_add(snap, &s, true) == 0
        && telem_prom_snap_take(snap, &block, &len) == 0) {
        for (int f = 0; f < 2; f++) {
            telem_prom_opts_t o = { (telem_prom_format_t) f, f == 1 };
            char *out = NULL;
            size_t olen = 0;
            FZ_CHECK(telem_prom_render(block, len, &o, &out, &olen, NULL) == 0);
            FZ_CHECK(out && strlen(out) == olen);
            free(out);
        }
    }
    free(block);
    telem_prom_snap_destroy(&snap);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in_t in = { data, size };
    uint8_t flags = fz_u8(&in);
    const uint8_t *rest = in.p;
    size_t nrest = in.n;
    char *text = fz_token(&in, '\n'), *accept = fz_token(&in, '\n');
    char *enc = fz_token(&in, '\n'), *k = fz_token(&in, '\n');
    char *v = fz_token(&in, '\n');
    if (!text || !accept || !enc || !k || !v)
        abort();
    static telem_promname_t p;
    unsigned pf = flags & (TELEM_PROMNAME_BARE | TELEM_PROMNAME_OWN);
    if (telem_promname_parse(text, pf, &p, NULL, 0) == 0)
        s_round_trip(&p, pf);
    s_mapped(text, 0);
    s_mapped(k, 1);
    telem_prom_format_t fmt = telem_prom_negotiate(accept);
    FZ_CHECK(fmt == TELEM_PROM_TEXT || fmt == TELEM_PROM_OPENMETRICS);
    telem_prom_gzip_accepted(enc);
    telem_tag_t tag = { k, v };
    s_render(text, &tag, *k && *v ? 1 : 0);
    if (flags & 0x80) {       /* a block comes malloc'd, so aligned */
        char *out = NULL, *block = malloc(nrest ? nrest : 1);
        size_t olen = 0;
        if (!block)
            abort();
        memcpy(block, rest, nrest);
        if (telem_prom_render(block, nrest, NULL, &out, &olen, NULL) == 0)
            FZ_CHECK(out && strlen(out) == olen);
        free(out);
        free(block);
    }
    free(text);
    free(accept);
    free(enc);
    free(k);
    free(v);
    return 0;
}
