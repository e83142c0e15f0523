/* bench_run_sys.c - a system-call-heavy program for bench_run.sh: N
 * rounds of one 64-byte write() to /dev/null and one 64-byte read() from
 * /dev/zero (2 N system calls), nothing else worth counting.
 *
 *   bench_run_sys [N]      (default 100000)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    char buf[64] = { 0 };
    int out = open("/dev/null", O_WRONLY), in = open("/dev/zero", O_RDONLY);
    if (n < 0 || out < 0 || in < 0) {
        fprintf(stderr, "bench_run_sys: cannot open /dev/null or /dev/zero\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        if (write(out, buf, sizeof buf) != (ssize_t) sizeof buf
            || read(in, buf, sizeof buf) != (ssize_t) sizeof buf)
            return 1;
    return 0;
}
