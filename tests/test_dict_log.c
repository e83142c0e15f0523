/* test_dict_log.c - unit tests for the dictionary's record log.
 *
 * Writes records, reopens and compares what replay hands back; cuts the
 * file at every byte of its last record (a torn write) and flips bytes in
 * it (damage) to check that replay keeps exactly the good prefix and
 * truncates the rest; checks large values (direct writes), values held
 * as messages until a flush, compaction and invalid appends.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ddict_log.h"
#include "telem_error.h"

#define MAXREC 64

typedef struct {
    int n;
    ddict_log_rec_t rec[MAXREC];
    char ns[MAXREC][256];
    uint8_t *key[MAXREC];
    uint8_t *val[MAXREC];
} seen_t;

static int
s_collect(void *arg, const ddict_log_rec_t *r)
{
    seen_t *s = arg;
    if (s->n >= MAXREC)
        return 99;
    int i = s->n++;
    s->rec[i] = *r;
    memcpy(s->ns[i], r->ns, r->nslen);
    s->key[i] = malloc(r->klen + 1);
    s->val[i] = malloc(r->vlen + 1);
    memcpy(s->key[i], r->key, r->klen);
    memcpy(s->val[i], r->val, r->vlen);
    return 0;
}

static void
s_seen_free(seen_t *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->key[i]);
        free(s->val[i]);
    }
    s->n = 0;
}

static ddict_log_rec_t
s_put(const char *ns, const char *key, const void *val, uint64_t vlen,
      uint64_t version)
{
    ddict_log_rec_t r = { DDICT_LOG_REC_PUT, 7, ns, (uint8_t) strlen(ns), key,
                      (uint32_t) strlen(key), val, vlen, version };
    return r;
}

static off_t
s_fsize(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? sb.st_size : -1;
}

static void
test_roundtrip(const char *path)
{
    unlink(path);
    ddict_log_t *log = NULL;
    ddict_log_stats_t st;
    CHECK((log = ddict_log_open(path, NULL, NULL, &st, NULL)) != NULL);
    CHECK(st.records == 0 && st.dropped_bytes == 0);
    ddict_log_rec_t a = s_put("app", "k1", "hello", 5, 1);
    ddict_log_rec_t b = s_put("", "k2", NULL, 0, 2);
    ddict_log_rec_t c = { DDICT_LOG_REC_DEL, 255, "app", 3, "k1", 2, NULL, 0, 0 };
    ddict_log_rec_t m = { DDICT_LOG_REC_MAP, 2, "", 0, "", 0, "n1\nn2", 5, 42 };
    CHECK(ddict_log_append(log, &a) == 0);
    CHECK(ddict_log_append(log, &b) == 0);
    CHECK(ddict_log_append(log, &c) == 0);
    CHECK(ddict_log_append(log, &m) == 0);
    uint64_t size = ddict_log_size(log);
    CHECK(size == 4 * DDICT_LOG_HDR + 3 + 2 + 5 + 2 + 3 + 2 + 5);
    CHECK(ddict_log_sync(log) == 0);
    CHECK(s_fsize(path) == (off_t) size);
    ddict_log_destroy(&log);
    CHECK(log == NULL);

    seen_t s = { 0 };
    CHECK((log = ddict_log_open(path, s_collect, &s, &st, NULL)) != NULL);
    CHECK(st.records == 4 && st.bytes == size && st.dropped_bytes == 0);
    CHECK(s.n == 4);
    CHECK(s.rec[0].type == DDICT_LOG_REC_PUT && s.rec[0].shard == 7);
    CHECK(s.rec[0].nslen == 3 && memcmp(s.ns[0], "app", 3) == 0);
    CHECK(s.rec[0].klen == 2 && memcmp(s.key[0], "k1", 2) == 0);
    CHECK(s.rec[0].vlen == 5 && memcmp(s.val[0], "hello", 5) == 0);
    CHECK(s.rec[0].version == 1);
    CHECK(s.rec[1].nslen == 0 && s.rec[1].vlen == 0 && s.rec[1].version == 2);
    CHECK(s.rec[2].type == DDICT_LOG_REC_DEL && s.rec[2].shard == 255);
    CHECK(s.rec[3].type == DDICT_LOG_REC_MAP && s.rec[3].version == 42
          && s.rec[3].vlen == 5 && memcmp(s.val[3], "n1\nn2", 5) == 0);
    s_seen_free(&s);
    /* Appending after a replay continues the file. */
    CHECK(ddict_log_append(log, &a) == 0);
    ddict_log_destroy(&log);
    CHECK((log = ddict_log_open(path, s_collect, &s, &st, NULL)) != NULL);
    CHECK(s.n == 5 && st.dropped_bytes == 0);
    s_seen_free(&s);
    ddict_log_destroy(&log);
}

/* Every cut inside the last record must drop exactly that record. */
static void
test_torn_tail(const char *path)
{
    unlink(path);
    ddict_log_t *log = NULL;
    CHECK((log = ddict_log_open(path, NULL, NULL, NULL, NULL)) != NULL);
    ddict_log_rec_t a = s_put("ns", "first", "value-1", 7, 1);
    ddict_log_rec_t b = s_put("ns", "second", "value-two", 9, 2);
    CHECK(ddict_log_append(log, &a) == 0);
    uint64_t good = ddict_log_size(log);
    CHECK(ddict_log_append(log, &b) == 0);
    uint64_t full = ddict_log_size(log);
    ddict_log_destroy(&log);
    for (uint64_t cut = good + 1; cut < full; cut++) {
        CHECK(truncate(path, (off_t) cut) == 0);
        seen_t s = { 0 };
        ddict_log_stats_t st;
        CHECK((log = ddict_log_open(path, s_collect, &s, &st, NULL))
              != NULL);
        CHECK(s.n == 1 && st.bytes == good && st.dropped_bytes == cut - good);
        CHECK(s_fsize(path) == (off_t) good);
        /* Restore the full record for the next cut. */
        CHECK(ddict_log_append(log, &b) == 0);
        ddict_log_destroy(&log);
        s_seen_free(&s);
    }
}

/* A flipped byte anywhere in the last record is caught by the CRC or the
 * framing checks. */
static void
test_damage(const char *path)
{
    unlink(path);
    ddict_log_t *log = NULL;
    CHECK((log = ddict_log_open(path, NULL, NULL, NULL, NULL)) != NULL);
    ddict_log_rec_t a = s_put("ns", "a", "1", 1, 1);
    ddict_log_rec_t b = s_put("ns", "bb", "22", 2, 2);
    CHECK(ddict_log_append(log, &a) == 0);
    uint64_t good = ddict_log_size(log);
    CHECK(ddict_log_append(log, &b) == 0);
    uint64_t full = ddict_log_size(log);
    ddict_log_destroy(&log);
    for (uint64_t at = good; at < full; at++) {
        FILE *f = fopen(path, "r+b");
        CHECK(f != NULL);
        if (!f)
            return;
        fseek(f, (long) at, SEEK_SET);
        int ch = fgetc(f);
        fseek(f, (long) at, SEEK_SET);
        fputc(ch ^ 0x5a, f);
        fclose(f);
        seen_t s = { 0 };
        ddict_log_stats_t st;
        CHECK((log = ddict_log_open(path, s_collect, &s, &st, NULL))
              != NULL);
        CHECK(s.n == 1 && st.dropped_bytes == full - good);
        CHECK(ddict_log_append(log, &b) == 0);
        ddict_log_destroy(&log);
        s_seen_free(&s);
    }
    /* A header that claims a huge value is refused, not allocated. */
    FILE *f = fopen(path, "ab");
    uint8_t junk[DDICT_LOG_HDR] = { 0x54, 0x44, 0x44, 0x4c, 0, 0, 0, 0, 1 };
    memset(junk + 16, 0xff, 8);
    fwrite(junk, 1, sizeof junk, f);
    fclose(f);
    seen_t s = { 0 };
    ddict_log_stats_t st;
    CHECK((log = ddict_log_open(path, s_collect, &s, &st, NULL)) != NULL);
    CHECK(s.n == 2 && st.dropped_bytes == DDICT_LOG_HDR);
    s_seen_free(&s);
    ddict_log_destroy(&log);
}

static void
test_large_and_invalid(const char *path)
{
    unlink(path);
    size_t big = (size_t) 3 << 20;
    uint8_t *v = malloc(big);
    for (size_t i = 0; i < big; i++)
        v[i] = (uint8_t) (i * 131 + 7);
    ddict_log_t *log = NULL;
    CHECK((log = ddict_log_open(path, NULL, NULL, NULL, NULL)) != NULL);
    ddict_log_rec_t small = s_put("n", "s", "x", 1, 1);
    ddict_log_rec_t large = s_put("n", "big", v, big, 2);
    CHECK(ddict_log_append(log, &small) == 0);
    CHECK(ddict_log_append(log, &large) == 0);
    CHECK(ddict_log_append(log, &small) == 0);
    ddict_log_rec_t bad = small;
    bad.type = 0;
    CHECK(ddict_log_append(log, &bad) == TELEM_EINVAL);
    bad = small;
    bad.vlen = DDICT_VALUE_MAX + 1;
    CHECK(ddict_log_append(log, &bad) == TELEM_EINVAL);
    bad = small;
    bad.key = NULL;
    CHECK(ddict_log_append(log, &bad) == TELEM_EINVAL);
    CHECK(ddict_log_sync(log) == 0);
    ddict_log_destroy(&log);
    seen_t s = { 0 };
    CHECK((log = ddict_log_open(path, s_collect, &s, NULL, NULL)) != NULL);
    CHECK(s.n == 3);
    CHECK(s.rec[1].vlen == big && memcmp(s.val[1], v, big) == 0);
    CHECK(s.rec[2].vlen == 1 && s.val[2][0] == 'x');
    s_seen_free(&s);
    ddict_log_destroy(&log);
    free(v);
}

static int
s_dump_two(void *arg, ddict_log_t *out)
{
    (void) arg;
    ddict_log_rec_t a = s_put("n", "kept", "1", 1, 9);
    ddict_log_rec_t b = s_put("n", "also", "22", 2, 3);
    return ddict_log_append(out, &a) || ddict_log_append(out, &b);
}

static int
s_dump_fail(void *arg, ddict_log_t *out)
{
    (void) arg;
    (void) out;
    return TELEM_EIO;
}

static void
test_compact(const char *path)
{
    unlink(path);
    ddict_log_t *log = NULL;
    CHECK((log = ddict_log_open(path, NULL, NULL, NULL, NULL)) != NULL);
    for (int i = 0; i < 50; i++) {
        ddict_log_rec_t r = s_put("n", "churn", "abcdef", 6, (uint64_t) i);
        CHECK(ddict_log_append(log, &r) == 0);
    }
    uint64_t before = ddict_log_size(log);
    CHECK(ddict_log_compact(log, s_dump_fail, NULL) == TELEM_EIO);
    CHECK(ddict_log_size(log) == before);
    CHECK(ddict_log_compact(log, s_dump_two, NULL) == 0);
    CHECK(ddict_log_size(log) < before);
    ddict_log_rec_t r = s_put("n", "after", "z", 1, 1);
    CHECK(ddict_log_append(log, &r) == 0);
    ddict_log_destroy(&log);
    seen_t s = { 0 };
    CHECK((log = ddict_log_open(path, s_collect, &s, NULL, NULL)) != NULL);
    CHECK(s.n == 3);
    CHECK(s.rec[0].klen == 4 && memcmp(s.key[0], "kept", 4) == 0);
    CHECK(s.rec[2].klen == 5 && memcmp(s.key[2], "after", 5) == 0);
    s_seen_free(&s);
    ddict_log_destroy(&log);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(access(tmp, F_OK) != 0);
}

/* Released by a value's last reference: counts the calls. */
static int s_freed;
static void
s_free_fn(void *data, void *hint)
{
    (void) hint;
    free(data);
    s_freed++;
}

/* A shared value of `size` bytes, every byte `fill`, whose bytes are
 * its owner's (freed, and counted, with the last reference). */
static void
s_msg(ddict_val_t **m, size_t size, int fill)
{
    uint8_t *b = malloc(size);
    CHECK(b);
    memset(b, fill, size);
    CHECK((*m = ddict_val_wrap(b, size, s_free_fn, NULL)) != NULL);
}

/* Shared values are written at the flush, in order with the records
 * around them; the caller may release its reference at once, and the
 * log's own goes once the record is written. */
static void
test_held(const char *path)
{
    unlink(path);
    ddict_log_t *log = NULL;
    CHECK((log = ddict_log_open(path, NULL, NULL, NULL, NULL)) != NULL);
    ddict_log_rec_t a = s_put("app", "small", "x", 1, 1);
    ddict_log_rec_t h = s_put("app", "big", NULL, 0, 2);
    ddict_val_t *m;
    s_freed = 0;
    CHECK(ddict_log_append(log, &a) == 0);
    s_msg(&m, 40000, 'A');
    CHECK(ddict_log_append_val(log, &h, m) == 0);
    ddict_val_release(&m);
    s_msg(&m, 10, 'b');       /* small: copied into the buffer */
    h.version = 3;
    CHECK(ddict_log_append_val(log, &h, m) == 0);
    ddict_val_release(&m);
    s_msg(&m, 70000, 'C');
    h.version = 4;
    CHECK(ddict_log_append_val(log, &h, m) == 0);
    ddict_val_release(&m);
    uint64_t size = ddict_log_size(log);
    CHECK(size == 4 * (DDICT_LOG_HDR + 3) + 5 + 3 * 3 + 1 + 40000 + 10
                      + 70000);
    CHECK(s_fsize(path) == 0);           /* held until the flush */
    CHECK(s_freed == 1);                 /* the small one was copied */
    CHECK(ddict_log_flush(log) == 0);
    CHECK(s_freed == 3);                 /* written: references dropped */
    CHECK(s_fsize(path) == (off_t) size);
    ddict_log_destroy(&log);
    seen_t s = { 0 };
    CHECK((log = ddict_log_open(path, s_collect, &s, NULL, NULL)) != NULL);
    CHECK(s.n == 4);
    CHECK(s.rec[0].vlen == 1 && s.val[0][0] == 'x');
    CHECK(s.rec[1].vlen == 40000 && s.rec[1].version == 2
          && s.val[1][0] == 'A' && s.val[1][39999] == 'A');
    CHECK(s.rec[2].vlen == 10 && s.val[2][9] == 'b');
    CHECK(s.rec[3].vlen == 70000 && s.rec[3].version == 4
          && s.val[3][69999] == 'C');
    s_seen_free(&s);
    /* Past the bound (1 MiB held) the log writes without being asked. */
    for (int i = 0; i < 60; i++) {
        s_msg(&m, 20000, i);
        h.version = (uint64_t) i;
        CHECK(ddict_log_append_val(log, &h, m) == 0);
        ddict_val_release(&m);
    }
    CHECK(s_fsize(path) > (off_t) size);
    CHECK(s_fsize(path) < (off_t) ddict_log_size(log));
    ddict_log_destroy(&log);              /* writes the rest */
    CHECK((log = ddict_log_open(path, s_collect, &s, NULL, NULL)) != NULL);
    CHECK(s.n == 64);
    for (int i = 0; i < 60; i++)
        CHECK(s.rec[4 + i].version == (uint64_t) i
              && s.val[4 + i][19999] == (uint8_t) i);
    s_seen_free(&s);
    /* A compaction drops held values: the dump has the live state. */
    s_msg(&m, 30000, 'D');
    CHECK(ddict_log_append_val(log, &h, m) == 0);
    ddict_val_release(&m);
    CHECK(ddict_log_compact(log, s_dump_two, NULL) == 0);
    ddict_log_destroy(&log);
    CHECK((log = ddict_log_open(path, s_collect, &s, NULL, NULL)) != NULL);
    CHECK(s.n == 2);
    s_seen_free(&s);
    ddict_log_destroy(&log);
}

/* A log of the first format is refused and left as it was. */
static void
test_old_format(const char *path)
{
    FILE *f = fopen(path, "wb");
    unsigned char rec[40] = { 'T', 'D', 'D', 'L' };
    CHECK(f && fwrite(rec, 1, sizeof rec, f) == sizeof rec);
    if (f)
        fclose(f);
    int err = 0;
    ddict_log_t *log = ddict_log_open(path, NULL, NULL, NULL, &err);
    CHECK(log == NULL && err == TELEM_EVERSION);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size == (off_t) sizeof rec);
}

int
main(void)
{
    char dir[] = "/tmp/test_dict_log.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[600];
    snprintf(path, sizeof path, "%s/dict.log", dir);
    test_roundtrip(path);
    test_torn_tail(path);
    test_damage(path);
    test_large_and_invalid(path);
    test_compact(path);
    test_held(path);
    CHECK(ddict_log_crc("123456789", 9) == 0xe3069283u);   /* CRC-32C */
    test_old_format(path);
    unlink(path);
    rmdir(dir);
    return check_report("test_dict_log");
}
