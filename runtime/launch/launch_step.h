/* launch_step.h - the text of a Slurm job step that runs one kind of
 * process on many nodes at once: the step file from which each task takes
 * its own command, the label srun puts before each line of a task's
 * output, and srun's own lines that say how tasks ended.
 *
 * Pure functions over bytes (no processes, no sockets), shared by the
 * launcher (launch_job_step.c), which writes step files and reads srun's
 * output, and by telem_step, the program every task of a step runs first
 * (it finds its node's line in the step file and execs that command).
 * Everything read here comes from files and from srun: every parser
 * checks its input and says what is wrong with it.
 *
 * Thread safety: none needed; the functions touch only their arguments.
 */
#ifndef LAUNCH_STEP_H
#define LAUNCH_STEP_H

#include <stddef.h>
#include <stdio.h>

#include "launch_argv.h"

/* ---- the step file --------------------------------------------------------
 *
 * One line per task:  NODE <TAB> RANK <TAB> WORD <TAB> WORD ...
 * where each WORD is "e:KEY=VALUE" (a variable of the task's environment)
 * or "a:ARG" (a word of its command, in order; at least one), and every
 * field has its backslashes, tabs, newlines and carriage returns written
 * as \\ \t \n \r.  Lines starting with '#' are comments. */

/* The most bytes a step file may have (a line of 16 KiB per node for 4,096
 * nodes fits). */
#define LAUNCH_STEP_FILE_MAX (64u << 20)

/* Writes node `node`'s line (task `rank`, environment `env` of
 * "KEY=VALUE" strings, may be NULL; command `argv`, at least one word) to
 * `f`.  Returns 0, TELEM_EINVAL (no command, a node name that is not one,
 * an environment string without '=' or with an empty key) or TELEM_EIO
 * (the write failed). */
int launch_step_file_line(FILE *f, const char *node, size_t rank,
                          const char *const *env, const char *const *argv);

/* Finds the line of node `node` in the step file text buf[0..len) and
 * appends its environment ("KEY=VALUE" strings) to `env` and its command
 * to `argv`, its rank in *rank.  Returns 0, TELEM_ENOTFOUND (no line for
 * the node), TELEM_EPROTO (the node's line is malformed: a bad escape, a
 * bad rank, a word that is neither e: nor a:, an environment word without
 * '=', no command; or the node has two lines) or TELEM_ENOMEM.  On an
 * error `env` and `argv` may hold part of the line: the caller clears
 * them. */
int launch_step_file_find(const char *buf, size_t len, const char *node,
                          size_t *rank, launch_argv_t *env,
                          launch_argv_t *argv);

/* ---- labels ---------------------------------------------------------------
 *
 * With --label srun writes every line of task R's output as "R: LINE",
 * R right-aligned in the width of the step's largest rank. */

/* Splits a labelled line of a step of `ntasks` tasks: its rank in *rank
 * and its text in *text (pointing into `line`).  Returns 0, TELEM_ENOTFOUND
 * (no label: a line of srun's own) or TELEM_EPROTO (a label whose rank is
 * not below ntasks, or too long a number). */
int launch_step_label(const char *line, size_t ntasks, size_t *rank,
                      const char **text);

/* ---- srun's own lines ---------------------------------------------------- */

typedef enum {
    LAUNCH_STEP_SRUN_OTHER = 0,     /* none of the below */
    /* "srun: launch/slurm: _task_finish: Received task exit notification
       for N task(s) of StepId=J.S (status=0xHHHH)." (--verbose): the wait
       status of the tasks the next TASKS line names */
    LAUNCH_STEP_SRUN_STATUS = 1,
    /* "srun: error: HOSTS: task R: Exited with exit code C", "...: tasks
       R-S,T: Killed", "srun: launch/slurm: _task_finish: HOSTS: task R:
       Completed" (--verbose): tasks that ended */
    LAUNCH_STEP_SRUN_TASKS = 2,
    /* "srun: error: Node failure on NODE": the node is lost; its tasks
       will not report their end */
    LAUNCH_STEP_SRUN_NODE_FAILURE = 3,
    /* any other "srun: error: ..." or "srun: fatal: ..." */
    LAUNCH_STEP_SRUN_ERROR = 4
} launch_step_srun_kind_t;

typedef struct {
    launch_step_srun_kind_t kind;
    int status;             /* STATUS: the wait status; TASKS: the wait
                               status the words say, -1 when they do not
                               (a signal name this C library does not
                               know) */
    const char *what;       /* TASKS: the words after the ranks ("Killed");
                               ERROR: the text after "error: " */
    const char *ranks;      /* TASKS: the ranks ("3", "0-2,5") ... */
    size_t ranks_len;       /* ... and their length */
    const char *node;       /* NODE_FAILURE: the node ... */
    size_t node_len;        /* ... and its length */
} launch_step_srun_t;

/* Reads one line of srun's standard error (no newline).  Every pointer of
 * *ev points into `line`.  Always succeeds: a line that is not understood
 * is OTHER (a TASKS line whose ranks are malformed too). */
void launch_step_srun_parse(const char *line, launch_step_srun_t *ev);

/* Marks in hit[0..ntasks) the ranks of a TASKS event ("3", "0-2,5").
 * Returns 0, or TELEM_EPROTO (a malformed list, or a rank not below
 * ntasks: nothing is marked then). */
int launch_step_ranks(const char *ranks, size_t len, size_t ntasks,
                      unsigned char *hit);

/* ---- telem_step's own first line -------------------------------------------
 *
 * Before it execs the task's command telem_step prints
 *   "telem_step<TAB>start<TAB>PID<TAB>JOBID.STEPID<TAB>NODE"
 * (PID: the task's process on its node, which the command keeps). */

#define LAUNCH_STEP_START "telem_step\tstart\t"

/* Reads a start line: the pid in *pid and "JOBID.STEPID" into step (of
 * `size` bytes).  Returns 0, TELEM_ENOTFOUND (not a start line) or
 * TELEM_EPROTO (a malformed one). */
int launch_step_start_parse(const char *line, long *pid, char *step,
                            size_t size);

#endif
