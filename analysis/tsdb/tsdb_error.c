/* tsdb_error.c - OpenTSDB's error answer (tsdb_error.h). */
#include "tsdb_error.h"

#include <stdarg.h>
#include <stdio.h>

void
tsdb_error_set(tsdb_error_t *e, int status, const char *fmt, ...)
{
    if (!e)
        return;
    e->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    e->details[0] = 0;
}

void
tsdb_error_details(tsdb_error_t *e, const char *fmt, ...)
{
    if (!e)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->details, sizeof e->details, fmt, ap);
    va_end(ap);
}
