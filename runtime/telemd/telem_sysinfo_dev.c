/* telem_sysinfo_dev.c - the snapshot's devices: "block" (sys/block) and
 * "net" (sys/class/net, with addresses from getifaddrs() when live); the
 * NVIDIA GPUs are telem_sysinfo_nvml.c's.
 *
 * Entries are listed in name order, at most TSI_ENTRIES_MAX of each.  A
 * value a device does not give (a model, an interface's speed while it is
 * down) is null; a device whose directory cannot be read at all is left
 * out.
 */
#include "telem_sysinfo_int.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "telem_error.h"

static int
s_strcmp_p(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Names in dir (not "." or ".."), sorted; *n their count.  NULL with
 * *err set when the directory cannot be read. */
static char **
s_list(const char *dir, size_t *n, int *err)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) {
        *err = TELEM_ENOTFOUND;
        return NULL;
    }
    char **names = calloc(TSI_ENTRIES_MAX, sizeof *names);
    struct dirent *e;
    while (names && *n < TSI_ENTRIES_MAX && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strlen(e->d_name) > 255)
            continue;
        if (!(names[*n] = strdup(e->d_name)))
            break;
        (*n)++;
    }
    closedir(d);
    if (!names) {
        *err = TELEM_ENOMEM;
        return NULL;
    }
    qsort(names, *n, sizeof *names, s_strcmp_p);
    return names;
}

static void
s_free_list(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

/* dir/name/rel as a JSON string, or null when missing. */
static json_t *
s_text(const char *dir, const char *name, const char *rel)
{
    char r[512], buf[1024];
    snprintf(r, sizeof r, "%s/%s", name, rel);
    return tsi_read(dir, r, buf, sizeof buf) >= 0 ? tsi_str(buf) : json_null();
}

/* dir/name/rel as an integer, or null when missing or malformed. */
static json_t *
s_int(const char *dir, const char *name, const char *rel, int64_t scale)
{
    char r[512];
    int64_t v;
    snprintf(r, sizeof r, "%s/%s", name, rel);
    if (tsi_read_i64(dir, r, &v) != 0 || v < 0 || v > INT64_MAX / scale)
        return json_null();
    return json_integer(v * scale);
}

/* ---- block devices ----------------------------------------------------- */

void
tsi_block(tsi_ctx_t *c, json_t *doc)
{
    char dir[TSI_PATH_MAX];
    snprintf(dir, sizeof dir, "%s/block", c->sys);
    size_t n;
    int err = 0;
    char **names = s_list(dir, &n, &err);
    if (!names) {
        tsi_skip(c, "block", "%s: %s", dir, tsi_why(err));
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        json_t *size = s_int(dir, names[i], "size", 512);
        /* not a block device's directory, or one without media (an
           unused loop device, an empty drive), as lsblk leaves them out */
        if (json_is_null(size) || json_integer_value(size) == 0) {
            json_decref(size);
            continue;
        }
        json_t *b = json_object();
        if (!b) {
            json_decref(size);
            break;
        }
        json_t *rot = s_int(dir, names[i], "queue/rotational", 1);
        json_t *rem = s_int(dir, names[i], "removable", 1);
        tsi_set(c, b, "name", tsi_str(names[i]));
        tsi_set(c, b, "size_bytes", size);
        tsi_set(c, b, "model", s_text(dir, names[i], "device/model"));
        tsi_set(c, b, "rotational", json_is_integer(rot)
                ? json_boolean(json_integer_value(rot)) : json_null());
        tsi_set(c, b, "removable", json_is_integer(rem)
                ? json_boolean(json_integer_value(rem)) : json_null());
        tsi_set(c, b, "nvme", json_boolean(strncmp(names[i], "nvme", 4) == 0));
        json_decref(rot);
        json_decref(rem);
        tsi_push(c, arr, b);
    }
    s_free_list(names, n);
    tsi_set(c, doc, "block", arr);
}

/* ---- network interfaces ------------------------------------------------ */

/* The addresses getifaddrs() gives for interface `name`. */
static json_t *
s_addresses(tsi_ctx_t *c, const struct ifaddrs *all, const char *name)
{
    json_t *arr = json_array();
    for (const struct ifaddrs *a = all; arr && a; a = a->ifa_next) {
        if (!a->ifa_addr || strcmp(a->ifa_name, name) != 0)
            continue;
        int fam = a->ifa_addr->sa_family;
        if (fam != AF_INET && fam != AF_INET6)
            continue;
        char text[INET6_ADDRSTRLEN];
        const void *src = fam == AF_INET
            ? (const void *) &((const struct sockaddr_in *) a->ifa_addr)->sin_addr
            : (const void *) &((const struct sockaddr_in6 *) a->ifa_addr)->sin6_addr;
        if (!inet_ntop(fam, src, text, sizeof text))
            continue;
        int prefix = 0;
        if (a->ifa_netmask) {
            const unsigned char *m = fam == AF_INET
                ? (const unsigned char *) &((const struct sockaddr_in *) a->ifa_netmask)->sin_addr
                : (const unsigned char *) &((const struct sockaddr_in6 *) a->ifa_netmask)->sin6_addr;
            for (int k = 0; k < (fam == AF_INET ? 4 : 16); k++)
                prefix += __builtin_popcount(m[k]);
        }
        json_t *e = json_object();
        if (!e)
            break;
        tsi_set(c, e, "family", tsi_str(fam == AF_INET ? "inet" : "inet6"));
        tsi_set(c, e, "address", tsi_str(text));
        tsi_set(c, e, "prefix", json_integer(prefix));
        tsi_push(c, arr, e);
    }
    return arr;
}

static json_t *
s_interface(tsi_ctx_t *c, const char *dir, const char *name,
            const struct ifaddrs *addrs)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    char r[512];
    int64_t speed;
    snprintf(r, sizeof r, "%s/speed", name);
    tsi_set(c, j, "name", tsi_str(name));
    tsi_set(c, j, "state", s_text(dir, name, "operstate"));
    tsi_set(c, j, "mtu", s_int(dir, name, "mtu", 1));
    /* speed: Mb/s; unreadable while the link is down, -1 when unknown */
    tsi_set(c, j, "speed_mbps", tsi_read_i64(dir, r, &speed) == 0 && speed > 0
            ? json_integer(speed) : json_null());
    tsi_set(c, j, "mac", s_text(dir, name, "address"));
    if (c->o->live)
        tsi_set(c, j, "addresses", s_addresses(c, addrs, name));
    return j;
}

void
tsi_net(tsi_ctx_t *c, json_t *doc)
{
    char dir[TSI_PATH_MAX];
    snprintf(dir, sizeof dir, "%s/class/net", c->sys);
    size_t n;
    int err = 0;
    char **names = s_list(dir, &n, &err);
    if (!names) {
        tsi_skip(c, "net", "%s: %s", dir, tsi_why(err));
        return;
    }
    struct ifaddrs *addrs = NULL;
    if (c->o->live && getifaddrs(&addrs) != 0) {
        tsi_skip(c, "net addresses", "getifaddrs failed");
        addrs = NULL;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        tsi_push(c, arr, s_interface(c, dir, names[i], addrs));
    if (addrs)
        freeifaddrs(addrs);
    s_free_list(names, n);
    tsi_set(c, doc, "net", arr);
}
