/* test_why.c - sentences of clauses cut only between clauses
 * (telem_why_clause(), telem_why_end() in runtime/common/telem_why.c):
 * every clause that fits goes in whole, in order; one that does not is
 * left out whole and counted ("; and N more"), with room kept for that
 * tail whatever the buffer's size; a first clause longer than the buffer
 * is cut (it is the only one); bad arguments change nothing.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "telem_why.h"

static void
test_fits(void)
{
    char buf[128] = "";
    unsigned dropped = 0;
    CHECK_INT(telem_why_clause(buf, sizeof buf, "; ", "GPU 0 slow", &dropped),
              1);
    CHECK_INT(telem_why_clause(buf, sizeof buf, "; ", "GPU 1 hot", &dropped),
              1);
    CHECK_INT(dropped, 0);
    telem_why_end(buf, sizeof buf, &dropped);
    CHECK_STR(buf, "GPU 0 slow; GPU 1 hot");
    /* a separator only between clauses */
    char lab[64] = "";
    telem_why_clause(lab, sizeof lab, "+", "slowgpu", NULL);
    telem_why_clause(lab, sizeof lab, "+", "gpu-health", NULL);
    CHECK_STR(lab, "slowgpu+gpu-health");
}

/* Clause i: 40 bytes. */
static void
s_clause(char *out, size_t size, unsigned i)
{
    snprintf(out, size, "GPU %02u on node 'n2': %-18s|", i % 100,
             "uncorrectable ECC");
}

/* Clauses of 40 bytes into up to 400: what is there is whole, the rest
 * counted, and the tail always fits, for every buffer size from the
 * smallest. */
static void
test_cut_between_clauses(void)
{
    char clause[64];
    for (size_t size = TELEM_WHY_TAIL + 1; size <= 400; size++) {
        char buf[400] = "";
        unsigned dropped = 0, in = 0;
        for (int i = 0; i < 12; i++) {
            s_clause(clause, sizeof clause, (unsigned) i);
            in += (unsigned) telem_why_clause(buf, size, "; ", clause,
                                              &dropped);
        }
        CHECK_INT(in + dropped, 12);
        CHECK(in >= 1);
        telem_why_end(buf, size, &dropped);
        CHECK(strlen(buf) < size);
        CHECK_INT(dropped, 0);
        if (in == 12) {
            CHECK(strstr(buf, "more") == NULL);
            continue;
        }
        char tail[32];
        snprintf(tail, sizeof tail, "; and %u more", 12 - in);
        size_t len = strlen(buf), tl = strlen(tail);
        CHECK(len >= tl && strcmp(buf + len - tl, tail) == 0);
        /* the clauses kept: whole, in order (the first may be cut when
         * the buffer is smaller than it) */
        for (unsigned i = 1; i < in; i++) {
            s_clause(clause, sizeof clause, i);
            CHECK(strstr(buf, clause) != NULL);
        }
    }
}

static void
test_first_and_bad(void)
{
    char big[300];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char buf[100] = "";
    unsigned dropped = 0;
    CHECK_INT(telem_why_clause(buf, sizeof buf, "; ", big, &dropped), 1);
    CHECK_INT(strlen(buf), sizeof buf - TELEM_WHY_TAIL - 1);
    CHECK_INT(telem_why_clause(buf, sizeof buf, "; ", "y", &dropped), 0);
    telem_why_end(buf, sizeof buf, &dropped);
    CHECK(strcmp(buf + strlen(buf) - 12, "; and 1 more") == 0);
    char tiny[TELEM_WHY_TAIL] = "";
    CHECK_INT(telem_why_clause(tiny, sizeof tiny, "; ", "a", &dropped), 0);
    CHECK_STR(tiny, "");
    CHECK_INT(telem_why_clause(NULL, 100, "; ", "a", &dropped), 0);
    CHECK_INT(telem_why_clause(buf, sizeof buf, "; ", NULL, &dropped), 0);
    telem_why_end(NULL, 10, &dropped);
    telem_why_end(buf, sizeof buf, NULL);
    char same[64] = "kept";
    unsigned none = 0;
    telem_why_end(same, sizeof same, &none);
    CHECK_STR(same, "kept");
}

int
main(void)
{
    test_fits();
    test_cut_between_clauses();
    test_first_and_bad();
    return check_report("test_why");
}
