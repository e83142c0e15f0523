/* bench_push.c - the push calls (telem_counter_add(), telem_gauge_set())
 * against telem_add_data(), to the application thread, in one run.
 *
 * One application thread, a real telemd running as an in-process actor
 * (on the other core), the same queue and sender for every case; each case
 * is the median of S_REPS runs of S_CALLS calls, the queue flushed with an
 * acknowledgement before each run.  Cases:
 *   add_data           telem_add_data("bench_ref", v, 0, 1): the reference
 *   add_data_tags      the same with one tag, scall=read, as a label is
 *   counter, 1 name    telem_counter_add('bench_hits_total{scall="read"}', 1)
 *   counter, 8 names   eight label sets in turn (within the per-thread name
 *                      cache: parsed once per batch, merged in the batch)
 *   counter, 64 names  64 label sets in turn (as a program counting system
 *                      calls by name would): still merged
 *   counter, 1k names  1,024 label sets in turn: more than the per-thread
 *                      name cache (256 slots) and a batch (256 samples)
 *                      hold, so nearly every call parses its name and adds
 *                      a sample: the worst case of the push path
 *   gauge, 1 name      telem_gauge_set('bench_gauge{k="v"}', v): a sample
 *                      per call, as add_data_tags
 * For each: calls/s, ns/call, the ratio to add_data's calls/s, and the
 * samples that went to telemd per call.  After the counter cases the node
 * totals are read back from telemd: they equal the increments accepted
 * (the exactness check of the push gateway).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ac.h"
#include "bench_common.h"
#include "telem.h"
#include "telem_error.h"

#define S_CALLS 4000000
#define S_REPS 3
#define S_WIDE 1024

typedef enum { C_REF, C_TAGS, C_CTR1, C_CTR8, C_CTR64, C_CTR1K, C_GAUGE,
               C_N } s_case_t;

static const char *const s_case_name[C_N] = {
    "telem_add_data (reference)", "telem_add_data_tags, 1 tag",
    "telem_counter_add, 1 name", "telem_counter_add, 8 names in turn",
    "telem_counter_add, 64 names in turn",
    "telem_counter_add, 1,024 names in turn", "telem_gauge_set, 1 name",
};

static char s_names[S_WIDE][64];
static double s_accepted[S_WIDE];     /* counter increments taken, by name */

typedef struct {
    double rate;              /* calls/s, median */
    double sent_per_call;     /* samples sent to telemd per call */
    uint64_t full, other;     /* TELEM_EFULL, other errors */
} s_result_t;

static inline int
s_call(s_case_t c, uint32_t i)
{
    switch (c) {
    case C_TAGS:
        return telem_add_data_tags("bench_ref_tags", i, 0, 1, 1, "scall",
                                   "read");
    case C_CTR1:
        return telem_counter_add(s_names[0], 1);
    case C_CTR8:
        return telem_counter_add(s_names[i % 8], 1);
    case C_CTR64:
        return telem_counter_add(s_names[i % 64], 1);
    case C_CTR1K:
        return telem_counter_add(s_names[i % S_WIDE], 1);
    case C_GAUGE:
        return telem_gauge_set("bench_gauge{k=\"v\"}", i);
    default:
        return telem_add_data("bench_ref", i, 0, 1);
    }
}

static void
s_run(s_case_t c, s_result_t *out)
{
    double rates[S_REPS];
    uint64_t sent = 0, calls = 0;
    for (int r = 0; r < S_REPS; r++) {
        telem_flush(10000);
        telem_stats_t a, b;
        telem_stats(&a);
        int64_t t0 = bench_now_ns();
        for (uint32_t i = 0; i < S_CALLS; i++) {
            int rc = s_call(c, i);
            if (rc == 0 && c >= C_CTR1 && c <= C_CTR1K)
                s_accepted[c == C_CTR1 ? 0 : c == C_CTR8 ? i % 8
                           : c == C_CTR64 ? i % 64 : i % S_WIDE] += 1;
            out->full += rc == TELEM_EFULL;
            out->other += rc != 0 && rc != TELEM_EFULL;
        }
        rates[r] = S_CALLS * 1e9 / (double) (bench_now_ns() - t0);
        telem_flush(10000);
        telem_stats(&b);
        sent += b.sent - a.sent;
        calls += S_CALLS;
    }
    out->rate = bench_median_d(rates, S_REPS);
    out->sent_per_call = (double) sent / (double) calls;
}

/* Compares every counter's node total with what was accepted; returns
 * the number that differ. */
static int
s_check_totals(ac_t *ac)
{
    const char *metric = "bench_hits_total";
    ac_query_t q = { .metrics = &metric, .nmetrics = 1,
                     .flags = TELEM_QUERY_LATEST };
    ac_result_t *r = NULL;
    if (ac_query(ac, &q, &r) != 0)
        bench_die("ac_query", "telemd did not answer");
    int bad = 0, found = 0;
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        for (int k = 0; k < S_WIDE; k++) {
            char want[64];
            snprintf(want, sizeof want, "n%d", k);
            for (uint32_t t = 0; t < s->ntags; t++)
                if (strcmp(s->tags[t].key, "scall") == 0
                    && strcmp(s->tags[t].value, want) == 0) {
                    found++;
                    bad += s->values[s->npoints - 1] != s_accepted[k];
                }
        }
    }
    ac_result_destroy(&r);
    return bad + (S_WIDE - found);
}

int
main(void)
{
    bench_print_machine("bench_push");
    for (int k = 0; k < S_WIDE; k++)
        snprintf(s_names[k], sizeof s_names[k],
                 "bench_hits_total{scall=\"n%d\"}", k);
    char dir[256];
    bench_tmpdir(dir, sizeof dir, "push");
    telemd_t *td = bench_telemd_start(dir, "benchnode", 1, 300,
                                      (size_t) 1 << 30, 0);
    setenv("TELEM_RUNDIR", dir, 1);
    setenv("TELEM_NODE", "benchnode", 1);
    setenv("TELEM_LEVEL", "1", 1);
    unsetenv("TELEM_INGEST");
    unsetenv("TELEM_RANK");
    if (telem_init() != 0)
        bench_die("telem_init", "failed");
    for (uint32_t i = 0; i < 100000; i++)         /* warm-up */
        telem_add_data("bench_warmup", i, 0, 1);
    s_result_t res[C_N] = { { 0 } };
    for (int c = 0; c < C_N; c++)
        s_run((s_case_t) c, &res[c]);

    const char *name = "benchnode", *ep = telemd_ctl_endpoint(td);
    int err = 0;
    ac_t *ac = ac_connect_nodes(&name, &ep, 1, 10000, &err);
    if (!ac)
        bench_die("ac_connect_nodes", "%s", telem_strerror(err));
    int wrong = s_check_totals(ac);
    ac_close(&ac);

    printf("\none application thread, telemd running; median of %d x %d "
           "calls\n", S_REPS, S_CALLS);
    printf("  %-38s %11s %7s %8s %11s %9s %9s\n", "case", "calls/s",
           "ns/call", "x ref", "accepted/s", "x ref", "sent/call");
    for (int c = 0; c < C_N; c++) {
        double ok = res[c].rate * (1.0 - (double) res[c].full
                                             / (S_REPS * (double) S_CALLS));
        double ok_ref = res[C_REF].rate
                        * (1.0 - (double) res[C_REF].full
                                     / (S_REPS * (double) S_CALLS));
        printf("  %-38s %11.0f %7.1f %8.2f %11.0f %9.2f %9.4f\n",
               s_case_name[c], res[c].rate, 1e9 / res[c].rate,
               res[c].rate / res[C_REF].rate, ok, ok / ok_ref,
               res[c].sent_per_call);
    }
    printf("  (accepted: calls that returned 0; the others returned "
           "TELEM_EFULL, the queue being full: telemd takes samples slower "
           "than one thread makes them)\n");
    printf("\nnode totals of the %d counters against the increments "
           "accepted: %s\n", S_WIDE, wrong ? "DIFFER" : "equal");
    printf("\ntarget (issue): counter pushes/s against telem_add_data's "
           "calls/s\n");
    printf("  counter_add, 1 name / add_data      %8.2f\n",
           res[C_CTR1].rate / res[C_REF].rate);
    printf("  counter_add, 64 names / add_data    %8.2f\n",
           res[C_CTR64].rate / res[C_REF].rate);
    printf("  counter_add, 1,024 names / add_data %8.2f\n",
           res[C_CTR1K].rate / res[C_REF].rate);
    char peer[64], r[32];
    snprintf(peer, sizeof peer, "telem_add_data %.1f M/s",
             res[C_REF].rate / 1e6);
    snprintf(r, sizeof r, "%.2f", res[C_CTR1].rate / res[C_REF].rate);
    bench_figure("telem_counter_add calls/s, 1 counter", NULL, peer, r, -1,
                 "%.1f M/s", res[C_CTR1].rate / 1e6);
    snprintf(r, sizeof r, "%.2f", res[C_CTR1K].rate / res[C_REF].rate);
    bench_figure("telem_counter_add calls/s, 1,024 label sets", NULL, peer, r,
                 -1, "%.1f M/s", res[C_CTR1K].rate / 1e6);
    telem_finalize();
    telemd_destroy(&td);
    bench_rmtree(dir);
    return wrong ? 1 : 0;
}
