/* telem_hist.c - building the history index: files, nodes, series and
 * where each kept block version lies; metas and snapshots per node (job
 * events: telem_hist_notes.c).
 *
 * A block's bytes are never kept: adding a file keeps 48 bytes per block
 * version (telem_hist_int.h) and the query half reads blocks again from
 * the files.  Versions of one block (same node, key, first_seq and first
 * point time) are resolved as they are added, so memory follows the
 * blocks kept, not the records read (an open block written at every
 * flush costs one entry, not one per flush).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_hist_int.h"

telem_hist_t *
telem_hist_new(int *err)
{
    telem_hist_t *self = calloc(1, sizeof *self);
    if (!self) {
        if (err)
            *err = TELEM_ENOMEM;
        return NULL;
    }
    self->st.first_ts = INT64_MAX;
    self->st.last_ts = INT64_MIN;
    return self;
}

static void
s_node_free(hist_node_t *n)
{
    for (size_t i = 0; i < n->metrics.n; i++) {
        free((char *) n->metas[i].unit);
        free((char *) n->metas[i].doc);
    }
    free(n->metas);
    seg_keys_clear(&n->metrics);
    free(n->snap_json);
    free(n->name);
}

void
telem_hist_destroy(telem_hist_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_hist_t *self = *self_p;
    *self_p = NULL;
    for (size_t i = 0; i < self->nfiles; i++) {
        close(self->files[i].fd);
        free(self->files[i].path);
    }
    hist_notes_free(self);
    free(self->files);
    for (size_t i = 0; i < self->node_keys.n; i++)
        s_node_free(&self->nodes[i]);
    free(self->nodes);
    free(self->node_order);
    for (size_t i = 0; i < self->ser_keys.n; i++)
        free(self->ser[i].blk);
    free(self->ser);
    free(self->ser_order);
    seg_keys_clear(&self->node_keys);
    seg_keys_clear(&self->ser_keys);
    for (size_t i = 0; i < self->ngrave; i++)
        free(self->graveyard[i]);
    free(self->graveyard);
    seg_buf_free(&self->rec);
    free(self->ts);
    free(self->val);
    free(self->src);
    free(self->ts2);
    free(self->val2);
    free(self->src2);
    free(self);
}

/* The number of node name, made if new; negative on error. */
static long long
s_node(telem_hist_t *self, const char *name)
{
    size_t len = strlen(name) + 1;
    long long i = seg_keys_find(&self->node_keys, name, len);
    if (i >= 0)
        return i;
    if (self->node_keys.n + 1 > self->nodes_cap &&
        telem_grow((void **) &self->nodes, &self->nodes_cap,
                   self->node_keys.n + 1, sizeof *self->nodes, 8))
        return TELEM_ENOMEM;
    char *copy = strdup(name);
    if (!copy || (i = seg_keys_add(&self->node_keys, name, len)) < 0) {
        free(copy);
        return TELEM_ENOMEM;
    }
    memset(&self->nodes[i], 0, sizeof self->nodes[i]);
    self->nodes[i].name = copy;
    self->st.nodes++;
    self->dirty = 1;
    return i;
}

/* The series of node+key, made if new; negative on error. */
static long long
s_series(telem_hist_t *self, const char *node, const char *key,
         uint32_t key_len, int counter)
{
    long long nd = s_node(self, node);
    if (nd < 0)
        return nd;
    char stack[1024];
    size_t klen = 4 + (size_t) key_len;
    char *k = klen <= sizeof stack ? stack : malloc(klen);
    if (!k)
        return TELEM_ENOMEM;
    uint32_t n32 = (uint32_t) nd;
    memcpy(k, &n32, 4);
    memcpy(k + 4, key, key_len);
    long long i = seg_keys_find(&self->ser_keys, k, klen);
    if (i < 0) {
        if (self->ser_keys.n + 1 > self->ser_cap &&
            telem_grow((void **) &self->ser, &self->ser_cap,
                       self->ser_keys.n + 1, sizeof *self->ser, 64))
            i = TELEM_ENOMEM;
        else if ((i = seg_keys_add(&self->ser_keys, k, klen)) >= 0) {
            hist_ser_t *s = &self->ser[i];
            memset(s, 0, sizeof *s);
            s->node = n32;
            s->key = self->ser_keys.keys[i] + 4;
            s->key_len = key_len;
            s->counter = counter;
            self->st.series++;
            self->dirty = 1;
        }
    }
    if (k != stack)
        free(k);
    return i;
}

/* 1 if a is a later version than b (closed first, then more points, then
 * read later). */
static int
s_newer(const hist_blk_t *a, const hist_blk_t *b)
{
    if (a->closed != b->closed)
        return a->closed > b->closed;
    if (a->npoints != b->npoints)
        return a->npoints > b->npoints;
    if (a->file != b->file)
        return a->file > b->file;
    return a->offset > b->offset;
}

static void
s_count(telem_hist_t *self, const hist_blk_t *b, int sign)
{
    if (sign > 0) {
        self->st.blocks++;
        self->st.points += b->npoints;
        if (b->first_ts < self->st.first_ts)
            self->st.first_ts = b->first_ts;
        if (b->last_ts > self->st.last_ts)
            self->st.last_ts = b->last_ts;
    } else {
        self->st.blocks--;
        self->st.points -= b->npoints;
    }
}

static int
s_add_block(telem_hist_t *self, const char *node, const char *key,
            uint32_t key_len, int counter, const hist_blk_t *b)
{
    long long i = s_series(self, node, key, key_len, counter);
    if (i < 0)
        return (int) i;
    hist_ser_t *s = &self->ser[i];
    if (counter)
        s->counter = 1;
    for (uint32_t j = s->nblk; j-- > 0;) {
        hist_blk_t *o = &s->blk[j];
        if (o->first_seq != b->first_seq || o->first_ts != b->first_ts)
            continue;
        self->st.versions_dropped++;
        if (s_newer(b, o)) {
            s_count(self, o, -1);
            *o = *b;
            s_count(self, o, 1);
            s->sorted = 0;
        }
        return 0;
    }
    if (s->nblk + 1 > s->cap) {
        size_t cap = s->cap;
        if (telem_grow((void **) &s->blk, &cap, s->nblk + 1, sizeof *s->blk,
                       4) || cap > UINT32_MAX)
            return TELEM_ENOMEM;
        s->cap = (uint32_t) cap;
    }
    if (s->nblk > 0) {
        const hist_blk_t *l = &s->blk[s->nblk - 1];
        if (l->first_seq > b->first_seq)
            s->sorted = 0;
    } else {
        s->sorted = 1;
    }
    s->blk[s->nblk++] = *b;
    s_count(self, b, 1);
    return 0;
}

static int
s_set_meta(telem_hist_t *self, const char *node, const telem_meta_t *m)
{
    long long nd = s_node(self, node);
    if (nd < 0)
        return (int) nd;
    hist_node_t *n = &self->nodes[nd];
    size_t mlen = strlen(m->metric) + 1;
    char *unit = strdup(m->unit), *doc = strdup(m->doc);
    long long i = seg_keys_find(&n->metrics, m->metric, mlen);
    if (!unit || !doc)
        goto nomem;
    if (i < 0) {
        if (n->metrics.n + 1 > n->meta_cap &&
            telem_grow((void **) &n->metas, &n->meta_cap, n->metrics.n + 1,
                       sizeof *n->metas, 8))
            goto nomem;
        if ((i = seg_keys_add(&n->metrics, m->metric, mlen)) < 0)
            goto nomem;
    } else {
        free((char *) n->metas[i].unit);
        free((char *) n->metas[i].doc);
    }
    n->metas[i].metric = n->metrics.keys[i];
    n->metas[i].type = m->type;
    n->metas[i].unit = unit;
    n->metas[i].doc = doc;
    return 0;
nomem:
    free(unit);
    free(doc);
    return TELEM_ENOMEM;
}

static int
s_set_snapshot(telem_hist_t *self, const char *node, uint32_t file,
               uint64_t offset, int64_t created)
{
    long long nd = s_node(self, node);
    if (nd < 0)
        return (int) nd;
    hist_node_t *n = &self->nodes[nd];
    if (n->has_snap && n->snap_created > created)
        return 0;
    if (n->snap_json) {           /* earlier answers stay valid */
        if (self->ngrave + 1 > self->grave_cap &&
            telem_grow((void **) &self->graveyard, &self->grave_cap,
                       self->ngrave + 1, sizeof *self->graveyard, 4))
            return TELEM_ENOMEM;
        self->graveyard[self->ngrave++] = n->snap_json;
        n->snap_json = NULL;
    }
    n->has_snap = 1;
    n->snap_file = file;
    n->snap_offset = offset;
    n->snap_created = created;
    return 0;
}

typedef struct {
    telem_hist_t *self;
    uint32_t file;
} s_add_t;

static int
s_on_record(void *arg, const telem_seg_rec_t *r)
{
    s_add_t *a = arg;
    hist_blk_t b;
    switch (r->kind) {
    case TELEM_SEG_REC_BLOCK:
        if (!r->chunk.key)
            return 0;           /* read alone (an index's offset) */
        b.offset = r->offset;
        b.size = r->size;
        b.first_seq = r->chunk.first_seq;
        b.first_ts = r->first_ts;
        b.last_ts = r->last_ts;
        b.npoints = r->npoints;
        b.closed = r->chunk.closed ? 1 : 0;
        b.file = a->file;
        return s_add_block(a->self, r->node, r->chunk.key, r->chunk.key_len,
                           r->chunk.counter, &b);
    case TELEM_SEG_REC_META:
        return s_set_meta(a->self, r->node, &r->meta);
    case TELEM_SEG_REC_SNAPSHOT:
        return s_set_snapshot(a->self, r->node, a->file, r->offset,
                              r->created_ns);
    case TELEM_SEG_REC_ANNOTATION:
        return hist_note_add(a->self, r);
    default:
        return 0;
    }
}

static int
s_on_index(void *arg, const telem_seg_iseries_t *is, uint64_t other)
{
    s_add_t *a = arg;
    if (!is)
        return telem_seg_read_at(a->self->files[a->file].fd, other,
                                 s_on_record, a) == TELEM_ENOMEM
                   ? TELEM_ENOMEM
                   : 0;
    for (uint32_t i = 0; i < is->nblocks; i++) {
        const telem_seg_iblock_t *ib = &is->blocks[i];
        hist_blk_t b = {ib->offset, ib->first_seq, ib->first_ts, ib->last_ts,
                        a->file,    ib->size,      ib->npoints, (uint32_t) ib->closed};
        int rc = s_add_block(a->self, is->node, is->key, is->key_len,
                             is->counter, &b);
        if (rc)
            return rc;
    }
    return 0;
}

static void
s_damage_sum(telem_seg_damage_t *sum, const telem_seg_damage_t *d)
{
    sum->records += d->records;
    sum->orphans += d->orphans;
    sum->bad += d->bad;
    sum->bytes_skipped += d->bytes_skipped;
    sum->torn_tail |= d->torn_tail;
    sum->no_index |= d->no_index;
    for (uint32_t i = 0; i < d->nlist && sum->nlist < TELEM_SEG_DAMAGE_LIST;
         i++)
        sum->list[sum->nlist++] = d->list[i];
}

/* Opens path and records it as file number *file. */
static int
s_file_open(telem_hist_t *self, const char *path, uint32_t *file)
{
    if (self->nfiles + 1 > self->files_cap &&
        telem_grow((void **) &self->files, &self->files_cap, self->nfiles + 1,
                   sizeof *self->files, 8))
        return TELEM_ENOMEM;
    char *copy = strdup(path);
    int fd = copy ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) {
        int rc = !copy ? TELEM_ENOMEM
                       : errno == ENOENT ? TELEM_ENOTFOUND : TELEM_EIO;
        free(copy);
        return rc;
    }
    self->files[self->nfiles].fd = fd;
    self->files[self->nfiles].path = copy;
    *file = (uint32_t) self->nfiles++;
    return 0;
}

int
telem_hist_add_file(telem_hist_t *self, const char *path,
                    telem_seg_damage_t *damage)
{
    telem_seg_info_t info;
    telem_seg_damage_t d;
    memset(&d, 0, sizeof d);
    if (!self || !path)
        return TELEM_EINVAL;
    int rc = telem_seg_info(path, &info);
    s_add_t a = {self, 0};
    if (rc == 0)
        rc = s_file_open(self, path, &a.file);
    if (rc == 0 && info.kind == TELEM_SEG_FILE_DUMP) {
        rc = telem_seg_read_index(path, s_on_index, &a);
        if (rc == TELEM_ENOTFOUND || rc == TELEM_EPROTO)
            rc = 1;                 /* no usable index: scan */
    } else {
        rc = rc ? rc : 1;
    }
    if (rc == 1)
        rc = telem_seg_read(path, s_on_record, &a, NULL, &d);
    if (rc == TELEM_EPROTO || rc == TELEM_EVERSION)
        self->st.files_refused++;
    if (rc == 0 || rc == TELEM_ENOMEM) {
        self->st.files++;
        self->st.bad += d.bad;
        self->st.bytes_skipped += d.bytes_skipped;
    }
    if (damage)
        *damage = d;
    return rc;
}

static int
s_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

static int
s_wanted(const char *name)
{
    size_t n = strlen(name), s1 = strlen(TELEM_SEG_SUFFIX),
           s2 = strlen(TELEM_DUMP_SUFFIX);
    return (n > s1 && strcmp(name + n - s1, TELEM_SEG_SUFFIX) == 0) ||
           (n > s2 && strcmp(name + n - s2, TELEM_DUMP_SUFFIX) == 0);
}

/* The names of dir's wanted files, sorted. */
static int
s_list(const char *dir, char ***names, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT || errno == ENOTDIR ? TELEM_ENOTFOUND
                                                   : TELEM_EIO;
    size_t cap = 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        if (!s_wanted(e->d_name))
            continue;
        char *name = strdup(e->d_name);
        if (!name || (*n + 1 > cap &&
                      telem_grow((void **) names, &cap, *n + 1,
                                 sizeof **names, 16))) {
            free(name);
            rc = TELEM_ENOMEM;
        } else {
            (*names)[(*n)++] = name;
        }
    }
    closedir(d);
    if (*n > 1)
        qsort(*names, *n, sizeof **names, s_name_cmp);
    return rc;
}

int
telem_hist_add_dir(telem_hist_t *self, const char *dir,
                   telem_seg_damage_t *damage)
{
    char **names = NULL;
    size_t n = 0;
    if (damage)
        memset(damage, 0, sizeof *damage);
    if (!self || !dir)
        return TELEM_EINVAL;
    int rc = s_list(dir, &names, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char path[4096];
        telem_seg_damage_t d;
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >=
            (int) sizeof path)
            continue;
        int r = telem_hist_add_file(self, path, &d);
        if (r == TELEM_ENOMEM)
            rc = r;
        else if (r != 0 && r != TELEM_EPROTO && r != TELEM_EVERSION)
            self->st.files_refused++;
        if (damage)
            s_damage_sum(damage, &d);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

uint32_t
telem_hist_nnodes(const telem_hist_t *self)
{
    return self ? (uint32_t) self->node_keys.n : 0;
}

const char *
telem_hist_node(const telem_hist_t *self, uint32_t i)
{
    if (!self || i >= self->node_keys.n ||
        hist_prepare((telem_hist_t *) self) != 0)
        return NULL;
    return self->nodes[self->node_order[i]].name;
}

typedef struct {
    hist_node_t *n;
    int rc;
} s_snap_t;

static int
s_on_snap(void *arg, const telem_seg_rec_t *r)
{
    s_snap_t *a = arg;
    if (r->kind != TELEM_SEG_REC_SNAPSHOT)
        return 0;
    a->n->snap_json = malloc(r->json_len + 1);
    if (!a->n->snap_json)
        return a->rc = TELEM_ENOMEM;
    memcpy(a->n->snap_json, r->json, r->json_len);
    a->n->snap_json[r->json_len] = '\0';
    a->n->snap_len = r->json_len;
    return 0;
}

int
telem_hist_snapshot(telem_hist_t *self, const char *node, const char **json,
                    size_t *len, int64_t *created_ns)
{
    if (!self || !node || !json || !len)
        return TELEM_EINVAL;
    long long nd = seg_keys_find(&self->node_keys, node, strlen(node) + 1);
    if (nd < 0 || !self->nodes[nd].has_snap)
        return TELEM_ENOTFOUND;
    hist_node_t *n = &self->nodes[nd];
    if (!n->snap_json) {
        s_snap_t a = {n, 0};
        int rc = telem_seg_read_at(self->files[n->snap_file].fd,
                                   n->snap_offset, s_on_snap, &a);
        if (rc == 0 && !n->snap_json)
            rc = TELEM_EIO;
        if (rc)
            return rc == TELEM_ENOMEM ? rc : TELEM_EIO;
    }
    *json = n->snap_json;
    *len = n->snap_len;
    if (created_ns)
        *created_ns = n->snap_created;
    return 0;
}

int
telem_hist_meta_walk(const telem_hist_t *self, const char *node,
                     int (*fn)(void *arg, const char *node,
                               const telem_meta_t *m),
                     void *arg)
{
    if (!self || !fn)
        return TELEM_EINVAL;
    for (size_t i = 0; i < self->node_keys.n; i++) {
        const hist_node_t *n = &self->nodes[i];
        if (node && strcmp(node, n->name) != 0)
            continue;
        for (size_t j = 0; j < n->metrics.n; j++) {
            int rc = fn(arg, n->name, &n->metas[j]);
            if (rc)
                return rc;
        }
    }
    return 0;
}

void
telem_hist_stats(const telem_hist_t *self, telem_hist_stats_t *out)
{
    if (self && out)
        *out = self->st;
}

const telem_meta_t *
hist_meta(const telem_hist_t *self, uint32_t node, const char *metric)
{
    const hist_node_t *n = &self->nodes[node];
    long long i = seg_keys_find(&n->metrics, metric, strlen(metric) + 1);
    return i < 0 ? NULL : &n->metas[i];
}
