/* gpu_test_script.h - TEST ONLY: reading the scripts of the test GPU
 * libraries (tests/nvml_test, tests/rsmi_test, tests/ze_test).
 *
 * Each library answers from a file of statements, one a line ('#' starts
 * a comment), tokens separated by blanks; its own statements differ, the
 * reading does not: numbers are C integers (0x.. allowed, no sign), a
 * keyword is looked up in the library's table, a text is the rest of the
 * line, and a malformed line is printed on stderr as
 * "LIB: PATH:N: malformed: LINE" and fails the whole script.  Each
 * library is one .c file that includes this header once; the functions
 * are static inline so a library that needs only some of them builds
 * without warnings.
 */
#ifndef TELEM_TESTS_GPU_TEST_SCRIPT_H
#define TELEM_TESTS_GPU_TEST_SCRIPT_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A C integer, without a sign; false for NULL, "", "-1", "12x". */
static inline bool
gts_num(const char *tok, unsigned long long *v)
{
    if (!tok || !*tok || *tok == '-')
        return false;
    char *end;
    errno = 0;
    *v = strtoull(tok, &end, 0);
    return errno == 0 && *end == '\0';
}

/* The next token of the line being split (strtok_r's state in *save). */
static inline char *
gts_tok(char **save)
{
    return strtok_r(NULL, " \t", save);
}

/* n numbers into v, then the end of the line. */
static inline bool
gts_nums(char **save, unsigned long long *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!gts_num(gts_tok(save), &v[i]))
            return false;
    return gts_tok(save) == NULL;
}

/* The index of keyword k in keys[0..n), or -1. */
static inline int
gts_key(const char *k, const char *const *keys, int n)
{
    for (int i = 0; k && i < n; i++)
        if (strcmp(k, keys[i]) == 0)
            return i;
    return -1;
}

/* The rest of the line, blanks skipped, into dst (size bytes): false when
 * empty or too long. */
static inline bool
gts_rest(char *save, char *dst, size_t size)
{
    const char *rest = save ? save + strspn(save, " \t") : "";
    if (!*rest || strlen(rest) >= size)
        return false;
    memcpy(dst, rest, strlen(rest) + 1);
    return true;
}

/* The statements every library has: "gpus N" (1 to max) and "init_fail
 * CODE" (not 0).  Returns 1 when tok is one of them, parsed; 0 when it is
 * one of them, malformed; -1 when tok is another statement. */
static inline int
gts_common(const char *tok, char **save, unsigned *ngpus, unsigned max,
           unsigned *init_fail)
{
    unsigned long long a;
    if (strcmp(tok, "gpus") == 0) {
        if (!gts_num(gts_tok(save), &a) || a < 1 || a > max)
            return 0;
        *ngpus = (unsigned) a;
        return 1;
    }
    if (strcmp(tok, "init_fail") == 0) {
        if (!gts_num(gts_tok(save), &a) || a == 0 || a > 0xffffffffull)
            return 0;
        *init_fail = (unsigned) a;
        return 1;
    }
    return -1;
}

/* Reads the script named by the environment variable `var` (or `path`
 * when not NULL), handing each line (without its end of line) to
 * line_fn; a file that cannot be read is said as "lib: cannot read VAR",
 * the first malformed line as "lib: PATH:N: malformed: LINE".  Returns
 * true when the file was read and every line parsed. */
static inline bool
gts_read(const char *lib, const char *var, const char *path,
         bool (*line_fn)(char *line))
{
    if (!path)
        path = getenv(var);
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) {
        fprintf(stderr, "%s: cannot read %s\n", lib, var);
        return false;
    }
    char line[512], copy[512];
    bool ok = true;
    for (int n = 1; ok && fgets(line, sizeof line, f); n++) {
        line[strcspn(line, "\r\n")] = '\0';
        snprintf(copy, sizeof copy, "%s", line);
        if (!line_fn(line)) {
            fprintf(stderr, "%s: %s:%d: malformed: %s\n", lib, path, n, copy);
            ok = false;
        }
    }
    fclose(f);
    return ok;
}

#endif
