/* telem_paths.h - where a node's sockets and files live, and who the node is.
 *
 * Every process of a node agrees on these without talking:
 *   run directory  $TELEM_RUNDIR, else $XDG_RUNTIME_DIR/telem, else
 *                  /tmp/telem-<uid>; a relative one is made absolute against
 *                  the current directory once, at start, so every ipc
 *                  endpoint and node file names an absolute path; created
 *                  mode 0700 (the last component only: its parent must
 *                  exist) and refused if it is owned by another user.
 *   node name      $TELEM_NODE, else $SLURMD_NODENAME (several slurmd on one
 *                  host share a host name), else gethostname().
 *   node files     <rundir>/<node>/ingest.sock   PULL, samples in
 *                  <rundir>/<node>/ctl.sock      ROUTER, queries and control
 *                  <rundir>/<node>/endpoints     one "kind endpoint" a line
 * Node names may hold any character except '/', tab, CR, LF and NUL and are
 * at most TELEM_NAME_MAX bytes; telem_node_valid() checks that.
 *
 * The node file lists a job's nodes for the analysis client, one node a
 * line: "<name>\t<query endpoint>\n"; '#' starts a comment line.  It is
 * found at $TELEM_NODEFILE, else <rundir>/nodes.
 */
#ifndef TELEM_PATHS_H
#define TELEM_PATHS_H

#include <stddef.h>

#define TELEM_PATH_MAX 512

/* Writes `dir` to buf as an absolute path: unchanged when it starts with
 * '/', else after the current directory (leading "./" dropped; "." is the
 * current directory itself).  Programs call it once, when they read
 * --rundir, so that a later chdir or another process reading the endpoints
 * finds the same directory.  Returns 0, TELEM_EINVAL (NULL or empty),
 * TELEM_ETOOBIG or TELEM_EIO (getcwd failed, errno kept). */
int telem_rundir_resolve(char *buf, size_t size, const char *dir);

/* Writes the default run directory to buf, made absolute as
 * telem_rundir_resolve() does.  Returns 0, TELEM_ETOOBIG or TELEM_EIO. */
int telem_rundir_default(char *buf, size_t size);

/* Creates the directory `dir` (an absolute path) mode 0700, or checks an
 * existing one is a directory owned by this user (one open to group/other
 * is chmod'ed 0700).  Only `dir` itself is created: its parent must exist.
 * Returns 0, TELEM_EIO (errno kept: ENOENT when the parent is missing) or
 * TELEM_EINVAL (relative path, another user's directory, not a
 * directory); the sentence, naming the directory and, when it is missing,
 * its parent, goes to why (telem_why.h). */
int telem_rundir_prepare(const char *dir, char *why, size_t why_size);

/* Writes the default node name to buf.  Returns 0 or TELEM_ETOOBIG. */
int telem_node_default(char *buf, size_t size);

/* 1 if `name` is usable as a node name, else 0. */
int telem_node_valid(const char *name);

/* Writes "<rundir>/<node>/<file>" to buf.  Returns 0 or TELEM_ETOOBIG. */
int telem_node_path(char *buf, size_t size, const char *rundir,
                    const char *node, const char *file);

/* Takes the exclusive lock "<rundir>/<node>/<file>" that lets one daemon of
 * a kind serve a node: opens (creating, mode 0600) the file, flock()s it
 * without waiting and writes this process's pid into it.  The path is
 * written to `path`.  Returns 0 with *fd_out set (the caller keeps the fd
 * open while it runs, then unlinks the path and closes it), TELEM_ESTATE
 * when another process holds the lock, TELEM_ETOOBIG or TELEM_EIO (errno
 * set); *fd_out is then -1 or an fd the caller must still close. */
int telem_node_lock(char *path, size_t size, const char *rundir,
                    const char *node, const char *file, int *fd_out);

/* Writes the default node file path (see above) to buf. */
int telem_nodefile_default(char *buf, size_t size);

/* Writes the ipc endpoint "ipc://<rundir>/<node>/<file>" to buf. */
int telem_node_endpoint(char *buf, size_t size, const char *rundir,
                        const char *node, const char *file);

/* Adds or replaces the line of `node` in the node file at `path` (created
 * if missing), under an exclusive flock so concurrent agents do not lose
 * each other's lines.  Returns 0, TELEM_EINVAL (also for a node name that
 * starts with '#': its line would read as a comment) or TELEM_EIO. */
int telem_nodefile_register(const char *path, const char *node,
                            const char *endpoint);

/* Removes the line of `node` from the node file at `path` under the same
 * lock (no file: nothing to do).  Returns 0, TELEM_EINVAL (as register:
 * a name starting with '#' would match comment lines) or TELEM_EIO. */
int telem_nodefile_unregister(const char *path, const char *node);

/* Looks up `node` in the node file at `path` (under a shared flock, so a
 * concurrent register is seen whole) and writes its endpoint to ep.
 * Returns 0, TELEM_ENOTFOUND (no file, or no such line) or TELEM_ETOOBIG
 * (the endpoint does not fit in `size`). */
int telem_nodefile_lookup(const char *path, const char *node, char *ep,
                          size_t size);

#endif
