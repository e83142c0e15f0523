/* telem_web_job.h - the job data object read from a run directory: what
 * telem_agg's GET /telem/job serves and `telem_client report` embeds
 * (the shape is documented in telem_web.h).
 *
 * Sources, each optional:
 *   <rundir>/launch/job            header "# telem_launch pid P restart EP
 *                                  restarts N", then "name\tstate\trank\t
 *                                  endpoint" per node
 *   <rundir>/launch/restarts.log   "<YYYY-MM-DDTHH:MM:SSZ> <line>" per restart
 *   <rundir>/telem_watch/events.jsonl   one watcher event (JSON) per line
 * Each is read bounded (its last 16 MiB, of those its last 10,000 lines);
 * lines that do not parse are skipped and added to *skipped, never fatal.
 * With `prog` given, a missing file, a cut one and skipped lines are each
 * said in one line "PROG: ..." on stderr; with NULL nothing is printed.
 *
 * Thread-safe: touches only its arguments, the files and stderr. */
#ifndef TELEM_WEB_JOB_H
#define TELEM_WEB_JOB_H

#include <jansson.h>
#include <stddef.h>

/* {"rundir","launcher_pid","restarts","nodes":[{"name","state","rank"}]}
 * from the job file; NULL when it cannot be read (or out of memory). */
json_t *telem_web_job_nodes(const char *rundir, const char *prog,
                            size_t *skipped);

/* [{"time_ms","line"}] from restarts.log (empty when absent). */
json_t *telem_web_job_restarts(const char *rundir, const char *prog,
                               size_t *skipped);

/* The events of events.jsonl as written (each has an integer "time_ms" and
 * a string "text"; "detector", "severity", "nodes", "devices" when
 * present have the right types); empty when absent. */
json_t *telem_web_job_events(const char *rundir, const char *prog,
                             size_t *skipped);

/* The three, silently, in one object {"version":1,"generated_ms","job",
 * "restarts","events","skipped"} ("job" with no nodes when the job file
 * is absent); owned by the caller, NULL only when out of memory. */
json_t *telem_web_job_read(const char *rundir);

#endif
