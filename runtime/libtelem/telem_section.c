/* telem_section.c - sections (telem.h): the duration of a named region of
 * the program and the step it belongs to, per rank.
 *
 * Names.  A process-wide table holds every section name seen (at most
 * TELEM_SECTION_NAMES), each with its step counter.  An open-addressing
 * index maps a hash of the name's bytes to its entry; lookups read it
 * without a lock (an entry is published with a release store after its
 * name is written, and never changes or goes away), inserts take a mutex.
 * A handle carries its entry's number, so telem_section_end() needs no
 * lookup at all.
 *
 * Recording.  An end takes the monotonic clock (the duration), derives
 * the samples' realtime stamp from it with the realtime-minus-monotonic
 * offset (read again at most once a second, so a clock step shows within
 * a second), advances the step atomically, and
 * writes two samples into the calling thread's batch (telem_int.h).  Their
 * tags (section=<name>, rank=<rank>) are copied into a batch once and
 * shared by both samples and by every later end of that name into the
 * same batch: the thread's section cache remembers where, per batch
 * generation, like telem_push.c's pushed-name cache.  No allocation, no
 * formatting.  A section begun while the level is 0 reads no clock: its
 * end only advances the step and returns 1.
 *
 * Call order: this file calls telem.c through telem_int.h, never the
 * reverse.
 */
#include "telem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"
#include "telem_int.h"
#include "telem_section_gpu.h"
#include "telem_tick.h"
#include "telem_time.h"
#include "telem_types.h"

#define S_INDEX (2 * TELEM_SECTION_NAMES)       /* power of 2 */
#define S_OPEN 0x53454354                       /* "SECT", xor the slot */
#define S_OPEN_TICK 0x5449434b                  /* "TICK", xor the slot */
#define S_RANK_MAX 24
#define S_FILTERED 0x46494c54                   /* "FILT", xor the slot */
#define S_OFFSET_NS INT64_C(1000000000)         /* offset re-read period */

static const char s_seconds[] = "telem_section_seconds";
static const char s_step[] = "telem_section_step";

_Static_assert((S_INDEX & (S_INDEX - 1)) == 0, "index size: power of 2");
_Static_assert(sizeof "section" + TELEM_NAME_MAX + 1 + sizeof "rank"
                   + S_RANK_MAX + sizeof s_seconds + sizeof s_step
                   <= TELEM_Q_ARENA,
               "a section's strings must fit an empty batch");

typedef struct {
    uint64_t hash;
    uint32_t len;
    _Atomic int64_t step;         /* the step the next end records */
    char name[TELEM_NAME_MAX + 1];
} s_slot_t;

static struct {
    pthread_mutex_t mu;           /* inserts */
    _Atomic uint32_t index[S_INDEX];   /* entry + 1, 0 = free */
    _Atomic uint32_t used;        /* entries published */
    s_slot_t slots[TELEM_SECTION_NAMES];
    pthread_once_t once;
    char rank[S_RANK_MAX];
    uint32_t rank_len;
    _Atomic int64_t offset_ns;    /* realtime - monotonic, ... */
    _Atomic int64_t offset_at;    /* ... read at this monotonic time */
} s_sec = { .mu = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT };

static void
s_once(void)
{
    tapi_env_rank(s_sec.rank, sizeof s_sec.rank);
    s_sec.rank_len = (uint32_t) strlen(s_sec.rank);
    tick_init();
}

const char *
telem_section_rank(void)
{
    pthread_once(&s_sec.once, s_once);
    return s_sec.rank;
}

/* The name's length (1-TELEM_NAME_MAX), or 0 when it is not a name. */
static inline size_t
s_len(const char *name)
{
    if (!name)
        return 0;
    size_t len = strnlen(name, TELEM_NAME_MAX + 1);
    return len <= TELEM_NAME_MAX ? len : 0;
}


/* Finds the entry of name; with `add`, adds it when missing.  Returns the
 * entry's number, or TELEM_EFULL / TELEM_ENOTFOUND. */
static int64_t
s_find(const char *name, size_t len, uint64_t h, int add)
{
    for (int locked = 0;; locked = 1) {
        uint32_t i = (uint32_t) h & (S_INDEX - 1);
        for (;;) {
            uint32_t v = atomic_load_explicit(&s_sec.index[i],
                                              memory_order_acquire);
            if (!v)
                break;
            const s_slot_t *e = &s_sec.slots[v - 1];
            if (e->hash == h && e->len == len && memcmp(e->name, name, len) == 0) {
                if (locked)
                    pthread_mutex_unlock(&s_sec.mu);
                return v - 1;
            }
            i = (i + 1) & (S_INDEX - 1);
        }
        if (!add)
            return TELEM_ENOTFOUND;
        if (locked) {
            /* Missing under the lock: add at the free index place i. */
            uint32_t n = atomic_load_explicit(&s_sec.used, memory_order_relaxed);
            int64_t rc = TELEM_EFULL;
            if (n < TELEM_SECTION_NAMES) {
                s_slot_t *e = &s_sec.slots[n];
                e->hash = h;
                e->len = (uint32_t) len;
                memcpy(e->name, name, len);
                e->name[len] = '\0';
                atomic_store_explicit(&e->step, 0, memory_order_relaxed);
                atomic_store_explicit(&s_sec.used, n + 1, memory_order_release);
                atomic_store_explicit(&s_sec.index[i], n + 1,
                                      memory_order_release);
                rc = n;
            }
            pthread_mutex_unlock(&s_sec.mu);
            return rc;
        }
        pthread_mutex_lock(&s_sec.mu);
    }
}

/* The thread's last name: the same pointer holding the same bytes is the
 * same entry, without hashing or probing.  The bytes are compared one by
 * one up to the first difference (the pointer may now hold a shorter
 * text: nothing past its end is read). */
static _Thread_local struct {
    const char *name;
    uint32_t slot;
} s_last __attribute__((tls_model("initial-exec")));

static inline int
s_last_is(const char *name)
{
    if (!name || name != s_last.name)
        return 0;
    const s_slot_t *e = &s_sec.slots[s_last.slot];
    uint32_t i = 0;
    while (i < e->len && name[i] == e->name[i])
        i++;
    return i == e->len && name[i] == '\0';
}

/* The entry of a name given by the user, added when missing; counts a bad
 * name as invalid. */
static int64_t
s_entry(const char *name)
{
    if (s_last_is(name))
        return s_last.slot;
    size_t len = s_len(name);
    if (!len) {
        tapi_count_invalid();
        return TELEM_EINVAL;
    }
    int64_t slot = s_find(name, len, telem_hash_text(name, len), 1);
    if (slot >= 0) {
        s_last.name = name;
        s_last.slot = (uint32_t) slot;
    }
    return slot;
}

telem_section_t
telem_section_begin(const char *name)
{
    telem_section_t h = { 0, 0, 0, 0, 0 };
    int64_t slot = s_entry(name);
    if (slot < 0) {
        h.state = (int32_t) slot;
        return h;
    }
    h.slot = (uint32_t) slot;
    int level = tapi_level();
    if (level < 0) {
        h.state = level;          /* finalized: end returns it */
        return h;
    }
    if (level == 0) {
        h.state = S_FILTERED ^ (int32_t) slot;
        h.t0_ns = 1;
        return h;
    }
    if (tick_ready()) {
        h.state = S_OPEN_TICK ^ (int32_t) slot;
        h.t0_ns = tick_raw();
    } else {
        h.state = S_OPEN ^ (int32_t) slot;
        h.t0_ns = telem_mono_ns();
    }
    return h;
}

/* Realtime ns at monotonic time `mono`: the offset between the clocks,
 * read again when it is a second old.  Two threads may both re-read it;
 * either value is right. */
static int64_t
s_realtime(int64_t mono)
{
    int64_t at = atomic_load_explicit(&s_sec.offset_at, memory_order_relaxed);
    if (at == 0 || mono - at > S_OFFSET_NS || mono < at) {
        int64_t real = telem_now_ns();
        int64_t m = telem_mono_ns();
        atomic_store_explicit(&s_sec.offset_ns, real - m,
                              memory_order_relaxed);
        atomic_store_explicit(&s_sec.offset_at, m, memory_order_relaxed);
        return real - m + mono;
    }
    return mono + atomic_load_explicit(&s_sec.offset_ns, memory_order_relaxed);
}

/* Where the tags of entry `slot` lie in batch b, copying them the first
 * time in this batch; the metric names likewise.  Locked, with room. */
static uint32_t
s_strings(tapi_tbuf_t *tb, telem_qbatch_t *b, uint32_t slot)
{
    tapi_scache_t *sc = tapi_scache(tb);
    if (sc->names_gen != b->gen) {
        sc->names_gen = b->gen;
        sc->seconds = tapi_put(b, s_seconds, sizeof s_seconds - 1);
        sc->step = tapi_put(b, s_step, sizeof s_step - 1);
    }
    tapi_sname_t *e = &sc->slots[slot & (TAPI_SCACHE - 1)];
    if (e->gen != b->gen || e->slot != slot) {
        const s_slot_t *s = &s_sec.slots[slot];
        e->gen = b->gen;
        e->slot = slot;
        e->tags = tapi_put(b, "section", 7);
        tapi_put(b, s->name, s->len);
        tapi_put(b, "rank", 4);
        tapi_put(b, s_sec.rank, s_sec.rank_len);
    }
    return e->tags;
}

/* Writes the pair of samples into the thread's batch. */
static int
s_record(uint32_t slot, double seconds, int64_t step, int64_t ts_ns)
{
    tapi_tbuf_t *tb = NULL;
    int rc = tapi_begin(1, &tb);
    if (rc) {
        if (rc == 1 && tb)
            tapi_count_filtered(tb, 1);   /* two samples, begin counted one */
        return rc;
    }
    if ((rc = tapi_lock(tb)) != 0)
        return rc;
    size_t need = sizeof "section" + s_sec.slots[slot].len + 1 + sizeof "rank"
                  + s_sec.rank_len + 1 + sizeof s_seconds + sizeof s_step;
    telem_qbatch_t *b = tapi_room_n(tb, 2, need, &rc);
    if (!b)
        return rc;
    uint32_t tags = s_strings(tb, b, slot);
    const tapi_scache_t *sc = tapi_scache(tb);
    telem_qsample_t *s = &b->s[b->n];
    s[0] = (telem_qsample_t) { .ts_ns = ts_ns, .value = seconds,
                               .name = sc->seconds, .tags = tags, .level = 1,
                               .ntags = 2, .kind = 0 };
    s[1] = s[0];
    s[1].value = (double) step;
    s[1].name = sc->step;
    b->n += 2;
    tapi_unlock(tb, 2);
    return 0;
}

int
telem_section_end(telem_section_t *h)
{
    if (!h) {
        tapi_count_invalid();
        return TELEM_EINVAL;
    }
    telem_section_t c = *h;
    memset(h, 0, sizeof *h);
    if (c.state < 0 && c.state >= TELEM_ECONFLICT)
        return c.state;           /* begin's error, counted then */
    if ((c.state ^ S_FILTERED) == (int32_t) c.slot && c.t0_ns == 1
        && c.slot < atomic_load_explicit(&s_sec.used, memory_order_acquire)) {
        atomic_fetch_add_explicit(&s_sec.slots[c.slot].step, 1,
                                  memory_order_relaxed);
        return 1;                 /* level 0 counts nothing, as add_data */
    }
    int tick = (c.state ^ S_OPEN_TICK) == (int32_t) c.slot;
    int64_t now = tick ? tick_raw() : telem_mono_ns();
    if ((!tick && (c.state ^ S_OPEN) != (int32_t) c.slot)
        || c.slot >= atomic_load_explicit(&s_sec.used, memory_order_acquire)
        || c.t0_ns <= 0 || c.t0_ns > now) {
        tapi_count_invalid();
        return TELEM_EINVAL;
    }
    pthread_once(&s_sec.once, s_once);
    int64_t step = atomic_fetch_add_explicit(&s_sec.slots[c.slot].step, 1,
                                             memory_order_relaxed);
    double seconds;
    int64_t ts;
    if (tick) {
        seconds = tick_seconds(c.t0_ns, now);
        ts = tick_realtime(now);
    } else {
        tick_calibrate(now);
        seconds = (double) (now - c.t0_ns) / 1e9;
        ts = s_realtime(now);
    }
    if (c.gpu)
        tsg_end(c.gpu - 1, c.gpu_gen, s_sec.slots[c.slot].name, ts);
    return s_record(c.slot, seconds, step, ts);
}

telem_section_t
telem_section_begin_gpu(const char *name, void *stream)
{
    telem_section_t h = telem_section_begin(name);
    uint32_t idx, gen;
    if ((h.state ^ S_OPEN) == (int32_t) h.slot
        || (h.state ^ S_OPEN_TICK) == (int32_t) h.slot) {
        if (tsg_begin(stream, &idx, &gen) == 0) {
            h.gpu = idx + 1;
            h.gpu_gen = gen;
        }
    }
    return h;
}

int
telem_section_set_step(const char *name, int64_t step)
{
    if (step < 0) {
        tapi_count_invalid();
        return TELEM_EINVAL;
    }
    int64_t slot = s_entry(name);
    if (slot < 0)
        return (int) slot;
    atomic_store_explicit(&s_sec.slots[slot].step, step, memory_order_relaxed);
    return 0;
}

int64_t
telem_section_step(const char *name)
{
    size_t len = s_len(name);
    if (!len) {
        tapi_count_invalid();
        return TELEM_EINVAL;
    }
    int64_t slot = s_find(name, len, telem_hash_text(name, len), 0);
    if (slot == TELEM_ENOTFOUND)
        return 0;
    return atomic_load_explicit(&s_sec.slots[slot].step, memory_order_relaxed);
}
