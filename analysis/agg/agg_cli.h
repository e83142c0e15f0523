/* agg_cli.h - what the command lines of telem_agg and telem_view share:
 * the HTTP server's flags, the URL they print, and waiting for the stop
 * signal.  Private to analysis/agg's two mains.
 */
#ifndef AGG_CLI_H
#define AGG_CLI_H

#include <stddef.h>

#include "telem_http.h"

/* The HTTP server flags of both mains, by option code: 'p' --port, 'b'
 * --bind, 'B' --max-body, 'C' --max-conns, 'H' --threads, 'O' --cors,
 * parsed into *http (strings point into argv).  Returns 0 when c was
 * handled, 2 after saying on stderr what was wrong with v, or -1 when c
 * is not one of these flags. */
int agg_cli_http_option(const char *prog, int c, const char *v,
                        telem_http_opts_t *http);

/* Writes "http://BIND:PORT/" ("http://[BIND]:PORT/" for IPv6) for the
 * server's bind address (127.0.0.1 when none) into url[size]. */
void agg_cli_url(const telem_http_opts_t *http, int port, char *url,
                 size_t size);

/* Blocks until a stop signal arrives on sigfd (telem_signals_open_stop)
 * and logs which. */
void agg_cli_wait_stop(int sigfd);

#endif
