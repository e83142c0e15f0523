/* telem_grow.c - grow-by-doubling arrays (telem_grow.h). */
#include "telem_grow.h"

#include <stdlib.h>

#include "telem_error.h"

int
telem_grow(void **p, size_t *cap, size_t need, size_t size, size_t min)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : (min ? min : 1);
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return TELEM_ENOMEM;
        ncap *= 2;
    }
    if (size && ncap > SIZE_MAX / size)
        return TELEM_ENOMEM;
    void *np = realloc(*p, ncap * size);
    if (!np)
        return TELEM_ENOMEM;
    *p = np;
    *cap = ncap;
    return 0;
}
