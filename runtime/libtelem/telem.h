/* telem.h - record your application's own metrics into telem.
 *
 *   #include <telem/telem.h>
 *   telem_add_data("loss", loss, 0, 1);          // 0 = now, level 1
 *   telem_add_data_tags("step_time", dt, 0, 2, 2, "phase", "fwd", "rank", "3");
 *   telem_counter_add("bytes_read_total{file=\"a\"}", n);  // node-wide sum
 *   telem_gauge_set("queue_depth{queue=\"in\"}", depth);   // per process
 *   telem_finalize();                            // at exit: flush, confirmed
 *
 * Calls never block and never fail the application: samples are batched in
 * the calling process and handed to a background sender thread that pushes
 * them to the node's telemd over ZeroMQ with a bounded queue.  When telemd is
 * not running, or the queue is full, samples are dropped and counted
 * (telem_stats()).  Every function here is thread-safe.
 *
 * Configuration comes from the environment the launcher sets:
 *   TELEM_LEVEL   telemetry level 0-4 (default 1).  A sample whose level is
 *                 above it is dropped at once; level 0 turns everything off.
 *   TELEM_NODE    node name (see telem_paths.h), TELEM_RUNDIR run directory,
 *   TELEM_INGEST  explicit ingest endpoint (overrides the two above),
 *   TELEM_RANK    added as tag "rank" when set.
 * Every sample carries tags host=<node> and pid=<pid>, so two processes that
 * write the same metric on one node stay two series.
 */
#ifndef TELEM_H
#define TELEM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Records one sample.  ts_ns is realtime nanoseconds since the epoch, 0 for
 * now; level is 1-4.  Returns 0 when queued, 1 when skipped because the
 * level is above TELEM_LEVEL (no error), or a negative telem_err_t:
 * TELEM_EINVAL (NULL/empty/over-long name, level outside 1-4, non-finite
 * value), TELEM_EFULL (queue full; the sample is dropped and counted),
 * TELEM_ESTATE (after telem_finalize()).  The name is copied. */
int telem_add_data(const char *metric, double value, int64_t ts_ns, int level);

/* Like telem_add_data() with `ntags` extra tags given as key, value string
 * pairs after the count (at most 8 pairs; keys "host" and "pid" are
 * reserved and rejected).  Strings are copied. */
int telem_add_data_tags(const char *metric, double value, int64_t ts_ns,
                        int level, int ntags, ...);

/* Adds delta (finite, >= 0) to a counter of this node.  `name` is a
 * Prometheus-style metric name, optionally followed by labels as tau
 * writes them: strace_hits_total{scall="read"}.  Increments from every
 * process of the node are summed by telemd into one node series (no
 * pid tag).  Non-blocking, batched, thread-safe like telem_add_data.
 * Returns 0, 1 (level-filtered), or a negative telem_err_t
 * (TELEM_EINVAL for a bad name or labels, TELEM_EFULL). */
int telem_counter_add(const char *name, double delta);
/* Sets a gauge of this process (a per-process series, pid tag kept). */
int telem_gauge_set(const char *name, double value);
/*
 * Both push calls, in detail:
 *  - name: metric [a-zA-Z_:][a-zA-Z0-9_:]* (1-255 bytes), then optionally
 *    {key="value",...}: keys [a-zA-Z_][a-zA-Z0-9_]* not starting with
 *    "__" and not "host" or "pid", each once, at most 8; values UTF-8 of
 *    at most 255 bytes with \ " and 
 escaped; no blanks; at most 4096
 *    bytes in all.  A label with an empty value is left out.  The
 *    string is copied; it is parsed once per batch, so pushing the same
 *    string again is cheap.
 *  - Pushes are level-1 user metrics: with TELEM_LEVEL=0 they return 1.
 *  - A counter's node series carries host and the labels only; its
 *    value is the node's running total since telemd started.  Increments
 *    of one counter within a batch are merged before they are sent.
 *  - A gauge's series carries host, pid, rank (when set) and the labels,
 *    exactly as telem_add_data_tags() would record it.
 *  - TELEM_ESTATE after telem_finalize(); a value that is not finite, a
 *    negative delta, a NULL or malformed name: TELEM_EINVAL, counted in
 *    telem_stats()'s `invalid`. */

/* Describes a metric for listings (telem_client -l): type is "gauge" or
 * "counter", unit may be "" and doc is a sentence.  Sent once, not per
 * sample.  A name with labels (as the push calls take) describes its
 * metric: every label set of a metric shares one description.  Same
 * return values as telem_add_data(). */
int telem_describe(const char *metric, const char *type, const char *unit,
                   const char *doc);

/* Sends every queued sample and waits, at most timeout_ms, until telemd
 * confirms it received them.  Returns 0, TELEM_ETIMEDOUT, or TELEM_ECONN
 * when no telemd is reachable (queued samples are then dropped). */
int telem_flush(int timeout_ms);

/* Flushes (waiting at most $TELEM_FINALIZE_MS, default 2000 ms), stops the
 * sender thread and frees everything.  Later calls to telem_add_data()
 * return TELEM_ESTATE until telem_init() is called again.  Safe to call more
 * than once and when nothing was ever recorded.  Returns as telem_flush(). */
int telem_finalize(void);

/* (Re)initialises explicitly; optional, the first telem_add_data() does it.
 * Reads the environment described above.  Returns 0 or a negative code. */
int telem_init(void);

/* The level samples are compared with (TELEM_LEVEL, or set here: 0-4). */
int telem_level(void);
int telem_set_level(int level);

/* ---- sections: the duration of a named region, per rank ----------------
 *
 *   telem_section_t h = telem_section_begin("step");
 *   ... one training step ...
 *   telem_section_end(&h);
 *
 * Each end records two samples with the same timestamp (the end, realtime):
 *   telem_section_seconds{section="step",rank="3"}  duration in seconds
 *   telem_section_step{section="step",rank="3"}     the step it belongs to
 * plus host and pid as every sample.  A reader pairs the two by series
 * (section, rank, host, pid) and timestamp.  The step is a counter per
 * section name per process: the first end of a name records step 0, each
 * end the next one; telem_section_set_step() sets the step the next end
 * records (e.g. the step a resumed job starts from).  Ends from several
 * threads get distinct steps.
 *
 * The rank is the first of these environment variables that holds a
 * non-negative integer: TELEM_RANK (telem_launch sets it), SLURM_PROCID,
 * OMPI_COMM_WORLD_RANK, PMI_RANK, RANK (torchrun); "0" when none does.  It
 * is read once, at the first section call of the process.
 *
 * Sections are level-1 user metrics: with TELEM_LEVEL=0 an end returns 1
 * and records nothing (the step still advances, so steps keep counting the
 * program's steps).  Nothing allocates or formats on the hot path: a name
 * is looked up in a process-wide table (TELEM_SECTION_NAMES names at most)
 * by a hash of its bytes, its strings are copied into a batch once per
 * batch.  A begin/end pair costs about as much as two telem_add_data()
 * calls (bench_add_data prints it).  The clock: where the kernel keeps time
 * with the CPU's time-stamp counter (clock source "tsc", x86-64), a section
 * reads the counter itself, its rate measured against CLOCK_MONOTONIC (the
 * first 50 ms of a process's sections read CLOCK_MONOTONIC while it is
 * measured); elsewhere, or with TELEM_SECTION_CLOCK=monotonic, it reads
 * CLOCK_MONOTONIC.
 *
 * The handle is a value owned by the caller; it may move between threads
 * (begin on one, end on another).  telem_section_end() clears the handle it
 * is given, so ending it again is refused; a copy made before the end is
 * another handle and would record again.  There is no end-by-name: a name
 * may be open several times at once (threads, recursion). */

#define TELEM_SECTION_NAMES 1024

typedef struct {
    int64_t t0_ns;      /* start: monotonic ns, or CPU ticks; private */
    uint32_t slot;      /* the name's entry; private */
    int32_t state;      /* private: open, filtered, or begin's error */
    uint32_t gpu;       /* private: its device-time pair + 1, 0 = none */
    uint32_t gpu_gen;   /* private: that pair's generation */
} telem_section_t;

/* Starts section `name` (1-255 bytes, copied once into the table).
 * Never fails the caller: a bad name (NULL, empty, over-long; counted in
 * telem_stats()'s `invalid`), a full name table or a finalized library
 * give a handle whose telem_section_end() returns the error. */
telem_section_t telem_section_begin(const char *name);

/* Ends the section, records its duration and step, clears *h.  Returns 0
 * when queued, 1 when the level filtered it, or a negative telem_err_t:
 * TELEM_EINVAL for a NULL, cleared (ended before, zeroed) or unknown
 * handle and for a handle whose begin was given a bad name, TELEM_EFULL
 * when the name table was full at begin or the queue is full now (the
 * samples are dropped and counted), TELEM_ESTATE after telem_finalize(). */
int telem_section_end(telem_section_t *h);

/* ---- a section's device time (optional) -------------------------------
 *
 *   telem_section_t h = telem_section_begin_gpu("step", stream);
 *   ... kernels launched on stream ...
 *   telem_section_end(&h);
 *
 * Like telem_section_begin(), and where the CUDA driver is loaded in the
 * process (libcuda.so.1, or $TELEM_CUDA_LIBRARY) and a context is current
 * on the calling thread, begin and end also record a CUDA event on
 * `stream` (a CUstream / cudaStream_t; NULL: the default stream).  The
 * device time between the two events is read later, when the end event
 * has completed, without synchronizing anything: at a later
 * telem_section_begin_gpu() or end of a GPU section, at telem_flush()
 * and at telem_finalize() (a pair still running then is dropped).  It is
 * recorded as
 *   telem_section_gpu_seconds{section="step",rank="3"}
 * with the timestamp of the section's own end, so a reader pairs it with
 * telem_section_seconds and telem_section_step as those two are paired.
 * The CPU part never depends on the device part: no driver, no current
 * context, a failed event call, or more than TELEM_SECTION_GPU_PENDING
 * pairs waiting give a plain section (counted in telem_section_gpu_stats).
 * The end must be called on a thread where the same context is current. */
#define TELEM_SECTION_GPU_PENDING 256

telem_section_t telem_section_begin_gpu(const char *name, void *stream);

typedef struct {
    uint64_t recorded;      /* device times recorded */
    uint64_t pending;       /* pairs begun or waiting for their end event */
    uint64_t unavailable;   /* GPU sections without a driver or context */
    uint64_t failed;        /* pairs dropped: an event call failed, or
                               still running at telem_finalize() */
    uint64_t full;          /* GPU parts dropped: every pair in use */
} telem_section_gpu_stats_t;

/* What became of the device parts so far (process-wide). */
void telem_section_gpu_stats(telem_section_gpu_stats_t *out);

/* Makes the next end of section `name` record step `step` (>= 0) and the
 * ends after it step + 1, ...  Returns 0 or TELEM_EINVAL (bad name,
 * negative step), TELEM_EFULL (name table full). */
int telem_section_set_step(const char *name, int64_t step);

/* The step the next end of section `name` records (0 for a name not seen
 * yet), or a negative telem_err_t (TELEM_EINVAL, TELEM_EFULL). */
int64_t telem_section_step(const char *name);

/* The rank sections are tagged with (see above); a static string. */
const char *telem_section_rank(void);

/* Like telem_add_data_tags() with the tags in an array: kv holds 2 * ntags
 * strings, key, value, key, value ...  (at most 8 pairs). */
int telem_add_data_tagv(const char *metric, double value, int64_t ts_ns,
                        int level, int ntags, const char *const *kv);

typedef struct {
    uint64_t queued;       /* samples accepted by telem_add_data */
    uint64_t sent;         /* samples handed to ZeroMQ */
    uint64_t dropped;      /* samples lost: queue full, no telemd, errors */
    uint64_t filtered;     /* samples skipped by the level */
    uint64_t invalid;      /* calls refused with TELEM_EINVAL: bad names,
                              labels, tags, values or levels */
} telem_stats_t;

/* Counters since telem_init(); thread-safe snapshot. */
void telem_stats(telem_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif
