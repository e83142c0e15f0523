/* tsdb_filter.c - OpenTSDB 2.4's tag value filters (tsdb_filter.h).
 *
 * A filter keeps what its match needs, prepared once: the literals of a
 * literal filter (folded to lower case when case-insensitive), the
 * '*'-separated parts of a wildcard with its two end flags, or the
 * compiled regular expression. */
#include "tsdb_filter.h"

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tsdb_filter {
    tsdb_filter_type_t type;
    const char *type_name;     /* as OpenTSDB reports it */
    int ci;                    /* case folded */
    int negate;                /* not_literal_or, not_iliteral_or */
    int group_by;
    char *tagk;
    char *filter;
    char **parts;              /* literals, or the wildcard's parts */
    size_t nparts;
    int has_prefix, has_postfix, match_all;   /* wildcard */
    regex_t re;
    int has_re;
};

static const struct {
    const char *name;
    tsdb_filter_type_t type;
    const char *description;
    const char *examples;
} s_types[] = {
    { "literal_or", TSDB_FILTER_LITERAL_OR,
      "Accepts one or more exact values and matches if the series contains "
      "any of them. Multiple values can be included and must be separated "
      "by the | (pipe) character. The filter is case sensitive and will not "
      "allow characters that TSDB does not allow at write time.",
      "host=literal_or(web01),  host=literal_or(web01|web02|web03)  "
      "{\"type\":\"literal_or\",\"tagk\":\"host\","
      "\"filter\":\"web01|web02|web03\",\"groupBy\":false}" },
    { "iliteral_or", TSDB_FILTER_ILITERAL_OR,
      "Accepts one or more exact values and matches if the series contains "
      "any of them. Multiple values can be included and must be separated "
      "by the | (pipe) character. The filter is case insensitive and will "
      "not allow characters that TSDB does not allow at write time.",
      "host=iliteral_or(web01),  host=iliteral_or(web01|web02|web03)  "
      "{\"type\":\"iliteral_or\",\"tagk\":\"host\","
      "\"filter\":\"web01|web02|web03\",\"groupBy\":false}" },
    { "not_literal_or", TSDB_FILTER_NOT_LITERAL_OR,
      "Accepts one or more exact values and matches if the series does NOT "
      "contain any of them. Multiple values can be included and must be "
      "separated by the | (pipe) character. The filter is case sensitive "
      "and will not allow characters that TSDB does not allow at write "
      "time.",
      "host=not_literal_or(web01),  host=not_literal_or(web01|web02|web03)  "
      "{\"type\":\"not_literal_or\",\"tagk\":\"host\","
      "\"filter\":\"web01|web02|web03\",\"groupBy\":false}" },
    { "not_iliteral_or", TSDB_FILTER_NOT_ILITERAL_OR,
      "Accepts one or more exact values and matches if the series does NOT "
      "contain any of them. Multiple values can be included and must be "
      "separated by the | (pipe) character. The filter is case insensitive "
      "and will not allow characters that TSDB does not allow at write "
      "time.",
      "host=not_iliteral_or(web01),  "
      "host=not_iliteral_or(web01|web02|web03)  "
      "{\"type\":\"not_iliteral_or\",\"tagk\":\"host\","
      "\"filter\":\"web01|web02|web03\",\"groupBy\":false}" },
    { "wildcard", TSDB_FILTER_WILDCARD,
      "Performs pre, post and in-fix glob matching of values. The globs "
      "are case sensitive and multiple wildcards can be used. The wildcard "
      "character is the * (asterisk). At least one wildcard must be "
      "present in the filter value. A wildcard by itself can be used as "
      "well to match on any value for the tag key.",
      "host=wildcard(web*),  host=wildcard(web*.tsdb.net)  "
      "{\"type\":\"wildcard\",\"tagk\":\"host\","
      "\"filter\":\"web*.tsdb.net\",\"groupBy\":false}" },
    { "iwildcard", TSDB_FILTER_IWILDCARD,
      "Performs pre, post and in-fix glob matching of values. The globs "
      "are case insensitive and multiple wildcards can be used. The "
      "wildcard character is the * (asterisk). Case insensitivity is "
      "achieved by dropping all values to lower case. At least one "
      "wildcard must be present in the filter value. A wildcard by itself "
      "can be used as well to match on any value for the tag key.",
      "host=iwildcard(web*),  host=iwildcard(web*.tsdb.net)  "
      "{\"type\":\"iwildcard\",\"tagk\":\"host\","
      "\"filter\":\"web*.tsdb.net\",\"groupBy\":false}" },
    { "regexp", TSDB_FILTER_REGEXP,
      "Provides full, POSIX compliant regular expression using the built "
      "in Java Pattern class. Note that an expression containing curly "
      "braces {} will not parse properly in URLs. If the pattern is not a "
      "valid regular expression then an exception will be raised.",
      "host=regexp(.*)  {\"type\":\"regexp\",\"tagk\":\"host\","
      "\"filter\":\".*\",\"groupBy\":false}" },
};

#define S_NTYPES (sizeof s_types / sizeof *s_types)

static void
s_lower(char *s)
{
    for (; *s; s++)
        *s = (char) tolower((unsigned char) *s);
}

/* Appends a copy of s[0..len) to f->parts; 0 or -1 out of memory. */
static int
s_add_part(tsdb_filter_t *f, const char *s, size_t len)
{
    char **p = realloc(f->parts, (f->nparts + 1) * sizeof *p);
    if (!p)
        return -1;
    f->parts = p;
    if (!(p[f->nparts] = strndup(s, len)))
        return -1;
    if (f->ci)
        s_lower(p[f->nparts]);
    f->nparts++;
    return 0;
}

/* The literals of "a|b|c": empty ones (which no tag value equals) and
 * repeats are left out. */
static int
s_literals(tsdb_filter_t *f, tsdb_error_t *err)
{
    if (strcmp(f->filter, "|") == 0) {
        tsdb_error_set(err, 400, "Filter must contain more than just a pipe");
        return -1;
    }
    for (const char *p = f->filter;;) {
        const char *e = strchr(p, '|');
        size_t len = e ? (size_t) (e - p) : strlen(p);
        int seen = len == 0;
        for (size_t i = 0; i < f->nparts && !seen; i++)
            seen = strlen(f->parts[i]) == len
                   && strncmp(f->parts[i], p, len) == 0;
        if (!seen && s_add_part(f, p, len)) {
            tsdb_error_set(err, 500, "out of memory");
            return -1;
        }
        if (!e)
            return 0;
        p = e + 1;
    }
}

/* Splits the wildcard as OpenTSDB's TagVWildcardFilter does. */
static int
s_wildcard(tsdb_filter_t *f, tsdb_error_t *err)
{
    if (!strchr(f->filter, '*')) {
        tsdb_error_set(err, 400, "Filter must contain an asterisk");
        return -1;
    }
    const char *a = f->filter;
    size_t len = strlen(a);
    if (a[0] == '*') {
        f->has_postfix = 1;
        while (a[0] == '*' && len >= 2) {
            a++;
            len--;
        }
    }
    if (a[len - 1] == '*') {
        f->has_prefix = 1;
        while (a[len - 1] == '*' && len >= 2)
            len--;
    }
    const char *star = memchr(a, '*', len);
    int rc = 0;
    if (star && star != a) {
        for (const char *p = a, *end = a + len; !rc;) {
            const char *e = memchr(p, '*', (size_t) (end - p));
            rc = s_add_part(f, p, e ? (size_t) (e - p) : (size_t) (end - p));
            if (!e)
                break;
            p = e + 1;
        }
    } else
        rc = s_add_part(f, a, len);
    if (rc) {
        tsdb_error_set(err, 500, "out of memory");
        return -1;
    }
    f->match_all = f->nparts == 1 && strcmp(f->parts[0], "*") == 0;
    return 0;
}

static int
s_regexp(tsdb_filter_t *f, tsdb_error_t *err)
{
    int rc = regcomp(&f->re, f->filter, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char why[256];
        regerror(rc, &f->re, why, sizeof why);
        tsdb_error_set(err, 400, "Invalid regular expression '%.200s': %s",
                       f->filter, why);
        return -1;
    }
    f->has_re = 1;
    return 0;
}

/* Makes the filter of s_types[t]; ci_wildcard: OpenTSDB's shortcut
 * wildcard, case-insensitive but named "wildcard". */
static tsdb_filter_t *
s_make(size_t t, const char *tagk, const char *filter, int group_by,
       int ci_wildcard, tsdb_error_t *err)
{
    if (!tagk || !*tagk) {
        tsdb_error_set(err, 400, "The tagk cannot be null or empty");
        return NULL;
    }
    if (!filter || !*filter) {
        tsdb_error_set(err, 400, "Filter cannot be null or empty");
        return NULL;
    }
    tsdb_filter_t *f = calloc(1, sizeof *f);
    if (!f || !(f->tagk = strdup(tagk)) || !(f->filter = strdup(filter))) {
        tsdb_error_set(err, 500, "out of memory");
        tsdb_filter_destroy(&f);
        return NULL;
    }
    f->type = s_types[t].type;
    f->type_name = s_types[t].name;
    f->group_by = group_by ? 1 : 0;
    f->ci = ci_wildcard || f->type == TSDB_FILTER_ILITERAL_OR
            || f->type == TSDB_FILTER_NOT_ILITERAL_OR
            || f->type == TSDB_FILTER_IWILDCARD;
    f->negate = f->type == TSDB_FILTER_NOT_LITERAL_OR
                || f->type == TSDB_FILTER_NOT_ILITERAL_OR;
    int rc;
    if (f->type == TSDB_FILTER_REGEXP)
        rc = s_regexp(f, err);
    else if (f->type == TSDB_FILTER_WILDCARD
             || f->type == TSDB_FILTER_IWILDCARD)
        rc = s_wildcard(f, err);
    else
        rc = s_literals(f, err);
    if (rc)
        tsdb_filter_destroy(&f);
    return f;
}

tsdb_filter_t *
tsdb_filter_new(const char *type, const char *tagk, const char *filter,
                int group_by, tsdb_error_t *err)
{
    if (!type || !*type) {
        tsdb_error_set(err, 400, "The filter type cannot be null or empty");
        return NULL;
    }
    for (size_t t = 0; t < S_NTYPES; t++)
        if (strcmp(type, s_types[t].name) == 0)
            return s_make(t, tagk, filter, group_by, 0, err);
    tsdb_error_set(err, 400,
                   "Could not find a tag value filter of the type: %.200s",
                   type);
    return NULL;
}

tsdb_filter_t *
tsdb_filter_from_tag(const char *tagk, const char *value, int group_by,
                     tsdb_error_t *err)
{
    if (!tagk || !*tagk) {
        tsdb_error_set(err, 400, "Tagk cannot be null or empty");
        return NULL;
    }
    if (!value || !*value) {
        tsdb_error_set(err, 400, "Filter cannot be null or empty");
        return NULL;
    }
    const char *paren = strchr(value, '(');
    size_t len = strlen(value);
    if (paren && strcmp(value, "*") != 0) {
        if (value[len - 1] != ')') {
            tsdb_error_set(err, 400, "Filter must end with a ')': %.200s",
                           value);
            return NULL;
        }
        char type[64], *inner = strndup(paren + 1,
                                        (size_t) (value + len - 1 - paren - 1));
        size_t tl = (size_t) (paren - value);
        if (!inner) {
            tsdb_error_set(err, 500, "out of memory");
            return NULL;
        }
        snprintf(type, sizeof type, "%.*s", (int) (tl < 63 ? tl : 63), value);
        s_lower(type);
        tsdb_filter_t *f = tsdb_filter_new(type, tagk, inner, group_by, err);
        free(inner);
        return f;
    }
    if (strchr(value, '*'))
        return s_make(4 /* wildcard */, tagk, value, group_by, 1, err);
    return s_make(0 /* literal_or */, tagk, value, group_by, 0, err);
}

void
tsdb_filter_destroy(tsdb_filter_t **f_p)
{
    if (!f_p || !*f_p)
        return;
    tsdb_filter_t *f = *f_p;
    for (size_t i = 0; i < f->nparts; i++)
        free(f->parts[i]);
    free(f->parts);
    if (f->has_re)
        regfree(&f->re);
    free(f->tagk);
    free(f->filter);
    free(f);
    *f_p = NULL;
}

const char *tsdb_filter_tagk(const tsdb_filter_t *f) { return f->tagk; }
int tsdb_filter_group_by(const tsdb_filter_t *f) { return f->group_by; }
tsdb_filter_type_t tsdb_filter_type(const tsdb_filter_t *f) { return f->type; }
const char *tsdb_filter_type_name(const tsdb_filter_t *f)
{
    return f->type_name;
}
const char *tsdb_filter_string(const tsdb_filter_t *f) { return f->filter; }

/* OpenTSDB's wildcard match on v (already folded when ci). */
static int
s_wild_match(const tsdb_filter_t *f, const char *v)
{
    if (f->match_all)
        return 1;
    size_t vl = strlen(v);
    const char *last = f->parts[f->nparts - 1], *first = f->parts[0];
    size_t ll = strlen(last), fl = strlen(first);
    if (f->has_postfix && !f->has_prefix
        && (ll > vl || strcmp(v + vl - ll, last) != 0))
        return 0;
    if (f->has_prefix && !f->has_postfix && strncmp(v, first, fl) != 0)
        return 0;
    size_t idx = 0;
    for (size_t i = 0; i < f->nparts; i++) {
        size_t pl = strlen(f->parts[i]);
        if (pl && (idx > vl || !strstr(v + idx, f->parts[i])))
            return 0;
        idx += pl;
    }
    return 1;
}

int
tsdb_filter_match(const tsdb_filter_t *f, const char *value)
{
    if (!value)
        return 0;
    if (f->type == TSDB_FILTER_REGEXP)
        return regexec(&f->re, value, 0, NULL, 0) == 0;
    char buf[256], *v = (char *) value, *heap = NULL;
    if (f->ci) {
        size_t len = strlen(value);
        v = len < sizeof buf ? buf : (heap = malloc(len + 1));
        if (!v)
            return 0;
        memcpy(v, value, len + 1);
        s_lower(v);
    }
    int m;
    if (f->type == TSDB_FILTER_WILDCARD || f->type == TSDB_FILTER_IWILDCARD)
        m = s_wild_match(f, v);
    else {
        m = 0;
        for (size_t i = 0; i < f->nparts && !m; i++)
            m = strcmp(f->parts[i], v) == 0;
        m = f->negate ? !m : m;
    }
    free(heap);
    return m;
}

long
tsdb_filter_literals(const tsdb_filter_t *f, const char **names, size_t cap)
{
    if (f->type != TSDB_FILTER_LITERAL_OR)
        return -1;
    for (size_t i = 0; i < f->nparts && i < cap; i++)
        names[i] = f->parts[i];
    return (long) f->nparts;
}

int
tsdb_filter_equal(const tsdb_filter_t *a, const tsdb_filter_t *b)
{
    return a->type == b->type && a->ci == b->ci
           && strcmp(a->tagk, b->tagk) == 0
           && strcmp(a->filter, b->filter) == 0;
}

json_t *
tsdb_filter_to_json(const tsdb_filter_t *f)
{
    return json_pack("{s:s, s:s, s:b, s:s}", "tagk", f->tagk, "filter",
                     f->filter, "group_by", f->group_by, "type",
                     f->type_name);
}

json_t *
tsdb_filter_config_json(void)
{
    json_t *o = json_object();
    for (size_t t = 0; o && t < S_NTYPES; t++) {
        json_t *e = json_pack("{s:s, s:s}", "examples", s_types[t].examples,
                              "description", s_types[t].description);
        if (!e || json_object_set_new(o, s_types[t].name, e)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}
