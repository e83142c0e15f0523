/* watch_cli.h - telem_watch's command line (internal).
 *
 * watch_cli_parse() checks every flag of the watcher once, before anything is
 * opened; watch_cli_ctl_main() is the `telem_watch ctl` client.  Split from
 * telem_watch.c, which runs the loop.
 */
#ifndef WATCH_CLI_H
#define WATCH_CLI_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "watch.h"

typedef struct {
    const char **detectors;     /* --detector specs, in order */
    size_t ndetectors;
    const char **sets;          /* --set LABEL.PARAM=VALUE */
    size_t nsets;
    const char *nodefile;
    int64_t period_ns;          /* --period, default 1 s */
    int timeout_ms;             /* --timeout, default 1000 */
    int json;
    const char *exec_cmd;
    det_severity_t act_on;      /* --act-on, default act */
    const char *restart_ep;
    int restart_timeout_ms;     /* default 5000 */
    const char *name;
    const char *rundir;
    const char *pub_ep, *ctl_ep;
    int insecure;               /* --insecure: plain TCP for --pub/--ctl */
    uint64_t count;             /* --count: ticks, 0 = no limit */
    int64_t duration_ns;        /* --duration, 0 = no limit */
    int verbose;
} watch_cli_t;

/* Parses the watcher's arguments into *cli.  Returns -1 to run, or an
 * exit status: 0 after --help / --list, 2 for a bad command line (the
 * reason printed on stderr).  Call watch_cli_free() either way. */
int watch_cli_parse(int argc, char **argv, watch_cli_t *cli);
void watch_cli_free(watch_cli_t *cli);

/* Prints `name` after `sep`, in double quotes when it holds anything but
 * letters, digits and ._-:@+ (then " and \ are escaped and control bytes
 * written as \xNN). */
void watch_cli_print_name(FILE *out, const char *name, const char *sep);

/* `telem_watch ctl ...` (argv[0] is "ctl").  Returns the exit status: 0,
 * 1 (the watcher refused or did not answer), 2 (bad command line). */
int watch_cli_ctl_main(int argc, char **argv);

#endif
