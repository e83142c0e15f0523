/* telem_cli.c - command-line helpers shared by telem's programs.
 *
 * Kept in telem_core (no sockets, no threads) so that every program links
 * it, the daemons and the small tools alike.  The parsers use strtod and
 * strtoll with errno and an end-pointer check: a flag value is accepted only
 * when the whole string is a number in range, never a prefix of it.
 */
#include "telem_cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"

int
telem_cli_hint(const char *prog)
{
    fprintf(stderr, "Try '%s --help'.\n", prog);
    return 2;
}

int
telem_cli_error(const char *prog, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return telem_cli_hint(prog);
}

int
telem_cli_bad(const char *prog, const char *flag, const char *value,
              const char *why)
{
    return telem_cli_error(prog, "invalid %s '%s': %s", flag, value, why);
}

int
telem_cli_number(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return TELEM_EINVAL;
    *out = v;
    return 0;
}

int
telem_cli_int64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return TELEM_EINVAL;
    *out = (int64_t) v;
    return 0;
}

int
telem_cli_seconds(const char *s, double lo, double hi, int64_t *ns)
{
    double v;
    if (telem_cli_number(s, lo, hi, &v) || fabs(v) > 9.2e9)
        return TELEM_EINVAL;
    *ns = (int64_t) llround(v * 1e9);
    return 0;
}

int
telem_cli_log_level(const char *prog, const char *s, telem_log_level_t *out)
{
    static const char *const names[] = { "error", "warn", "info", "debug" };
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (telem_log_level_t) i;
            return 0;
        }
    return telem_cli_bad(prog, "--log-level", s,
                         "one of error, warn, info, debug");
}

int
telem_cli_parse(const char *prog, const char *usage, int argc, char **argv,
                const char *shortopts, const struct option *longopts,
                telem_cli_option_fn *fn, void *arg)
{
    int c, rc;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage, stdout);
            return 1;
        }
        if (c == '?')
            return telem_cli_hint(prog);
        if ((rc = fn(arg, c, optarg)) != 0)
            return rc;
    }
    if (optind < argc)
        return telem_cli_error(prog, "unexpected argument '%s'",
                               argv[optind]);
    return 0;
}
