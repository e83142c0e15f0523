/* check.h - the checks every unit test uses, and its exit status.
 *
 * A failed check prints file:line and what failed, counts, and the test
 * goes on, so one run reports every failure; check_report() at the end of
 * main prints the totals and returns the exit status (0 all passed, 1 some
 * failed).  The two counters are file statics: each test is one program,
 * built from one .c file that includes this header once.
 */
#ifndef TELEM_TESTS_CHECK_H
#define TELEM_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_failures;
static int s_checks;

#define CHECK(cond)                                                          \
    do {                                                                     \
        s_checks++;                                                          \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            s_failures++;                                                    \
        }                                                                    \
    } while (0)

/* Integers (any width up to long long), printing both values. */
#define CHECK_INT(a, b)                                                      \
    do {                                                                     \
        long long a_ = (long long) (a), b_ = (long long) (b);                \
        s_checks++;                                                          \
        if (a_ != b_) {                                                      \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__,  \
                    __LINE__, #a, a_, b_);                                   \
            s_failures++;                                                    \
        }                                                                    \
    } while (0)

/* A return code against the expected one. */
#define CHECK_RC(got, want) CHECK_INT(got, want)

/* Strings; a NULL `a` fails. */
#define CHECK_STR(a, b)                                                      \
    do {                                                                     \
        const char *a_ = (a), *b_ = (b);                                     \
        s_checks++;                                                          \
        if (!a_ || strcmp(a_, b_) != 0) {                                    \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",        \
                    __FILE__, __LINE__, #a, a_ ? a_ : "(null)", b_);         \
            s_failures++;                                                    \
        }                                                                    \
    } while (0)

/* Doubles, compared exactly. */
#define CHECK_EQ(a, b)                                                       \
    do {                                                                     \
        double a_ = (a), b_ = (b);                                           \
        s_checks++;                                                          \
        if (!(a_ == b_)) {                                                   \
            fprintf(stderr, "%s:%d: %s == %s failed: %.17g != %.17g\n",      \
                    __FILE__, __LINE__, #a, #b, a_, b_);                     \
            s_failures++;                                                    \
        }                                                                    \
    } while (0)

/* A precondition the rest of the test needs: on failure, exit(1) now. */
#define REQUIRE(cond)                                                        \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__,        \
                    __LINE__, #cond);                                        \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* Exit status CTest counts as skipped (SKIP_RETURN_CODE in
 * tests/CMakeLists.txt), never as passed. */
#define CHECK_SKIP_RC 77

/* Reports the test skipped with its measured reason and exits 77, or, if
 * checks already failed, reports those and exits 1 (a failure is never
 * hidden by a skip). */
#define CHECK_SKIP(name, ...)                                                \
    do {                                                                     \
        if (s_failures)                                                      \
            exit(check_report(name));                                        \
        printf("SKIPPED: " __VA_ARGS__);                                     \
        printf("\n");                                                        \
        exit(CHECK_SKIP_RC);                                                 \
    } while (0)

/* The end of main: prints "NAME: N checks passed" on stdout or "NAME: F of
 * N checks failed" on stderr; returns the test's exit status. */
__attribute__((unused)) static int
check_report(const char *name)
{
    if (s_failures) {
        fprintf(stderr, "%s: %d of %d checks failed\n", name, s_failures,
                s_checks);
        return 1;
    }
    printf("%s: %d checks passed\n", name, s_checks);
    return 0;
}

#endif
