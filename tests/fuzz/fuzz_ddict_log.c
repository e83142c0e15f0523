/* fuzz_ddict_log.c - libFuzzer target: the dictionary's log reader
 * (dict/core/ddict_log.c, ddict_log_open's replay) and what a server does
 * with the records it replays (dict/dictd/ddict_server.c: values into the
 * store, checkpoints, drops, shard maps from MAP records), the path a
 * restarted telem_dictd takes through a file it did not write whole.
 *
 * Input: one flag byte, then the log file, written to the scratch
 * directory (the reader maps a path).  Unless flag bit 0 is set, the
 * target rewrites each record's CRC-32C, record after record while the
 * headers parse, so mutations reach the replay behind the checksum.
 * Oracles beyond the sanitizers:
 *   - every record handed to the callback is the next one of the file:
 *     its type, names and value are the file's bytes at that place (the
 *     reader maps the file, which ASan does not watch: this catches a
 *     read past a record), with lengths within the format's limits;
 *   - the replay's kept and dropped bytes add up to the file's size, and
 *     the log is cut to the kept bytes;
 *   - a server opens on every log the reader accepts (a damaged map
 *     record is skipped, never fatal), and opens again on what it left.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ddict_log.h"
#include "ddict_server.h"
#include "fuzz.h"
#include "telem_error.h"
#include "telem_log.h"

/* The file as written, and where the next record must start in it. */
typedef struct {
    const uint8_t *file;
    size_t len;
    size_t off;
    uint64_t records;
} s_walk_t;

static uint64_t
s_get64le(const uint8_t *p)
{
    return (uint64_t) fz_get32le(p) | (uint64_t) fz_get32le(p + 4) << 32;
}

/* Rewrites the CRC of each record from the start while headers parse. */
static void
s_fix(uint8_t *p, size_t len)
{
    size_t off = 0;
    while (len - off >= DDICT_LOG_HDR && fz_get32le(p + off) == 0x324c4454u) {
        uint8_t *h = p + off;
        uint64_t klen = fz_get32le(h + 12), vlen = s_get64le(h + 16);
        if (klen > DDICT_KEY_MAX || vlen > DDICT_VALUE_MAX)
            return;
        uint64_t rec = DDICT_LOG_HDR + (uint64_t) h[9] + klen + vlen;
        if (rec > len - off)
            return;
        fz_put32le(h + 4, ddict_log_crc(h + 8, (size_t) rec - 8));
        off += (size_t) rec;
    }
}

/* Each record is the next one of the file: its bytes, at its place. */
static int
s_on_record(void *arg, const ddict_log_rec_t *r)
{
    s_walk_t *w = arg;
    FZ_CHECK(r->type >= DDICT_LOG_REC_PUT && r->type <= DDICT_LOG_REC_MAX);
    FZ_CHECK(r->klen <= DDICT_KEY_MAX && r->vlen <= DDICT_VALUE_MAX);
    uint64_t n = DDICT_LOG_HDR + (uint64_t) r->nslen + r->klen + r->vlen;
    FZ_CHECK(n <= w->len - w->off);
    const uint8_t *h = w->file + w->off;
    FZ_CHECK(h[8] == r->type && h[9] == r->nslen);
    FZ_CHECK(memcmp(r->ns, h + DDICT_LOG_HDR, r->nslen) == 0);
    FZ_CHECK(memcmp(r->key, h + DDICT_LOG_HDR + r->nslen, r->klen) == 0);
    FZ_CHECK(memcmp(r->val, h + DDICT_LOG_HDR + r->nslen + r->klen,
                    (size_t) r->vlen) == 0);
    w->off += (size_t) n;
    w->records++;
    return 0;
}

/* The reader: records in order, stats that add up, the tail cut. */
static void
s_reader(const char *path, const uint8_t *file, size_t len)
{
    s_walk_t w = { file, len, 0, 0 };
    ddict_log_stats_t st;
    int err = 0;
    ddict_log_t *log = ddict_log_open(path, s_on_record, &w, &st, &err);
    FZ_CHECK(log || err == TELEM_EVERSION);
    if (!log)
        return;
    FZ_CHECK(w.records == st.records && w.off == st.bytes);
    FZ_CHECK(st.bytes + st.dropped_bytes == len);
    FZ_CHECK(ddict_log_size(log) == st.bytes);
    ddict_log_destroy(&log);
    struct stat sb;
    FZ_CHECK(stat(path, &sb) == 0 && (uint64_t) sb.st_size == st.bytes);
}

static int
s_out(void *arg, zmq_msg_t *route, const char *peer, zmq_msg_t *frames,
      size_t n)
{
    (void) arg;
    (void) peer;
    if (route)
        zmq_msg_close(route);
    for (size_t i = 0; i < n; i++)
        zmq_msg_close(&frames[i]);
    return 0;
}

/* A server over the log, twice: the second replays what the first left. */
static void
s_server(const char *path)
{
    static const char *const nodes[] = { "n1", "n2", "n3" };
    ddict_server_config_t cfg = {
        .node = "n1", .log_path = path, .nodes = nodes, .nnodes = 3,
        .sync = DDICT_SYNC_NONE,
    };
    for (int round = 0; round < 2; round++) {
        int err = 0;
        ddict_server_t *s = ddict_server_new(&cfg, s_out, NULL, &err);
        FZ_CHECK(s || err == TELEM_EVERSION || err == TELEM_ENOMEM);
        if (!s)
            return;
        ddict_server_stats_t st;
        ddict_server_stats(s, &st);
        FZ_CHECK(round == 0 || st.dropped_bytes == 0);
        ddict_server_destroy(&s);
    }
}

/* The scratch directory is usually tmpfs, where the log's reservation of
 * 8 MiB ahead of its writes (fallocate) makes the kernel clear 8 MiB of
 * pages per open: it ran this target at ~160 inputs a second.  This
 * definition takes the place of the C library's in this program and
 * answers as a file system without fallocate does, a path the log
 * handles (ddict_log.c s_prealloc); nothing else changes. */
int
fallocate(int fd, int mode, off_t offset, off_t len)
{
    (void) fd;
    (void) mode;
    (void) offset;
    (void) len;
    errno = EOPNOTSUPP;
    return -1;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    telem_log_init("fuzz_ddict_log", TELEM_LOG_ERROR);
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t len = size - 1;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        abort();
    memcpy(buf, data + 1, len);
    if (!(data[0] & 1))
        s_fix(buf, len);
    char path[FZ_PATH_MAX];
    snprintf(path, sizeof path, "%s/dict.log", fz_scratch());
    if (fz_write(path, buf, len) != 0)
        abort();
    s_reader(path, buf, len);
    if (fz_write(path, buf, len) != 0)
        abort();
    s_server(path);
    unlink(path);
    free(buf);
    return 0;
}
