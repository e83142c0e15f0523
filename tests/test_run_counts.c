/* test_run_counts.c - telem_run's data structures: the counter table and
 * its flush (run_counts.h), the system-call slots and names
 * (run_scall.h) and the traced threads' table (run_tids.h).
 *
 * Checked: a flush hands over exactly the increments since the last one,
 * hits then bytes, with the metric names built once from the label
 * callback ("unknown" when it has none, quotes and backslashes escaped),
 * and nothing when nothing moved; a sink's refusals are counted and not
 * retried; several threads adding at once lose nothing (run_counts_add_mt);
 * bad table names are refused.  System calls map to slots per
 * architecture (x32 by its number bit), are named by libseccomp and
 * classed as I/O or not.  The thread table agrees with a plain reference
 * array through thousands of random puts and deletions (backward-shift
 * deletion keeps every entry findable) while it grows.
 */
#include <linux/audit.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "check.h"
#include "run_counts.h"
#include "run_scall.h"
#include "run_tids.h"
#include "telem_error.h"

/* ---- the counter table ---------------------------------------------------- */

typedef struct {
    char names[16][128];
    double deltas[16];
    int n;
    int refuse;                 /* answer TELEM_EFULL */
} s_sink_t;

static int
s_sink(void *arg, const char *name, double delta)
{
    s_sink_t *s = arg;
    if (s->n < 16) {
        snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
        s->deltas[s->n] = delta;
    }
    s->n++;
    return s->refuse ? TELEM_EFULL : 0;
}

static int
s_label(void *arg, size_t slot, char *buf, size_t size)
{
    (void) arg;
    static const char *const names[] = { "read", "we\"ird\\", "" };
    if (slot >= 3)
        return -1;
    snprintf(buf, size, "%s", names[slot]);
    return 0;
}

static void
test_flush(void)
{
    run_counts_t *c = run_counts_new(4, "x_hits_total", "x_bytes_total",
                                     "scall", s_label, NULL);
    REQUIRE(c);
    CHECK_INT(run_counts_size(c), 4);
    run_counts_cell_t *cell = run_counts_cells(c);
    s_sink_t s = { 0 };
    CHECK_RC(run_counts_flush(c, s_sink, &s), 0);     /* nothing moved */
    CHECK_INT(s.n, 0);

    run_counts_add(&cell[0], 100);
    run_counts_add(&cell[0], 0);
    run_counts_add_bytes(&cell[0], 5);
    run_counts_add(&cell[1], 0);
    run_counts_add_mt(&cell[3], 7);
    CHECK_RC(run_counts_flush(c, s_sink, &s), 5);
    CHECK_STR(s.names[0], "x_hits_total{scall=\"read\"}");
    CHECK_EQ(s.deltas[0], 2);
    CHECK_STR(s.names[1], "x_bytes_total{scall=\"read\"}");
    CHECK_EQ(s.deltas[1], 105);
    CHECK_STR(s.names[2], "x_hits_total{scall=\"we\\\"ird\\\\\"}");
    CHECK_EQ(s.deltas[2], 1);
    CHECK_STR(s.names[3], "x_hits_total{scall=\"unknown\"}");
    CHECK_STR(s.names[4], "x_bytes_total{scall=\"unknown\"}");
    CHECK_EQ(s.deltas[4], 7);

    /* Increments only, and only what moved. */
    s.n = 0;
    run_counts_add(&cell[0], 1);
    CHECK_RC(run_counts_flush(c, s_sink, &s), 2);
    CHECK_EQ(s.deltas[0], 1);
    CHECK_EQ(s.deltas[1], 1);
    uint64_t h, b;
    run_counts_total(c, 0, &h, &b);
    CHECK_INT(h, 3);
    CHECK_INT(b, 106);
    char label[RUN_COUNTS_LABEL_MAX];
    run_counts_label(c, 2, label, sizeof label);
    CHECK_STR(label, "unknown");                  /* empty label */

    /* A refusing sink: counted, not retried. */
    s.n = 0;
    s.refuse = 1;
    run_counts_add(&cell[2], 0);
    CHECK_RC(run_counts_flush(c, s_sink, &s), 1);
    CHECK_INT(run_counts_failed(c), 1);
    s.refuse = 0;
    s.n = 0;
    CHECK_RC(run_counts_flush(c, s_sink, &s), 0);
    run_counts_destroy(&c);
    CHECK(c == NULL);
    run_counts_destroy(&c);
}

static void
test_bad_names(void)
{
    char long_name[80];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    CHECK(run_counts_new(1, "", "b", "k", NULL, NULL) == NULL);
    CHECK(run_counts_new(1, "a", NULL, "k", NULL, NULL) == NULL);
    CHECK(run_counts_new(1, "a", "b", long_name, NULL, NULL) == NULL);
    run_counts_t *c = run_counts_new(0, "a", "b", "k", NULL, NULL);
    REQUIRE(c);
    s_sink_t s = { 0 };
    CHECK_RC(run_counts_flush(c, s_sink, &s), 0);
    run_counts_destroy(&c);
}

typedef struct {
    run_counts_cell_t *cell;
    int n;
} s_adder_t;

static void *
s_adder(void *arg)
{
    s_adder_t *a = arg;
    for (int i = 0; i < a->n; i++)
        run_counts_add_mt(a->cell, 3);
    return NULL;
}

static void
test_threads(void)
{
    run_counts_t *c = run_counts_new(1, "a", "b", "k", NULL, NULL);
    REQUIRE(c);
    s_adder_t a = { run_counts_cells(c), 100000 };
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, s_adder, &a);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    uint64_t h, b;
    run_counts_total(c, 0, &h, &b);
    CHECK_INT(h, 400000);
    CHECK_INT(b, 1200000);
    run_counts_destroy(&c);
}

/* ---- system-call slots and names ----------------------------------------- */

static void
test_scall(void)
{
    run_scall_t *sc = run_scall_new();
    REQUIRE(sc);
    char name[RUN_COUNTS_LABEL_MAX];
    size_t w64 = run_scall_slot(AUDIT_ARCH_X86_64, 1);
    CHECK_RC(run_scall_name(NULL, w64, name, sizeof name), 0);
    CHECK_STR(name, "write");
    CHECK(run_scall_is_io(sc, w64));
    size_t open64 = run_scall_slot(AUDIT_ARCH_X86_64, 2);
    run_scall_name(NULL, open64, name, sizeof name);
    CHECK_STR(name, "open");
    CHECK(!run_scall_is_io(sc, open64));
    size_t w32 = run_scall_slot(AUDIT_ARCH_I386, 4);      /* i386 write */
    CHECK(w32 != w64);
    run_scall_name(NULL, w32, name, sizeof name);
    CHECK_STR(name, "write");
    CHECK(run_scall_is_io(sc, w32));
    size_t x32 = run_scall_slot(AUDIT_ARCH_X86_64, 0x40000000 | 1);
    CHECK(x32 != w64);
    run_scall_name(NULL, x32, name, sizeof name);
    CHECK_STR(name, "write");
    CHECK(run_scall_is_io(sc, x32));
    size_t a64 = run_scall_slot(AUDIT_ARCH_AARCH64, 64);   /* arm64 write */
    run_scall_name(NULL, a64, name, sizeof name);
    CHECK_STR(name, "write");
    CHECK(run_scall_is_io(sc, a64));
    size_t rd = run_scall_slot(AUDIT_ARCH_AARCH64, 63);
    CHECK(run_scall_is_io(sc, rd));
    /* Outside the table: one slot, "unknown". */
    CHECK_INT(run_scall_slot(AUDIT_ARCH_X86_64, 5000), RUN_SCALL_OTHER);
    CHECK_INT(run_scall_slot(0x1234, 1), RUN_SCALL_OTHER);
    run_scall_name(NULL, RUN_SCALL_OTHER, name, sizeof name);
    CHECK_STR(name, "unknown");
    CHECK(!run_scall_is_io(sc, RUN_SCALL_OTHER));
    /* A number libseccomp does not name. */
    run_scall_name(NULL, run_scall_slot(AUDIT_ARCH_X86_64, 1000), name,
                   sizeof name);
    CHECK_STR(name, "syscall_1000");
    CHECK_RC(run_scall_name(NULL, w64, name, 3), TELEM_ETOOBIG);
    int io = 0;
    for (size_t i = 0; i < RUN_SCALL_SLOTS; i++)
        io += run_scall_is_io(sc, i);
    CHECK(io >= 4 * 16);          /* the I/O calls on every architecture */
    run_scall_destroy(&sc);
    CHECK(sc == NULL);
}

/* ---- the thread table ----------------------------------------------------- */

static void
test_tids(void)
{
    enum { N = 5000 };
    static unsigned char in[N];
    run_tids_t *t = run_tids_new();
    REQUIRE(t);
    CHECK(run_tids_get(t, 42) == NULL);
    unsigned seed = 7;
    size_t count = 0;
    int ok = 1;
    for (int step = 0; step < 40000; step++) {
        seed = seed * 1103515245u + 12345u;
        pid_t tid = (pid_t) (1 + (seed >> 8) % (N - 1));
        if ((seed >> 4) & 1) {
            run_tid_t *e = run_tids_put(t, tid);
            REQUIRE(e);
            if (!in[tid]) {
                ok &= e->slot == RUN_TID_NO_CALL && e->flags == 0;
                e->slot = (uint32_t) tid;
                in[tid] = 1;
                count++;
            }
        } else {
            run_tids_del(t, tid);
            count -= in[tid];
            in[tid] = 0;
        }
        if (step % 1000 == 0)
            for (pid_t p = 1; p < N; p++) {
                run_tid_t *e = run_tids_get(t, p);
                ok &= in[p] ? e && e->slot == (uint32_t) p : e == NULL;
            }
    }
    CHECK(ok);
    CHECK_INT(run_tids_count(t), count);
    CHECK(run_tids_capacity(t) >= 2 * count);
    size_t seen = 0;
    for (size_t i = 0; i < run_tids_capacity(t); i++)
        seen += run_tids_at(t, i)->tid != 0;
    CHECK_INT(seen, count);
    run_tids_clear(t);
    CHECK_INT(run_tids_count(t), 0);
    CHECK(run_tids_get(t, 1) == NULL);
    run_tids_destroy(&t);
    CHECK(t == NULL);
}

int
main(void)
{
    test_flush();
    test_bad_names();
    test_threads();
    test_scall();
    test_tids();
    return check_report("test_run_counts");
}
