/* test_dict_store.c - unit tests for the dictionary server's in-memory
 * store (dict/core/ddict_store.h), no sockets and no log.
 *
 * Put/find/replace/delete with versions and the byte count; namespaces
 * that keep equal keys apart, including the (ns, key) split that spells
 * the same bytes; binary keys; growth to many keys with every one still
 * found; walks filtered by namespace; checkpoint copies that share the
 * value buffers instead of copying them and stay intact when the source
 * changes; clearing a namespace and dropping a shard.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddict_store.h"
#include "telem_error.h"

static ddict_store_key_t
s_k(const char *ns, const char *key)
{
    ddict_store_key_t k = { ns, (uint8_t) strlen(ns), key, (uint32_t) strlen(key) };
    return k;
}

/* Puts a value made of `len` copies of byte b. */
static int
s_put(ddict_store_t *st, uint32_t shard, ddict_store_key_t k, size_t len, int b,
      uint64_t version)
{
    uint8_t *buf = malloc(len + 1);
    CHECK(buf);
    memset(buf, b, len);
    ddict_val_t *v = ddict_val_new(buf, len);
    free(buf);
    CHECK(v);
    int rc = ddict_store_put(st, shard, &k, v, version);
    ddict_val_release(&v);     /* the store holds its own reference */
    CHECK(v == NULL);
    return rc;
}

static int
s_has(ddict_store_t *st, uint32_t shard, ddict_store_key_t k, size_t len, int b,
      uint64_t version)
{
    ddict_store_entry_t *e = ddict_store_find(st, shard, &k);
    if (!e)
        return 0;
    ddict_val_t *v = ddict_store_entry_value(e);
    const uint8_t *p = ddict_val_data(v);
    if (ddict_val_size(v) != len || ddict_store_entry_version(e) != version)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (p[i] != (uint8_t) b)
            return 0;
    return 1;
}

static void
test_basic(void)
{
    ddict_store_t *st = ddict_store_new();
    CHECK(ddict_store_find(st, 3, &(ddict_store_key_t) { "", 0, "a", 1 }) == NULL);
    CHECK(s_put(st, 3, s_k("ns", "a"), 10, 'x', 1) == 0);
    CHECK(s_has(st, 3, s_k("ns", "a"), 10, 'x', 1));
    CHECK(ddict_store_bytes(st) == 2 + 1 + 10);
    CHECK(s_put(st, 3, s_k("ns", "a"), 100, 'y', 2) == 0);   /* replace */
    CHECK(s_has(st, 3, s_k("ns", "a"), 100, 'y', 2));
    CHECK(ddict_store_size(st, 3) == 1);
    CHECK(ddict_store_bytes(st) == 2 + 1 + 100);
    /* Replacing through a found entry: held, accounted, no new entry; the
       entry's own value given back is kept, not freed. */
    ddict_store_key_t ka = s_k("ns", "a");
    ddict_store_entry_t *found = ddict_store_find(st, 3, &ka);
    char q[50];
    memset(q, 'q', sizeof q);
    ddict_val_t *m = ddict_val_new(q, sizeof q);
    CHECK(found && m);
    ddict_store_replace(st, found, m, 3);
    CHECK(ddict_store_entry_value(found) == m);
    ddict_val_release(&m);
    ddict_store_replace(st, found, ddict_store_entry_value(found), 3);
    CHECK(s_has(st, 3, ka, 50, 'q', 3));
    CHECK(ddict_store_size(st, 3) == 1);
    CHECK(ddict_store_bytes(st) == 2 + 1 + 50);
    CHECK(s_put(st, 3, s_k("ns", "a"), 100, 'y', 2) == 0);
    /* Same key, other namespace; same bytes split differently. */
    CHECK(s_put(st, 3, s_k("", "a"), 1, 'z', 5) == 0);
    CHECK(s_put(st, 3, s_k("n", "sa"), 1, 'w', 6) == 0);
    CHECK(s_has(st, 3, s_k("ns", "a"), 100, 'y', 2));
    CHECK(s_has(st, 3, s_k("", "a"), 1, 'z', 5));
    CHECK(s_has(st, 3, s_k("n", "sa"), 1, 'w', 6));
    CHECK(ddict_store_size(st, 3) == 3);
    CHECK(ddict_store_size(st, 4) == 0);
    /* Binary keys with zero bytes, and the empty key. */
    const uint8_t bin1[] = { 0, 0, 1 }, bin2[] = { 0, 0, 2 };
    ddict_store_key_t b1 = { "ns", 2, bin1, 3 }, b2 = { "ns", 2, bin2, 3 };
    ddict_store_key_t empty = { "ns", 2, "", 0 };
    CHECK(s_put(st, 9, b1, 4, 1, 1) == 0 && s_put(st, 9, empty, 0, 0, 1) == 0);
    CHECK(s_has(st, 9, b1, 4, 1, 1) && !ddict_store_find(st, 9, &b2));
    CHECK(s_has(st, 9, empty, 0, 0, 1));
    /* Delete. */
    ddict_store_key_t a = s_k("ns", "a");
    CHECK(ddict_store_del(st, 3, &a) == 0);
    CHECK(ddict_store_del(st, 3, &a) == TELEM_ENOTFOUND);
    CHECK(!ddict_store_find(st, 3, &a));
    CHECK(ddict_store_size(st, 3) == 2);
    /* The entry's key reads back. */
    ddict_store_entry_t *e = ddict_store_find(st, 9, &b1);
    ddict_store_key_t back = ddict_store_entry_key(e);
    CHECK(back.nslen == 2 && memcmp(back.ns, "ns", 2) == 0 && back.klen == 3
          && memcmp(back.key, bin1, 3) == 0);
    ddict_store_destroy(&st);
    CHECK(st == NULL);
    ddict_store_destroy(&st);
}

static int
s_sum_fn(void *arg, uint32_t shard, ddict_store_entry_t *e)
{
    (void) shard;
    *(uint64_t *) arg += ddict_store_entry_version(e);
    return 0;
}

static int
s_stop_fn(void *arg, uint32_t shard, ddict_store_entry_t *e)
{
    (void) shard;
    (void) e;
    return ++*(int *) arg == 3 ? 42 : 0;
}

static void
test_many_and_walks(void)
{
    ddict_store_t *st = ddict_store_new();
    char key[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        CHECK(s_put(st, 7, s_k(i % 2 ? "odd" : "even", key), 8, i & 0xff,
                    (uint64_t) i + 1) == 0);
    }
    int missing = 0;
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        missing += !s_has(st, 7, s_k(i % 2 ? "odd" : "even", key), 8,
                          i & 0xff, (uint64_t) i + 1);
    }
    CHECK(missing == 0);
    CHECK(ddict_store_size(st, 7) == 20000);
    CHECK(ddict_store_count(st, 7, "odd", 3) == 10000);
    CHECK(ddict_store_count(st, 7, "none", 4) == 0);
    uint64_t sum = 0;
    CHECK(ddict_store_foreach(st, 7, "even", 4, s_sum_fn, &sum) == 0);
    CHECK(sum == 10000ull * 10000ull);      /* 1 + 3 + ... + 19999 */
    sum = 0;
    CHECK(ddict_store_foreach(st, 7, NULL, 0, s_sum_fn, &sum) == 0);
    CHECK(sum == 20000ull * 20001ull / 2);
    int calls = 0;
    CHECK(ddict_store_foreach(st, 7, NULL, 0, s_stop_fn, &calls) == 42);
    CHECK(calls == 3);
    ddict_store_clear_ns(st, 7, "odd", 3);
    CHECK(ddict_store_size(st, 7) == 10000);
    CHECK(ddict_store_count(st, 7, "even", 4) == 10000);
    ddict_store_drop(st, 7);
    CHECK(ddict_store_size(st, 7) == 0 && ddict_store_bytes(st) == 0);
    ddict_store_destroy(&st);
}

static void
test_copy_ns(void)
{
    ddict_store_t *st = ddict_store_new();
    CHECK(s_put(st, 1, s_k("app", "x"), 4096, 'a', 3) == 0);
    CHECK(s_put(st, 1, s_k("app", "y"), 5, 'b', 1) == 0);
    CHECK(s_put(st, 1, s_k("ckpt", "stale"), 5, 'c', 1) == 0);
    CHECK(s_put(st, 2, s_k("app", "other-shard"), 5, 'd', 1) == 0);
    CHECK(ddict_store_copy_ns(st, 1, "app", 3, "ckpt", 4) == 0);
    /* The slot holds exactly the source, versions kept; stale key gone. */
    CHECK(s_has(st, 1, s_k("ckpt", "x"), 4096, 'a', 3));
    CHECK(s_has(st, 1, s_k("ckpt", "y"), 5, 'b', 1));
    ddict_store_key_t stale = s_k("ckpt", "stale");
    CHECK(!ddict_store_find(st, 1, &stale));
    CHECK(ddict_store_count(st, 1, "ckpt", 4) == 2);
    CHECK(ddict_store_count(st, 2, "ckpt", 4) == 0);   /* only that shard */
    /* Large values are shared, not copied. */
    ddict_store_key_t src = s_k("app", "x"), dst = s_k("ckpt", "x");
    CHECK(ddict_val_data(ddict_store_entry_value(ddict_store_find(st, 1, &src)))
          == ddict_val_data(ddict_store_entry_value(ddict_store_find(st, 1, &dst))));
    /* Changing the source leaves the copy as it was. */
    CHECK(s_put(st, 1, s_k("app", "x"), 10, 'z', 4) == 0);
    CHECK(ddict_store_del(st, 1, &(ddict_store_key_t) { "app", 3, "y", 1 }) == 0);
    CHECK(s_has(st, 1, s_k("ckpt", "x"), 4096, 'a', 3));
    CHECK(s_has(st, 1, s_k("ckpt", "y"), 5, 'b', 1));
    /* Restore: copy back over the namespace. */
    CHECK(ddict_store_copy_ns(st, 1, "ckpt", 4, "app", 3) == 0);
    CHECK(s_has(st, 1, s_k("app", "x"), 4096, 'a', 3));
    CHECK(s_has(st, 1, s_k("app", "y"), 5, 'b', 1));
    /* Copying an empty namespace empties the destination. */
    CHECK(ddict_store_copy_ns(st, 1, "none", 4, "app", 3) == 0);
    CHECK(ddict_store_count(st, 1, "app", 3) == 0);
    ddict_store_destroy(&st);
}

int
main(void)
{
    test_basic();
    test_many_and_walks();
    test_copy_ns();
    return check_report("test_dict_store");
}
