/* telem_promname.h - metric names with labels in Prometheus syntax, as
 * pushed counters and gauges are named: strace_hits_total{scall="read"}.
 *
 * The push API (telem_counter_add(), telem_gauge_set() in telem.h) takes
 * one string that holds a metric name and, optionally, labels; this module
 * parses and validates it once, in the pushing process, into a metric name
 * and tags, which is how the rest of telem carries labels.  telemd checks
 * what arrives with the same rules (telem_promname_metric_ok(),
 * telem_promname_label_ok()), and telem_client writes series back in the
 * same syntax (telem_promname_format()).
 *
 * Grammar (strict: no blanks anywhere):
 *   text    = metric [ "{" [ label { "," label } [ "," ] ] "}" ]
 *   metric  = [a-zA-Z_:] [a-zA-Z0-9_:]*            1-255 bytes
 *   label   = key "=" '"' value '"'
 *   key     = [a-zA-Z_] [a-zA-Z0-9_]*              1-255 bytes, not
 *             starting with "__" (reserved by Prometheus), not "host" or
 *             "pid" (telem's own tags), each key once
 *   value   = valid UTF-8 with \\ \" and \n written escaped (a raw line
 *             feed, any other backslash escape or a raw '"' is refused);
 *             at most 255 bytes once unescaped
 * A label with an empty value is dropped, as Prometheus treats it as
 * absent.  At most TELEM_PROMNAME_LABELS labels, at most
 * TELEM_PROMNAME_TEXT_MAX bytes of text.
 *
 * With TELEM_PROMNAME_BARE (command lines only) a value may also be
 * written without quotes, up to the next ',' or '}': shells eat the
 * quotes of `-g strace_hits_total{scall="read"}` typed unquoted.  With
 * TELEM_PROMNAME_OWN the labels host and pid are accepted (to select
 * series by them, not to push).
 *
 * Thread safety: every function works on its arguments only.
 */
#ifndef TELEM_PROMNAME_H
#define TELEM_PROMNAME_H

#include <stddef.h>
#include <stdint.h>

#include "telem_types.h"

#define TELEM_PROMNAME_LABELS 8        /* labels in one name */
#define TELEM_PROMNAME_TEXT_MAX 4096   /* bytes of one name with labels */

enum {
    TELEM_PROMNAME_BARE = 1u << 0,     /* accept unquoted label values */
    TELEM_PROMNAME_OWN = 1u << 1       /* accept labels host and pid */
};

/* A parsed name: `metric` and `labels` point into `buf` (keys and values
 * NUL-terminated, values unescaped), labels in the order written. */
typedef struct {
    const char *metric;
    telem_tag_t labels[TELEM_PROMNAME_LABELS];
    uint32_t nlabels;
    size_t bytes;               /* of buf used, NULs included */
    char buf[TELEM_NAME_MAX + 1
             + 2 * TELEM_PROMNAME_LABELS * (TELEM_NAME_MAX + 1)];
} telem_promname_t;

/* Parses `text` (NUL-terminated) into *out.  Returns 0, or TELEM_EINVAL
 * with a sentence in `why` (NULL allowed) such as
 * "label 2: unterminated value" when text breaks the grammar above.
 * *out is unspecified after a failure. */
int telem_promname_parse(const char *text, unsigned flags,
                         telem_promname_t *out, char *why, size_t why_size);

/* 1 if `s` is a valid metric name (grammar above), else 0. */
int telem_promname_metric_ok(const char *s);

/* 1 if `s` is a valid label key a push may use (not reserved), else 0. */
int telem_promname_label_ok(const char *s);

/* Writes metric{k="v",...} to buf (just the metric when no tag is
 * written), the values escaped as above; tags whose key is listed in
 * `skip` (NULL-terminated, NULL: none) are left out.  Returns the length
 * written, or TELEM_ETOOBIG when it does not fit in `size` (buf then holds
 * a truncated, NUL-terminated prefix). */
int telem_promname_format(char *buf, size_t size, const char *metric,
                          const telem_tag_t *tags, uint32_t ntags,
                          const char *const *skip);

#endif
