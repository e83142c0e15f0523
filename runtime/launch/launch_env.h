/* launch_env.h - an environment for a process the launcher starts: a
 * "KEY=VALUE" array kept in the form posix_spawn wants.
 *
 * Thread safety: none; one owner.
 */
#ifndef LAUNCH_ENV_H
#define LAUNCH_ENV_H

typedef struct launch_env launch_env_t;

/* Copies `base` (a NULL-terminated "KEY=VALUE" array such as environ;
 * NULL: empty).  NULL when out of memory. */
launch_env_t *launch_env_new(char *const *base);

/* Frees; accepts NULL or a pointer to NULL; nulls the pointer. */
void launch_env_destroy(launch_env_t **self_p);

/* Sets KEY to VALUE, replacing an older value.  Returns 0, TELEM_EINVAL
 * (empty key or a key with '=') or TELEM_ENOMEM. */
int launch_env_set(launch_env_t *self, const char *key, const char *value);

/* Like launch_env_set() with a printf-formatted value. */
int launch_env_setf(launch_env_t *self, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Removes KEY if present. */
void launch_env_unset(launch_env_t *self, const char *key);

/* Value of KEY, or NULL; owned by the environment. */
const char *launch_env_get(const launch_env_t *self, const char *key);

/* The NULL-terminated "KEY=VALUE" array, owned by the environment and
 * valid until it is next changed or destroyed. */
char *const *launch_env_array(const launch_env_t *self);

#endif
