/* telem_nodesock.h - what a path given as "the node's socket" means: the
 * tau-style `-u PATH` option of telem's command-line tools.
 *
 * tau_metric_proxy's tools take the path of the proxy's UNIX socket.  A
 * telemd has a directory per node, <rundir>/<node>/, holding its sockets
 * (telem_paths.h): ingest.sock (samples in) and ctl.sock (queries and
 * control).  A PATH names a node when it is
 *   - that directory, or
 *   - any socket file in it (ingest.sock, ctl.sock, ...),
 * and then the node's name is the directory's last component and each
 * socket is found beside the others, whichever one was named.  Anything
 * else (a missing path, a regular file, a socket outside a node
 * directory that does not exist) is not a node.
 *
 * Thread safety: works on its arguments only (stat(2) of the path).
 */
#ifndef TELEM_NODESOCK_H
#define TELEM_NODESOCK_H

#include <stddef.h>

/* Resolves PATH as above: writes the ipc endpoint of the node's socket
 * `file` ("ctl.sock", "ingest.sock") to ep, "ipc://<dir>/<file>", and the
 * node's name to node (either may be NULL).  Returns 0, TELEM_ENOTFOUND
 * (PATH does not exist), TELEM_EINVAL (PATH is neither a directory nor a
 * socket, or names no directory), or TELEM_ETOOBIG (a result does not
 * fit); with a sentence in `why` (NULL allowed). */
int telem_nodesock_resolve(const char *path, const char *file, char *ep,
                           size_t ep_size, char *node, size_t node_size,
                           char *why, size_t why_size);

#endif
