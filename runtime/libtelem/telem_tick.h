/* telem_tick.h - the sections' clock: the CPU's time-stamp counter where
 * the kernel keeps time with it, else CLOCK_MONOTONIC.
 *
 * A section reads a clock twice (begin and end); through the vDSO that is
 * most of a begin/end pair's cost (a serialised counter read, the
 * kernel's sequence lock, a call).  On x86-64, when the kernel's own
 * clock source is "tsc" (it found the counter invariant and in step
 * across CPUs; otherwise it picked another source and so do we), a plain
 * RDTSC is the same clock without those costs.  Its rate is measured
 * against CLOCK_MONOTONIC (first over at least 50 ms, then over every
 * second), and the realtime stamp of a tick is derived from the
 * last such point, so an NTP step shows within a second, as before.
 * Until the first rate is known (the first 50 ms after the first
 * section), and everywhere else, callers use CLOCK_MONOTONIC.
 * TELEM_SECTION_CLOCK=monotonic makes it so on every machine.
 *
 * Call order: telem_section.c calls this; it calls nothing of libtelem.
 */
#ifndef TELEM_TICK_H
#define TELEM_TICK_H

#include <stdint.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* The raw counter (0 where there is none). */
static inline int64_t
tick_raw(void)
{
#if defined(__x86_64__)
    return (int64_t) __rdtsc();
#else
    return 0;
#endif
}

/* Decides once whether ticks may be used (thread-safe, idempotent). */
void tick_init(void);

/* 1 when begin may read tick_raw(): the counter is usable and its rate
 * known.  One relaxed load. */
int tick_ready(void);

/* Seconds between two tick_raw() values read while tick_ready(). */
double tick_seconds(int64_t t0, int64_t t1);

/* Realtime nanoseconds at tick value `t` (read while tick_ready());
 * measures the rate again when the last point is a second old. */
int64_t tick_realtime(int64_t t);

/* For a caller on CLOCK_MONOTONIC, with the time it read (`mono`): the
 * counter's first rate is measured once 50 ms have passed since
 * tick_init(). */
void tick_calibrate(int64_t mono);

#endif
