/* test_cli.c - unit tests for the command-line helpers (telem_cli.h).
 *
 * The parsers are checked on edges (range ends, trailing characters,
 * empty strings, overflow, non-finite values, exact 64-bit integers) and on
 * leaving the output alone on failure.  The usage-error printers are run
 * with stderr pointed at a temporary file, and their exact text and exit
 * status are compared with what every program prints.  The parse loop
 * (telem_cli_parse_spec) runs on whole command lines, one after another,
 * with both output streams captured: the calls it makes, in order, its
 * status and its text are compared for flags, operands, '+' (a subcommand
 * takes the rest), immediate and deferred help, and bad flags.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "telem_cli.h"
#include "telem_error.h"

/* Runs fn with stderr redirected; returns its result and the text. */
typedef int (*s_printer_t)(void);

static int
s_capture(s_printer_t fn, char *buf, size_t cap)
{
    FILE *tmp = tmpfile();
    if (!tmp)
        return -100;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fileno(tmp), STDERR_FILENO);
    int rc = fn();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, cap - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
    return rc;
}

static void
test_number(void)
{
    double d = 42;
    CHECK_RC(telem_cli_number("1.5", 0, 2, &d), 0);
    CHECK_EQ(d, 1.5);
    CHECK_RC(telem_cli_number("0", 0, 2, &d), 0);
    CHECK_RC(telem_cli_number("2", 0, 2, &d), 0);
    CHECK_EQ(d, 2);
    d = 42;
    CHECK_RC(telem_cli_number("2.0001", 0, 2, &d), TELEM_EINVAL);
    CHECK_RC(telem_cli_number("-0.1", 0, 2, &d), TELEM_EINVAL);
    CHECK_RC(telem_cli_number("", 0, 2, &d), TELEM_EINVAL);
    CHECK_RC(telem_cli_number("1x", 0, 2, &d), TELEM_EINVAL);
    CHECK_RC(telem_cli_number("x", 0, 2, &d), TELEM_EINVAL);
    CHECK_RC(telem_cli_number("nan", -1e300, 1e300, &d), TELEM_EINVAL);
    CHECK_RC(telem_cli_number("inf", -INFINITY, INFINITY, &d), TELEM_EINVAL);
    CHECK_RC(telem_cli_number("1e999", 0, INFINITY, &d), TELEM_EINVAL);
    CHECK_EQ(d, 42);
}

static void
test_int64(void)
{
    int64_t v = 7;
    CHECK_RC(telem_cli_int64("65535", 0, 65535, &v), 0);
    CHECK_INT(v, 65535);
    CHECK_RC(telem_cli_int64("9223372036854775807", 0, INT64_MAX, &v), 0);
    CHECK(v == INT64_MAX);
    CHECK_RC(telem_cli_int64("-9223372036854775808", INT64_MIN, 0, &v), 0);
    CHECK(v == INT64_MIN);
    CHECK_RC(telem_cli_int64("1700000000123456789", 0, INT64_MAX, &v), 0);
    CHECK(v == INT64_C(1700000000123456789));
    v = 7;
    CHECK_RC(telem_cli_int64("9223372036854775808", 0, INT64_MAX, &v),
             TELEM_EINVAL);
    CHECK_RC(telem_cli_int64("65536", 0, 65535, &v), TELEM_EINVAL);
    CHECK_RC(telem_cli_int64("0", 1, 4, &v), TELEM_EINVAL);
    CHECK_RC(telem_cli_int64("1.5", 0, 4, &v), TELEM_EINVAL);
    CHECK_RC(telem_cli_int64("2 ", 0, 4, &v), TELEM_EINVAL);
    CHECK_RC(telem_cli_int64("", 0, 4, &v), TELEM_EINVAL);
    CHECK_RC(telem_cli_int64("0x3", 0, 4, &v), TELEM_EINVAL);
    CHECK_INT(v, 7);
}

static void
test_seconds(void)
{
    int64_t ns = 5;
    CHECK_RC(telem_cli_seconds("0.001", 0.001, 86400, &ns), 0);
    CHECK_INT(ns, 1000000);
    CHECK_RC(telem_cli_seconds("1.5", 0.001, 86400, &ns), 0);
    CHECK_INT(ns, 1500000000);
    CHECK_RC(telem_cli_seconds("1e7", 0.001, 1e7, &ns), 0);
    CHECK_INT(ns, INT64_C(10000000000000000));
    ns = 5;
    CHECK_RC(telem_cli_seconds("0", 0.001, 86400, &ns), TELEM_EINVAL);
    CHECK_RC(telem_cli_seconds("86401", 0.001, 86400, &ns), TELEM_EINVAL);
    CHECK_RC(telem_cli_seconds("1e10", 0, 1e12, &ns), TELEM_EINVAL);
    CHECK_RC(telem_cli_seconds("1s", 0, 10, &ns), TELEM_EINVAL);
    CHECK_INT(ns, 5);
}

static int
s_print_bad(void)
{
    return telem_cli_bad("prog", "--port", "x", "an integer from 0 to 65535");
}

static int
s_print_error(void)
{
    return telem_cli_error("prog", "unexpected argument '%s'", "extra");
}

static int
s_print_hint(void)
{
    return telem_cli_hint("prog");
}

static int
s_print_level(void)
{
    telem_log_level_t l = TELEM_LOG_INFO;
    return telem_cli_log_level("prog", "loud", &l) * 10 + (int) l;
}

static void
test_messages(void)
{
    char buf[512];
    CHECK_RC(s_capture(s_print_bad, buf, sizeof buf), 2);
    CHECK_STR(buf, "prog: invalid --port 'x': an integer from 0 to 65535\n"
                   "Try 'prog --help'.\n");
    CHECK_RC(s_capture(s_print_error, buf, sizeof buf), 2);
    CHECK_STR(buf, "prog: unexpected argument 'extra'\nTry 'prog --help'.\n");
    CHECK_RC(s_capture(s_print_hint, buf, sizeof buf), 2);
    CHECK_STR(buf, "Try 'prog --help'.\n");
    CHECK_RC(s_capture(s_print_level, buf, sizeof buf),
             20 + TELEM_LOG_INFO);
    CHECK_STR(buf, "prog: invalid --log-level 'loud': one of error, warn, "
                   "info, debug\nTry 'prog --help'.\n");
}

static void
test_log_level(void)
{
    static const char *const names[] = { "error", "warn", "info", "debug" };
    for (int i = 0; i < 4; i++) {
        telem_log_level_t l = (telem_log_level_t) -1;
        CHECK_RC(telem_cli_log_level("prog", names[i], &l), 0);
        CHECK_INT(l, i);
    }
}

/* ---- the parse loop ---------------------------------------------------- */

enum { O_STOP = 256 };

static const struct option s_longopts[] = {
    { "num", required_argument, NULL, 'n' },
    { "verbose", no_argument, NULL, 'v' },
    { "stop", no_argument, NULL, O_STOP },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

/* What the callbacks were called with, in order, as text. */
typedef struct {
    char log[256];
} s_rec_t;

static void
s_log(s_rec_t *r, const char *what, const char *value)
{
    size_t n = strlen(r->log);
    snprintf(r->log + n, sizeof r->log - n, "%s%s%s ", what,
             value ? "=" : "", value ? value : "");
}

static int
s_opt(void *arg, int c, char *v)
{
    if (c == O_STOP) {
        s_log(arg, "stop", NULL);
        return 1;                   /* ends the run, like --version */
    }
    if (c == 'n' && strcmp(v, "bad") == 0)
        return telem_cli_bad("prog", "--num", v, "not a number");
    s_log(arg, c == 'n' ? "n" : "v", c == 'n' ? v : NULL);
    return 0;
}

static int
s_ops(void *arg, int argc, char **argv)
{
    char list[128] = "";
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%s", i ? "," : "", argv[i]);
    }
    s_log(arg, "ops", list);
    return argc > 0 && strcmp(argv[0], "nope") == 0
           ? telem_cli_error("prog", "unknown command 'nope'") : 0;
}

static void
s_help(void *arg)
{
    s_log(arg, "help", NULL);
    fputs("HELP\n", stdout);
}

/* Plain: like every daemon (getopt names bad flags, no operands). */
static const telem_cli_spec_t s_plain = {
    .prog = "prog", .usage = "USAGE\n", .shortopts = "n:vh",
    .longopts = s_longopts, .option = s_opt,
};
/* Quiet ':' with operands; '+' for a subcommand; deferred help. */
static const telem_cli_spec_t s_ops_spec = {
    .prog = "prog", .usage = "USAGE\n", .shortopts = ":n:vh",
    .longopts = s_longopts, .option = s_opt, .operands = s_ops,
};
static const telem_cli_spec_t s_sub_spec = {
    .prog = "prog", .usage = "USAGE\n", .shortopts = "+:n:vh",
    .longopts = s_longopts, .option = s_opt, .operands = s_ops,
};
static const telem_cli_spec_t s_help_spec = {
    .prog = "prog", .usage = "USAGE\n", .shortopts = ":n:vh",
    .longopts = s_longopts, .option = s_opt, .operands = s_ops,
    .help = s_help,
};

/* One command line: "prog" and the words of `args`. */
typedef struct {
    const telem_cli_spec_t *spec;
    const char *args;
    s_rec_t rec;
} s_case_t;

static int
s_run_case(void *arg)
{
    s_case_t *k = arg;
    char buf[256], *argv[32] = { "prog" }, *save = NULL;
    int argc = 1;
    snprintf(buf, sizeof buf, "%s", k->args);
    for (char *w = strtok_r(buf, " ", &save); w && argc < 31;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    return telem_cli_parse_spec(k->spec, argc, argv, &k->rec);
}

/* Runs fn(arg) with stdout and stderr each sent to a temporary file;
   returns its result and both texts. */
static int
s_capture2(int (*fn)(void *), void *arg, char *out, char *err, size_t cap)
{
    FILE *t[2] = { tmpfile(), tmpfile() };
    int fd[2] = { STDOUT_FILENO, STDERR_FILENO }, saved[2];
    char *buf[2] = { out, err };
    if (!t[0] || !t[1])
        return -100;
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 2; i++) {
        saved[i] = dup(fd[i]);
        dup2(fileno(t[i]), fd[i]);
    }
    int rc = fn(arg);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 2; i++) {
        dup2(saved[i], fd[i]);
        close(saved[i]);
        rewind(t[i]);
        size_t n = fread(buf[i], 1, cap - 1, t[i]);
        buf[i][n] = '\0';
        fclose(t[i]);
    }
    return rc;
}

/* Checks one command line: status, callback log, stdout, stderr (NULL:
   not compared). */
static void
s_expect(const telem_cli_spec_t *spec, const char *args, int rc,
         const char *log, const char *out, const char *err)
{
    s_case_t k = { .spec = spec, .args = args };
    char o[512], e[512];
    int got = s_capture2(s_run_case, &k, o, e, sizeof o);
    if (got != rc || strcmp(k.rec.log, log) != 0)
        fprintf(stderr, "command line: prog %s\n", args);
    CHECK_RC(got, rc);
    CHECK_STR(k.rec.log, log);
    CHECK_STR(o, out);
    if (err)
        CHECK_STR(e, err);
}

#define S_HINT "Try 'prog --help'.\n"

static void
test_parse_plain(void)
{
    s_expect(&s_plain, "", 0, "", "", "");
    s_expect(&s_plain, "-n 5 --verbose --num=6 -vn7", 0,
             "n=5 v n=6 v n=7 ", "", "");
    s_expect(&s_plain, "-n 5 extra", 2, "n=5 ", "",
             "prog: unexpected argument 'extra'\n" S_HINT);
    s_expect(&s_plain, "-v --help -n bad", 1, "v ", "USAGE\n", "");
    s_expect(&s_plain, "--num bad -v", 2, "", "",
             "prog: invalid --num 'bad': not a number\n" S_HINT);
    s_expect(&s_plain, "--stop -v", 1, "stop ", "", "");
    s_expect(&s_plain, "-- -v", 2, "", "",
             "prog: unexpected argument '-v'\n" S_HINT);
    /* getopt_long names the flag (after argv[0]); telem_cli adds the hint. */
    char e[512], o[512];
    s_case_t k = { .spec = &s_plain, .args = "-v --bogus" };
    CHECK_RC(s_capture2(s_run_case, &k, o, e, sizeof o), 2);
    CHECK(strstr(e, "'--bogus'") != NULL);
    CHECK(strlen(e) > strlen(S_HINT)
          && strcmp(e + strlen(e) - strlen(S_HINT), S_HINT) == 0);
    CHECK_STR(k.rec.log, "v ");
}

static void
test_parse_operands(void)
{
    /* Operands are handed over once, in order, after every flag. */
    s_expect(&s_ops_spec, "a -n 3 b", 0, "n=3 ops=a,b ", "", "");
    s_expect(&s_ops_spec, "-v", 0, "v ops= ", "", "");
    s_expect(&s_ops_spec, "nope -v", 2, "v ops=nope ", "",
             "prog: unknown command 'nope'\n" S_HINT);
    s_expect(&s_ops_spec, "a -- -n 4", 0, "ops=a,-n,4 ", "", "");
    /* '+': the first operand ends the flags; the rest are its own. */
    s_expect(&s_sub_spec, "-n 1 cmd -n 2 -1", 0, "n=1 ops=cmd,-n,2,-1 ",
             "", "");
    s_expect(&s_sub_spec, "cmd --help", 0, "ops=cmd,--help ", "", "");
    s_expect(&s_sub_spec, "--help cmd", 1, "", "USAGE\n", "");
}

static void
test_parse_help(void)
{
    /* Deferred help: the rest is still read and checked, then help(). */
    s_expect(&s_help_spec, "--help", 1, "ops= help ", "HELP\n", "");
    s_expect(&s_help_spec, "q --help -v", 1, "v ops=q help ", "HELP\n", "");
    s_expect(&s_help_spec, "-h -n bad", 2, "", "",
             "prog: invalid --num 'bad': not a number\n" S_HINT);
    s_expect(&s_help_spec, "-h nope", 2, "ops=nope ", "",
             "prog: unknown command 'nope'\n" S_HINT);
    s_expect(&s_help_spec, "-h --bogus", 2, "", "",
             "prog: unknown option '--bogus'\n" S_HINT);
    s_expect(&s_help_spec, "-v", 0, "v ops= ", "", "");
}

static void
test_parse_bad_flags(void)
{
    static const struct { const char *args, *err; } cases[] = {
        { "--bogus", "unknown option '--bogus'" },
        { "--bogus=1", "unknown option '--bogus=1'" },
        { "--verbose=1", "unknown option '--verbose=1'" },
        { "-x", "unknown option '-x'" },
        { "-vx", "unknown option '-x'" },
        { "--verbose -xv", "unknown option '-x'" },
        { "-n", "option '-n' needs a value" },
        { "-vn", "option '-n' needs a value" },
        { "--num", "option '--num' needs a value" },
        { "-v --nu", "option '--nu' needs a value" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256];
        snprintf(err, sizeof err, "prog: %s\n" S_HINT, cases[i].err);
        s_case_t k = { .spec = &s_ops_spec, .args = cases[i].args };
        char o[512], e[512];
        CHECK_RC(s_capture2(s_run_case, &k, o, e, sizeof o), 2);
        CHECK_STR(e, err);
        CHECK_STR(o, "");
    }
}

int
main(void)
{
    test_number();
    test_int64();
    test_seconds();
    test_messages();
    test_log_level();
    test_parse_plain();
    test_parse_operands();
    test_parse_help();
    test_parse_bad_flags();
    return check_report("test_cli");
}
