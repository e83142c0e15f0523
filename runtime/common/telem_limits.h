/* telem_limits.h - process limits every telem daemon sets at start.
 *
 * A daemon that listens on TCP can be handed one descriptor per connection
 * by anyone who reaches its port.  libzmq 4.3.4 aborts the whole process
 * (SIGABRT, "Too many open files" in src/ipc_listener.cpp) when an ipc
 * accept then fails with EMFILE, so a table filled by idle TCP peers kills
 * the daemon at the next local connect.  Two measures, shared by telemd,
 * telem_dictd, telem_watch and telem_launch:
 *   - raise the soft RLIMIT_NOFILE to the hard limit (the soft default of
 *     1,024 is far below what most systems allow);
 *   - let TCP peers take at most half of that limit
 *     (telem_limits_tcp_peers()), so the other half stays for ipc clients,
 *     files and libzmq's own descriptors (a mailbox per socket).
 * The peer cap itself is enforced by telem_peercap.h.
 *
 * Error convention: 0 or a negative TELEM_E* code.  Only
 * telem_limits_start(), the daemons' one call, logs.
 * Thread safety: call at start-up, before other threads open descriptors.
 */
#ifndef TELEM_LIMITS_H
#define TELEM_LIMITS_H

#include <stddef.h>

/* Default of --max-tcp-peers in the daemons. */
#define TELEM_TCP_PEERS_DEFAULT 512

/* Raises this process's soft RLIMIT_NOFILE to its hard limit.  Writes the
 * soft limit now in force to *nofile (when not NULL): the raised one, or
 * the old one when raising failed.  Returns 0, or TELEM_EIO when the limit
 * could not be read or raised (errno says why). */
int telem_limits_raise_nofile(long *nofile);

/* The TCP peers a daemon may hold: `want`, but at most half of `nofile`
 * (the descriptor limit), and at least 1.  Half keeps at least as many
 * descriptors for everything else as the peers may take. */
int telem_limits_tcp_peers(int want, long nofile);

/* A daemon's start: raises the open-file limit (a warning when it cannot)
 * and returns the TCP peer cap, telem_limits_tcp_peers() of `want` (0:
 * TELEM_TCP_PEERS_DEFAULT) under the limit now in force; with `tcp` set
 * (the daemon listens on TCP) it logs both figures. */
int telem_limits_start(int want, int tcp);

/* Bytes of large messages freed before telem_limits_trim() trims. */
#define TELEM_TRIM_AFTER (16u << 20)

/* Called by a daemon's loop when it has nothing to do, with the bytes of
 * large messages it freed since the last trim: from TELEM_TRIM_AFTER on,
 * gives memory the allocator holds free back to the system (malloc_trim)
 * and zeroes *freed_bytes, so one large message does not leave the
 * process's resident size raised for good (glibc keeps freed heap memory
 * otherwise). */
void telem_limits_trim(size_t *freed_bytes);

#endif
