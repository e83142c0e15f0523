/* telem_keygen.c - makes a job's CURVE key pair for daemons started by
 * hand (telem_launch makes its own for every job).
 *
 *   telem_keygen [--force] [DIR]
 *
 * Writes DIR/job.key (mode 0600; DIR created 0700, default RUNDIR/keys,
 * where telemd, telem_dictd and every client of the run directory look
 * for it).  An existing key is kept unless --force: replacing the key of
 * a running job would lock its own processes out.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "telem_cli.h"
#include "telem_error.h"
#include "telem_keys.h"
#include "telem_log.h"
#include "telem_paths.h"

#define S_PROG "telem_keygen"

static const char s_usage[] =
"Usage: telem_keygen [OPTIONS] [DIR]\n"
"Makes a job's CURVE key pair in DIR/job.key (mode 0600; DIR is created\n"
"mode 0700).  telemd and telem_dictd started with --keys DIR, or finding it\n"
"in RUNDIR/keys, serve TCP only to clients holding it; the clients (the\n"
"analysis client, the dictionary client, telem_client, telem_watch,\n"
"telem_agg) find it through $TELEM_KEYS=DIR, beside their node file, or in\n"
"RUNDIR/keys.  telem_launch makes one per job by itself.\n"
"\n"
"  DIR                    key directory (default: RUNDIR/keys, RUNDIR from\n"
"                         $TELEM_RUNDIR, $XDG_RUNTIME_DIR/telem or\n"
"                         /tmp/telem-UID)\n"
"  -f, --force            replace a key that is already there\n"
"  -h, --help             show this help\n"
"  -V, --version          show the version\n"
"\n"
"Prints the key file's path and the public key.  Exit status: 0 when the\n"
"key was written, 1 when it could not be (or one exists, without --force),\n"
"2 on bad usage.\n";

typedef struct {
    int force;
    const char *dir;            /* the operand, NULL: the default */
} s_args_t;

static int
s_option(void *arg, int c, char *v)
{
    (void) v;
    if (c != 'f')
        return 2;
    ((s_args_t *) arg)->force = 1;
    return 0;
}

static int
s_operands(void *arg, int argc, char **argv)
{
    if (argc > 1)
        return telem_cli_error(S_PROG, "one key directory at most");
    ((s_args_t *) arg)->dir = argc ? argv[0] : NULL;
    return 0;
}

int
main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "force", 0, 0, 'f' }, { "help", 0, 0, 'h' },
        { "version", 0, 0, 'V' }, { 0, 0, 0, 0 }
    };
    s_args_t a = { 0 };
    const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage, .shortopts = "fhV",
        .longopts = opts, .option = s_option, .operands = s_operands,
        .version = S_PROG " 0.1.0",
    };
    int rc = telem_cli_parse_spec(&spec, argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    char dir[TELEM_PATH_MAX], file[TELEM_PATH_MAX + 16], why[512];
    if (a.dir)
        snprintf(dir, sizeof dir, "%s", a.dir);
    else if (telem_rundir_default(dir, sizeof dir) != 0
             || strlen(dir) + 6 >= sizeof dir)
        return telem_cli_error(S_PROG, "run directory path too long");
    else
        strcat(dir, "/" TELEM_KEYS_SUBDIR);
    snprintf(file, sizeof file, "%s/%s", dir, TELEM_KEYS_FILE);
    if (!a.force && access(file, F_OK) == 0) {
        fprintf(stderr, S_PROG ": %s exists (a job may be using it); "
                "--force replaces it\n", file);
        return 1;
    }
    int err = 0;
    telem_keys_t *k = telem_keys_create(dir, &err, why, sizeof why);
    if (!k) {
        fprintf(stderr, S_PROG ": %s\n", why);
        return 1;
    }
    printf("%s\npublic %s\n", file, telem_keys_public(k));
    telem_keys_destroy(&k);
    return 0;
}
