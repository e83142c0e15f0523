/* telem_nodesock.c - a node's socket path to its endpoints
 * (telem_nodesock.h). */
#include "telem_nodesock.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "telem_error.h"
#include "telem_paths.h"
#include "telem_why.h"

/* Copies the directory part of an absolute path into dir. */
static int
s_dirname(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    int n = slash == path ? snprintf(dir, size, "/")
          : snprintf(dir, size, "%.*s", (int) (slash - path), path);
    return n < 0 || (size_t) n >= size ? TELEM_ETOOBIG : 0;
}

int
telem_nodesock_resolve(const char *path, const char *file, char *ep,
                       size_t ep_size, char *node, size_t node_size,
                       char *why, size_t why_size)
{
    struct stat st;
    char real[PATH_MAX], dir[TELEM_PATH_MAX];
    if (!path || !*path || !file || !*file)
        return TELEM_EINVAL;
    /* The absolute path without ".", ".." or links: "." names a node
     * directory as well as its full path does. */
    if (!realpath(path, real) || stat(real, &st) != 0) {
        telem_why(why, why_size, "%s: %s", path, strerror(errno));
        return TELEM_ENOTFOUND;
    }
    int rc = 0;
    if (S_ISDIR(st.st_mode))
        rc = snprintf(dir, sizeof dir, "%s", real) >= (int) sizeof dir
             ? TELEM_ETOOBIG : 0;
    else if (S_ISSOCK(st.st_mode))
        rc = s_dirname(real, dir, sizeof dir);
    else
        rc = TELEM_EINVAL;
    const char *base = rc ? NULL : strrchr(dir, '/');
    base = base ? base + 1 : dir;
    if (!rc && !*base)
        rc = TELEM_EINVAL;              /* the root directory */
    if (rc == TELEM_EINVAL)
        telem_why(why, why_size, "%s is not a node's directory or one of "
                  "its sockets", path);
    if (!rc && ep && snprintf(ep, ep_size, "ipc://%s/%s", dir, file)
                         >= (int) ep_size)
        rc = TELEM_ETOOBIG;
    if (!rc && node && snprintf(node, node_size, "%s", base)
                           >= (int) node_size)
        rc = TELEM_ETOOBIG;
    if (rc == TELEM_ETOOBIG)
        telem_why(why, why_size, "%s: path too long", path);
    return rc;
}
