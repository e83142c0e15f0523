/* telem_watch_cli.h - telem_watch's command line (internal).
 *
 * tw_cli_parse() checks every flag of the watcher once, before anything is
 * opened; tw_ctl_main() is the `telem_watch ctl` client.  Split from
 * telem_watch.c, which runs the loop.
 */
#ifndef TELEM_WATCH_CLI_H
#define TELEM_WATCH_CLI_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "telem_watch.h"

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
    uint64_t count;             /* --count: ticks, 0 = no limit */
    int64_t duration_ns;        /* --duration, 0 = no limit */
    int verbose;
} tw_cli_t;

/* Parses the watcher's arguments into *cli.  Returns -1 to run, or an
 * exit status: 0 after --help / --list, 2 for a bad command line (the
 * reason printed on stderr).  Call tw_cli_free() either way. */
int tw_cli_parse(int argc, char **argv, tw_cli_t *cli);
void tw_cli_free(tw_cli_t *cli);

/* Prints `name` after `sep`, in double quotes when it holds anything but
 * letters, digits and ._-:@+ (then " and \ are escaped and control bytes
 * written as \xNN). */
void tw_cli_print_name(FILE *out, const char *name, const char *sep);

/* `telem_watch ctl ...` (argv[0] is "ctl").  Returns the exit status: 0,
 * 1 (the watcher refused or did not answer), 2 (bad command line). */
int tw_ctl_main(int argc, char **argv);

#endif
