/* telem_why.h - the sentence a failed call leaves in its caller's buffer.
 *
 * Calls that can fail for a reason worth a sentence ("nodes:3: no tab
 * between name and endpoint") take `char *why, size_t why_size` beside
 * their error code; telem_why() writes it, truncated to the buffer.  A
 * NULL buffer or a size of 0 means the caller wants no sentence.
 * Thread-safe: it touches only the buffer. */
#ifndef TELEM_WHY_H
#define TELEM_WHY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void telem_why(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
