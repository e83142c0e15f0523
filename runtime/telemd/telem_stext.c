/* telem_stext.c - pread-once text reading and in-place parsing for the
 * samplers (see telem_stext.h).
 */
#include "telem_stext.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_grow.h"

static int
s_open(int dirfd, const char *rel, int *fd_p)
{
    if (*fd_p >= 0)
        return 0;
    int fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return TELEM_ENOTFOUND;
    *fd_p = fd;
    return 0;
}

int
telem_stext_read(telem_stext_t *t, int dirfd, const char *rel, int *fd_p)
{
    int rc = s_open(dirfd, rel, fd_p);
    if (rc != 0)
        return rc;
    size_t len = 0;
    for (;;) {
        if (t->cap - len < 2) {
            if (t->cap >= TELEM_STEXT_MAX)
                return TELEM_ETOOBIG;
            if (telem_grow((void **) &t->buf, &t->cap, t->cap + 1, 1,
                           TELEM_STEXT_INITIAL))
                return TELEM_ENOMEM;
        }
        ssize_t r = pread(*fd_p, t->buf + len, t->cap - len - 1, (off_t) len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(*fd_p);       /* reopen on the next call */
            *fd_p = -1;
            return TELEM_EIO;
        }
        if (r == 0)
            break;
        len += (size_t) r;
    }
    t->buf[len] = '\0';
    t->len = len;
    return 0;
}

void
telem_stext_free(telem_stext_t *t)
{
    if (!t)
        return;
    free(t->buf);
    t->buf = NULL;
    t->cap = t->len = 0;
}

char *
telem_stext_line(char **pos)
{
    char *line = *pos;
    if (*line == '\0')
        return NULL;
    char *nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *pos = nl + 1;
    }
    else
        *pos = line + strlen(line);
    return line;
}

int
telem_stext_u64s(const char *s, uint64_t *out, int max)
{
    int n = 0;
    while (n < max) {
        s = telem_stext_blank(s);
        if (*s < '0' || *s > '9')
            break;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0)
            break;
        out[n++] = (uint64_t) v;
        s = end;
    }
    return n;
}

int
telem_stext_doubles(const char *s, double *out, int max)
{
    int n = 0;
    while (n < max) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || !isfinite(v))
            break;
        out[n++] = v;
        s = end;
    }
    return n;
}

bool
telem_stext_starts(const char *line, const char *key)
{
    return strncmp(line, key, strlen(key)) == 0;
}

const char *
telem_stext_blank(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* The N of "<prefix>N", or -1 when name is not one. */
static long
s_number(const char *name, const char *prefix)
{
    size_t plen = strlen(prefix);
    if (strncmp(name, prefix, plen) != 0)
        return -1;
    const char *d = name + plen;
    if (*d < '0' || *d > '9' || strspn(d, "0123456789") != strlen(d)
        || strlen(d) > 6)
        return -1;
    return strtol(d, NULL, 10);
}

static int
s_by_num(const void *a, const void *b)
{
    unsigned x = ((const telem_stext_file_t *) a)->num;
    unsigned y = ((const telem_stext_file_t *) b)->num;
    return (x > y) - (x < y);
}

int
telem_stext_open_numbered(const char *dir, const char *prefix,
                          const char *rel, telem_stext_file_t **files_p)
{
    *files_p = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return TELEM_ENOTFOUND;
    telem_stext_file_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        long num = s_number(de->d_name, prefix);
        char path[512];
        if (num < 0 || snprintf(path, sizeof path, "%s/%s", de->d_name, rel)
                           >= (int) sizeof path)
            continue;
        int fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (telem_grow((void **) &v, &cap, n + 1, sizeof *v, 8)) {
            close(fd);
            rc = TELEM_ENOMEM;
            break;
        }
        v[n].fd = fd;
        v[n].num = (unsigned) num;
        snprintf(v[n].name, sizeof v[n].name, "%u", (unsigned) num);
        n++;
    }
    closedir(d);
    if (rc != 0) {
        telem_stext_files_free(&v, n);
        return rc;
    }
    if (n > 1)
        qsort(v, n, sizeof *v, s_by_num);
    *files_p = v;
    return (int) n;
}

void
telem_stext_files_free(telem_stext_file_t **files_p, size_t n)
{
    if (!files_p || !*files_p)
        return;
    for (size_t i = 0; i < n; i++)
        if ((*files_p)[i].fd >= 0)
            close((*files_p)[i].fd);
    free(*files_p);
    *files_p = NULL;
}
