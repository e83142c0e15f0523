/* launch_argv.c - argument vectors for the launcher (see launch_argv.h).
 *
 * Words of a command template are split by wordexp(3) (the C library's
 * shell word splitter, command substitution off) rather than by a parser
 * of our own.
 */
#include "launch_argv.h"

#include <stdlib.h>
#include <string.h>
#include <wordexp.h>

#include "telem_error.h"
#include "telem_grow.h"

/* The marker "{node}" becomes before word splitting ('{' and '}' are
 * special to wordexp), and is replaced by the node name after it. */
#define S_NODE_MARK "__telem_node_name__"

int
launch_argv_add(launch_argv_t *a, const char *s)
{
    if (telem_grow((void **) &a->v, &a->cap, a->n + 2, sizeof *a->v, 16))
        return TELEM_ENOMEM;
    if (!(a->v[a->n] = strdup(s)))
        return TELEM_ENOMEM;
    a->v[++a->n] = NULL;
    return 0;
}

int
launch_argv_addv(launch_argv_t *a, const char *const *v)
{
    for (size_t i = 0; v && v[i]; i++)
        if (launch_argv_add(a, v[i]))
            return TELEM_ENOMEM;
    return 0;
}

void
launch_argv_clear(launch_argv_t *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    memset(a, 0, sizeof *a);
}

/* Copies `s` with every `from` replaced by `to` into a new string. */
static char *
s_replace(const char *s, const char *from, const char *to)
{
    size_t lf = strlen(from), lt = strlen(to), n = 0;
    for (const char *p = strstr(s, from); p; p = strstr(p + lf, from))
        n++;
    char *out = malloc(strlen(s) + n * lt + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p; (p = strstr(s, from)) != NULL; s = p + lf) {
        memcpy(o, s, (size_t) (p - s));
        o += p - s;
        memcpy(o, to, lt);
        o += lt;
    }
    strcpy(o, s);
    return out;
}

int
launch_argv_add_node(launch_argv_t *a, const char *s, const char *node)
{
    char *w = s_replace(s, "{node}", node);
    int rc = w ? launch_argv_add(a, w) : TELEM_ENOMEM;
    free(w);
    return rc;
}

int
launch_argv_split(launch_argv_t *a, const char *line, const char *node)
{
    char *marked = s_replace(line, "{node}", S_NODE_MARK);
    if (!marked)
        return TELEM_ENOMEM;
    wordexp_t we;
    int rc = wordexp(marked, &we, WRDE_NOCMD | WRDE_UNDEF);
    free(marked);
    if (rc != 0) {
        if (rc != WRDE_NOSPACE)
            return TELEM_EINVAL;
        wordfree(&we);
        return TELEM_ENOMEM;
    }
    rc = we.we_wordc ? 0 : TELEM_EINVAL;
    for (size_t i = 0; rc == 0 && i < we.we_wordc; i++) {
        char *w = s_replace(we.we_wordv[i], S_NODE_MARK,
                            node ? node : "{node}");
        rc = w ? launch_argv_add(a, w) : TELEM_ENOMEM;
        free(w);
    }
    wordfree(&we);
    return rc;
}

