/* telem_tick.c - the sections' clock (telem_tick.h).
 *
 * State.  A calibration point (counter, realtime, monotonic) and the
 * counter's rate in nanoseconds per tick.  Readers take the point and
 * the rate under a sequence counter (odd while a writer changes them) and
 * never wait for a writer for longer than that writer's three stores;
 * one writer at a time (a flag; a thread that finds it taken goes on
 * with the old point).  A new point comes at most once a second; its
 * rate is measured over the time since the previous point.
 *
 * Trust.  The counter is used only where the kernel keeps its own time
 * with it (clock source "tsc": invariant and in step across CPUs, or the
 * kernel would have refused it).  If a new rate differs from the last one
 * by more than S_RATE_DRIFT or the counter went back (a virtual machine
 * moved to another host, say), ticks are given up for the process: begin
 * then reads CLOCK_MONOTONIC again, and the sections begun on ticks still
 * end on them with the last rate.
 */
#include "telem_tick.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_time.h"

#define S_FIRST_NS (50 * TELEM_NS_PER_MS)  /* the first rate's span */
#define S_POINT_NS TELEM_NS_PER_SEC        /* a new point after this */
#define S_RATE_DRIFT 0.001                 /* relative change that stops ticks */
#define S_CLOCKSOURCE \
    "/sys/devices/system/clocksource/clocksource0/current_clocksource"

static struct {
    _Atomic int state;            /* 0 undecided, 1 no ticks, 2 usable */
    _Atomic int ready;            /* usable and the rate known */
    _Atomic uint32_t seq;         /* odd while a writer changes the point */
    _Atomic int64_t tsc0, real0, mono0;
    _Atomic double ns_per_tick;
    _Atomic int64_t next;         /* counter value of the next new point */
    atomic_flag busy;             /* one writer */
} s_tick = { .busy = ATOMIC_FLAG_INIT };

/* The counter where the kernel keeps time with it. */
static int
s_usable(void)
{
#if defined(__x86_64__)
    const char *env = getenv("TELEM_SECTION_CLOCK");
    if (env && strcmp(env, "monotonic") == 0)
        return 0;
    FILE *f = fopen(S_CLOCKSOURCE, "re");
    if (!f)
        return 0;
    char name[32] = "";
    int ok = fgets(name, sizeof name, f) && strcmp(name, "tsc\n") == 0;
    fclose(f);
    return ok;
#else
    return 0;
#endif
}

/* A point: the counter read on both sides of the two clocks, its middle. */
static void
s_point(int64_t *tsc, int64_t *mono, int64_t *real)
{
    int64_t a = tick_raw();
    *mono = telem_mono_ns();
    *real = telem_now_ns();
    int64_t b = tick_raw();
    *tsc = a + (b - a) / 2;
}

static void
s_publish(int64_t tsc, int64_t mono, int64_t real, double rate)
{
    uint32_t s = atomic_load_explicit(&s_tick.seq, memory_order_relaxed);
    atomic_store_explicit(&s_tick.seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s_tick.tsc0, tsc, memory_order_relaxed);
    atomic_store_explicit(&s_tick.real0, real, memory_order_relaxed);
    atomic_store_explicit(&s_tick.mono0, mono, memory_order_relaxed);
    atomic_store_explicit(&s_tick.ns_per_tick, rate, memory_order_relaxed);
    atomic_store_explicit(&s_tick.seq, s + 2, memory_order_release);
    if (rate > 0)
        atomic_store_explicit(&s_tick.next,
                              tsc + (int64_t) ((double) S_POINT_NS / rate),
                              memory_order_relaxed);
}

/* A new point and rate, unless another thread is making one. */
static void
s_recalibrate(void)
{
    if (atomic_load_explicit(&s_tick.state, memory_order_relaxed) != 2
        || atomic_flag_test_and_set_explicit(&s_tick.busy,
                                             memory_order_acquire))
        return;
    int64_t tsc, mono, real;
    s_point(&tsc, &mono, &real);
    int64_t t0 = atomic_load_explicit(&s_tick.tsc0, memory_order_relaxed);
    int64_t m0 = atomic_load_explicit(&s_tick.mono0, memory_order_relaxed);
    double old = atomic_load_explicit(&s_tick.ns_per_tick,
                                      memory_order_relaxed);
    if (tsc > t0 && mono - m0 >= S_FIRST_NS) {
        double rate = (double) (mono - m0) / (double) (tsc - t0);
        if (old > 0 && fabs(rate - old) > S_RATE_DRIFT * old) {
            atomic_store_explicit(&s_tick.ready, 0, memory_order_relaxed);
            atomic_store_explicit(&s_tick.state, 1, memory_order_relaxed);
        } else {
            s_publish(tsc, mono, real, rate);
            atomic_store_explicit(&s_tick.ready, 1, memory_order_release);
        }
    } else if (tsc <= t0) {
        atomic_store_explicit(&s_tick.ready, 0, memory_order_relaxed);
        atomic_store_explicit(&s_tick.state, 1, memory_order_relaxed);
    }
    atomic_flag_clear_explicit(&s_tick.busy, memory_order_release);
}

void
tick_init(void)
{
    if (atomic_load_explicit(&s_tick.state, memory_order_acquire))
        return;
    if (atomic_flag_test_and_set_explicit(&s_tick.busy, memory_order_acquire))
        return;                   /* another thread decides */
    if (!atomic_load_explicit(&s_tick.state, memory_order_relaxed)) {
        int use = s_usable();
        if (use) {
            int64_t tsc, mono, real;
            s_point(&tsc, &mono, &real);
            s_publish(tsc, mono, real, 0);
        }
        atomic_store_explicit(&s_tick.state, use ? 2 : 1,
                              memory_order_release);
    }
    atomic_flag_clear_explicit(&s_tick.busy, memory_order_release);
}

int
tick_ready(void)
{
    return atomic_load_explicit(&s_tick.ready, memory_order_relaxed);
}

double
tick_seconds(int64_t t0, int64_t t1)
{
    return (double) (t1 - t0)
           * atomic_load_explicit(&s_tick.ns_per_tick, memory_order_relaxed)
           / 1e9;
}

int64_t
tick_realtime(int64_t t)
{
    int64_t tsc0, real0;
    double rate;
    for (;;) {
        uint32_t s = atomic_load_explicit(&s_tick.seq, memory_order_acquire);
        tsc0 = atomic_load_explicit(&s_tick.tsc0, memory_order_relaxed);
        real0 = atomic_load_explicit(&s_tick.real0, memory_order_relaxed);
        rate = atomic_load_explicit(&s_tick.ns_per_tick, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (!(s & 1)
            && atomic_load_explicit(&s_tick.seq, memory_order_relaxed) == s)
            break;
    }
    if (t >= atomic_load_explicit(&s_tick.next, memory_order_relaxed))
        s_recalibrate();
    return real0 + (int64_t) llround((double) (t - tsc0) * rate);
}

void
tick_calibrate(int64_t mono)
{
    if (atomic_load_explicit(&s_tick.state, memory_order_relaxed) != 2
        || atomic_load_explicit(&s_tick.ready, memory_order_relaxed))
        return;
    if (mono - atomic_load_explicit(&s_tick.mono0, memory_order_relaxed)
        >= S_FIRST_NS)
        s_recalibrate();
}
