/* telem_why.c - the sentence a failed call leaves (telem_why.h). */
#include "telem_why.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
telem_why(char *why, size_t size, const char *fmt, ...)
{
    if (!why || size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

int
telem_why_clause(char *buf, size_t size, const char *sep, const char *clause,
                 unsigned *dropped)
{
    if (!buf || size <= TELEM_WHY_TAIL || !clause)
        return 0;
    size_t len = strnlen(buf, size - 1), add = strlen(clause);
    if (len == 0) {                 /* the first clause: in, cut if need be */
        snprintf(buf, size - TELEM_WHY_TAIL, "%s", clause);
        return 1;
    }
    size_t slen = sep ? strlen(sep) : 0;
    if (len + slen + add + TELEM_WHY_TAIL > size) {
        if (dropped)
            (*dropped)++;
        return 0;
    }
    snprintf(buf + len, size - len, "%s%s", sep ? sep : "", clause);
    return 1;
}

void
telem_why_end(char *buf, size_t size, unsigned *dropped)
{
    if (!buf || !dropped || !*dropped || size == 0)
        return;
    size_t len = strnlen(buf, size - 1);
    snprintf(buf + len, size - len, "; and %u more", *dropped);
    *dropped = 0;
}
