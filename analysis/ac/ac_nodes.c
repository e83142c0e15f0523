/* ac_nodes.c - reading and checking the list of a job's nodes.
 *
 * The node file is the one place the analysis client learns where nodes
 * are: "<name>\t<endpoint>\n" a line, '#' comment lines, blank lines.  It is
 * written by tools and people alike, so every rule is checked once here and
 * a failure says which line and why; nothing past this file has to doubt a
 * name or an endpoint.  Names are kept exactly as written (spaces and all);
 * blanks around the endpoint and a CR before the LF are forgiven.
 */
#include "ac_internal.h"
#include "telem_keys.h"
#include "telem_error.h"
#include "telem_grow.h"
#include "telem_paths.h"
#include "telem_why.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
ac__nodes_free(ac__node_entry_t **nodes, size_t n)
{
    if (!nodes || !*nodes)
        return;
    for (size_t i = 0; i < n; i++) {
        free((*nodes)[i].name);
        free((*nodes)[i].endpoint);
    }
    free(*nodes);
    *nodes = NULL;
}

/* Checks one name/endpoint pair; returns NULL if fine, else the reason. */
static const char *
s_check(const char *name, const char *endpoint)
{
    if (!name || !*name)
        return "empty node name";
    if (!telem_node_valid(name))
        return "invalid node name (no '/', tab, CR or LF; not '.' or '..'; "
               "at most 255 bytes)";
    if (!endpoint || !*endpoint)
        return "missing endpoint";
    if (strlen(endpoint) >= AC__ENDPOINT_MAX)
        return "endpoint too long";
    if (strpbrk(endpoint, " \t\r\n"))
        return "endpoint contains a blank";
    const char *sep = strstr(endpoint, "://");
    if (!sep || sep == endpoint || !sep[3])
        return "endpoint is not transport://address (tcp://, ipc://)";
    return NULL;
}

static int
s_cmp_name(const void *a, const void *b)
{
    const ac__node_entry_t *x = a, *y = b;
    return strcmp(x->name, y->name);
}

/* Finds a duplicate name; returns it (owned by nodes) or NULL. */
static const char *
s_duplicate(const ac__node_entry_t *nodes, size_t n, int *err)
{
    *err = 0;
    if (n < 2)
        return NULL;
    ac__node_entry_t *copy = malloc(n * sizeof *copy);
    if (!copy) {
        *err = TELEM_ENOMEM;
        return NULL;
    }
    memcpy(copy, nodes, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, s_cmp_name);
    const char *dup = NULL;
    for (size_t i = 1; i < n && !dup; i++)
        if (strcmp(copy[i - 1].name, copy[i].name) == 0)
            dup = copy[i].name;
    free(copy);
    return dup;
}

/* Appends a copy of (name, endpoint) to the growing array. */
static int
s_append(ac__node_entry_t **nodes, size_t *n, size_t *cap, const char *name,
         const char *endpoint)
{
    if (telem_grow((void **) nodes, cap, *n + 1, sizeof **nodes, 16))
        return TELEM_ENOMEM;
    ac__node_entry_t *e = &(*nodes)[*n];
    e->name = strdup(name);
    e->endpoint = strdup(endpoint);
    if (!e->name || !e->endpoint) {
        free(e->name);
        free(e->endpoint);
        return TELEM_ENOMEM;
    }
    (*n)++;
    return 0;
}

static int
s_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t')
            return 0;
    return 1;
}

/* Splits one line in place into name and endpoint.  Returns 1 for a node
 * line, 0 for a comment or blank line, -1 with *reason for a bad line. */
static int
s_split(char *line, size_t len, char **name, char **endpoint,
        const char **reason)
{
    if (strlen(line) != len) {
        *reason = "NUL byte in line";
        return -1;
    }
    if (len && line[len - 1] == '\n')
        line[--len] = '\0';
    if (len && line[len - 1] == '\r')
        line[--len] = '\0';
    if (line[0] == '#' || s_blank(line))
        return 0;
    char *tab = strchr(line, '\t');
    if (!tab) {
        *reason = "no tab between node name and endpoint";
        return -1;
    }
    *tab = '\0';
    char *ep = tab + 1;
    while (*ep == ' ' || *ep == '\t')
        ep++;
    char *end = ep + strlen(ep);
    while (end > ep && (end[-1] == ' ' || end[-1] == '\t'))
        *--end = '\0';
    *name = line;
    *endpoint = ep;
    *reason = s_check(line, ep);
    return *reason ? -1 : 1;
}

static int
s_parse(FILE *f, const char *path, ac__node_entry_t **nodes, size_t *n,
        char *why, size_t why_size)
{
    char *line = NULL;
    size_t linecap = 0, cap = 0;
    ssize_t len;
    int rc = 0;
    for (size_t lineno = 1; (len = getline(&line, &linecap, f)) >= 0;
         lineno++) {
        char *name = NULL, *ep = NULL;
        const char *reason = NULL;
        int kind = s_split(line, (size_t) len, &name, &ep, &reason);
        if (kind < 0) {
            telem_why(why, why_size, "%s:%zu: %s", path, lineno, reason);
            rc = TELEM_EINVAL;
            goto out;
        }
        if (kind == 1 && (rc = s_append(nodes, n, &cap, name, ep)) != 0)
            goto out;
    }
    if (ferror(f)) {
        telem_why(why, why_size, "%s: read error: %s", path, strerror(errno));
        rc = TELEM_EIO;
    }
out:
    free(line);
    return rc;
}

/* Final checks shared by both constructors: non-empty, unique names. */
static int
s_finish(const char *what, ac__node_entry_t *nodes, size_t n, char *why,
         size_t why_size)
{
    if (n == 0) {
        telem_why(why, why_size, "%s lists no nodes", what);
        return TELEM_ENOTFOUND;
    }
    int err = 0;
    const char *dup = s_duplicate(nodes, n, &err);
    if (err)
        return err;
    if (dup) {
        telem_why(why, why_size, "%s: duplicate node name '%s'", what, dup);
        return TELEM_EINVAL;
    }
    return 0;
}

const char *
ac__node_check(const char *name, const char *endpoint)
{
    return s_check(name, endpoint);
}

int
ac__nodes_read(const char *path, ac__node_entry_t **nodes, size_t *n,
               char *why, size_t why_size)
{
    char defpath[TELEM_PATH_MAX];
    *nodes = NULL;
    *n = 0;
    telem_why(why, why_size, "no error");
    if (!path || !*path) {
        if (telem_nodefile_default(defpath, sizeof defpath) != 0) {
            telem_why(why, why_size, "default node file path too long");
            return TELEM_ETOOBIG;
        }
        path = defpath;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        telem_why(why, why_size, "cannot open node file %s: %s", path,
                  strerror(e));
        return e == ENOENT || e == ENOTDIR ? TELEM_ENOTFOUND : TELEM_EIO;
    }
    int rc = s_parse(f, path, nodes, n, why, why_size);
    fclose(f);
    if (rc == 0)
        rc = s_finish(path, *nodes, *n, why, why_size);
    if (rc)
        ac__nodes_free(nodes, *n);
    if (rc)
        *n = 0;
    return rc;
}

int
ac__nodes_copy(const char *const *names, const char *const *endpoints,
               size_t n, ac__node_entry_t **nodes, char *why, size_t why_size)
{
    size_t count = 0, cap = 0;
    int rc = 0;
    *nodes = NULL;
    telem_why(why, why_size, "no error");
    if (n && (!names || !endpoints)) {
        telem_why(why, why_size, "names or endpoints missing");
        return TELEM_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        const char *reason = s_check(names[i], endpoints[i]);
        if (reason) {
            telem_why(why, why_size, "node %zu: %s", i, reason);
            rc = TELEM_EINVAL;
            goto out;
        }
        if ((rc = s_append(nodes, &count, &cap, names[i], endpoints[i])) != 0)
            goto out;
    }
    rc = s_finish("node list", *nodes, count, why, why_size);
out:
    if (rc)
        ac__nodes_free(nodes, count);
    return rc;
}

int
ac_nodefile_check(const char *nodefile, size_t *nnodes, char *why,
                  size_t why_size)
{
    ac__node_entry_t *nodes = NULL;
    size_t n = 0;
    int rc = ac__nodes_read(nodefile, &nodes, &n, why, why_size);
    if (nnodes)
        *nnodes = n;
    ac__nodes_free(&nodes, n);
    ac__relay_entry_t *relays = NULL;
    size_t nrelays = 0;
    if (!rc)
        rc = ac__relays_read(nodefile, &relays, &nrelays, why, why_size);
    ac__relays_free(&relays, nrelays);
    telem_keys_t *keys = NULL;
    char def[TELEM_PATH_MAX];
    if (!nodefile || !*nodefile)
        nodefile = telem_nodefile_default(def, sizeof def) == 0 ? def : NULL;
    if (!rc)
        rc = telem_keys_find(NULL, nodefile, &keys, why, why_size);
    telem_keys_destroy(&keys);
    return rc;
}
