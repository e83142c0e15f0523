/* tsdb_filter.h - OpenTSDB 2.4's tag value filters, as /api/query's
 * "filters" (and the older "tags", and the URI's m=metric{..}{..}) give
 * them, and /api/config/filters lists them.
 *
 *   literal_or      the value is one of "a|b|c" (case-sensitive)
 *   iliteral_or     the same, ignoring case
 *   not_literal_or  the value is none of "a|b|c"
 *   not_iliteral_or the same, ignoring case
 *   wildcard        a glob with one or more '*' ("web*", "*.net", "*")
 *   iwildcard       the same, ignoring case
 *   regexp          a regular expression found anywhere in the value
 *
 * A series that lacks the filter's tag key never matches, whatever the
 * type: OpenTSDB's scan only reads series that carry every filtered tag
 * key, so not_literal_or too needs the key present.
 *
 * OpenTSDB's own quirks are kept so that answers agree with a real TSD:
 *   - wildcard: a filter starting with '*' checks the value's end, one
 *     ending with '*' its start, one with '*' at both ends or neither
 *     checks neither end; then each '*'-separated part must be found in
 *     the value at or after the sum of the earlier parts' lengths (not
 *     after the earlier match), so "web*net" matches "xwebnetx";
 *   - case is folded with ASCII tolower (Java's toLowerCase folds more).
 *   - regexp is POSIX extended (regcomp REG_EXTENDED|REG_NOSUB) where
 *     OpenTSDB uses java.util.regex.Pattern: POSIX has no \d (use
 *     [0-9]), no lazy quantifiers (*?), no lookaround, no (?i) flags;
 *     glibc does accept \w \W \s \S \b.  A pattern POSIX refuses is a 400.
 *
 * A filter is immutable once made: matching from several threads at once
 * is safe. */
#ifndef TSDB_FILTER_H
#define TSDB_FILTER_H

#include <jansson.h>
#include <stddef.h>

#include "tsdb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TSDB_FILTER_LITERAL_OR, TSDB_FILTER_ILITERAL_OR,
    TSDB_FILTER_NOT_LITERAL_OR, TSDB_FILTER_NOT_ILITERAL_OR,
    TSDB_FILTER_WILDCARD, TSDB_FILTER_IWILDCARD, TSDB_FILTER_REGEXP
} tsdb_filter_type_t;

typedef struct tsdb_filter tsdb_filter_t;

/* A filter of the type OpenTSDB names `type` ("literal_or", ...) on tag
 * key `tagk` with the filter string `filter`.  Returns the filter, or
 * NULL with err filled (status 400, OpenTSDB's sentence: an unknown
 * type, an empty tagk or filter, a literal filter of just "|", a
 * wildcard without '*', a regular expression that does not compile), or
 * status 500 when out of memory. */
tsdb_filter_t *tsdb_filter_new(const char *type, const char *tagk,
                               const char *filter, int group_by,
                               tsdb_error_t *err);

/* The filter OpenTSDB makes from the older "tags" form {tagk: value} and
 * from the URI's metric{tagk=value}: "*" or a value holding '*' is a
 * case-insensitive wildcard (reported as type "wildcard", as OpenTSDB
 * does), "type(x)" is that type with x, anything else literal_or ("a|b"
 * is either).  group_by as given (the "tags" form groups).  NULL with
 * err filled as tsdb_filter_new(). */
tsdb_filter_t *tsdb_filter_from_tag(const char *tagk, const char *value,
                                    int group_by, tsdb_error_t *err);

/* Frees *f_p (NULL accepted) and sets it NULL. */
void tsdb_filter_destroy(tsdb_filter_t **f_p);

const char *tsdb_filter_tagk(const tsdb_filter_t *f);
int tsdb_filter_group_by(const tsdb_filter_t *f);
tsdb_filter_type_t tsdb_filter_type(const tsdb_filter_t *f);
/* The type as OpenTSDB reports it ("literal_or", ...). */
const char *tsdb_filter_type_name(const tsdb_filter_t *f);
/* The filter string as given ("web01|web02"). */
const char *tsdb_filter_string(const tsdb_filter_t *f);

/* 1 if `value` matches, 0 if not; a NULL value (the series has no such
 * tag) never matches. */
int tsdb_filter_match(const tsdb_filter_t *f, const char *value);

/* For a case-sensitive literal_or: its distinct literals, in the order
 * given, into names[] (pointers owned by f), at most cap; returns their
 * number (may exceed cap: then only cap were written).  -1 for any
 * other type. */
long tsdb_filter_literals(const tsdb_filter_t *f, const char **names,
                          size_t cap);

/* 1 when a and b are the same filter as OpenTSDB's equals() sees it
 * (type, tagk and filter string; group_by is not compared). */
int tsdb_filter_equal(const tsdb_filter_t *a, const tsdb_filter_t *b);

/* The filter as OpenTSDB echoes it in a shown query:
 * {"tagk","filter","group_by","type"}.  New reference, NULL when out of
 * memory. */
json_t *tsdb_filter_to_json(const tsdb_filter_t *f);

/* /api/config/filters: an object with every filter type, each
 * {"examples": ..., "description": ...} in OpenTSDB's words.  New
 * reference owned by the caller, NULL when out of memory. */
json_t *tsdb_filter_config_json(void);

#ifdef __cplusplus
}
#endif

#endif
