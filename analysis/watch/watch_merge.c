/* watch_merge.c - one device, one event: what two detectors say of the
 * same GPU is merged (watch.h, watch_merge_*).
 *
 * slowgpu times a device against its peers; gpu-health reads its health
 * fields.  A slow GPU that also throttles is one fault seen twice, and
 * must be named once with both reasons, so that a restart line (the first
 * act event's sentence) says why.  Two rules, on events that name a
 * device (node-level events pass untouched):
 *   - events of one tick from different detectors that share a device
 *     become one event: detectors joined with '+', the higher severity,
 *     the sentences joined with "; also ...";
 *   - an event on a device that another detector named within the last
 *     WATCH_MERGE_WINDOW_S seconds carries that earlier reason too
 *     ("; also LABEL earlier: ..."), and both labels.
 * The recent events are kept in a ring of WATCH_MERGE_RECENT.
 */
#include "watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_why.h"

/* A merged event's labels and text: at most what a restart request's
 * reason carries (telem_proto_watch.h), so the restart line gets all of
 * it; a clause that would go past it is left out whole, and counted in
 * the text's "; and N more" (telem_why_clause()). */
#define S_TEXT_MAX TELEM_TEXT_MAX

typedef struct {
    char *node, *device, *label, *text;     /* one allocation: node */
    int64_t ns;
} s_recent_t;

struct watch_merge {
    s_recent_t ring[WATCH_MERGE_RECENT];
    size_t pos;
};

watch_merge_t *
watch_merge_new(void)
{
    return calloc(1, sizeof(watch_merge_t));
}

void
watch_merge_destroy(watch_merge_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    for (size_t i = 0; i < WATCH_MERGE_RECENT; i++)
        free((*self_p)->ring[i].node);
    free(*self_p);
    *self_p = NULL;
}

/* Whether a and b name a device in common. */
static int
s_share(const det_event_t *a, const char *node, const char *device)
{
    for (size_t i = 0; i < a->ndevices; i++)
        if (*a->devices[i].device && strcmp(a->devices[i].node, node) == 0
            && strcmp(a->devices[i].device, device) == 0)
            return 1;
    return 0;
}

static int
s_share_event(const det_event_t *a, const det_event_t *b)
{
    for (size_t i = 0; i < b->ndevices; i++)
        if (s_share(a, b->devices[i].node, b->devices[i].device))
            return 1;
    return 0;
}

/* Whether label is one of the '+'-joined labels of list. */
static int
s_has_label(const char *list, const char *label)
{
    size_t len = strlen(label);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, "+");
        if (n == len && strncmp(p, label, n) == 0)
            return 1;
        p += n + (p[n] == '+');
    }
    return 0;
}

/* Adds detector `label` to the labels and its sentence as a clause of the
 * text ("; also LABEL[ earlier]: TEXT"); a clause that does not fit whole
 * is counted in *dropped, never cut. */
static void
s_also(char *label, char *text, char *clause, const char *det,
       const char *when, const char *what, unsigned *dropped)
{
    unsigned no_label = 0;
    telem_why_clause(label, S_TEXT_MAX, "+", det, &no_label);
    snprintf(clause, S_TEXT_MAX, "also %s%s: %s", det, when, what);
    telem_why_clause(text, S_TEXT_MAX, "; ", clause, dropped);
}

/* The events of this tick merged into out (see the top of the file). */
static int
s_merge_tick(const watch_merge_t *self, const det_events_t *in,
             det_events_t *out, int64_t now_ns)
{
    size_t n = det_events_count(in);
    char *used = calloc(n ? n : 1, 1);
    char *label = malloc(S_TEXT_MAX), *text = malloc(S_TEXT_MAX);
    char *clause = malloc(S_TEXT_MAX);
    int rc = used && label && text && clause ? 0 : TELEM_ENOMEM;
    for (size_t i = 0; i < n && !rc; i++) {
        if (used[i])
            continue;
        det_event_t e = *det_events_get(in, i);
        unsigned dropped = 0;
        label[0] = text[0] = '\0';
        telem_why_clause(label, S_TEXT_MAX, "+", e.detector, NULL);
        telem_why_clause(text, S_TEXT_MAX, "; ", e.text, NULL);
        for (size_t j = i + 1; j < n && e.ndevices; j++) {
            const det_event_t *o = det_events_get(in, j);
            if (used[j] || s_has_label(label, o->detector) ||
                !s_share_event(&e, o))
                continue;
            used[j] = 1;
            s_also(label, text, clause, o->detector, "", o->text, &dropped);
            if (o->severity > e.severity)
                e.severity = o->severity;
        }
        for (size_t k = 0; k < WATCH_MERGE_RECENT && e.ndevices; k++) {
            const s_recent_t *r = &self->ring[k];
            if (!r->node || now_ns - r->ns > WATCH_MERGE_WINDOW_S * 1000000000LL
                || s_has_label(label, r->label)
                || !s_share(&e, r->node, r->device))
                continue;
            s_also(label, text, clause, r->label, " earlier", r->text,
                   &dropped);
        }
        telem_why_end(text, S_TEXT_MAX, &dropped);
        e.detector = label;
        e.text = text;
        rc = det_events_add(out, &e);
    }
    free(used);
    free(label);
    free(text);
    free(clause);
    return rc;
}

/* Keeps this tick's device events for the ticks to come. */
static void
s_remember(watch_merge_t *self, const det_events_t *in, int64_t now_ns)
{
    for (size_t i = 0; i < det_events_count(in); i++) {
        const det_event_t *e = det_events_get(in, i);
        for (size_t d = 0; d < e->ndevices; d++) {
            if (!*e->devices[d].device)
                continue;
            const char *parts[] = { e->devices[d].node, e->devices[d].device,
                                    e->detector, e->text };
            size_t len[4], total = 0;
            for (size_t k = 0; k < 4; k++)
                total += (len[k] = strlen(parts[k]) + 1);
            char *m = malloc(total);
            if (!m)
                return;                  /* a merge missed, nothing worse */
            s_recent_t *r = &self->ring[self->pos];
            free(r->node);
            char *p = m, **dst[] = { &r->node, &r->device, &r->label,
                                     &r->text };
            for (size_t k = 0; k < 4; k++) {
                *dst[k] = memcpy(p, parts[k], len[k]);
                p += len[k];
            }
            r->ns = now_ns;
            self->pos = (self->pos + 1) % WATCH_MERGE_RECENT;
        }
    }
}

int
watch_merge_apply(watch_merge_t *self, det_events_t **events, int64_t now_ns)
{
    det_events_t *out = det_events_new();
    if (!out)
        return TELEM_ENOMEM;
    int rc = s_merge_tick(self, *events, out, now_ns);
    if (rc) {
        det_events_destroy(&out);
        return rc;
    }
    s_remember(self, *events, now_ns);
    det_events_destroy(events);
    *events = out;
    return 0;
}
