/* telem_seg.h - the flush log's segment files and the dump files: one
 * record format, its writers and its reader.
 *
 * A node's telemd writes its history as a log of segment files in one
 * directory (telem_seglog_t); a dump (telem_dump_t) holds the history of
 * any number of nodes in one file.  Both are a versioned file header and
 * a sequence of records; a dump adds INDEX records and a fixed footer
 * pointing at them so a reader need not scan.  The byte layout is
 * documented in docs/store.md ("Segment files", "Dump files"); in short
 *
 *   file    "TELEMSEG" | u16 version | u8 kind | u8 0 | i64 created_ns |
 *           u16 node_len | node | u32 crc32c
 *   record  u32 sync 0x0a52ec7e | u32 len | u8 kind | u8 0 | u16 hcrc |
 *           payload (len bytes) | u32 crc32c of the payload
 *   footer  (dumps) "TELEMIDX" | u64 index_off | u64 index_len | u32 crc
 *
 * with records
 *   SERIES   (file-local series id, node, canonical key, counter flag)
 *   BLOCK    (series id, first_seq, closed, the telem_block bytes)
 *   META     (node, telem_meta_t)
 *   SNAPSHOT (node, creation time, JSON text)
 *   INDEX    (dumps: per series node, key, and for each of its blocks the
 *            record's offset, first_seq, point count and time range)
 *   ANNOTATION (dumps: one job event - a detector event or a restart -
 *            with its time and its JSON object, as telem_agg shows them).
 * A record of a kind this reader does not know (a later kind) whose
 * framing and checksums hold is skipped and counted (damage.unknown), not
 * taken for damage.
 * Every file is self-contained: a BLOCK's series is defined by a SERIES
 * record earlier in the same file, so the oldest segment can be deleted.
 *
 * Damage: a record whose header or payload checksum fails, whose length
 * passes the file's end or TELEM_SEG_RECORD_MAX, or whose payload does not
 * decode, is reported (offset, bytes skipped) and skipped; reading goes on
 * at the next sync marker that starts a valid record.  A torn tail (a
 * record cut by a crash) is reported the same way.  Nothing is fatal but
 * an unreadable file header.  No allocation is sized by a length read from
 * a file beyond TELEM_SEG_RECORD_MAX.
 *
 * Part store: uses only common (CRC-32C, error codes, paths); no sockets.
 * Thread safety: distinct objects may be used in parallel; one object has
 * one user at a time.
 */
#ifndef TELEM_SEG_H
#define TELEM_SEG_H

#include <stddef.h>
#include <stdint.h>

#include "telem_chunk.h"
#include "telem_error.h"
#include "telem_types.h"

#define TELEM_SEG_VERSION 1
/* The largest record payload a writer writes and a reader accepts: the
 * bound of every buffer a reader sizes from a file. */
#define TELEM_SEG_RECORD_MAX (16u << 20)
/* The largest snapshot text a record holds. */
#define TELEM_SEG_SNAPSHOT_MAX (4u << 20)
/* File name suffixes: telem_hist_add_dir() reads files ending so. */
#define TELEM_SEG_SUFFIX ".tseg"
#define TELEM_DUMP_SUFFIX ".tdump"

typedef enum {
    TELEM_SEG_FILE_SEGMENT = 1,
    TELEM_SEG_FILE_DUMP = 2
} telem_seg_file_kind_t;

typedef enum {
    TELEM_SEG_REC_SERIES = 1,
    TELEM_SEG_REC_BLOCK = 2,
    TELEM_SEG_REC_META = 3,
    TELEM_SEG_REC_SNAPSHOT = 4,
    TELEM_SEG_REC_INDEX = 5,
    TELEM_SEG_REC_ANNOTATION = 6
} telem_seg_rec_kind_t;

/* The type of an ANNOTATION record. */
typedef enum {
    TELEM_SEG_NOTE_EVENT = 1,     /* a detector event (events.jsonl) */
    TELEM_SEG_NOTE_RESTART = 2    /* a restart (restarts.log) */
} telem_seg_note_t;

/* The largest JSON text an ANNOTATION record holds. */
#define TELEM_SEG_NOTE_MAX (1u << 20)

/* --- a node's log directory ------------------------------------------- */

typedef enum {
    TELEM_SEG_FSYNC_COMMIT = 0,   /* default: fdatasync at every commit (a
                                     crash loses at most the last flush
                                     interval, the commit in progress) */
    TELEM_SEG_FSYNC_ROTATE = 1,   /* only when a segment is closed */
    TELEM_SEG_FSYNC_NEVER = 2     /* leave it to the kernel (tests) */
} telem_seg_fsync_t;

typedef struct {
    const char *dir;              /* the node's log directory (created 0700,
                                     parents too) */
    const char *node;             /* node name (telem_node_valid()) */
    uint64_t segment_bytes;       /* rotate past this size; default 64 MiB */
    int64_t segment_age_ns;       /* rotate when older; default 1 h */
    uint64_t total_bytes;         /* bound on all segments; default 1 GiB;
                                     0: unbounded */
    int64_t history_ns;           /* remove segments whose newest point is
                                     older than now - history; default 0:
                                     unbounded */
    telem_seg_fsync_t fsync;      /* default TELEM_SEG_FSYNC_COMMIT */
} telem_seglog_config_t;

typedef struct {
    uint64_t segments;            /* segment files in the directory */
    uint64_t total_bytes;         /* their bytes */
    uint64_t commits;             /* successful commits */
    uint64_t bytes_written;       /* by successful commits */
    uint64_t write_errors;        /* failed commits */
    uint64_t rotations;           /* segments closed for size or age */
    uint64_t removed;             /* segments removed by the bounds */
    uint64_t pending_bytes;       /* put, not yet committed */
} telem_seglog_stats_t;

typedef struct telem_seglog telem_seglog_t;

/* Fills *cfg with the defaults above (dir and node NULL). */
void telem_seglog_config_default(telem_seglog_config_t *cfg);

/* Opens the log directory cfg->dir: creates it mode 0700 (and missing
 * parents), or refuses one owned by another user or open to group/other
 * (as run directories are); counts the segments already there (names
 * "seg-<created ns, 20 digits>.tseg", sortable by time) and starts a new
 * segment: a log never appends to an old, possibly torn, segment.
 * Returns the log, or NULL with *err (NULL allowed) set to TELEM_EINVAL
 * (NULL dir, bad node, zero segment_bytes or age, bad fsync), TELEM_EINVAL
 * also for a directory of another user or with group/other access,
 * TELEM_EIO (errno kept) or TELEM_ENOMEM.  The strings are copied. */
telem_seglog_t *telem_seglog_open(const telem_seglog_config_t *cfg, int *err);

/* Closes the current segment (fsync unless the policy is NEVER) and frees
 * the log; what was put and not committed is lost.  Accepts NULL and nulls
 * *self_p. */
void telem_seglog_close(telem_seglog_t **self_p);

/* Adds one chunk (key, key_len, counter, first_seq, block, closed are
 * read; the block must pass telem_block_info()) to the flush being built:
 * encodes a SERIES record the first time the key appears in the current
 * segment, then its BLOCK record, into memory.  The chunk is copied.
 * Nothing reaches the file before telem_seglog_commit().
 * Returns 0, TELEM_EINVAL (NULL or empty key, key not ending in NUL, key
 * over TELEM_SEG_RECORD_MAX / 2, a block that does not check),
 * TELEM_EFULL (the pending flush would pass max(64 MiB, 2 x segment_bytes):
 * commit first) or TELEM_ENOMEM; nothing is added on failure. */
int telem_seglog_put_chunk(telem_seglog_t *self, const telem_chunk_t *c);

/* Adds a META record (the metric's meta; NULL unit/doc are "").  Same
 * returns as put_chunk (TELEM_EINVAL for a NULL or empty metric). */
int telem_seglog_put_meta(telem_seglog_t *self, const telem_meta_t *m);

/* Adds a SNAPSHOT record: json[0..len) (any bytes; at most
 * TELEM_SEG_SNAPSHOT_MAX), taken at created_ns.  Every segment gets the
 * last snapshot put again when it starts, so deleting old segments never
 * loses it.  Same returns as put_chunk. */
int telem_seglog_put_snapshot(telem_seglog_t *self, const char *json,
                              size_t len, int64_t created_ns);

/* Writes what was put since the last successful commit as one write()
 * (now_ns: realtime, the clock of telem_now_ns(), as segment creation
 * times and point times are)
 * (nothing is written when nothing was put), fsyncs by the policy, then
 * rotates when the segment passed segment_bytes or is older than
 * segment_age_ns (its creation time against now_ns), and removes the
 * oldest whole segments (never the current one) while the total passes
 * total_bytes, or while their newest point is older than now_ns -
 * history_ns.  A segment's newest point: the newest point time of its
 * blocks for segments written by this log, the file's modification time
 * for older ones.
 * Returns 0, or TELEM_EIO (write or fsync failed, errno kept; disk full):
 * the segment is cut back to its last good size, the flush stays pending
 * and the next commit writes it again with what is put meanwhile, so the
 * log stays usable.  A failed removal is not an error (counted). */
int telem_seglog_commit(telem_seglog_t *self, int64_t now_ns);

/* Drops what was put and not committed (after TELEM_EFULL, say). */
void telem_seglog_discard(telem_seglog_t *self);

/* Path of the current segment (valid until the next commit or close). */
const char *telem_seglog_path(const telem_seglog_t *self);

void telem_seglog_stats(const telem_seglog_t *self, telem_seglog_stats_t *out);

/* --- dump files ------------------------------------------------------- */

typedef struct telem_dump telem_dump_t;

/* Creates the dump file at path (mode 0600; refuses an existing file:
 * O_EXCL) and writes its header.  Returns the dump, or NULL with *err
 * (NULL allowed) set to TELEM_EINVAL (NULL path), TELEM_EIO (errno kept:
 * EEXIST when the file exists) or TELEM_ENOMEM. */
telem_dump_t *telem_dump_open(const char *path, int *err);

/* Appends a chunk of `node`'s series (as telem_seglog_put_chunk(); a
 * SERIES record the first time node+key appears in the file).  Records are
 * written through a buffer of a few MiB; the index stays in memory (about
 * 48 bytes a block, plus each series' key) until close.
 * Returns 0, TELEM_EINVAL (bad node, key or block), TELEM_EIO or
 * TELEM_ENOMEM. */
int telem_dump_put_chunk(telem_dump_t *self, const char *node,
                         const telem_chunk_t *c);

/* Appends a META record of `node`.  Returns as above. */
int telem_dump_put_meta(telem_dump_t *self, const char *node,
                        const telem_meta_t *m);

/* Appends a SNAPSHOT record of `node`.  Returns as above. */
int telem_dump_put_snapshot(telem_dump_t *self, const char *node,
                            const char *json, size_t len, int64_t created_ns);

/* Appends an ANNOTATION record: a job event of `type` at time_ms (ms
 * since the epoch, realtime) described by json[0..len) (the event's JSON
 * object as the run directory gives it; any bytes, at most
 * TELEM_SEG_NOTE_MAX).  Its offset goes into the index with the META and
 * SNAPSHOT offsets.  Returns as above (TELEM_EINVAL: a bad type, NULL
 * json, too long). */
int telem_dump_put_annotation(telem_dump_t *self, telem_seg_note_t type,
                              int64_t time_ms, const char *json, size_t len);

/* Writes the INDEX records and the footer, fsyncs and closes the file, and
 * frees the dump (also on failure; a file left without its footer is still
 * read, by scanning).  Accepts NULL (returns 0) and nulls *self_p.
 * Returns 0 or TELEM_EIO / TELEM_ENOMEM (from close or an earlier put). */
int telem_dump_close(telem_dump_t **self_p);

/* --- reading ---------------------------------------------------------- */

/* A file's header. */
typedef struct {
    uint16_t version;
    telem_seg_file_kind_t kind;
    int64_t created_ns;
    char node[TELEM_NAME_MAX + 1];   /* segments; "" for dumps */
} telem_seg_info_t;

/* One record as the reader hands it; pointers are valid only during the
 * callback.  `node` is NUL-terminated; `key` is a canonical key (it ends
 * in NUL).  BLOCK records come with their series resolved from the
 * file's SERIES records, as a chunk (key, key_len, metric, counter,
 * first_seq, block, closed; tags NULL, ntags 0). */
typedef struct {
    telem_seg_rec_kind_t kind;
    uint64_t offset;              /* of the record's sync marker */
    uint32_t size;                /* of the whole record, header and crc */
    uint64_t series_id;           /* SERIES, BLOCK */
    const char *node;             /* SERIES, BLOCK, META, SNAPSHOT */
    telem_chunk_t chunk;          /* SERIES (key, counter), BLOCK */
    uint64_t block_offset;        /* BLOCK: file offset of the block bytes */
    uint32_t npoints;             /* BLOCK: its header (telem_block_info()) */
    int64_t first_ts;
    int64_t last_ts;
    telem_meta_t meta;            /* META */
    const char *json;             /* SNAPSHOT: json[0..json_len) */
    size_t json_len;
    int64_t created_ns;           /* SNAPSHOT */
    telem_seg_note_t note;        /* ANNOTATION: its type; json, json_len:
                                     its JSON text */
    int64_t note_ms;              /* ANNOTATION: its time */
} telem_seg_rec_t;

/* Return non-zero to stop the walk (telem_seg_read() returns it). */
typedef int (*telem_seg_rec_fn)(void *arg, const telem_seg_rec_t *r);

#define TELEM_SEG_DAMAGE_LIST 8

/* What a read found wrong.  Stretches are in file order; the first
 * TELEM_SEG_DAMAGE_LIST are listed. */
typedef struct {
    uint64_t records;             /* valid records handed to fn */
    uint64_t bad;                 /* damaged stretches skipped */
    uint64_t bytes_skipped;       /* their bytes */
    uint64_t orphans;             /* BLOCKs of an unknown series id */
    int torn_tail;                /* the last stretch reached the file's end */
    int no_index;                 /* a dump without a valid footer/index:
                                     read by scanning */
    struct {
        uint64_t offset;
        uint64_t bytes;
    } list[TELEM_SEG_DAMAGE_LIST];
    uint32_t nlist;
    uint64_t unknown;             /* well-formed records of a kind this
                                     reader does not know: skipped */
} telem_seg_damage_t;

/* Reads path's file header into *info.  Returns 0, TELEM_ENOTFOUND (no
 * such file), TELEM_EIO, TELEM_EPROTO (not a telem segment or dump, or a
 * damaged header) or TELEM_EVERSION (a newer version). */
int telem_seg_info(const char *path, telem_seg_info_t *info);

/* Reads the file at path (a segment or a dump, scanned record by record,
 * an INDEX too) and calls fn for every valid record in file order, the
 * records' series resolved; *damage (NULL allowed) receives what was
 * skipped (zeroed first).  *info (NULL allowed) receives the header.
 * Memory: one buffer of at most 2 x TELEM_SEG_RECORD_MAX plus the file's
 * series table.
 * Returns 0, fn's non-zero value, or what telem_seg_info() returns for the
 * header, or TELEM_ENOMEM.  Damage after the header is not an error. */
int telem_seg_read(const char *path, telem_seg_rec_fn fn, void *arg,
                   telem_seg_info_t *info, telem_seg_damage_t *damage);

/* --- a dump's index --------------------------------------------------- */

/* One block in a dump's index. */
typedef struct {
    uint64_t offset;              /* of its BLOCK record */
    uint32_t size;                /* of the whole record */
    uint64_t first_seq;
    uint32_t npoints;
    int closed;
    int64_t first_ts;
    int64_t last_ts;
} telem_seg_iblock_t;

/* One series of a dump's index; pointers valid during the callback. */
typedef struct {
    const char *node;
    const char *key;
    uint32_t key_len;
    int counter;
    const telem_seg_iblock_t *blocks;
    uint32_t nblocks;
} telem_seg_iseries_t;

/* The offsets of the dump's META, SNAPSHOT and ANNOTATION records come as one more
 * call per record with s NULL and iother_offset set. */
typedef int (*telem_seg_index_fn)(void *arg, const telem_seg_iseries_t *s,
                                  uint64_t iother_offset);

/* Reads a dump's footer and INDEX records (not its blocks) and calls fn
 * per series, then per META/SNAPSHOT/ANNOTATION record offset.  Returns 0, fn's
 * value, TELEM_ENOTFOUND (no valid footer or index: scan with
 * telem_seg_read()), what telem_seg_info() returns, or TELEM_ENOMEM. */
int telem_seg_read_index(const char *path, telem_seg_index_fn fn, void *arg);

/* Reads the one record at offset (from an index or an earlier read) of
 * the open file fd and calls fn with it; BLOCK records come without their
 * series (key NULL, series_id set).  Returns 0, fn's value, TELEM_EPROTO
 * (no valid record there), TELEM_EIO or TELEM_ENOMEM. */
int telem_seg_read_at(int fd, uint64_t offset, telem_seg_rec_fn fn,
                      void *arg);

#endif
