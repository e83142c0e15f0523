/* telem_client_cli.h - PRIVATE to telem_client: the command line as
 * telem_client_cli.c parses it and telem_client.c runs it.
 *
 * Parsing and checking of every argument happens in telem_client_cli.c,
 * once, before any socket is opened; telem_client.c only reads the
 * result.  One thread. */
#ifndef TELEM_CLIENT_CLI_H
#define TELEM_CLIENT_CLI_H

#include "telem_client.h"

typedef enum {
    M_NONE = 0, M_LIST, M_VALUES, M_GET, M_TRACK_ALL, M_TRACK, M_QUERY,
    M_STATUS, M_NODES, M_LEVEL, M_SHUTDOWN, M_REPORT,
    M_SNAPSHOT, M_DUMP
} telem_client_mode_t;

typedef struct {
    telem_client_opts_t o;
    telem_client_mode_t mode;
    const char *out_path;
    char *list;              /* -g / -T / query: copy that metrics point into */
    telem_promname_t *sels;  /* and what each element selects */
    int64_t start_ns, end_ns;
    uint32_t max_points;
    int have_range;          /* --start/--end/--max-points given */
    int have_end;            /* --end/--max-points given */
    const char *rundir;      /* report: --rundir */
    int have_track;          /* -F/-d given */
    int64_t level;           /* level: the new level, -1 until given */
    const char *node;        /* level, shutdown: one node, or NULL: all */
    const char *dumps[TELEM_CLIENT_DUMPS_MAX];   /* report --dump */
    size_t ndumps;
} telem_client_cli_t;

/* Parses argv into *cli (zeroed by the caller but for the defaults of
 * main()) and checks the whole command line.  Returns -1 to go on, else
 * the exit code (0 after --help or --version, 2 a bad command line, said
 * on stderr).  cli->list, cli->o.metrics and cli->sels are the caller's
 * to free. */
int telem_client_cli_parse(telem_client_cli_t *cli, int argc, char **argv);

#endif
