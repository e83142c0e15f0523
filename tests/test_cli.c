/* test_cli.c - unit tests for the command-line helpers (telem_cli.h).
 *
 * The parsers are checked on edges (range ends, trailing characters,
 * empty strings, overflow, non-finite values, exact 64-bit integers) and on
 * leaving the output alone on failure.  The usage-error printers are run
 * with stderr pointed at a temporary file, and their exact text and exit
 * status are compared with what every program prints.
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

int
main(void)
{
    test_number();
    test_int64();
    test_seconds();
    test_messages();
    test_log_level();
    return check_report("test_cli");
}
