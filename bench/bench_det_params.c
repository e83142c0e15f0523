/* bench_det_params.c - see bench_det_params.h. */
#include "bench_det_params.h"

#include <stdio.h>
#include <string.h>

#include "bench_common.h"

void
bench_det_params(det_t *d, const char *params, const char *who, int check)
{
    char buf[512], why[256];
    snprintf(buf, sizeof buf, "%s", params ? params : "");
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq)
            bench_die(who, "-s %s: expected name=value", t);
        *eq = '\0';
        if (det_set(d, t, eq + 1, why, sizeof why))
            bench_die(who, "-s %s: %s", t, why);
    }
    if (check && det_check(d, why, sizeof why))
        bench_die(who, "parameters: %s", why);
}
