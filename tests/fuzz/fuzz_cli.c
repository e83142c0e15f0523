/* fuzz_cli.c - libFuzzer target: the command-line parsers
 * (runtime/common/telem_cli.c): the strict number, integer and seconds
 * parsers every program's flags go through, --log-level, and
 * telem_cli_parse_spec()'s getopt_long loop with a split argv; and one
 * real program's whole command line, telem_client's
 * (analysis/client/telem_client_cli.c: modes, metric selectors in
 * Prometheus syntax, ranges, nodes), parsed and checked before anything
 * is opened.
 *
 * Input: a mode byte, then the text; for the command lines the words
 * are separated by NUL bytes (argv[0] is the program's name):
 *   0 telem_cli_number   1 telem_cli_int64   2 telem_cli_seconds
 *   3 telem_cli_log_level   4 telem_cli_parse_spec   5 telem_client
 * Oracles beyond the sanitizers: a number accepted lies in its range and
 * is what strtod reads; seconds are that number times 1e9, rounded; the
 * parse loop returns 0, 1, 2 or a callback's status, and hands the
 * callbacks only flags of its table and the operands left.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "telem_cli.h"
#include "telem_client_cli.h"
#include "telem_error.h"

#define S_ARGS_MAX 64

static const double s_lo[] = { 0, -1e9, 1e-3, -INFINITY };
static const double s_hi[] = { 1e6, 1e9, 3600, INFINITY };

static void
s_numbers(int mode, const char *text, uint8_t range)
{
    double lo = s_lo[range & 3], hi = s_hi[range & 3], v = NAN;
    int64_t i = 0, ns = 0;
    if (mode == 0 && telem_cli_number(text, lo, hi, &v) == 0) {
        FZ_CHECK(isfinite(v) && v >= lo && v <= hi && v == strtod(text, NULL));
    } else if (mode == 1
               && telem_cli_int64(text, (int64_t) -range * 1000,
                                  (int64_t) range * 1000, &i) == 0) {
        FZ_CHECK(i >= -range * 1000 && i <= range * 1000);
    } else if (mode == 2 && telem_cli_seconds(text, lo, hi, &ns) == 0) {
        FZ_CHECK(telem_cli_number(text, lo, hi, &v) == 0);
        FZ_CHECK(fabs((double) ns - v * 1e9) <= 1.0 + fabs(v) * 1e-6);
    } else if (mode == 3) {
        telem_log_level_t l = TELEM_LOG_INFO;
        int rc = telem_cli_log_level("fuzz", text, &l);
        FZ_CHECK(rc == 0 || rc == 2);
        FZ_CHECK(l >= TELEM_LOG_ERROR && l <= TELEM_LOG_DEBUG);
    }
}

/* ---- telem_cli_parse_spec --------------------------------------------- */

static const struct option s_longopts[] = {
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { "log-level", required_argument, NULL, 'L' },
    { "period", required_argument, NULL, 'p' },
    { "count", required_argument, NULL, 'c' },
    { "json", no_argument, NULL, 'j' },
    { "name", optional_argument, NULL, 'n' },
    { NULL, 0, NULL, 0 },
};

typedef struct {
    int flags, operands;
    const char *codes;          /* the codes the callback may see */
} s_seen_t;

static int
s_option(void *arg, int c, char *v)
{
    s_seen_t *s = arg;
    double d;
    int64_t i;
    FZ_CHECK(c && strchr(s->codes, c));
    FZ_CHECK(c == 'j' || c == 'n' || c == 'V' || v != NULL);
    s->flags++;
    if (c == 'p')
        return telem_cli_seconds(v, 0.001, 3600, &i) ? 2 : 0;
    if (c == 'c')
        return telem_cli_number(v, 1, 1e9, &d) ? 2 : 0;
    return c == 'n' && v && strcmp(v, "stop") == 0 ? 7 : 0;
}

static int
s_operands(void *arg, int argc, char **argv)
{
    s_seen_t *s = arg;
    FZ_CHECK(argc >= 0 && (argc == 0 || argv[0] != NULL));
    s->operands = argc;
    return argc > 3 ? 2 : 0;
}

static void
s_help(void *arg)
{
    (void) arg;
}

/* Splits text[0..len) at NUL bytes into argv (argv[0] given). */
static int
s_split(char *text, size_t len, const char *prog, char **argv)
{
    int argc = 0;
    argv[argc++] = (char *) prog;
    for (size_t i = 0; i < len && argc < S_ARGS_MAX - 1; i += strlen(text + i) + 1)
        argv[argc++] = text + i;
    argv[argc] = NULL;
    return argc;
}

static void
s_spec(char *text, size_t len, uint8_t variant)
{
    static const char *const shorts[] = { "+:hp:c:jn::", ":hp:c:jn::",
                                          "hp:c:jn::", "+hp:c:jn::" };
    telem_log_level_t level = TELEM_LOG_WARN;
    telem_cli_spec_t spec = {
        .prog = "fuzz", .usage = "", .shortopts = shorts[variant & 3],
        .longopts = s_longopts, .option = s_option,
        .operands = variant & 4 ? s_operands : NULL,
        .help = variant & 8 ? s_help : NULL,
        .version = variant & 16 ? "fuzz 1" : NULL,
        .log_level = variant & 32 ? &level : NULL,
    };
    char *argv[S_ARGS_MAX];
    int argc = s_split(text, len, "fuzz", argv);
    /* --version and --log-level reach the callback unless the spec
     * handles them itself. */
    static const char *const codes[] = { "pcjnVL", "pcjnL", "pcjnV", "pcjn" };
    s_seen_t seen = { 0, 0, codes[(variant >> 4) & 3] };
    int rc = telem_cli_parse_spec(&spec, argc, argv, &seen);
    FZ_CHECK(rc == 0 || rc == 1 || rc == 2 || rc == 7);
    FZ_CHECK(seen.operands < argc);
}

/* telem_client's whole command line. */
static void
s_client(char *text, size_t len)
{
    char *argv[S_ARGS_MAX];
    int argc = s_split(text, len, "telem_client", argv);
    telem_client_cli_t cli;
    memset(&cli, 0, sizeof cli);
    cli.level = -1;
    int rc = telem_client_cli_parse(&cli, argc, argv);
    FZ_CHECK(rc == -1 || rc == 0 || rc == 2);
    free(cli.list);
    free((void *) cli.o.metrics);
    free(cli.sels);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int mode = data[0] % 6;
    uint8_t variant = data[1];
    char *text = fz_cstr(data + 2, size - 2);
    if (!text)
        abort();
    if (mode <= 3)
        s_numbers(mode, text, variant);
    else if (mode == 4)
        s_spec(text, size - 2, variant);
    else
        s_client(text, size - 2);
    free(text);
    return 0;
}
