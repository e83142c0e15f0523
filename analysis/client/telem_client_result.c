/* telem_client_result.c - what every mode of telem_client does with the
 * outcome of a call: names the missing nodes (on stderr, or as a list for
 * the json/yaml document) and turns the return code into the exit code.
 *
 * It also decides which series of a result were asked for: -g and -T take
 * names with labels (telem_promname.h), the query asks for their metrics
 * and the selectors pick the series.
 *
 * Call order: telem_client.c, telem_client_track.c and telem_client_tau.c
 * call this file; it calls only the analysis client (ac.h), never back
 * into them.
 */
#include "telem_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_PROG "telem_client"

void
telem_client_result_missing_report(const ac_result_t *r)
{
    for (size_t i = 0; i < ac_result_nmissing(r); i++)
        fprintf(stderr, S_PROG ": node '%s' did not answer: %s (%s)\n",
                ac_result_missing(r, i), ac_result_missing_message(r, i),
                ac_strerror(ac_result_missing_code(r, i)));
}

const char **
telem_client_result_missing_names(const ac_result_t *r, size_t *n)
{
    *n = ac_result_nmissing(r);
    const char **names = *n ? calloc(*n, sizeof *names) : NULL;
    if (!names)
        *n = 0;
    for (size_t i = 0; i < *n; i++)
        names[i] = ac_result_missing(r, i);
    return names;
}

int
telem_client_result_exit_code(int rc)
{
    if (rc == 0)
        return 0;
    if (rc == TELEM_EPARTIAL)
        return 3;
    if (rc == TELEM_ETIMEDOUT)
        fprintf(stderr, S_PROG ": no node answered\n");
    else
        fprintf(stderr, S_PROG ": %s\n", ac_strerror(rc));
    return 1;
}

/* 1 if s has tag key=value. */
static int
s_has(const telem_series_t *s, const telem_tag_t *t)
{
    for (uint32_t i = 0; i < s->ntags; i++)
        if (strcmp(s->tags[i].key, t->key) == 0)
            return strcmp(s->tags[i].value, t->value) == 0;
    return 0;
}

static int
s_matches(const telem_promname_t *sel, const telem_series_t *s)
{
    if (strcmp(sel->metric, s->metric) != 0)
        return 0;
    for (uint32_t k = 0; k < sel->nlabels; k++)
        if (!s_has(s, &sel->labels[k]))
            return 0;
    return 1;
}

int
telem_client_result_selected(const telem_client_opts_t *o,
                             const telem_series_t *s)
{
    if (!o->nsels)
        return 1;
    for (size_t i = 0; i < o->nsels; i++)
        if (s_matches(&o->sels[i], s))
            return 1;
    return 0;
}

size_t
telem_client_result_absent(const telem_client_opts_t *o, const ac_result_t *r,
                           int latest)
{
    size_t absent = 0;
    for (size_t m = 0; r && m < o->nsels; m++) {
        size_t i = 0;
        while (i < ac_result_nseries(r)
               && !s_matches(&o->sels[m], ac_result_series(r, i)))
            i++;
        if (i < ac_result_nseries(r))
            continue;
        char name[TELEM_PROMNAME_TEXT_MAX + 1];
        telem_promname_format(name, sizeof name, o->sels[m].metric,
                              o->sels[m].labels, o->sels[m].nlabels, NULL);
        fprintf(stderr, latest ? S_PROG ": no series for metric '%s'\n"
                : S_PROG ": no points of metric '%s' in the time range\n",
                name);
        absent++;
    }
    return absent;
}

/* Next element of a list "a,b{k=\"x,y\"},c" at *p: ends at a ',' outside
 * braces and quotes.  NUL-terminates it in place; NULL at the end. */
char *
telem_client_result_next_item(char **p)
{
    char *start = *p, *c = start;
    int depth = 0, quoted = 0;
    if (!start)
        return NULL;
    for (; *c && (depth || quoted || *c != ','); c++) {
        if (quoted && *c == '\\' && c[1])
            c++;
        else if (*c == '"' && depth)
            quoted = !quoted;
        else if (!quoted)
            depth += *c == '{' ? 1 : *c == '}' ? -1 : 0;
    }
    *p = *c ? c + 1 : NULL;
    *c = '\0';
    return start;
}

/* One element: a metric name (any telem name), optionally followed by
 * labels in Prometheus syntax, values quoted or not. */
int
telem_client_result_selector(char *item, telem_promname_t *sel)
{
    char *brace = strchr(item, '{');
    char text[TELEM_PROMNAME_TEXT_MAX + 2] = "m";
    if (brace) {
        if (strlen(brace) + 1 >= sizeof text
            || telem_promname_parse(strcat(text, brace),
                                    TELEM_PROMNAME_BARE | TELEM_PROMNAME_OWN,
                                    sel, NULL, 0) != 0)
            return -1;
        *brace = '\0';
    } else {
        sel->nlabels = 0;
    }
    sel->metric = item;
    return *item && strlen(item) <= TELEM_NAME_MAX ? 0 : -1;
}
