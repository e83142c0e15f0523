/* telem_signals.h - signals read as data: block them and open a signalfd.
 *
 * telem's programs do not install signal handlers for their stop signals:
 * they block them in the main thread before any other thread starts (so
 * every thread inherits the mask and none is interrupted) and read them
 * from a signalfd in their loop, next to their sockets and pipes.  Children
 * started with posix_spawn get an empty mask back (see launch_proc.h and
 * cg_spawn.c).
 *
 * Thread safety: call from the main thread before it starts others.
 */
#ifndef TELEM_SIGNALS_H
#define TELEM_SIGNALS_H

#include <stddef.h>

/* Blocks the n signals of `sigs` in the calling thread and returns a
 * close-on-exec signalfd that reads them (non-blocking when `nonblock`),
 * or TELEM_EIO with errno set; on failure the mask may stay changed. */
int telem_signals_open(const int *sigs, size_t n, int nonblock);

/* telem_signals_open() of SIGINT, SIGTERM and SIGHUP, the signals that
 * stop a telem program. */
int telem_signals_open_stop(int nonblock);

#endif
