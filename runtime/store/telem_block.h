/* telem_block.h - compressed blocks of one series' points.
 *
 * A block holds 1..TELEM_BLOCK_MAX_POINTS points (int64 ns timestamps in
 * time order, double values) of one series in a self-contained,
 * checksummed byte string: the unit the store keeps closed history in and
 * the unit the flush log writes, so nothing is encoded twice.  Its byte
 * layout (version 1) is documented in docs/store.md; in short
 *
 *   u8 version | u8 codecs | uvarint n | i64 first_ts | uvarint span |
 *   uvarint ts_len | uvarint val_len | timestamps | values | u32 crc32c
 *
 * Timestamps are coded as integer residuals (order 0, 1 or 2: offsets,
 * deltas or delta-of-deltas, over their greatest common divisor, in one to
 * four bit widths chosen per block); values as one of
 *   TELEM_BLOCK_VAL_RAW  8 bytes each (incompressible data)
 *   TELEM_BLOCK_VAL_XOR  Gorilla-style XOR with the previous value,
 *                        reusing the previous run of meaningful bits
 *   TELEM_BLOCK_VAL_DEC  every value is m / 10^k for an int64 m and one k
 *                        (0..15) per block (integers: k = 0): the m are
 *                        coded like timestamps (counters become deltas,
 *                        steady counters delta-of-deltas, gauges deltas)
 *   TELEM_BLOCK_VAL_BITS  the values' IEEE bit patterns as int64, coded
 *                        the same way (constant series of any value, NaN
 *                        included, cost no bit a point)
 *   TELEM_BLOCK_VAL_DECX  any value as m / 10^k (one k per block) plus the
 *                        difference of bit patterns to the exact value:
 *                        values computed from decimals (differences of
 *                        timings in seconds) leave small differences
 *   TELEM_BLOCK_VAL_RATIO every value is (double) a / (double) b * s for
 *                        integers a, b (b <= 2^25) and s 1 or 100 per
 *                        block (percentages of counts: busy / total
 *                        jiffies, used / total memory)
 * and the smallest is chosen per block.  Round trips are exact, bit for
 * bit: NaN payloads, infinities, -0.0, subnormals, any int64 timestamp.
 *
 * What a block accepts: timestamps that never decrease (equal ones are
 * kept, in order).  An older timestamp is refused by the appender
 * (TELEM_EINVAL) - the store keeps its points in time order, and places a
 * late point with telem_block_writer_insert() (O(n)) or in another block.
 * The decoder refuses a block whose timestamps decrease.
 *
 * The writer (telem_block_writer_t) is the open block: appends cost O(1)
 * (a few bit writes: delta-of-delta timestamps in fixed widths, XOR
 * values), a snapshot of it is a valid block at any time (for a partial
 * flush), and finishing it re-codes its points once with the best
 * encodings into the closed block.  Decoding never allocates, checks the
 * checksum first and every bound after it: a malformed block gives
 * TELEM_EPROTO (or TELEM_EVERSION), never a crash or an over-read.
 *
 * Timestamp resolution: by default timestamps are kept exactly.  A writer
 * (or telem_block_encode()) given ts_unit_ns > 1 keeps them rounded down
 * to multiples of that unit - a loss the caller chooses (Prometheus keeps
 * milliseconds); a block whose time deltas share a divisor (collectors'
 * grid-aligned rounds, rounded timestamps) is coded in that unit anyway.
 *
 * Thread safety: functions on distinct objects may run in parallel;
 * decoding functions only read their input.  Not thread-safe on one
 * writer or iterator.
 */
#ifndef TELEM_BLOCK_H
#define TELEM_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "telem_error.h"

#define TELEM_BLOCK_VERSION 1
#define TELEM_BLOCK_MAX_POINTS 65535u
/* Bytes of a block's header at most (2 + 3 + 8 + 3 x 10), and of its
 * checksum. */
#define TELEM_BLOCK_HEADER_MAX 48u
#define TELEM_BLOCK_CRC_BYTES 4u

/* Value codecs (the low four bits of a block's codec byte).  The high four
 * bits name the timestamp codec: 0, the only one of version 1. */
typedef enum {
    TELEM_BLOCK_VAL_RAW = 0,
    TELEM_BLOCK_VAL_XOR = 1,
    TELEM_BLOCK_VAL_DEC = 2,
    TELEM_BLOCK_VAL_BITS = 3,
    TELEM_BLOCK_VAL_DECX = 4,
    TELEM_BLOCK_VAL_RATIO = 5,
    TELEM_BLOCK_VAL_AUTO = 15     /* options only: the smallest */
} telem_block_vcodec_t;

typedef struct {
    int64_t ts_unit_ns;      /* >= 1; 1 (default) keeps timestamps exact */
    uint32_t max_points;     /* writer capacity, 1..TELEM_BLOCK_MAX_POINTS;
                                default 1024 */
    telem_block_vcodec_t value_codec;   /* default TELEM_BLOCK_VAL_AUTO */
} telem_block_opts_t;

/* Fills *opts with the defaults above. */
void telem_block_opts_default(telem_block_opts_t *opts);

/* What a block's header says. */
typedef struct {
    uint32_t npoints;
    int64_t first_ts;
    int64_t last_ts;
    telem_block_vcodec_t value_codec;
    size_t size;             /* bytes of the whole block, checksum included */
    size_t ts_bytes;         /* of the timestamp section */
    size_t value_bytes;      /* of the value section */
} telem_block_info_t;

/* Encodes points ts[0..n), val[0..n) (n >= 1, timestamps never
 * decreasing) into one block with the options' timestamp unit and value
 * codec (NULL: defaults; AUTO picks the smallest).  *out receives a
 * malloc'd buffer of *out_len bytes, owned by the caller.
 * Returns 0, TELEM_EINVAL (NULL arguments, n == 0 or over
 * TELEM_BLOCK_MAX_POINTS, a decreasing timestamp, bad options, a forced
 * DEC or RATIO codec for values it cannot code) or TELEM_ENOMEM. */
int telem_block_encode(const int64_t *ts, const double *val, uint32_t n,
                       const telem_block_opts_t *opts, unsigned char **out,
                       size_t *out_len);

/* Reads the header of the block at buf[0..len) (len may run past the
 * block: blocks can be laid end to end; info->size says where this one
 * ends) and checks its checksum.  Returns 0, TELEM_EPROTO (truncated,
 * malformed, checksum mismatch) or TELEM_EVERSION. */
int telem_block_info(const void *buf, size_t len, telem_block_info_t *info);

/* Decodes the block at buf[0..len) into ts[0..cap) and val[0..cap);
 * *info (NULL allowed) receives its header.  Returns 0, TELEM_EPROTO,
 * TELEM_EVERSION, or TELEM_ETOOBIG when cap < its point count (nothing
 * written then).  Allocates nothing. */
int telem_block_decode(const void *buf, size_t len, int64_t *ts,
                       double *val, uint32_t cap, telem_block_info_t *info);

/* --- the open block ---------------------------------------------------- */

typedef struct telem_block_writer telem_block_writer_t;

/* Returns an empty writer, or NULL with *err (NULL allowed) set to
 * TELEM_EINVAL (bad options) or TELEM_ENOMEM. */
telem_block_writer_t *telem_block_writer_new(const telem_block_opts_t *opts,
                                             int *err);

/* Frees the writer; accepts NULL and nulls *self_p. */
void telem_block_writer_destroy(telem_block_writer_t **self_p);

/* Appends one point, its timestamp first rounded down to the writer's
 * unit.  O(1).  Returns 0, TELEM_EINVAL (older than the newest point),
 * TELEM_EFULL (max_points reached: finish the block) or TELEM_ENOMEM
 * (the writer is unchanged after any failure). */
int telem_block_writer_append(telem_block_writer_t *self, int64_t ts,
                              double value);

/* Adds one point in time order, wherever it falls (after the points with
 * the same timestamp): O(1) when it is the newest, else the open block is
 * decoded and re-coded, O(n).  Same returns as append, but for
 * TELEM_EINVAL. */
int telem_block_writer_insert(telem_block_writer_t *self, int64_t ts,
                              double value);

/* Points held, and the first and last timestamp (INT64_MIN when empty). */
uint32_t telem_block_writer_count(const telem_block_writer_t *self);
int64_t telem_block_writer_first(const telem_block_writer_t *self);
int64_t telem_block_writer_last(const telem_block_writer_t *self);

/* Bytes the writer holds in memory (struct and buffers). */
size_t telem_block_writer_mem(const telem_block_writer_t *self);

/* Size of the open block as telem_block_writer_snapshot() writes it
 * (0 when empty). */
size_t telem_block_writer_snapshot_size(const telem_block_writer_t *self);

/* Writes the open block - the points so far, in the writer's own
 * encodings (delta-of-delta timestamps, XOR values) - as a valid block
 * into buf[0..cap); *len receives its size.  The writer is unchanged and
 * can go on.  Returns 0, TELEM_ESTATE (no point yet) or TELEM_ETOOBIG
 * (cap too small). */
int telem_block_writer_snapshot(const telem_block_writer_t *self, void *buf,
                                size_t cap, size_t *len);

/* Closes the block: encodes its points with the best encodings (as
 * telem_block_encode() with the writer's options) into a malloc'd buffer
 * (*out, *out_len, owned by the caller) and empties the writer for the
 * next block.  Returns 0, TELEM_ESTATE (no point) or TELEM_ENOMEM (the
 * writer keeps its points). */
int telem_block_writer_finish(telem_block_writer_t *self, unsigned char **out,
                              size_t *out_len);

/* Empties the writer (keeps its buffers). */
void telem_block_writer_reset(telem_block_writer_t *self);

/* --- iterating a block -------------------------------------------------- */

typedef struct telem_block_iter telem_block_iter_t;

/* Returns an iterator over no block, or NULL when out of memory.  One
 * iterator serves any number of blocks in turn (reset). */
telem_block_iter_t *telem_block_iter_new(void);
void telem_block_iter_destroy(telem_block_iter_t **self_p);

/* Points the iterator at the block buf[0..len) (which must stay valid
 * while it is iterated) after checking its header and checksum; *info
 * (NULL allowed) receives the header.  Returns 0, TELEM_EPROTO or
 * TELEM_EVERSION (the iterator then yields nothing). */
int telem_block_iter_reset(telem_block_iter_t *self, const void *buf,
                           size_t len, telem_block_info_t *info);

/* Yields the next point: 1 with *ts and *value set, 0 at the end, or
 * TELEM_EPROTO when the block turns out malformed (its points so far were
 * yielded; nothing more is). */
int telem_block_iter_next(telem_block_iter_t *self, int64_t *ts,
                          double *value);

#endif
