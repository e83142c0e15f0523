/* fuzz_nodefile.c - libFuzzer target: the node file's two readers and its
 * writer: the analysis client's parser (analysis/ac/ac_nodes.c, through
 * ac_nodefile_check() and ac__nodes_read()), the lookup the dictionary's
 * server and client use (runtime/common/telem_paths.c,
 * telem_nodefile_lookup()) and the rewrite telemd and telem_launch make
 * (telem_nodefile_register() / _unregister()).
 *
 * Input: a name line, an endpoint line, then the node file, written to
 * the scratch directory.  Oracles beyond the sanitizers, on a file the
 * analysis client accepts:
 *   - the lookup finds every node the client lists, with the same
 *     endpoint;
 *   - registering a node the client would accept (the name and endpoint
 *     from the input) leaves a file the client reads as before, less that
 *     node's old line, plus the new one; unregistering it, less its line.
 */
#include <stdlib.h>
#include <string.h>

#include "ac.h"
#include "ac_internal.h"
#include "fuzz.h"
#include "telem_error.h"
#include "telem_paths.h"

typedef struct {
    ac__node_entry_t *v;
    size_t n;
    int rc;
} s_list_t;

static s_list_t
s_read(const char *path)
{
    s_list_t l = { NULL, 0, 0 };
    char why[256];
    l.rc = ac__nodes_read(path, &l.v, &l.n, why, sizeof why);
    return l;
}

static void
s_free(s_list_t *l)
{
    ac__nodes_free(&l->v, l->n);
    l->n = 0;
}

/* The lookup agrees with the client on every node the client lists. */
static void
s_check_lookup(const char *path, const s_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        char ep[AC__ENDPOINT_MAX];
        int rc = telem_nodefile_lookup(path, l->v[i].name, ep, sizeof ep);
        if (rc != 0 || strcmp(ep, l->v[i].endpoint) != 0) {
            fprintf(stderr, "fuzz_nodefile: node '%s': client reads '%s', "
                    "lookup %s '%s'\n", l->v[i].name, l->v[i].endpoint,
                    telem_strerror(rc), rc ? "" : ep);
            abort();
        }
    }
}

/* `after` is `before` without `name`'s entry, plus (name, ep) if ep. */
static void
s_check_rewrite(const s_list_t *before, const s_list_t *after,
                const char *name, const char *ep)
{
    size_t k = 0;
    for (size_t i = 0; i < before->n; i++) {
        if (strcmp(before->v[i].name, name) == 0)
            continue;
        FZ_CHECK(k < after->n && strcmp(after->v[k].name, before->v[i].name) == 0
                 && strcmp(after->v[k].endpoint, before->v[i].endpoint) == 0);
        k++;
    }
    if (ep) {
        FZ_CHECK(k < after->n && strcmp(after->v[k].name, name) == 0
                 && strcmp(after->v[k].endpoint, ep) == 0);
        k++;
    }
    FZ_CHECK(k == after->n);
}

/* Register then unregister `name`, each checked against the client. */
static void
s_rewrites(const char *path, const s_list_t *before, const char *name,
           const char *ep)
{
    ac__node_entry_t *one = NULL;
    char why[256];
    if (ac__nodes_copy(&name, &ep, 1, &one, why, sizeof why) != 0)
        return;              /* a pair the client refuses anyway */
    ac__nodes_free(&one, 1);
    int rc = telem_nodefile_register(path, name, ep);
    if (name[0] == '#') {      /* its line would be a comment: refused */
        FZ_CHECK(rc == TELEM_EINVAL);
        FZ_CHECK(telem_nodefile_unregister(path, name) == TELEM_EINVAL);
        return;
    }
    FZ_CHECK(rc == 0);
    s_list_t after = s_read(path);
    FZ_CHECK(after.rc == 0);
    s_check_rewrite(before, &after, name, ep);
    s_check_lookup(path, &after);
    FZ_CHECK(telem_nodefile_unregister(path, name) == 0);
    s_list_t gone = s_read(path);
    FZ_CHECK(gone.rc == 0 || (gone.rc == TELEM_ENOTFOUND && gone.n == 0));
    s_check_rewrite(&after, &gone, name, NULL);
    s_free(&after);
    s_free(&gone);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in_t in = { data, size };
    char *name = fz_token(&in, '\n'), *ep = fz_token(&in, '\n');
    if (!name || !ep)
        abort();
    char path[FZ_PATH_MAX];
    snprintf(path, sizeof path, "%s/nodes", fz_scratch());
    if (fz_write(path, in.p, in.n) != 0)
        abort();
    size_t n = 0;
    char why[256];
    int rc = ac_nodefile_check(path, &n, why, sizeof why);
    s_list_t l = s_read(path);
    FZ_CHECK(rc == l.rc && n == l.n);
    char found[AC__ENDPOINT_MAX];
    telem_nodefile_lookup(path, name, found, sizeof found);
    if (l.rc == 0) {
        s_check_lookup(path, &l);
        s_rewrites(path, &l, name, ep);
    }
    s_free(&l);
    free(name);
    free(ep);
    return 0;
}
