/* telem_stext.h - reading the small text files of /proc and /sys for the
 * samplers.
 *
 * A sampler keeps one telem_stext_t (a buffer that grows as needed and is
 * kept between calls) and one fd per file it reads: files are opened once
 * and re-read with pread() from offset 0, since /proc and /sys regenerate
 * them on every read from the start.  The parsers work in place on the
 * buffer and never allocate.  Not thread-safe: one sampler, one thread.
 */
#ifndef TELEM_STEXT_H
#define TELEM_STEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TELEM_STEXT_INITIAL (16u << 10)
#define TELEM_STEXT_MAX (16u << 20)     /* no file a sampler reads gets near */

typedef struct {
    char *buf;                  /* NUL-terminated content of the last read */
    size_t cap;
    size_t len;
} telem_stext_t;

/* Reads file rel (relative to the directory dirfd) whole into t->buf.
 * *fd_p caches the open file: -1 opens it (and stores the fd), otherwise
 * it is re-read from offset 0.  Returns 0, TELEM_ENOTFOUND (cannot open),
 * TELEM_EIO (read failed: the fd is closed and *fd_p reset, so the next
 * call reopens it), TELEM_ETOOBIG or TELEM_ENOMEM. */
int telem_stext_read(telem_stext_t *t, int dirfd, const char *rel, int *fd_p);

/* Frees the buffer; t may be NULL. */
void telem_stext_free(telem_stext_t *t);

/* Returns the line at *pos (NUL-terminated in place) and moves *pos past
 * it; NULL at the end of the buffer. */
char *telem_stext_line(char **pos);

/* Parses up to max unsigned decimal numbers separated by blanks.  Returns
 * how many were read; stops at the first thing that is not one. */
int telem_stext_u64s(const char *s, uint64_t *out, int max);

/* Parses up to max blank-separated finite floating-point numbers. */
int telem_stext_doubles(const char *s, double *out, int max);

/* True when line starts with key. */
bool telem_stext_starts(const char *line, const char *key);

/* Skips blanks (spaces and tabs). */
const char *telem_stext_blank(const char *s);

/* One file of a numbered family (cpuN/cpufreq/scaling_cur_freq,
 * nodeN/meminfo), opened once. */
typedef struct {
    int fd;
    unsigned num;               /* N */
    char name[12];              /* N as text: the tag value */
} telem_stext_file_t;

/* Opens dir/<prefix>N/rel for every N in dir that has it, sorted by N.
 * *files_p gets a malloc'd array (free it with telem_stext_files_free),
 * NULL when none.  Returns how many were opened, or TELEM_ENOTFOUND when
 * dir cannot be opened, or TELEM_ENOMEM. */
int telem_stext_open_numbered(const char *dir, const char *prefix,
                              const char *rel, telem_stext_file_t **files_p);

/* Closes and frees n files; accepts NULL and nulls *files_p. */
void telem_stext_files_free(telem_stext_file_t **files_p, size_t n);

#endif
