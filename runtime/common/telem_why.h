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

/* A sentence made of clauses ("GPU 0 ...; GPU 1 ..."), cut only between
 * clauses: a reason that names several GPUs or detectors is read whole or
 * ends with "; and N more", never in the middle of a figure.
 *
 * telem_why_clause() appends `sep` (when buf is not empty) and `clause`
 * to the sentence in buf (size bytes, NUL-terminated) when both fit whole
 * with TELEM_WHY_TAIL bytes left for the end; otherwise it leaves buf as
 * it was and counts the clause in *dropped.  The first clause of an empty
 * buffer always goes in, cut to fit if it must.  Returns 1 when the
 * clause went in, 0 when it was dropped.
 * telem_why_end() appends "; and N more" when *dropped is not 0, and
 * clears it.  Thread-safe: they touch only their arguments. */
#define TELEM_WHY_TAIL 24       /* "; and 4294967295 more" and its NUL */
int telem_why_clause(char *buf, size_t size, const char *sep,
                     const char *clause, unsigned *dropped);
void telem_why_end(char *buf, size_t size, unsigned *dropped);

#ifdef __cplusplus
}
#endif

#endif
