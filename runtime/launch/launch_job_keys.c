/* launch_job_keys.c - a job's secrets: its CURVE key pair and telem_agg's
 * token (docs/security.md).
 *
 * Made when the job starts, once the launcher holds the run directory's
 * lock (so a second launcher cannot replace them), in RUNDIR/keys (mode
 * 0700): job.key (0600) and agg.token (0600).  The daemons get the
 * directory with --keys, every process the launcher starts gets it in
 * TELEM_KEYS, and the launcher itself sets TELEM_KEYS so that its own
 * clients (the heartbeat's analysis client, the dictionary's re-form)
 * speak CURVE to the nodes.  Neither secret is ever put on a command
 * line.  Both files are removed when the job ends.
 *
 * Calls nothing of the job's own files but the struct (launch_job_int.h).
 */
#include "launch_job_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "telem_log.h"

/* 32 random bytes as 64 hex digits into RUNDIR/keys/agg.token. */
static int
s_make_token(launch_job_t *self, char *why, size_t why_size)
{
    unsigned char raw[32];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t) sizeof raw)
        return snprintf(why, why_size, "no random bytes for the token: %s",
                        strerror(errno)), TELEM_EIO;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(self->agg_token + 2 * i, 3, "%02x", raw[i]);
    memset(raw, 0, sizeof raw);
    snprintf(self->token_file, sizeof self->token_file, "%.*s/agg.token",
             TELEM_PATH_MAX - 16, self->keys_dir);
    int fd = open(self->token_file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW
                  | O_CLOEXEC, 0600);
    int bad = fd < 0 || fchmod(fd, 0600) != 0
              || dprintf(fd, "%s\n", self->agg_token) < 0;
    if (fd >= 0 && close(fd) != 0)
        bad = 1;
    if (bad) {
        snprintf(why, why_size, "cannot write %s: %s", self->token_file,
                 strerror(errno));
        unlink(self->token_file);
        self->token_file[0] = '\0';
        return TELEM_EIO;
    }
    return 0;
}

int
launch_job_keys_open(launch_job_t *self, char *why, size_t why_size)
{
    int rc = 0;
    snprintf(self->keys_dir, sizeof self->keys_dir, "%.*s/%s",
             TELEM_PATH_MAX - 16, self->rundir, TELEM_KEYS_SUBDIR);
    if (!(self->keys = telem_keys_create(self->keys_dir, &rc, why,
                                         why_size)))
        return rc;
    if (setenv(TELEM_KEYS_ENV, self->keys_dir, 1) != 0)
        return snprintf(why, why_size, "out of memory"), TELEM_ENOMEM;
    if (!(self->zap = telem_zap_new(self->keys, &rc)))
        return snprintf(why, why_size, "cannot start the ZAP handler: %s",
                        telem_strerror(rc)), rc;
    if (!self->cfg.agg_token_file && (rc = s_make_token(self, why,
                                                         why_size)) != 0)
        return rc;
    telem_log(TELEM_LOG_INFO, "the job's key is in %s: every TCP socket of "
              "the job is CURVE with it", self->keys_dir);
    return 0;
}

const char *
launch_job_keys_token_file(const launch_job_t *self)
{
    return self->cfg.agg_token_file ? self->cfg.agg_token_file
           : self->token_file[0] ? self->token_file : NULL;
}

void
launch_job_keys_close(launch_job_t *self)
{
    telem_zap_destroy(&self->zap);
    if (self->token_file[0])
        unlink(self->token_file);
    self->token_file[0] = '\0';
    memset(self->agg_token, 0, sizeof self->agg_token);
    if (self->keys && telem_keys_remove(self->keys_dir) != 0)
        telem_log(TELEM_LOG_WARN, "cannot remove the job's key from %s: %s",
                  self->keys_dir, strerror(errno));
    telem_keys_destroy(&self->keys);
}
