/* telem_web_job.h - the job data object read from a run directory: what
 * telem_agg's GET /telem/job serves and `telem_client report` embeds
 * (the shape is documented in telem_web.h).
 *
 * Sources, each optional (absent: an empty list, and "job" with no
 * nodes):
 *   <rundir>/launch/job            header "# telem_launch pid P restart EP
 *                                  restarts N", then "name\tstate\trank\t
 *                                  endpoint" per node
 *   <rundir>/launch/restarts.log   "<YYYY-MM-DDTHH:MM:SSZ> <line>" per restart
 *   <rundir>/telem_watch/events.jsonl   one watcher event (JSON) per line
 * Reads are bounded (the last 1 MiB of each log, 4 MiB of events; a job
 * file of at most 1 MiB); lines that do not parse are skipped and counted
 * in "skipped", never fatal.
 *
 * Thread-safe: touches only its arguments and the files. */
#ifndef TELEM_WEB_JOB_H
#define TELEM_WEB_JOB_H

#include <jansson.h>

/* A new object {"version":1,"generated_ms","job":{"rundir","launcher_pid",
 * "restarts","nodes":[{"name","state","rank"}]},"restarts":[{"time_ms",
 * "line"}],"events":[{"time_ms","detector","severity","nodes","devices",
 * "text"}],"skipped"}, owned by the caller; NULL only when out of
 * memory. */
json_t *telem_web_job_read(const char *rundir);

#endif
