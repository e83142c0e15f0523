/* tmpdir.h - a test's private directory, removed with everything in it.
 *
 * Include it first, or after defining _XOPEN_SOURCE 700 (nftw).  The
 * directories live under /tmp, not $TMPDIR: tests bind ipc sockets in
 * them, and an ipc path must stay short.
 */
#ifndef TELEM_TESTS_TMPDIR_H
#define TELEM_TESTS_TMPDIR_H

#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Makes /tmp/NAME.XXXXXX into dir (size bytes); 0 or -1. */
__attribute__((unused)) static int
test_tmpdir(char *dir, size_t size, const char *name)
{
    int n = snprintf(dir, size, "/tmp/%s.XXXXXX", name);
    return n > 0 && (size_t) n < size && mkdtemp(dir) ? 0 : -1;
}

static int
test_rm_one(const char *path, const struct stat *st, int flag,
            struct FTW *ftw)
{
    (void) st;
    (void) flag;
    (void) ftw;
    return remove(path);
}

/* Removes dir and everything below it; 0 or -1. */
__attribute__((unused)) static int
test_rmtree(const char *dir)
{
    return nftw(dir, test_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
