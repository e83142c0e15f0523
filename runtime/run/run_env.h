/* run_env.h - the environment telem_run sets up for itself and the program
 * it runs: where the node's telemd takes pushes, and the MPI library.
 *
 * The push client (libtelem) finds telemd from the environment
 * (telem.h): TELEM_INGEST when set, else the ingest socket of node
 * $TELEM_NODE in run directory $TELEM_RUNDIR (telem_paths.h).  telem_run's
 * -u sets TELEM_INGEST, so telem_run and everything it starts push to the
 * same place.
 *
 * Not thread-safe (setenv): call from the main thread before others start.
 */
#ifndef RUN_ENV_H
#define RUN_ENV_H

#include <stddef.h>

/* Points the push client at `where` (NULL: leaves the environment alone):
 *   "ipc://...", "tcp://..."   an endpoint, used as it is (TELEM_INGEST);
 *   a path                     a node, as every telem tool's -u names one
 *                              (telem_nodesock.h): its directory
 *                              <rundir>/<node> or any socket in it; sets
 *                              TELEM_INGEST to its ingest.sock and
 *                              TELEM_NODE to its name.
 * libtelem finds the control socket beside an ingest socket called
 * ingest.sock.  Returns 0, or TELEM_EINVAL (an empty string, a path that
 * is no node's), TELEM_ENOTFOUND (no such path), TELEM_ETOOBIG or
 * TELEM_EIO, with a sentence in `why`. */
int run_env_ingest(const char *where, char *why, size_t why_size);

/* Writes the ingest endpoint the push client will use into buf, for
 * messages ("(unknown)" when none can be made). */
void run_env_ingest_shown(char *buf, size_t size);

/* Adds libtelem_mpi.so to LD_PRELOAD (after what is there: it only has to
 * come before the MPI library, which the program loads after every
 * preloaded one, and a sanitizer's runtime must stay first) and sets TELEM_RUN_RATE (the
 * pushes per second) and TELEM_RUN_VERBOSE (1 when verbose) for it.  The
 * library is $TELEM_MPI_LIB when set, else found beside this program:
 * BINDIR/../LIBDIR (the installed layout) or BINDIR/../lib (a build
 * tree).  Returns 0, or TELEM_ENOTFOUND / TELEM_ETOOBIG / TELEM_EIO with a
 * sentence in `why`. */
int run_env_mpi(double rate_hz, int verbose, char *why, size_t why_size);

#endif
