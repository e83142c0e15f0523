/* launch_env.c - environments for the launcher's processes (see
 * launch_env.h).
 *
 * An environment is kept as the NULL-terminated array posix_spawn wants,
 * so handing it over costs nothing; setting a key is a linear search,
 * which is fine for the few dozen variables a job has.  The array is a
 * launch_argv_t (this file calls launch_argv.c, never the reverse).
 */
#include "launch_env.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch_argv.h"
#include "telem_error.h"

struct launch_env {
    launch_argv_t kv;
};

launch_env_t *
launch_env_new(char *const *base)
{
    launch_env_t *self = calloc(1, sizeof *self);
    if (self && launch_argv_addv(&self->kv, (const char *const *) base))
        launch_env_destroy(&self);
    return self;
}

void
launch_env_destroy(launch_env_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    launch_argv_clear(&(*self_p)->kv);
    free(*self_p);
    *self_p = NULL;
}

static long
s_env_find(const launch_env_t *self, const char *key)
{
    size_t lk = strlen(key);
    for (size_t i = 0; i < self->kv.n; i++)
        if (strncmp(self->kv.v[i], key, lk) == 0 && self->kv.v[i][lk] == '=')
            return (long) i;
    return -1;
}

int
launch_env_set(launch_env_t *self, const char *key, const char *value)
{
    if (!key || !*key || strchr(key, '=') || !value)
        return TELEM_EINVAL;
    size_t len = strlen(key) + strlen(value) + 2;
    char *kv = malloc(len);
    if (!kv)
        return TELEM_ENOMEM;
    snprintf(kv, len, "%s=%s", key, value);
    long i = s_env_find(self, key);
    if (i >= 0) {
        free(self->kv.v[i]);
        self->kv.v[i] = kv;
        return 0;
    }
    int rc = launch_argv_add(&self->kv, kv);
    free(kv);
    return rc;
}

int
launch_env_setf(launch_env_t *self, const char *key, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t) n >= sizeof buf)
        return TELEM_ETOOBIG;
    return launch_env_set(self, key, buf);
}

void
launch_env_unset(launch_env_t *self, const char *key)
{
    long i = s_env_find(self, key);
    if (i < 0)
        return;
    free(self->kv.v[i]);
    memmove(&self->kv.v[i], &self->kv.v[i + 1],
            (self->kv.n - (size_t) i) * sizeof *self->kv.v);
    self->kv.n--;
}

const char *
launch_env_get(const launch_env_t *self, const char *key)
{
    long i = s_env_find(self, key);
    return i < 0 ? NULL : self->kv.v[i] + strlen(key) + 1;
}

char *const *
launch_env_array(const launch_env_t *self)
{
    static char *const empty[] = { NULL };
    return self->kv.v ? self->kv.v : empty;
}

