/* fuzz_relays.c - libFuzzer target: the analysis client's relays-file
 * parser (analysis/ac/ac_relays.c, ac__relays_parse()).
 *
 * Input: the file's bytes.  Oracles beyond the sanitizers, on a file the
 * parser accepts: every relay has a valid name, an endpoint the node
 * file would take and a non-empty group of valid node names; no relay
 * and no node appears twice; and writing the list back out in the file's
 * format and parsing that gives the same list.
 */
#include <stdlib.h>
#include <string.h>

#include "ac_internal.h"
#include "fuzz.h"
#include "telem_error.h"
#include "telem_paths.h"

/* The list in the file's format; malloc'd, *len bytes. */
static char *
s_write(const ac__relay_entry_t *r, size_t n, size_t *len)
{
    size_t cap = 1;
    for (size_t i = 0; i < n; i++) {
        cap += strlen(r[i].name) + strlen(r[i].endpoint) + 3;
        for (size_t j = 0; j < r[i].nnodes; j++)
            cap += strlen(r[i].nodes[j]) + 1;
    }
    char *out = malloc(cap), *p = out;
    FZ_CHECK(out != NULL);
    for (size_t i = 0; i < n; i++) {
        p += sprintf(p, "%s\t%s\t", r[i].name, r[i].endpoint);
        for (size_t j = 0; j < r[i].nnodes; j++)
            p += sprintf(p, "%s%s", j ? "," : "", r[i].nodes[j]);
        *p++ = '\n';
    }
    *len = (size_t) (p - out);
    return out;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ac__relay_entry_t *r = NULL, *r2 = NULL;
    size_t n = 0, n2 = 0;
    char why[256];
    int rc = ac__relays_parse((const char *) data, size, "relays", &r, &n,
                              why, sizeof why);
    FZ_CHECK(rc == 0 || rc == TELEM_EINVAL);
    if (rc) {
        FZ_CHECK(r == NULL && n == 0 && strlen(why) < sizeof why);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        FZ_CHECK(ac__node_check(r[i].name, r[i].endpoint) == NULL);
        FZ_CHECK(r[i].nnodes > 0);
        for (size_t j = 0; j < r[i].nnodes; j++)
            FZ_CHECK(telem_node_valid(r[i].nodes[j])
                     && !strchr(r[i].nodes[j], ','));
    }
    size_t len;
    char *text = s_write(r, n, &len);
    FZ_CHECK(ac__relays_parse(text, len, "again", &r2, &n2, why,
                              sizeof why) == 0);
    FZ_CHECK(n2 == n);
    for (size_t i = 0; i < n && n2 == n; i++) {
        FZ_CHECK(strcmp(r[i].name, r2[i].name) == 0);
        FZ_CHECK(strcmp(r[i].endpoint, r2[i].endpoint) == 0);
        FZ_CHECK(r[i].nnodes == r2[i].nnodes);
        for (size_t j = 0; j < r[i].nnodes; j++)
            FZ_CHECK(strcmp(r[i].nodes[j], r2[i].nodes[j]) == 0);
    }
    free(text);
    ac__relays_free(&r, n);
    ac__relays_free(&r2, n2);
    return 0;
}
