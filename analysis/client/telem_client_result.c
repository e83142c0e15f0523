/* telem_client_result.c - what every mode of telem_client does with the
 * outcome of a call: names the missing nodes (on stderr, or as a list for
 * the json/yaml document) and turns the return code into the exit code.
 *
 * Call order: telem_client.c and telem_client_track.c call this file; it
 * calls only the analysis client (ac.h), never back into them.
 */
#include "telem_client.h"

#include <stdio.h>
#include <stdlib.h>

#define S_PROG "telem_client"

void
telem_client_result_missing_report(const ac_result_t *r)
{
    for (size_t i = 0; i < ac_result_nmissing(r); i++)
        fprintf(stderr, S_PROG ": node '%s' did not answer: %s (%s)\n",
                ac_result_missing(r, i), ac_result_missing_message(r, i),
                ac_strerror(ac_result_missing_code(r, i)));
}

const char **
telem_client_result_missing_names(const ac_result_t *r, size_t *n)
{
    *n = ac_result_nmissing(r);
    const char **names = *n ? calloc(*n, sizeof *names) : NULL;
    if (!names)
        *n = 0;
    for (size_t i = 0; i < *n; i++)
        names[i] = ac_result_missing(r, i);
    return names;
}

int
telem_client_result_exit_code(int rc)
{
    if (rc == 0)
        return 0;
    if (rc == TELEM_EPARTIAL)
        return 3;
    if (rc == TELEM_ETIMEDOUT)
        fprintf(stderr, S_PROG ": no node answered\n");
    else
        fprintf(stderr, S_PROG ": %s\n", ac_strerror(rc));
    return 1;
}
