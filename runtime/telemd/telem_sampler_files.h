/* telem_sampler_files.h - small numeric files read again on every sample.
 *
 * The sysfs samplers (InfiniBand ports, hwmon, thermal zones) find their
 * files once, when they scan, and then only re-read them: each file is
 * opened once and read with pread() from offset 0, which makes sysfs and
 * procfs regenerate it.  One entry is one series: a metric, its tags (keys
 * lent by the caller, static strings; values copied) and how the text
 * becomes a value.  telem_sfile_read_at() and the parsers serve the
 * samplers that open their files per call (cgroups, Lustre).
 *
 * Not thread-safe; a sampler's state owns its set.
 */
#ifndef TELEM_SAMPLER_FILES_H
#define TELEM_SAMPLER_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "telem_sampler.h"

#define TELEM_SFILE_TAGS_MAX 4
#define TELEM_SFILE_TEXT_MAX 4096   /* a sysfs attribute is one page */

typedef enum {
    TELEM_SFILE_INT,      /* a decimal integer, maybe negative, maybe
                             followed by ':' and text ("4: ACTIVE") */
    TELEM_SFILE_GBPS      /* "<number> Gb/sec (...)", an InfiniBand rate */
} telem_sfile_kind_t;

typedef struct {
    int fd;
    telem_sfile_kind_t kind;
    double scale;                       /* the value is number * scale */
    const char *metric;                 /* static */
    uint32_t ntags;
    telem_tag_t tags[TELEM_SFILE_TAGS_MAX];
    char *strs;                         /* the tag values, owned */
} telem_sfile_t;

typedef struct {
    telem_sfile_t *v;
    size_t n, cap;
    uint64_t bad;                       /* reads that failed to parse */
} telem_sfiles_t;

/* Opens dirfd/path and adds it as one series.  Returns 0, TELEM_ENOTFOUND
 * (cannot open), TELEM_EINVAL (too many tags) or TELEM_ENOMEM. */
int telem_sfiles_add(telem_sfiles_t *set, int dirfd, const char *path,
                     const char *metric, telem_sfile_kind_t kind,
                     double scale, const telem_tag_t *tags, uint32_t ntags);

/* Reads every file and emits the ones that parse.  Returns how many were
 * emitted; a file that cannot be read or parsed is skipped and counted in
 * set->bad. */
size_t telem_sfiles_emit(telem_sfiles_t *set, telem_sampler_emit_fn emit,
                         void *arg);

/* Closes every file and empties the set (it can be filled again). */
void telem_sfiles_clear(telem_sfiles_t *set);

/* Clears the set and frees its table. */
void telem_sfiles_free(telem_sfiles_t *set);

/* Calls fn(dirfd, name, arg) for each entry of dir_at/path whose name does
 * not start with '.', with dirfd that directory's fd.  Returns how many
 * entries there were, or TELEM_ENOTFOUND when it cannot be opened. */
long telem_sfile_each(int dir_at, const char *path,
                      void (*fn)(int dirfd, const char *name, void *arg),
                      void *arg);

/* Reads dirfd/path (whole, up to cap - 1 bytes, NUL-terminated) into buf.
 * Returns the length, or a negative code: TELEM_ENOTFOUND, TELEM_EIO,
 * TELEM_ETOOBIG (the file is longer than cap - 1). */
long telem_sfile_read_at(int dirfd, const char *path, char *buf, size_t cap);

/* Parses the text of a file of the given kind.  Returns 0 with *out set,
 * or TELEM_EPROTO. */
int telem_sfile_parse(const char *text, telem_sfile_kind_t kind, double *out);

/* Parses one unsigned decimal at s (after blanks); sets *end past it.
 * Returns 0 or TELEM_EPROTO. */
int telem_sfile_u64(const char *s, uint64_t *out, const char **end);

#endif
