/* telem_hist_notes.c - the job events (ANNOTATION records) of a history:
 * kept as copies, sorted and merged on demand.
 *
 * A dump holds the detector events and restarts of the run directory it
 * was made with; two dumps of one run hold the same ones, so equal
 * records (type, time and text) are kept once.  They are few (the run
 * directory's readers keep at most 10,000 lines of each file), so they
 * are held in memory, unlike blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "telem_grow.h"
#include "telem_hist_int.h"

int
hist_note_add(telem_hist_t *self, const telem_seg_rec_t *r)
{
    if (self->nnotes + 1 > self->notes_cap &&
        telem_grow((void **) &self->notes, &self->notes_cap,
                   self->nnotes + 1, sizeof *self->notes, 16))
        return TELEM_ENOMEM;
    char *json = malloc(r->json_len + 1);
    if (!json)
        return TELEM_ENOMEM;
    memcpy(json, r->json, r->json_len);
    json[r->json_len] = '\0';
    self->notes[self->nnotes++] = (telem_hist_note_t) {
        r->note, r->note_ms, json, r->json_len };
    self->notes_dirty = 1;
    self->st.notes++;
    return 0;
}

void
hist_notes_free(telem_hist_t *self)
{
    for (size_t i = 0; i < self->nnotes; i++)
        free((char *) self->notes[i].json);
    free(self->notes);
    self->notes = NULL;
    self->nnotes = self->notes_cap = 0;
}

static int
s_cmp(const void *a, const void *b)
{
    const telem_hist_note_t *x = a, *y = b;
    if (x->time_ms != y->time_ms)
        return x->time_ms < y->time_ms ? -1 : 1;
    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->json, y->json, n);
    return c ? c : x->len < y->len ? -1 : x->len > y->len ? 1 : 0;
}

/* Sorts, and frees every note equal to the one before it. */
static void
s_prepare(telem_hist_t *self)
{
    if (!self->notes_dirty)
        return;
    qsort(self->notes, self->nnotes, sizeof *self->notes, s_cmp);
    size_t k = 0;
    for (size_t i = 0; i < self->nnotes; i++) {
        if (k && s_cmp(&self->notes[k - 1], &self->notes[i]) == 0) {
            free((char *) self->notes[i].json);
            continue;
        }
        self->notes[k++] = self->notes[i];
    }
    self->nnotes = k;
    self->notes_dirty = 0;
}

uint32_t
telem_hist_nnotes(telem_hist_t *self)
{
    if (!self)
        return 0;
    s_prepare(self);
    return (uint32_t) self->nnotes;
}

const telem_hist_note_t *
telem_hist_note(telem_hist_t *self, uint32_t i)
{
    if (!self)
        return NULL;
    s_prepare(self);
    return i < self->nnotes ? &self->notes[i] : NULL;
}
