/* watch_input.c - query results turned into detector input (watch.h).
 *
 * The input holds det_series_t views of the series in ac results, and
 * their tags: points are not copied, so the results must outlive the
 * input's use.  The core (watch.c) calls this file, never the reverse.
 */
#include "watch.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"

struct watch_input {
    det_series_t *v[2];        /* windowed, latest */
    size_t n[2], cap[2];
    size_t *tag_at[2];         /* first tag of each series in tags */
    det_tag_t *tags;
    size_t ntags, captags;
};

watch_input_t *
watch_input_new(void)
{
    return calloc(1, sizeof(watch_input_t));
}

void
watch_input_destroy(watch_input_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    watch_input_t *self = *self_p;
    for (int k = 0; k < 2; k++) {
        free(self->v[k]);
        free(self->tag_at[k]);
    }
    free(self->tags);
    free(self);
    *self_p = NULL;
}

void
watch_input_clear(watch_input_t *self)
{
    self->n[0] = self->n[1] = 0;
    self->ntags = 0;
}

int
watch_input_add(watch_input_t *self, const char *node,
                const telem_series_t *s, int latest)
{
    int k = latest ? 1 : 0;
    size_t cap = self->cap[k];
    if (telem_grow((void **) &self->v[k], &self->cap[k], self->n[k] + 1,
                   sizeof(det_series_t), 64) ||
        telem_grow((void **) &self->tag_at[k], &cap, self->n[k] + 1,
                   sizeof(size_t), 64) ||
        telem_grow((void **) &self->tags, &self->captags,
                   self->ntags + s->ntags, sizeof(det_tag_t), 64))
        return TELEM_ENOMEM;
    const char *device = NULL;
    for (uint32_t j = 0; j < s->ntags; j++) {
        self->tags[self->ntags + j] = (det_tag_t) { s->tags[j].key,
                                                    s->tags[j].value };
        if (strcmp(s->tags[j].key, "gpu") == 0)
            device = s->tags[j].value;
    }
    self->tag_at[k][self->n[k]] = self->ntags;
    self->ntags += s->ntags;
    self->v[k][self->n[k]++] = (det_series_t) {
        .node = node, .device = device, .metric = s->metric,
        .ntags = s->ntags, .ts = s->ts, .val = s->values, .n = s->npoints,
    };
    return 0;
}

void
watch_input_fill(watch_input_t *self, det_input_t *in)
{
    for (int k = 0; k < 2; k++)     /* tags may have moved: point now */
        for (size_t i = 0; i < self->n[k]; i++)
            self->v[k][i].tags = self->v[k][i].ntags
                                     ? self->tags + self->tag_at[k][i] : NULL;
    in->series = self->v[0];
    in->nseries = self->n[0];
    in->latest = self->v[1];
    in->nlatest = self->n[1];
}
