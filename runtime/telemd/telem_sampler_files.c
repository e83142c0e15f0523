/* telem_sampler_files.c - small numeric files read again on every sample
 * (telem_sampler_files.h).
 *
 * A file is read with pread() from offset 0 into a stack buffer of one
 * page: sysfs attributes never exceed a page, and a file that does is not
 * one of ours.  Parsing is strict: the number must be followed by the end
 * of the text, a blank, a new line or (for state files) a colon, so a
 * truncated or garbage file gives no value instead of a wrong one.
 */
#include "telem_sampler_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_grow.h"

static long
s_pread_all(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    for (;;) {
        if (len + 1 >= cap)
            return TELEM_ETOOBIG;
        ssize_t r = pread(fd, buf + len, cap - len - 1, (off_t) len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return TELEM_EIO;
        if (r == 0)
            break;
        len += (size_t) r;
    }
    buf[len] = '\0';
    return (long) len;
}

long
telem_sfile_read_at(int dirfd, const char *path, char *buf, size_t cap)
{
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return TELEM_ENOTFOUND;
    long len = s_pread_all(fd, buf, cap);
    close(fd);
    return len;
}

static int
s_ends_number(const char *end, bool colon_ok)
{
    return *end == '\0' || *end == '\n' || *end == ' ' || *end == '\t'
        || (colon_ok && *end == ':');
}

int
telem_sfile_u64(const char *s, uint64_t *out, const char **end)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9')
        return TELEM_EPROTO;
    char *e;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno != 0 || !s_ends_number(e, false))
        return TELEM_EPROTO;
    *out = (uint64_t) v;
    if (end)
        *end = e;
    return 0;
}

int
telem_sfile_parse(const char *text, telem_sfile_kind_t kind, double *out)
{
    const char *s = text + strspn(text, " \t");
    char *end;
    if (kind == TELEM_SFILE_INT) {
        if (!((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0'
                                            && s[1] <= '9')))
            return TELEM_EPROTO;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno != 0 || !s_ends_number(end, true))
            return TELEM_EPROTO;
        *out = (double) v;
        return 0;
    }
    if (*s < '0' || *s > '9')
        return TELEM_EPROTO;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || strncmp(end, " Gb/sec", 7) != 0)
        return TELEM_EPROTO;
    *out = v;
    return 0;
}

int
telem_sfiles_add(telem_sfiles_t *set, int dirfd, const char *path,
                 const char *metric, telem_sfile_kind_t kind, double scale,
                 const telem_tag_t *tags, uint32_t ntags)
{
    if (ntags > TELEM_SFILE_TAGS_MAX)
        return TELEM_EINVAL;
    size_t len = 0;
    for (uint32_t i = 0; i < ntags; i++)
        len += strlen(tags[i].value) + 1;
    if (telem_grow((void **) &set->v, &set->cap, set->n + 1, sizeof *set->v,
                   16))
        return TELEM_ENOMEM;
    char *strs = malloc(len ? len : 1);
    if (!strs)
        return TELEM_ENOMEM;
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        free(strs);
        return TELEM_ENOTFOUND;
    }
    telem_sfile_t *f = &set->v[set->n++];
    memset(f, 0, sizeof *f);
    *f = (telem_sfile_t) { .fd = fd, .kind = kind, .scale = scale,
                           .metric = metric, .ntags = ntags, .strs = strs };
    char *p = strs;
    for (uint32_t i = 0; i < ntags; i++) {
        size_t l = strlen(tags[i].value) + 1;
        memcpy(p, tags[i].value, l);
        f->tags[i] = (telem_tag_t) { tags[i].key, p };
        p += l;
    }
    return 0;
}

size_t
telem_sfiles_emit(telem_sfiles_t *set, telem_sampler_emit_fn emit, void *arg)
{
    char buf[TELEM_SFILE_TEXT_MAX];
    size_t n = 0;
    for (size_t i = 0; i < set->n; i++) {
        telem_sfile_t *f = &set->v[i];
        double v;
        if (s_pread_all(f->fd, buf, sizeof buf) < 0
            || telem_sfile_parse(buf, f->kind, &v) != 0) {
            set->bad++;
            continue;
        }
        emit(arg, f->metric, f->tags, f->ntags, v * f->scale);
        n++;
    }
    return n;
}

void
telem_sfiles_clear(telem_sfiles_t *set)
{
    for (size_t i = 0; i < set->n; i++) {
        close(set->v[i].fd);
        free(set->v[i].strs);
    }
    set->n = 0;
}

void
telem_sfiles_free(telem_sfiles_t *set)
{
    telem_sfiles_clear(set);
    free(set->v);
    set->v = NULL;
    set->cap = 0;
}

long
telem_sfile_each(int dir_at, const char *path,
                 void (*fn)(int dirfd, const char *name, void *arg),
                 void *arg)
{
    int fd = openat(dir_at, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return TELEM_ENOTFOUND;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return TELEM_ENOTFOUND;
    }
    long n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        n++;
        if (fn)
            fn(fd, de->d_name, arg);
    }
    closedir(d);
    return n;
}
