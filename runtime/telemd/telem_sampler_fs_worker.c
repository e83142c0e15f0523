/* telem_sampler_fs_worker.c - statvfs() batches with a deadline on a
 * helper thread (see telem_sampler_fs_worker.h).
 *
 * The worker is shared by two owners, the caller and its thread, and freed
 * by whichever lets go last: an abandoned worker's thread may be blocked
 * in statvfs for minutes, or for ever, after the sampler moved on.
 */
#include "telem_sampler_fs_worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "telem_grow.h"
#include "telem_time.h"

#define S_PATHS_MAX 4096        /* mounts in one batch */
#define S_PATHBUF_MAX (1u << 20)

struct tfs_worker_t {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* CLOCK_MONOTONIC; both directions */
    pthread_t thread;
    int refs;                   /* the caller and the thread */
    bool has_batch, quit, abandoned, returned;
    size_t n, done;             /* batch size; results ready */
    char *pathbuf;              /* the batch's paths, NUL-separated */
    size_t pathcap;
    size_t *offsets;            /* path i at pathbuf + offsets[i] */
    tfs_result_t *res;
    size_t cap;                 /* of offsets and res */
};

static void
s_free(tfs_worker_t *w)
{
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->pathbuf);
    free(w->offsets);
    free(w->res);
    free(w);
}

/* Drops one reference, with w->mu held; frees on the last. */
static void
s_unref_locked(tfs_worker_t *w)
{
    bool last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last)
        s_free(w);
}

static void
s_stat(const char *path, tfs_result_t *r)
{
    struct statvfs st;
    memset(r, 0, sizeof *r);
    if (statvfs(path, &st) != 0) {
        r->rc = -errno;
        return;
    }
    uint64_t bs = st.f_frsize ? st.f_frsize : st.f_bsize;
    r->size = (uint64_t) st.f_blocks * bs;
    r->free = (uint64_t) st.f_bfree * bs;
    r->avail = (uint64_t) st.f_bavail * bs;
    r->files = st.f_files;
    r->files_free = st.f_ffree;
}

static void *
s_main(void *arg)
{
    tfs_worker_t *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->has_batch && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->quit)
            break;
        while (w->done < w->n && !w->abandoned) {
            size_t i = w->done;
            const char *path = w->pathbuf + w->offsets[i];
            tfs_result_t r;
            pthread_mutex_unlock(&w->mu);
            s_stat(path, &r);
            pthread_mutex_lock(&w->mu);
            w->res[i] = r;
            w->done++;
            pthread_cond_broadcast(&w->cv);
        }
        w->has_batch = false;
        if (w->abandoned)
            break;
    }
    w->returned = true;
    s_unref_locked(w);
    return NULL;
}

tfs_worker_t *
tfs_worker_new(void)
{
    tfs_worker_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) {
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    w->refs = 2;
    if (pthread_create(&w->thread, NULL, s_main, w) != 0) {
        s_free(w);
        return NULL;
    }
    return w;
}

/* Copies the paths into the worker's buffers (the worker is idle). */
static int
s_load(tfs_worker_t *w, const char *const *paths, size_t n)
{
    if (n > S_PATHS_MAX)
        return -1;
    if (n > w->cap) {
        size_t cap = w->cap;
        if (telem_grow((void **) &w->offsets, &cap, n, sizeof *w->offsets, 16))
            return -1;
        cap = w->cap;
        if (telem_grow((void **) &w->res, &cap, n, sizeof *w->res, 16))
            return -1;
        w->cap = cap;
    }
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(paths[i]) + 1;
        if (len + l > S_PATHBUF_MAX
            || telem_grow((void **) &w->pathbuf, &w->pathcap, len + l, 1, 4096))
            return -1;
        memcpy(w->pathbuf + len, paths[i], l);
        w->offsets[i] = len;
        len += l;
    }
    w->n = n;
    w->done = 0;
    return 0;
}

static struct timespec
s_deadline(int64_t in_ns)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t t = (int64_t) now.tv_sec * TELEM_NS_PER_SEC + now.tv_nsec + in_ns;
    return (struct timespec) {(time_t) (t / TELEM_NS_PER_SEC),
                              (long) (t % TELEM_NS_PER_SEC)};
}

long
tfs_worker_run(tfs_worker_t **worker_p, const char *const *paths, size_t n,
               int64_t deadline_ns, tfs_result_t *res, tfs_worker_t **stuck_p)
{
    tfs_worker_t *w = *worker_p;
    *stuck_p = NULL;
    pthread_mutex_lock(&w->mu);
    if (s_load(w, paths, n) != 0) {
        pthread_mutex_unlock(&w->mu);
        return -1;
    }
    w->has_batch = true;
    pthread_cond_broadcast(&w->cv);
    size_t seen = 0;
    struct timespec until = s_deadline(deadline_ns);
    while (w->done < n) {
        int rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
        if (w->done != seen) {
            seen = w->done;
            until = s_deadline(deadline_ns);
        }
        else if (rc == ETIMEDOUT) {
            w->abandoned = true;
            break;
        }
    }
    seen = w->done;
    memcpy(res, w->res, seen * sizeof *res);
    bool abandoned = w->abandoned;
    pthread_mutex_unlock(&w->mu);
    if (abandoned) {
        pthread_detach(w->thread);
        *stuck_p = w;
        *worker_p = NULL;
    }
    return (long) seen;
}

bool
tfs_worker_returned(tfs_worker_t *w)
{
    pthread_mutex_lock(&w->mu);
    bool r = w->returned;
    pthread_mutex_unlock(&w->mu);
    return r;
}

void
tfs_worker_destroy(tfs_worker_t **worker_p)
{
    if (!worker_p || !*worker_p)
        return;
    tfs_worker_t *w = *worker_p;
    *worker_p = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->abandoned) {         /* its thread is detached: let it go */
        s_unref_locked(w);
        return;
    }
    w->quit = true;
    pthread_cond_broadcast(&w->cv);
    pthread_t t = w->thread;
    pthread_mutex_unlock(&w->mu);
    pthread_join(t, NULL);      /* idle: it returns at once */
    pthread_mutex_lock(&w->mu);
    s_unref_locked(w);
}
