/* run_mpi.c - libtelem_mpi.so: the counter table, MPI_Init(_thread),
 * MPI_Finalize and the push thread (run_mpi.h).
 *
 * telem_run -m preloads this library into the program, so its MPI_*
 * functions come before the MPI library's; each counts itself into one
 * table (run_counts.h, a slot per function) and calls the PMPI entry
 * point.  Counting is a relaxed load and store per call (a locked add
 * when the program asked for MPI_THREAD_MULTIPLE): no lock, no system
 * call, nothing the program waits for.
 *
 * MPI_Init and MPI_Init_thread make the table and start a push thread
 * that hands the increments since its last push to telem_counter_add()
 * every 1/$TELEM_RUN_RATE seconds (default 1), as
 * mpi_calls_total{call="MPI_Send"} and mpi_bytes_total{call="MPI_Send"}.
 * MPI_Finalize stops the thread, pushes what is left and waits for
 * telemd's acknowledgement (telem_flush, $TELEM_FINALIZE_MS, default
 * 2000 ms) before it finalizes MPI; with TELEM_RUN_VERBOSE=1 it also
 * prints this process's totals on stderr.  It does not finalize libtelem:
 * the program may use telem itself after MPI is gone.
 *
 * State.  An interposition library has no context to hand around: the MPI
 * functions are the interface.  Its state is two structs written by
 * MPI_Init and MPI_Finalize (which MPI calls once each, from one thread):
 * s_mpi, the push thread's (read under its mutex), and run_mpi_hot, what
 * every wrapper reads: one atomic pointer to the cells (NULL outside
 * MPI_Init..MPI_Finalize, so nothing is counted there), the thread level,
 * and the sizes of the predefined datatypes, so that counting a call
 * costs a few loads and stores and no call into MPI.
 */
#include "run_mpi.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <telem/telem.h>

#define S_FLUSH_MS 2000

static const char *const s_names[RUN_MPI_NCALLS] = {
#define S_NAME(name) #name,
    RUN_MPI_CALLS(S_NAME)
#undef S_NAME
};

run_mpi_hot_t run_mpi_hot = { .mt = 1 };

static struct {
    run_counts_t *counts;
    int64_t period_ns;
    int verbose;
    pthread_mutex_t mu;
    pthread_cond_t cv;               /* CLOCK_MONOTONIC */
    int stop;                        /* under mu */
    int thread_ok;
    pthread_t thread;
} s_mpi = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
};

uint64_t
run_mpi_type_size_slow(MPI_Datatype type)
{
    int size = 0;
    if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0)
        return 0;
    return (uint64_t) size;
}

/* Fills the size cache with MPI's predefined datatypes (first come in a
 * slot keeps it; the others are asked of PMPI_Type_size). */
static void
s_cache_types(void)
{
    const MPI_Datatype types[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_SHORT,
        MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG,
        MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE,
        MPI_LONG_DOUBLE, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T,
        MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_C_BOOL,
        MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_AINT, MPI_OFFSET,
        MPI_COUNT, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT,
        MPI_SHORT_INT, MPI_WCHAR, MPI_PACKED,
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        int size = 0;
        size_t slot = run_mpi_type_slot(types[i]);
        if (types[i] == MPI_DATATYPE_NULL || run_mpi_hot.sizes[slot]
            || PMPI_Type_size(types[i], &size) != MPI_SUCCESS || size <= 0)
            continue;
        run_mpi_hot.types[slot] = types[i];
        run_mpi_hot.sizes[slot] = (uint32_t) size;
    }
}

static int
s_label(void *arg, size_t slot, char *buf, size_t size)
{
    (void) arg;
    if (slot >= RUN_MPI_NCALLS)
        return -1;
    snprintf(buf, size, "%s", s_names[slot]);
    return 0;
}

static int
s_sink(void *arg, const char *name, double delta)
{
    (void) arg;
    int rc = telem_counter_add(name, delta);
    return rc > 0 ? 0 : rc;
}

static double
s_env_double(const char *name, double lo, double hi, double dflt)
{
    const char *s = getenv(name);
    char *end;
    double v = s && *s ? strtod(s, &end) : dflt;
    return s && *s && (*end || !(v >= lo && v <= hi)) ? dflt : v;
}

static void *
s_pusher(void *arg)
{
    (void) arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&s_mpi.mu);
    while (!s_mpi.stop) {
        int64_t ns = next.tv_nsec + s_mpi.period_ns;
        next.tv_sec += ns / 1000000000;
        next.tv_nsec = ns % 1000000000;
        while (!s_mpi.stop
               && pthread_cond_timedwait(&s_mpi.cv, &s_mpi.mu, &next) == 0)
            ;
        if (!s_mpi.stop)
            run_counts_flush(s_mpi.counts, s_sink, NULL);
    }
    pthread_mutex_unlock(&s_mpi.mu);
    return NULL;
}

static void
s_describe(void)
{
    telem_describe("mpi_calls_total", "counter", "",
                   "MPI calls made by programs run under telem_run -m, by"
                   " function (call)");
    telem_describe("mpi_bytes_total", "counter", "bytes",
                   "Bytes of the data MPI calls of programs run under"
                   " telem_run -m moved, by function (call)");
}

/* Makes the table and starts the push thread (after PMPI_Init). */
static void
s_start(int provided)
{
    if (s_mpi.counts)
        return;
    s_mpi.counts = run_counts_new(RUN_MPI_NCALLS, "mpi_calls_total",
                                  "mpi_bytes_total", "call", s_label, NULL);
    if (!s_mpi.counts)
        return;
    double rate = s_env_double("TELEM_RUN_RATE", 0.01, 1000, 1);
    s_mpi.period_ns = (int64_t) (1e9 / rate);
    s_mpi.verbose = s_env_double("TELEM_RUN_VERBOSE", 0, 1, 0) == 1;
    s_cache_types();
    atomic_store(&run_mpi_hot.mt, provided == MPI_THREAD_MULTIPLE);
    atomic_store_explicit(&run_mpi_hot.cells, run_counts_cells(s_mpi.counts),
                          memory_order_release);
    s_describe();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s_mpi.cv, &ca);
    pthread_condattr_destroy(&ca);
    /* The push thread takes no signal meant for the program. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    s_mpi.thread_ok = pthread_create(&s_mpi.thread, NULL, s_pusher, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void
s_summary(void)
{
    for (size_t i = 0; i < RUN_MPI_NCALLS; i++) {
        uint64_t h, b;
        run_counts_total(s_mpi.counts, i, &h, &b);
        if (h)
            fprintf(stderr, "telem_run[%ld]: %-26s calls %12llu bytes %16llu\n",
                    (long) getpid(), s_names[i], (unsigned long long) h,
                    (unsigned long long) b);
    }
}

/* Stops the push thread, pushes the rest and waits for telemd. */
static void
s_stop(void)
{
    if (!s_mpi.counts)
        return;
    if (s_mpi.thread_ok) {
        pthread_mutex_lock(&s_mpi.mu);
        s_mpi.stop = 1;
        pthread_cond_signal(&s_mpi.cv);
        pthread_mutex_unlock(&s_mpi.mu);
        pthread_join(s_mpi.thread, NULL);
        s_mpi.thread_ok = 0;
    }
    atomic_store_explicit(&run_mpi_hot.cells, NULL, memory_order_release);
    run_counts_flush(s_mpi.counts, s_sink, NULL);
    int ms = (int) s_env_double("TELEM_FINALIZE_MS", 0, 3600000, S_FLUSH_MS);
    telem_flush(ms);
    if (s_mpi.verbose)
        s_summary();
}

int
MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        int provided = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&provided);
        s_start(provided);
        run_mpi_count(RUN_MPI_Init, 0);
    }
    return rc;
}

int
MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        s_start(provided ? *provided : MPI_THREAD_MULTIPLE);
        run_mpi_count(RUN_MPI_Init_thread, 0);
    }
    return rc;
}

int
MPI_Finalize(void)
{
    run_mpi_count(RUN_MPI_Finalize, 0);
    s_stop();
    return PMPI_Finalize();
}
