/* launch_argv.h - argument vectors for the processes the launcher starts,
 * and shell-like word splitting of command templates.
 *
 * Thread safety: none; one owner.
 */
#ifndef LAUNCH_ARGV_H
#define LAUNCH_ARGV_H

#include <stddef.h>

/* A NULL-terminated array of strings that owns its strings. */
typedef struct {
    char **v;
    size_t n;
    size_t cap;
} launch_argv_t;

/* Appends a copy of `s`.  Returns 0 or TELEM_ENOMEM. */
int launch_argv_add(launch_argv_t *a, const char *s);

/* Appends a copy of `s` with every "{node}" in it replaced by `node`.
 * Returns 0 or TELEM_ENOMEM. */
int launch_argv_add_node(launch_argv_t *a, const char *s, const char *node);

/* Appends copies of every string of the NULL-terminated `v`. */
int launch_argv_addv(launch_argv_t *a, const char *const *v);

/* Frees the strings and the array and zeroes *a (safe on a zeroed one). */
void launch_argv_clear(launch_argv_t *a);

/* Splits `line` into words as a POSIX shell would (quotes, backslashes;
 * no command substitution, no variable expansion of undefined names is an
 * error) and appends them, replacing every "{node}" in a word by `node`
 * (may be NULL: no replacement).  Returns 0, TELEM_EINVAL (a syntax error,
 * command substitution, or no word) or TELEM_ENOMEM. */
int launch_argv_split(launch_argv_t *a, const char *line, const char *node);

#endif
