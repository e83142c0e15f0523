/* telem_sysinfo_read.c - the snapshot's bounded readers of /proc and /sys.
 *
 * Every file is read with a size bound into the caller's buffer; a file
 * that is longer is refused (TELEM_ETOOBIG), never truncated silently.
 * CPU lists are parsed into a fixed bitmap with a bound on the CPU number,
 * so a hostile or broken file cannot make the collector allocate.
 */
#include "telem_sysinfo_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_log.h"

int
tsi_read(const char *dir, const char *rel, char *buf, size_t size)
{
    char path[TSI_PATH_MAX];
    if (size < 2 || (size_t) snprintf(path, sizeof path, "%s/%s", dir, rel)
                        >= sizeof path)
        return TELEM_EINVAL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? TELEM_ENOTFOUND
                                                   : TELEM_EIO;
    size_t n = 0;
    int rc = 0;
    for (;;) {
        ssize_t k = read(fd, buf + n, size - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = TELEM_EIO;
            break;
        }
        if (k == 0)
            break;
        n += (size_t) k;
        if (n == size) {
            rc = TELEM_ETOOBIG;
            break;
        }
    }
    close(fd);
    if (rc)
        return rc;
    while (n > 0 && isspace((unsigned char) buf[n - 1]))
        n--;
    buf[n] = '\0';
    if (memchr(buf, '\0', n))
        return TELEM_EPROTO;     /* a binary file where text was expected */
    return (int) n;
}

int
tsi_read_i64(const char *dir, const char *rel, int64_t *v)
{
    char buf[64];
    int rc = tsi_read(dir, rel, buf, sizeof buf);
    if (rc < 0)
        return rc;
    char *end;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    while (*end && isspace((unsigned char) *end))
        end++;
    if (errno || end == buf || *end)
        return TELEM_EPROTO;
    *v = x;
    return 0;
}

/* One number of a CPU list at *p, below TSI_CPUS_MAX. */
static int
s_cpu_number(const char **p, int *out)
{
    if (!isdigit((unsigned char) **p))
        return TELEM_EPROTO;
    long v = 0;
    while (isdigit((unsigned char) **p)) {
        v = v * 10 + (**p - '0');
        if (v >= TSI_CPUS_MAX)
            return TELEM_EPROTO;
        (*p)++;
    }
    *out = (int) v;
    return 0;
}

int
tsi_cpulist(const char *s, uint8_t *bits)
{
    memset(bits, 0, TSI_CPUS_MAX / 8);
    int n = 0;
    const char *p = s;
    while (*p == ' ')
        p++;
    if (!*p)
        return 0;                /* an empty list: no CPU */
    for (;;) {
        int lo, hi;
        if (s_cpu_number(&p, &lo))
            return TELEM_EPROTO;
        hi = lo;
        if (*p == '-') {
            p++;
            if (s_cpu_number(&p, &hi) || hi < lo)
                return TELEM_EPROTO;
        }
        for (int i = lo; i <= hi; i++)
            if (!tsi_bit(bits, i)) {
                bits[i >> 3] |= (uint8_t) (1u << (i & 7));
                n++;
            }
        if (*p == ',') {
            p++;
            continue;
        }
        return *p ? TELEM_EPROTO : n;
    }
}

const char *
tsi_why(int rc)
{
    switch (rc) {
    case TELEM_ENOTFOUND: return "missing";
    case TELEM_ETOOBIG: return "too long";
    case TELEM_EPROTO: return "malformed";
    case TELEM_EIO: return "unreadable";
    default: return telem_strerror(rc);
    }
}

void
tsi_set(tsi_ctx_t *c, json_t *obj, const char *key, json_t *v)
{
    if (!v || json_object_set_new(obj, key, v) != 0)
        c->oom = 1;
}

void
tsi_push(tsi_ctx_t *c, json_t *arr, json_t *v)
{
    if (!v || json_array_append_new(arr, v) != 0)
        c->oom = 1;
}

void
tsi_skip(tsi_ctx_t *c, const char *source, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    telem_log(TELEM_LOG_INFO, "snapshot: %s skipped: %s", source, why);
    json_t *e = json_object();
    if (!e) {
        c->oom = 1;
        return;
    }
    tsi_set(c, e, "source", tsi_str(source));
    tsi_set(c, e, "why", tsi_str(why));
    tsi_push(c, c->skipped, e);
}

json_t *
tsi_str(const char *s)
{
    json_t *j = json_string(s ? s : "");
    if (j)
        return j;
    /* Not UTF-8 (a device's model in Latin-1, a broken file): bytes
       outside ASCII become '?', the rest is kept. */
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    for (char *p = copy; *p; p++)
        if ((unsigned char) *p >= 0x80 || (unsigned char) *p < 0x20)
            *p = '?';
    j = json_string(copy);
    free(copy);
    return j;
}
