/* seg_test.h - what test_seg.c and test_hist.c share: real blocks made with
 * the block codec, chunks, and reading a whole file back into memory.
 */
#ifndef TELEM_TESTS_SEG_TEST_H
#define TELEM_TESTS_SEG_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_block.h"
#include "telem_seg.h"

#define SEC INT64_C(1000000000)

/* A real block of n points: t0 + i * step, values v0 + i. */
__attribute__((unused)) static unsigned char *
mk_block(int64_t t0, int64_t step, double v0, uint32_t n, size_t *len)
{
    int64_t *ts = malloc(n * sizeof *ts);
    double *val = malloc(n * sizeof *val);
    unsigned char *out = NULL;
    for (uint32_t i = 0; i < n; i++) {
        ts[i] = t0 + (int64_t) i * step;
        val[i] = v0 + i;
    }
    if (telem_block_encode(ts, val, n, NULL, &out, len) != 0)
        out = NULL;
    free(ts);
    free(val);
    return out;
}

/* A chunk of key (a metric without tags when it has no NUL inside). */
__attribute__((unused)) static telem_chunk_t
mk_chunk(const char *key, uint32_t key_len, uint64_t first_seq,
         const unsigned char *block, size_t len, int closed)
{
    telem_chunk_t c;
    memset(&c, 0, sizeof c);
    c.key = key;
    c.key_len = key_len ? key_len : (uint32_t) strlen(key) + 1;
    c.metric = key;
    c.first_seq = first_seq;
    c.block = block;
    c.block_len = len;
    c.closed = closed;
    return c;
}

/* The whole file at path (malloc'd), or NULL. */
__attribute__((unused)) static unsigned char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(n > 0 ? (size_t) n : 1);
    if (p && fread(p, 1, (size_t) n, f) != (size_t) n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t) n;
    return p;
}

__attribute__((unused)) static int
spit(const char *path, const void *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(p, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

#endif
