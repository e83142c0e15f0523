/* ac_relays.c - reading and checking a job's relays file.
 *
 * The relays file says which relay (telem_relay, docs/relay.md) serves
 * which nodes: "<relay>\t<endpoint>\t<node>,<node>,...\n" a line, '#'
 * comment lines, blank lines.  The launcher writes it beside the node
 * file; people may too, so every rule is checked here once and a failure
 * names the line: a relay name follows node-name rules, the endpoint the
 * node file's, a group is a comma-separated list of at least one valid
 * node name, and neither a relay nor a node may appear twice.  Whether
 * the group's nodes are in the node file is not this file's business: a
 * client ignores names it does not know (a node file shrinks when nodes
 * are excluded; the relays file may lag behind).
 */
#include "ac_internal.h"
#include "telem_error.h"
#include "telem_grow.h"
#include "telem_paths.h"
#include "telem_why.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_FILE_MAX (16u << 20)   /* largest relays file read */

void
ac__relays_free(ac__relay_entry_t **r, size_t n)
{
    if (!r || !*r)
        return;
    for (size_t i = 0; i < n; i++) {
        free((*r)[i].name);
        free((*r)[i].endpoint);
        for (size_t j = 0; j < (*r)[i].nnodes; j++)
            free((*r)[i].nodes[j]);
        free((*r)[i].nodes);
    }
    free(*r);
    *r = NULL;
}

/* Splits "a,b,c" (in place) into e->nodes.  NULL, or the reason. */
static const char *
s_group(char *list, ac__relay_entry_t *e, int *nomem)
{
    size_t cap = 0;
    for (char *p = list, *next; p; p = next) {
        next = strchr(p, ',');
        if (next)
            *next++ = '\0';
        if (!*p)
            return "empty node name in the group";
        if (!telem_node_valid(p))
            return "invalid node name in the group";
        if (telem_grow((void **) &e->nodes, &cap, e->nnodes + 1,
                       sizeof *e->nodes, 16)
            || !(e->nodes[e->nnodes] = strdup(p))) {
            *nomem = 1;
            return "out of memory";
        }
        e->nnodes++;
    }
    return NULL;
}

/* Parses one line (NUL-terminated, no LF) into e.  1 a relay, 0 nothing,
 * -1 with *reason. */
static int
s_line(char *line, ac__relay_entry_t *e, const char **reason, int *nomem)
{
    size_t len = strlen(line);
    if (len && line[len - 1] == '\r')
        line[--len] = '\0';
    if (line[0] == '#' || strspn(line, " \t") == len)
        return 0;
    char *t1 = strchr(line, '\t');
    char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    if (!t1 || !t2) {
        *reason = "not <relay> TAB <endpoint> TAB <node>,<node>,...";
        return -1;
    }
    *t1 = *t2 = '\0';
    if ((*reason = ac__node_check(line, t1 + 1)) != NULL)
        return -1;
    if (!(e->name = strdup(line)) || !(e->endpoint = strdup(t1 + 1))) {
        *nomem = 1;
        *reason = "out of memory";
        return -1;
    }
    *reason = s_group(t2 + 1, e, nomem);
    return *reason ? -1 : 1;
}

static int
s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

/* A relay or node named twice: returns the name, or NULL. */
static const char *
s_twice(const ac__relay_entry_t *r, size_t n, int nodes, int *nomem)
{
    size_t total = 0, k = 0;
    for (size_t i = 0; i < n; i++)
        total += nodes ? r[i].nnodes : 1;
    if (total < 2)
        return NULL;
    char **v = malloc(total * sizeof *v);
    if (!v) {
        *nomem = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (nodes)
            for (size_t j = 0; j < r[i].nnodes; j++)
                v[k++] = r[i].nodes[j];
        else
            v[k++] = r[i].name;
    qsort(v, total, sizeof *v, s_cmp_str);
    const char *dup = NULL;
    for (size_t i = 1; i < total && !dup; i++)
        if (strcmp(v[i - 1], v[i]) == 0)
            dup = v[i];
    free(v);
    return dup;
}

/* Checks the whole list once parsed. */
static int
s_finish(const char *what, const ac__relay_entry_t *r, size_t n, char *why,
         size_t why_size)
{
    int nomem = 0;
    const char *dup = s_twice(r, n, 0, &nomem);
    if (dup && !nomem) {
        telem_why(why, why_size, "%s: relay '%s' is listed twice", what, dup);
        return TELEM_EINVAL;
    }
    dup = nomem ? NULL : s_twice(r, n, 1, &nomem);
    if (nomem)
        return TELEM_ENOMEM;
    if (dup) {
        telem_why(why, why_size, "%s: node '%s' is in more than one group "
                  "(or twice in one)", what, dup);
        return TELEM_EINVAL;
    }
    return 0;
}

int
ac__relays_parse(const char *text, size_t len, const char *what,
                 ac__relay_entry_t **out, size_t *n, char *why,
                 size_t why_size)
{
    size_t cap = 0, lineno = 0;
    int rc = 0;
    *out = NULL;
    *n = 0;
    for (size_t off = 0; off < len && rc == 0;) {
        const char *lf = memchr(text + off, '\n', len - off);
        size_t ll = lf ? (size_t) (lf - (text + off)) : len - off;
        lineno++;
        char *line = malloc(ll + 1);
        if (!line || telem_grow((void **) out, &cap, *n + 1, sizeof **out,
                                8)) {
            free(line);
            rc = TELEM_ENOMEM;
            break;
        }
        memcpy(line, text + off, ll);
        line[ll] = '\0';
        off += ll + 1;
        ac__relay_entry_t *e = &(*out)[*n];
        memset(e, 0, sizeof *e);
        const char *reason = NULL;
        int nomem = 0;
        int kind = memchr(text + off - ll - 1, '\0', ll) ? -1
                 : s_line(line, e, &reason, &nomem);
        free(line);
        (*n)++;   /* freed with the rest, relay or not */
        if (kind < 0) {
            telem_why(why, why_size, "%s:%zu: %s", what, lineno,
                      reason ? reason : "NUL byte in line");
            rc = nomem ? TELEM_ENOMEM : TELEM_EINVAL;
        } else if (kind == 0) {
            (*n)--;
        }
    }
    if (rc == 0)
        rc = s_finish(what, *out, *n, why, why_size);
    if (rc) {
        ac__relays_free(out, *n);
        *n = 0;
    }
    return rc;
}

/* The path of the relays file, in buf: 1 found (or named), 0 none, or an
 * error; *named says it came from $TELEM_RELAYS. */
static int
s_path(const char *nodefile, char *buf, size_t size, int *named)
{
    const char *env = getenv("TELEM_RELAYS");
    *named = env != NULL;
    if (env)
        return *env ? (snprintf(buf, size, "%s", env) < (int) size ? 1
                       : TELEM_ETOOBIG) : 0;
    char def[TELEM_PATH_MAX];
    if (!nodefile || !*nodefile) {
        if (telem_nodefile_default(def, sizeof def) != 0)
            return TELEM_ETOOBIG;
        nodefile = def;
    }
    const char *slash = strrchr(nodefile, '/');
    int dirlen = slash ? (int) (slash - nodefile) + 1 : 0;
    if (snprintf(buf, size, "%.*srelays", dirlen, nodefile) >= (int) size)
        return TELEM_ETOOBIG;
    return 1;
}

int
ac_relays_path(const char *nodefile, char *buf, size_t size)
{
    int named = 0;
    return buf && size ? s_path(nodefile, buf, size, &named) : TELEM_EINVAL;
}

/* Reads the whole file into *text. */
static int
s_slurp(FILE *f, const char *path, char **text, size_t *len, char *why,
        size_t why_size)
{
    size_t cap = 0;
    *text = NULL;
    *len = 0;
    for (;;) {
        if (telem_grow((void **) text, &cap, *len + 65536, 1, 65536))
            return TELEM_ENOMEM;
        size_t got = fread(*text + *len, 1, cap - *len, f);
        *len += got;
        if (*len > S_FILE_MAX) {
            telem_why(why, why_size, "%s: over %u bytes", path, S_FILE_MAX);
            return TELEM_ETOOBIG;
        }
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        telem_why(why, why_size, "%s: read error: %s", path, strerror(errno));
        return TELEM_EIO;
    }
    return 0;
}

int
ac__relays_read(const char *nodefile, ac__relay_entry_t **out, size_t *n,
                char *why, size_t why_size)
{
    char path[TELEM_PATH_MAX];
    int named = 0;
    *out = NULL;
    *n = 0;
    int rc = s_path(nodefile, path, sizeof path, &named);
    if (rc <= 0) {
        if (rc)
            telem_why(why, why_size, "relays file path too long");
        return rc;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        if (!named && (e == ENOENT || e == ENOTDIR))
            return 0;
        telem_why(why, why_size, "cannot open relays file %s: %s", path,
                  strerror(e));
        return e == ENOENT || e == ENOTDIR ? TELEM_ENOTFOUND : TELEM_EIO;
    }
    char *text = NULL;
    size_t len = 0;
    rc = s_slurp(f, path, &text, &len, why, why_size);
    fclose(f);
    if (rc == 0)
        rc = ac__relays_parse(text, len, path, out, n, why, why_size);
    free(text);
    return rc;
}
