/* telem_cli.h - command-line helpers shared by telem's programs.
 *
 * Every telem program parses its flags with getopt_long and reports a bad
 * command line the same way: one line "PROG: MESSAGE" on stderr, then
 * "Try 'PROG --help'.", and exit status 2.  These helpers hold that message
 * format and the strict number parsers (the whole string must parse, and
 * land in a range), so each program keeps only its own flag table.
 *
 * The functions are thread-safe (they touch only their arguments, errno,
 * stdout and stderr), except the two parse functions, which drive
 * getopt_long; none keeps a pointer to its arguments.
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

/* Called once by telem_cli_parse_spec(), after the last flag, with the
 * operands (the words that are not flags, in order; argc may be 0).
 * Returns 0, or the status to return (2 for a bad command line, the
 * message already printed). */
typedef int (telem_cli_operands_fn)(void *arg, int argc, char **argv);

/* Prints a program's help on stdout, for a program whose help depends on
 * the rest of its command line (a subcommand's own help). */
typedef void (telem_cli_help_fn)(void *arg);

/* How one program reads its command line.
 *   prog       name in messages ("telem_watch ctl" for a subcommand)
 *   usage      printed on stdout for -h/--help when `help` is NULL
 *   shortopts  getopt_long's short options, with 'h' among them.  A
 *              leading '+' stops at the first operand (the rest are the
 *              subcommand's).  A leading ':' (after the '+') makes
 *              telem_cli name a bad flag itself: "PROG: unknown option
 *              'ARG'" or "PROG: option 'ARG' needs a value"; without it
 *              getopt_long prints its own message.  Both add the hint.
 *   longopts   getopt_long's long options; --help maps to 'h'
 *   option     called for every flag but -h (required)
 *   operands   NULL: an operand is refused ("unexpected argument 'X'")
 *   help       NULL: -h prints `usage` and ends the parse at once.  Set:
 *              -h is remembered, the whole command line is still read
 *              (a bad flag or operand is still an error, status 2), then
 *              help(arg) prints the help.
 *   version    NULL: `option` sees --version like any flag.  Set: the
 *              long option "version" (in longopts, with any code) prints
 *              this line and a newline on stdout and ends the parse with
 *              status 1.
 *   log_level  NULL: `option` sees --log-level like any flag.  Set: the
 *              long option "log-level" (any code) is read here with
 *              telem_cli_log_level() into *log_level. */
typedef struct {
    const char *prog;
    const char *usage;
    const char *shortopts;
    const struct option *longopts;
    telem_cli_option_fn *option;
    telem_cli_operands_fn *operands;
    telem_cli_help_fn *help;
    const char *version;
    telem_log_level_t *log_level;
} telem_cli_spec_t;

/* Reads argv[1..argc-1] as `spec` says, starting getopt_long afresh (it
 * may be called again, on another argv).  Returns 0 when the command line
 * was read whole, 1 after the help was printed, 2 after a bad command
 * line (message and hint on stderr), or the non-zero status an `option`
 * or `operands` callback returned.  Not thread-safe: getopt_long keeps
 * its state in globals (optind, optarg); call it from main's thread. */
int telem_cli_parse_spec(const telem_cli_spec_t *spec, int argc, char **argv,
                         void *arg);

/* The getopt_long loop every program shares: telem_cli_parse_spec() with
 * no operands and no help callback.  Prints `usage` to stdout and returns
 * 1 on -h/--help, prints the hint and returns 2 on an unknown flag, hands
 * every other flag to `fn`, and refuses operands ("unexpected argument").
 * Returns 0 when the command line was read whole. */
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
