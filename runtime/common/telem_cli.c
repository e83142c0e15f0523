/* telem_cli.c - command-line helpers shared by telem's programs.
 *
 * Kept in telem_core (no sockets, no threads) so that every program links
 * it, the daemons and the small tools alike.  The parsers use strtod and
 * strtoll with errno and an end-pointer check: a flag value is accepted only
 * when the whole string is a number in range, never a prefix of it.
 * telem_cli_parse_spec() is the one getopt_long loop of every program; it
 * resets getopt_long's globals on entry, so that a unit test may run it
 * on one command line after another.
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

/* True when shortopts asks telem_cli to name bad flags (a leading ':'). */
static int
s_names_bad_flags(const char *shortopts)
{
    if (*shortopts == '+' || *shortopts == '-')
        shortopts++;
    return *shortopts == ':';
}

/* True when the flag getopt_long refused with `c` was a long option, so
   argv[optind - 1] is the word to name.  A missing value (':') ends the
   command line, so that word holds the flag.  For '?', an unknown short
   option leaves its letter in optopt (and inside a cluster such as -xv,
   argv[optind - 1] is still the word before); an unknown long one leaves
   0, and a long one given a value it does not take leaves its code. */
static int
s_bad_flag_is_long(const char *shortopts, int c, const char *word)
{
    if (c == ':')
        return strncmp(word, "--", 2) == 0;
    return optopt <= 0 || optopt > 255 || strchr(shortopts, optopt) != NULL;
}

/* Reports the flag getopt_long refused ('?' unknown, ':' no value). */
static int
s_bad_flag(const telem_cli_spec_t *spec, int c, char **argv)
{
    if (!s_names_bad_flags(spec->shortopts))
        return telem_cli_hint(spec->prog);   /* getopt_long said why */
    const char *word = argv[optind - 1];
    char letter[3] = { '-', (char) optopt, '\0' };
    if (!s_bad_flag_is_long(spec->shortopts, c, word))
        word = letter;
    if (c == ':')
        return telem_cli_error(spec->prog, "option '%s' needs a value", word);
    return telem_cli_error(spec->prog, "unknown option '%s'", word);
}

static int
s_operands(const telem_cli_spec_t *spec, int argc, char **argv, void *arg)
{
    if (spec->operands)
        return spec->operands(arg, argc, argv);
    if (argc > 0)
        return telem_cli_error(spec->prog, "unexpected argument '%s'",
                               argv[0]);
    return 0;
}

/* True when `c` is the code of the long option called `name`. */
static int
s_is_long(const struct option *longopts, int c, const char *name)
{
    for (; longopts && longopts->name; longopts++)
        if (strcmp(longopts->name, name) == 0)
            return !longopts->flag && longopts->val == c;
    return 0;
}

/* The flags the spec handles itself (--version, --log-level), else the
   program's option callback. */
static int
s_option(const telem_cli_spec_t *spec, int c, char *v, void *arg)
{
    if (spec->version && s_is_long(spec->longopts, c, "version")) {
        printf("%s\n", spec->version);
        return 1;
    }
    if (spec->log_level && s_is_long(spec->longopts, c, "log-level"))
        return telem_cli_log_level(spec->prog, v, spec->log_level);
    return spec->option(arg, c, v);
}

int
telem_cli_parse_spec(const telem_cli_spec_t *spec, int argc, char **argv,
                     void *arg)
{
    int c, rc, help = 0;
    optind = 0;     /* glibc: start afresh, reading '+' and ':' again */
    opterr = !s_names_bad_flags(spec->shortopts);
    while ((c = getopt_long(argc, argv, spec->shortopts, spec->longopts,
                            NULL)) != -1) {
        if (c == 'h' && !spec->help) {
            fputs(spec->usage, stdout);
            return 1;
        }
        if (c == 'h')
            help = 1;
        else if (c == '?' || c == ':')
            return s_bad_flag(spec, c, argv);
        else if ((rc = s_option(spec, c, optarg, arg)) != 0)
            return rc;
    }
    if ((rc = s_operands(spec, argc - optind, argv + optind, arg)) != 0)
        return rc;
    if (help)
        spec->help(arg);
    return help;
}

int
telem_cli_parse(const char *prog, const char *usage, int argc, char **argv,
                const char *shortopts, const struct option *longopts,
                telem_cli_option_fn *fn, void *arg)
{
    const telem_cli_spec_t spec = {
        .prog = prog, .usage = usage, .shortopts = shortopts,
        .longopts = longopts, .option = fn,
    };
    return telem_cli_parse_spec(&spec, argc, argv, arg);
}
