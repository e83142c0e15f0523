/* ddict_log.h - the dictionary server's append-only log, one file per server.
 *
 * Every change a server applies (put, delete, checkpoint copy, restore,
 * dropped shard, new shard map) is appended as one record; a restarted
 * server rebuilds its memory by replaying the file.  Records are framed
 * with a magic number, their lengths and a CRC-32C (telem_crc.h) over everything
 * after the CRC, so a record cut short by a crash (a torn tail) or damaged
 * on disk is detected: replay stops at the first bad record, truncates the
 * file there and reports how many bytes it dropped.  Nothing past a bad
 * record is ever handed out as data.
 *
 * Record layout (little-endian, 32-byte header then three byte strings):
 *   u32 magic "TDL2"   u32 crc32c(bytes 8 .. end of record)
 * A file written in the first format (magic "TDDL", zlib's CRC-32) is
 * refused with TELEM_EVERSION and left untouched, never cut as damaged.
 *   u8 type  u8 nslen  u16 shard  u32 klen  u64 vlen  u64 version
 *   ns[nslen] key[klen] value[vlen]
 *
 * Small records are gathered in a buffer and written with one write(2);
 * large values go straight from the caller's memory with writev(2).  A
 * shared value (ddict_val.h, ddict_log_append_val) is not written at
 * once: the log holds a reference to it and writes it, with the records
 * around it, in one writev(2) at the next flush (or once 1 MiB is held).
 * One write of up to 1 MiB instead of one per value costs the kernel
 * less per byte on ext4 (fewer calls, larger page-cache folios,
 * which are also cheaper to free when compaction deletes the old file);
 * the bound keeps the held values in the CPU's cache between the CRC
 * pass and the kernel's copy (held 16 MiB were slower than none).  File
 * space is reserved 8 MiB ahead of the writes (fallocate with
 * FALLOC_FL_KEEP_SIZE, so the file's size is still its last record's
 * end), which spares ext4 its per-block delayed allocation in the write.
 * ddict_log_sync() writes the buffer and calls fdatasync(2) once for
 * everything appended since the last sync, which is how a server batches
 * durability (FACTS.md: one sync costs ~180 us).
 *
 * Compaction rewrites the live state into "<path>.tmp" through a callback,
 * syncs it and renames it over the log, so a crash at any point leaves
 * either the old or the new file, both complete.
 *
 * Not thread-safe: one owner.
 */
#ifndef DDICT_LOG_H
#define DDICT_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "ddict_val.h"

#define DDICT_LOG_HDR 32
#define DDICT_KEY_MAX 65535u              /* bytes in a key */
#define DDICT_NS_MAX 255u                 /* bytes in a namespace */
#define DDICT_VALUE_MAX (1ull << 30)      /* bytes in one value */

typedef enum {
    DDICT_LOG_REC_PUT = 1,        /* ns, key, value, version */
    DDICT_LOG_REC_DEL = 2,        /* ns, key */
    DDICT_LOG_REC_CKPT = 3,   /* copy ns (value = source ns) into ns,
                                 on shard */
    DDICT_LOG_REC_CLEAR = 4,      /* remove every key of ns on shard */
    DDICT_LOG_REC_DROP = 5,       /* forget everything on shard */
    DDICT_LOG_REC_MAP = 6,        /* value = node list ('\n' separated),
                                 version = epoch, shard = replicas */
    DDICT_LOG_REC_MAX = 6
} ddict_log_rec_type_t;

/* One record.  Pointers are borrowed: on append they are read before the
 * call returns; on replay they point into the mapped file and are valid
 * only during the callback. */
typedef struct {
    uint8_t type;
    uint16_t shard;
    const char *ns;
    uint8_t nslen;
    const void *key;
    uint32_t klen;
    const void *val;
    uint64_t vlen;
    uint64_t version;
} ddict_log_rec_t;

typedef struct {
    uint64_t records;         /* records replayed */
    uint64_t bytes;           /* bytes kept */
    uint64_t dropped_bytes;   /* bytes cut off at the tail */
} ddict_log_stats_t;

/* Called once per good record during replay, in file order.  A non-zero
 * return stops the replay, and ddict_log_open() fails with it. */
typedef int (*ddict_log_replay_fn)(void *arg, const ddict_log_rec_t *rec);

typedef struct ddict_log ddict_log_t;

/* The read-only mapping of the file that replay walks.  A replay callback
 * may keep a record's bytes beyond the callback (zero-copy recovery of
 * large values) by taking a reference: ddict_log_rec_map(rec) is the
 * mapping of a record handed to the callback (only those), map_hold adds
 * a reference, map_release drops one and unmaps with the last.  Hold and
 * release are thread-safe (atomic); the bytes stay valid while held. */
typedef struct ddict_log_map ddict_log_map_t;
ddict_log_map_t *ddict_log_rec_map(const ddict_log_rec_t *rec);
void ddict_log_map_hold(ddict_log_map_t *m);
void ddict_log_map_release(ddict_log_map_t *m);

/* Opens (creating if missing, mode 0600) the log at `path`, replays its
 * good records through `fn` (may be NULL), truncates a bad tail, and
 * leaves the log ready to append.  *stats (may be NULL) says what was
 * found.  Returns the log, or NULL with *err (may be NULL) set to
 * TELEM_EIO (errno kept), TELEM_ENOMEM, TELEM_ETOOBIG (path too long),
 * TELEM_EVERSION (a log of the first format), or the callback's non-zero
 * return; *err is 0 on success. */
ddict_log_t *ddict_log_open(const char *path, ddict_log_replay_fn fn,
                            void *arg, ddict_log_stats_t *stats, int *err);

/* Flushes, closes and frees; accepts NULL and nulls the pointer.  Does not
 * sync: call ddict_log_sync() first where durability matters. */
void ddict_log_destroy(ddict_log_t **self_p);

/* Appends one record (buffered).  Returns 0, TELEM_EINVAL (type or a
 * length out of range) or TELEM_EIO. */
int ddict_log_append(ddict_log_t *self, const ddict_log_rec_t *rec);

/* Appends one record whose value is the shared value `val` (rec->val and
 * rec->vlen are taken from it).  A large value is not copied: the log
 * takes a reference of its own (the caller keeps and releases its own)
 * until the record is written, at the next flush, sync, compaction or
 * destroy, or when the held values pass a bound (256 values or 1 MiB).
 * Small values are copied into the buffer as by ddict_log_append.
 * Returns as ddict_log_append. */
int ddict_log_append_val(ddict_log_t *self, const ddict_log_rec_t *rec,
                         ddict_val_t *val);

/* Writes buffered records (held values included) to the file, no sync.
 * Returns 0 or TELEM_EIO. */
int ddict_log_flush(ddict_log_t *self);

/* Flushes and, if anything was appended since the last sync, calls
 * fdatasync.  Returns 0 or TELEM_EIO. */
int ddict_log_sync(ddict_log_t *self);

/* Bytes in the log, buffered ones included. */
uint64_t ddict_log_size(const ddict_log_t *self);

/* Writes the live state to a fresh file: `dump` must append every live
 * record to the log it is given (with ddict_log_append) and return 0.
 * The new file is synced and renamed over the old one, which this log
 * then continues.  Returns 0, the dump's non-zero return, or TELEM_EIO; on
 * failure the old log stays in use, unchanged. */
typedef int (*ddict_log_dump_fn)(void *arg, ddict_log_t *out);
int ddict_log_compact(ddict_log_t *self, ddict_log_dump_fn dump, void *arg);

/* Compaction in steps, for a server that must keep serving meanwhile.
 * compact_begin flushes this log, remembers its size as the snapshot
 * point and opens a fresh "<path>.tmp"; the caller appends the live state
 * as of that point to *fresh at its own pace (ddict_log_append, with
 * ddict_log_pace() now and then) while it keeps appending new records to
 * this log.  compact_finish copies the records appended here since the
 * snapshot point to the fresh file, syncs it, renames it over the log
 * and continues there; on failure the old log stays in use, unchanged.
 * compact_abort drops the fresh file.  Returns 0 or TELEM_EIO /
 * TELEM_ENOMEM. */
int ddict_log_compact_begin(ddict_log_t *self, ddict_log_t **fresh);
int ddict_log_compact_finish(ddict_log_t *self, ddict_log_t **fresh);
void ddict_log_compact_abort(ddict_log_t *self, ddict_log_t **fresh);

/* Writes buffered records out and starts the kernel's write-back of what
 * was written (without waiting), so the final sync of a long write is
 * short.  Returns 0 or TELEM_EIO. */
int ddict_log_pace(ddict_log_t *self);

/* CRC-32C of a record's bytes as the log computes it (exposed for tests). */
uint32_t ddict_log_crc(const void *data, size_t size);

#endif
