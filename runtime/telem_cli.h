/* telem_cli.h - command-line helpers shared by telem's programs.
 *
 * Every telem program parses its flags with getopt_long and reports a bad
 * command line the same way: one line "PROG: MESSAGE" on stderr, then
 * "Try 'PROG --help'.", and exit status 2.  These helpers hold that message
 * format and the strict number parsers (the whole string must parse, and
 * land in a range), so each program keeps only its own flag table.
 *
 * All functions are thread-safe (they touch only their arguments, errno and
 * stderr); none keeps a pointer to its arguments.
 */
#ifndef TELEM_CLI_H
#define TELEM_CLI_H

#include <getopt.h>
#include <stdint.h>

#include "telem_log.h"

/* Called once per flag by telem_cli_parse(): `c` is the flag's short code,
 * `v` its argument (NULL when it takes none).  Returns 0 to go on, or the
 * status telem_cli_parse() returns at once (2 for a bad value, 1 for a flag
 * that ends the run successfully, like --version). */
typedef int (telem_cli_option_fn)(void *arg, int c, char *v);

/* The getopt_long loop every program shares: prints `usage` to stdout and
 * returns 1 on -h/--help, prints the hint and returns 2 on an unknown flag,
 * hands every other flag to `fn`, and refuses operands ("unexpected
 * argument").  Returns 0 when the command line was read whole. */
int telem_cli_parse(const char *prog, const char *usage, int argc,
                    char **argv, const char *shortopts,
                    const struct option *longopts, telem_cli_option_fn *fn,
                    void *arg);

/* Prints "PROG: MESSAGE\nTry 'PROG --help'.\n" on stderr, MESSAGE formatted
 * from `fmt`.  Returns 2, the exit status for a bad command line. */
int telem_cli_error(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "PROG: invalid FLAG 'VALUE': WHY" and the hint line on stderr.
 * Returns 2. */
int telem_cli_bad(const char *prog, const char *flag, const char *value,
                  const char *why);

/* Prints only the hint line "Try 'PROG --help'." (after getopt_long has
 * already named an unknown option or a missing value).  Returns 2. */
int telem_cli_hint(const char *prog);

/* Parses all of `s` as a finite decimal or floating number in [lo, hi] into
 * *out.  Returns 0, or TELEM_EINVAL (and leaves *out alone) when `s` is
 * empty, has trailing characters, overflows or falls outside the range. */
int telem_cli_number(const char *s, double lo, double hi, double *out);

/* Parses all of `s` as a base-10 integer in [lo, hi] into *out, exactly
 * (every int64 value, unlike a double).  Returns 0 or TELEM_EINVAL, leaving
 * *out alone on failure. */
int telem_cli_int64(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* Parses `s` as seconds in [lo, hi] (lo, hi within +-9.2e9) and stores the
 * duration rounded to whole nanoseconds in *ns.  Returns 0 or TELEM_EINVAL,
 * leaving *ns alone on failure. */
int telem_cli_seconds(const char *s, double lo, double hi, int64_t *ns);

/* Parses a --log-level value: error, warn, info or debug.  Returns 0, or
 * prints "PROG: invalid --log-level 'S': one of error, warn, info, debug"
 * with the hint and returns 2. */
int telem_cli_log_level(const char *prog, const char *s,
                        telem_log_level_t *out);

#endif
