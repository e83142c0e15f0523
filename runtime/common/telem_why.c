/* telem_why.c - the sentence a failed call leaves (telem_why.h). */
#include "telem_why.h"

#include <stdarg.h>
#include <stdio.h>

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
