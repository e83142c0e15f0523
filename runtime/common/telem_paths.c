/* telem_paths.c - run directory, node name and per-node socket paths. */
#include "telem_paths.h"
#include "telem_error.h"
#include "telem_types.h"
#include "telem_why.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int
s_fmt(char *buf, size_t size, int n)
{
    (void) buf;
    return (n < 0 || (size_t) n >= size) ? TELEM_ETOOBIG : 0;
}

int
telem_rundir_resolve(char *buf, size_t size, const char *dir)
{
    if (!dir || !*dir)
        return TELEM_EINVAL;
    if (*dir == '/')
        return s_fmt(buf, size, snprintf(buf, size, "%s", dir));
    while (dir[0] == '.' && dir[1] == '/') {     /* "./run" is "run" */
        dir += 2;
        while (*dir == '/')
            dir++;
    }
    char cwd[TELEM_PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return errno == ERANGE ? TELEM_ETOOBIG : TELEM_EIO;
    const char *sep = strcmp(cwd, "/") == 0 ? "" : "/";
    if (!*dir || strcmp(dir, ".") == 0)
        return s_fmt(buf, size, snprintf(buf, size, "%s", cwd));
    return s_fmt(buf, size, snprintf(buf, size, "%s%s%s", cwd, sep, dir));
}

int
telem_rundir_default(char *buf, size_t size)
{
    const char *env = getenv("TELEM_RUNDIR");
    if (env && *env)
        return telem_rundir_resolve(buf, size, env);
    env = getenv("XDG_RUNTIME_DIR");
    char dir[TELEM_PATH_MAX];
    if (env && *env) {
        if (s_fmt(dir, sizeof dir, snprintf(dir, sizeof dir, "%s/telem", env)))
            return TELEM_ETOOBIG;
        return telem_rundir_resolve(buf, size, dir);
    }
    return s_fmt(buf, size,
                 snprintf(buf, size, "/tmp/telem-%u", (unsigned) getuid()));
}

/* Writes the directory holding `dir` (an absolute path) to buf: "/a/b/"
 * gives "/a", "/a" gives "/". */
static void
s_parent(char *buf, size_t size, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    while (n > 0 && dir[n - 1] != '/')
        n--;
    while (n > 1 && dir[n - 1] == '/')
        n--;
    snprintf(buf, size, "%.*s", (int) n, dir);
}

int
telem_rundir_prepare(const char *dir, char *why, size_t why_size)
{
    if (!dir || !*dir || strlen(dir) >= TELEM_PATH_MAX) {
        telem_why(why, why_size, "run directory '%s': empty or too long",
                  dir ? dir : "");
        return TELEM_EINVAL;
    }
    if (*dir != '/') {
        telem_why(why, why_size, "run directory '%s': not an absolute path "
                  "(telem_rundir_resolve makes it one)", dir);
        return TELEM_EINVAL;
    }
    /* Only the last component: a mistyped parent is an error, not a new
       tree of directories. */
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        int saved = errno;
        char parent[TELEM_PATH_MAX];
        s_parent(parent, sizeof parent, dir);
        if (saved == ENOENT)
            telem_why(why, why_size, "run directory %s: its parent %s does "
                      "not exist (only the run directory itself is created)",
                      dir, parent);
        else
            telem_why(why, why_size, "run directory %s: %s", dir,
                      strerror(saved));
        errno = saved;
        return TELEM_EIO;
    }
    struct stat st;
    if (stat(dir, &st) != 0) {
        telem_why(why, why_size, "run directory %s: %s", dir,
                  strerror(errno));
        return TELEM_EIO;
    }
    /* A directory we own but left open is closed rather than refused. */
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid()
        || ((st.st_mode & 077) && chmod(dir, 0700) != 0)) {
        telem_why(why, why_size, "run directory %s: exists but is not a "
                  "private directory of this user", dir);
        return TELEM_EINVAL;
    }
    return 0;
}

int
telem_node_default(char *buf, size_t size)
{
    const char *env = getenv("TELEM_NODE");
    if (!env || !*env)
        env = getenv("SLURMD_NODENAME");
    if (env && *env)
        return s_fmt(buf, size, snprintf(buf, size, "%s", env));
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "localhost");
    host[sizeof host - 1] = '\0';
    return s_fmt(buf, size, snprintf(buf, size, "%s", host));
}

int
telem_node_valid(const char *name)
{
    if (!name || !*name || strlen(name) > TELEM_NAME_MAX)
        return 0;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    return strpbrk(name, "/\t\n\r") == NULL;
}

int
telem_node_path(char *buf, size_t size, const char *rundir, const char *node,
                const char *file)
{
    return s_fmt(buf, size, snprintf(buf, size, "%s/%s/%s", rundir, node, file));
}

int
telem_node_endpoint(char *buf, size_t size, const char *rundir,
                    const char *node, const char *file)
{
    return s_fmt(buf, size,
                 snprintf(buf, size, "ipc://%s/%s/%s", rundir, node, file));
}

int
telem_nodefile_default(char *buf, size_t size)
{
    const char *env = getenv("TELEM_NODEFILE");
    if (env && *env)
        return s_fmt(buf, size, snprintf(buf, size, "%s", env));
    char rundir[TELEM_PATH_MAX];
    int rc = telem_rundir_default(rundir, sizeof rundir);
    if (rc)
        return rc;
    return s_fmt(buf, size, snprintf(buf, size, "%s/nodes", rundir));
}

/* Copies the lines of `in` to `out`, leaving out the one naming `node`.
 * Lines are copied whole, whatever their length, and each ends in a
 * newline in `out`: a last line without one must not run into the line
 * appended after it.  0, or TELEM_EIO when `in` could not be read. */
static int
s_copy_other_lines(FILE *in, FILE *out, const char *node)
{
    char *line = NULL;
    size_t cap = 0, nlen = strlen(node);
    ssize_t len;
    while ((len = getline(&line, &cap, in)) > 0) {
        if (strncmp(line, node, nlen) == 0 && line[nlen] == '\t')
            continue;
        fwrite(line, 1, (size_t) len, out);
        if (line[len - 1] != '\n')
            fputc('\n', out);
    }
    free(line);
    return ferror(in) ? TELEM_EIO : 0;
}

/* Rewrites the node file without `node`'s line, then with `node
 * endpoint` when endpoint is not NULL, under an exclusive flock. */
static int
s_nodefile_rewrite(const char *path, const char *node, const char *endpoint)
{
    int fd = open(path, O_RDWR | (endpoint ? O_CREAT : 0) | O_CLOEXEC, 0600);
    if (fd < 0 && !endpoint && errno == ENOENT)
        return 0;
    if (fd < 0)
        return TELEM_EIO;
    int rc = TELEM_EIO;
    FILE *cur = NULL, *tmp = NULL;
    if (flock(fd, LOCK_EX) != 0)
        goto out;
    cur = fdopen(dup(fd), "r");
    tmp = tmpfile();
    if (!cur || !tmp)
        goto out;
    if (s_copy_other_lines(cur, tmp, node) != 0)
        goto out;
    if (endpoint)
        fprintf(tmp, "%s\t%s\n", node, endpoint);
    if (fflush(tmp) != 0 || ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET))
        goto out;
    rewind(tmp);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, tmp)) > 0)
        if (write(fd, buf, n) != (ssize_t) n)
            goto out;
    rc = 0;
out:
    if (cur)
        fclose(cur);
    if (tmp)
        fclose(tmp);
    close(fd);
    return rc;
}

/* 1 if `node` can have a line in a node file: a valid name that does not
 * start with '#', which would make its line a comment. */
static int
s_file_node_ok(const char *node)
{
    return telem_node_valid(node) && node[0] != '#';
}

int
telem_nodefile_register(const char *path, const char *node,
                        const char *endpoint)
{
    if (!path || !s_file_node_ok(node) || !endpoint || !*endpoint
        || strpbrk(endpoint, "\t\n"))
        return TELEM_EINVAL;
    return s_nodefile_rewrite(path, node, endpoint);
}

int
telem_nodefile_unregister(const char *path, const char *node)
{
    if (!path || !s_file_node_ok(node))
        return TELEM_EINVAL;
    return s_nodefile_rewrite(path, node, NULL);
}

/* The endpoint of a node line, as the analysis client reads it
 * (ac_nodes.c): blanks around it and the line's end left out. */
static int
s_endpoint(const char *s, char *ep, size_t size)
{
    s += strspn(s, " \t");
    size_t len = strlen(s);
    while (len > 0 && strchr(" \t\r\n", s[len - 1]))
        len--;
    return snprintf(ep, size, "%.*s", (int) len, s) < (int) size
               ? 0 : TELEM_ETOOBIG;
}

int
telem_nodefile_lookup(const char *path, const char *node, char *ep,
                      size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return TELEM_ENOTFOUND;
    flock(fileno(f), LOCK_SH);
    char *line = NULL;          /* whole lines, however long */
    size_t cap = 0;
    int rc = TELEM_ENOTFOUND;
    while (rc == TELEM_ENOTFOUND && getline(&line, &cap, f) > 0) {
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || !tab || !line[strspn(line, " \t\r\n")])
            continue;       /* a comment, or blank as the client reads it */
        *tab = '\0';
        if (strcmp(line, node) == 0)
            rc = s_endpoint(tab + 1, ep, size);
    }
    free(line);
    fclose(f);
    return rc;
}

int
telem_node_lock(char *path, size_t size, const char *rundir, const char *node,
                const char *file, int *fd_out)
{
    *fd_out = -1;
    if (telem_node_path(path, size, rundir, node, file))
        return TELEM_ETOOBIG;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return TELEM_EIO;
    *fd_out = fd;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        return errno == EWOULDBLOCK ? TELEM_ESTATE : TELEM_EIO;
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int) getpid());
    if (ftruncate(fd, 0) != 0 || write(fd, pid, (size_t) n) != n)
        return TELEM_EIO;
    return 0;
}
