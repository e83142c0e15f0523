/* test_grow.c - unit tests for telem_grow.h: an empty array grows to its
 * first capacity, then by doubling until the need fits (one realloc per
 * call, elements kept); a need within the capacity changes nothing; a
 * byte count that would overflow gives TELEM_ENOMEM and leaves the array
 * and its capacity as they were.  The hash finaliser maps 0 to 0, is
 * deterministic and spreads neighbouring keys over the upper bits.
 */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "telem_error.h"
#include "telem_grow.h"

static void
test_grow(void)
{
    int *v = NULL;
    size_t cap = 0;
    CHECK_RC(telem_grow((void **) &v, &cap, 1, sizeof *v, 16), 0);
    CHECK_INT(cap, 16);
    REQUIRE(v);
    for (int i = 0; i < 16; i++)
        v[i] = i;
    CHECK_RC(telem_grow((void **) &v, &cap, 16, sizeof *v, 16), 0);
    CHECK_INT(cap, 16);
    CHECK_RC(telem_grow((void **) &v, &cap, 17, sizeof *v, 16), 0);
    CHECK_INT(cap, 32);
    CHECK_RC(telem_grow((void **) &v, &cap, 1000, sizeof *v, 16), 0);
    CHECK_INT(cap, 1024);
    int kept = 1;
    for (int i = 0; i < 16; i++)
        kept &= v[i] == i;
    CHECK(kept);

    int *before = v;
    CHECK_RC(telem_grow((void **) &v, &cap, SIZE_MAX / 2, sizeof *v, 16),
             TELEM_ENOMEM);
    CHECK(v == before);
    CHECK_INT(cap, 1024);
    CHECK_RC(telem_grow((void **) &v, &cap, SIZE_MAX, 1, 16), TELEM_ENOMEM);
    CHECK_INT(cap, 1024);
    free(v);

    char *c = NULL;
    size_t ccap = 0;
    CHECK_RC(telem_grow((void **) &c, &ccap, 3, 1, 0), 0);
    CHECK_INT(ccap, 4);
    free(c);
}

static void
test_mix(void)
{
    CHECK(telem_hash_mix64(0) == 0);
    CHECK(telem_hash_mix64(12345) == telem_hash_mix64(12345));
    /* Keys 0..255 land in at least 140 of 256 (a random function fills about 162) buckets taken from the
       upper 8 bits. */
    int seen[256] = { 0 }, used = 0;
    for (uint64_t k = 1; k <= 256; k++)
        seen[telem_hash_mix64(k) >> 56] = 1;
    for (int i = 0; i < 256; i++)
        used += seen[i];
    CHECK(used >= 140);
}

int
main(void)
{
    test_grow();
    test_mix();
    return check_report("test_grow");
}
