/* test_dict_map.c - unit tests for key hashing (ddict_hash.h) and shard maps
 * (ddict_map.h).
 *
 * Checks that the hash is stable (fixed vectors: it is part of the on-disk
 * format), that keys spread over the shards, that owner lists are distinct
 * nodes with the primary first, that maps are a pure function of the node
 * set, that rendezvous hashing moves only the shards of a removed node (and
 * only shards won by an added one), and that bad node lists are refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "ddict_map.h"
#include "telem_error.h"

static void
test_hash(void)
{
    CHECK(ddict_hash("", 0) == ddict_hash("", 0));
    CHECK(ddict_hash("a", 1) != ddict_hash("b", 1));
    CHECK(ddict_hash("ab", 2) != ddict_hash("ba", 2));
    /* Fixed vectors: changing the hash would strand data on disk. */
    CHECK(ddict_hash("key", 3) == UINT64_C(0xbc8f10948586b592));
    CHECK(ddict_hash_shard("key", 3) == (uint32_t) (UINT64_C(0xbc8f10948586b592)
                                                  % DDICT_SHARDS));
    int count[DDICT_SHARDS] = { 0 };
    char k[32];
    for (int i = 0; i < 256 * 200; i++) {
        int n = snprintf(k, sizeof k, "key-%d", i);
        uint32_t s = ddict_hash_shard(k, (size_t) n);
        CHECK(s < DDICT_SHARDS);
        count[s]++;
    }
    for (int s = 0; s < DDICT_SHARDS; s++)
        CHECK(count[s] > 120 && count[s] < 280);
}

static void
test_owners(void)
{
    const char *nodes[] = { "n1", "n2", "n3", "n4" };
    ddict_map_t *m = ddict_map_new(nodes, 4, 0, NULL);
    CHECK(m != NULL);
    if (!m)
        return;
    CHECK(ddict_map_size(m) == 4 && ddict_map_replicas(m) == 2);
    CHECK(ddict_map_index(m, "n3") == 2 && ddict_map_index(m, "x") == -1);
    CHECK(strcmp(ddict_map_node(m, 1), "n2") == 0);
    CHECK(ddict_map_node(m, 4) == NULL);
    int primaries[4] = { 0 };
    for (uint32_t s = 0; s < DDICT_SHARDS; s++) {
        int o[DDICT_REPLICAS_MAX];
        CHECK(ddict_map_owners(m, s, o) == 2);
        CHECK(o[0] != o[1] && o[0] >= 0 && o[0] < 4 && o[1] >= 0 && o[1] < 4);
        CHECK(ddict_map_role(m, s, o[0]) == 0);
        CHECK(ddict_map_role(m, s, o[1]) == 1);
        primaries[o[0]]++;
    }
    for (int i = 0; i < 4; i++)
        CHECK(primaries[i] > 30 && primaries[i] < 100);
    /* Same set in another order: same owners by name. */
    const char *shuffled[] = { "n3", "n1", "n4", "n2" };
    ddict_map_t *m2 = ddict_map_new(shuffled, 4, 2, NULL);
    for (uint32_t s = 0; s < DDICT_SHARDS; s++) {
        int a[DDICT_REPLICAS_MAX], b[DDICT_REPLICAS_MAX];
        ddict_map_owners(m, s, a);
        ddict_map_owners(m2, s, b);
        for (int k = 0; k < 2; k++)
            CHECK(strcmp(ddict_map_node(m, a[k]), ddict_map_node(m2, b[k]))
                  == 0);
    }
    ddict_map_destroy(&m2);
    ddict_map_destroy(&m);
    CHECK(m == NULL);
    ddict_map_destroy(&m);
}

/* Owners (by name) of every shard, for comparing maps. */
static void
s_names(const ddict_map_t *m, uint32_t s, const char *out[2])
{
    int o[DDICT_REPLICAS_MAX];
    int r = ddict_map_owners(m, s, o);
    out[0] = ddict_map_node(m, o[0]);
    out[1] = r > 1 ? ddict_map_node(m, o[1]) : "";
}

static void
test_movement(void)
{
    const char *five[] = { "a", "b", "c", "d", "e" };
    const char *four[] = { "a", "b", "d", "e" };       /* c excluded */
    const char *six[] = { "a", "b", "c", "d", "e", "f" }; /* f joins */
    ddict_map_t *m5 = ddict_map_new(five, 5, 2, NULL);
    ddict_map_t *m4 = ddict_map_new(four, 4, 2, NULL);
    ddict_map_t *m6 = ddict_map_new(six, 6, 2, NULL);
    int moved_rm = 0, moved_add = 0;
    for (uint32_t s = 0; s < DDICT_SHARDS; s++) {
        const char *o5[2], *o4[2], *o6[2];
        s_names(m5, s, o5);
        s_names(m4, s, o4);
        s_names(m6, s, o6);
        int had_c = strcmp(o5[0], "c") == 0 || strcmp(o5[1], "c") == 0;
        if (!had_c) {
            /* Shards c did not own keep both owners, in order. */
            CHECK(strcmp(o5[0], o4[0]) == 0 && strcmp(o5[1], o4[1]) == 0);
        } else {
            moved_rm++;
            /* The surviving owner stays an owner. */
            const char *keep = strcmp(o5[0], "c") == 0 ? o5[1] : o5[0];
            CHECK(strcmp(o4[0], keep) == 0 || strcmp(o4[1], keep) == 0);
        }
        int has_f = strcmp(o6[0], "f") == 0 || strcmp(o6[1], "f") == 0;
        if (!has_f)
            CHECK(strcmp(o5[0], o6[0]) == 0 && strcmp(o5[1], o6[1]) == 0);
        else
            moved_add++;
    }
    /* About 2/5 and 2/6 of the shards are touched. */
    CHECK(moved_rm > 60 && moved_rm < 150);
    CHECK(moved_add > 40 && moved_add < 130);
    ddict_map_destroy(&m4);
    ddict_map_destroy(&m5);
    ddict_map_destroy(&m6);
}

static void
test_bad_lists(void)
{
    const char *dup[] = { "a", "b", "a" };
    const char *bad[] = { "a", "x/y" };
    const char *empty[] = { "" };
    const char *one[] = { "solo" };
    int err = 0;
    CHECK(ddict_map_new(dup, 3, 2, &err) == NULL && err == TELEM_EINVAL);
    err = 0;
    CHECK(ddict_map_new(bad, 2, 2, &err) == NULL && err == TELEM_EINVAL);
    CHECK(ddict_map_new(empty, 1, 2, NULL) == NULL);
    CHECK(ddict_map_new(NULL, 0, 2, NULL) == NULL);
    CHECK(ddict_map_new(one, 0, 2, NULL) == NULL);
    err = 1;
    ddict_map_t *m = ddict_map_new(one, 1, 0, &err);
    CHECK(m && err == 0);
    CHECK(m && ddict_map_replicas(m) == 1);
    int o[DDICT_REPLICAS_MAX];
    CHECK(m && ddict_map_owners(m, 3, o) == 1 && o[0] == 0);
    ddict_map_destroy(&m);
    const char *many[] = { "a", "b", "c", "d", "e", "f" };
    m = ddict_map_new(many, 6, 9, NULL);
    CHECK(m && ddict_map_replicas(m) == DDICT_REPLICAS_MAX);
    for (uint32_t s = 0; m && s < DDICT_SHARDS; s++) {
        ddict_map_owners(m, s, o);
        for (int i = 0; i < DDICT_REPLICAS_MAX; i++)
            for (int j = 0; j < i; j++)
                CHECK(o[i] != o[j]);
    }
    ddict_map_destroy(&m);
}

int
main(void)
{
    test_hash();
    test_owners();
    test_movement();
    test_bad_lists();
    return check_report("test_dict_shard");
}
