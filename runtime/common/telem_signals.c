/* telem_signals.c - block signals and read them from a signalfd
 * (telem_signals.h). */
#include "telem_signals.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>

#include "telem_error.h"

int
telem_signals_open(const int *sigs, size_t n, int nonblock)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < n; i++)
        sigaddset(&set, sigs[i]);
    int e = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (e) {
        errno = e;
        return TELEM_EIO;
    }
    int fd = signalfd(-1, &set, SFD_CLOEXEC | (nonblock ? SFD_NONBLOCK : 0));
    return fd < 0 ? TELEM_EIO : fd;
}

int
telem_signals_open_stop(int nonblock)
{
    static const int stop[] = { SIGINT, SIGTERM, SIGHUP };
    return telem_signals_open(stop, sizeof stop / sizeof *stop, nonblock);
}
