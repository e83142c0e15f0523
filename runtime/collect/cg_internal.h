/* cg_internal.h - the collector group's state, shared by cg.c (settings,
 * planning) and cg_spawn.c (processes).  Not installed.  cg.c calls
 * cg_spawn.c (cg__spawn, cg_stop, cg_wait, cg_running), never the reverse.
 */
#ifndef CG_INTERNAL_H
#define CG_INTERNAL_H

#include "cg.h"
#include "telem_backend.h"

typedef struct {
    char *node;
    int device;                         /* -1: per-node test */
    int pin;                            /* machine device; -1: none */
    char pin_id[TELEM_BACKEND_DEVICE_ID_MAX];
    int64_t phase_ns;
    pid_t pid;
    int pidfd;                          /* -1 when not running */
    cg_state_t state;
    int exit_code, signal;
} cg__coll_t;

struct cg {
    char *name;
    char *backend;
    char *kernel;                       /* NULL: the backend's default */
    char *metric;                       /* cg_<kernel>_seconds or user's */
    char *user_program;                 /* user test: NULL = this program */
    int user_test;
    char *collector;                    /* NULL: the default lookup */
    char **cargs;                       /* words after the program */
    size_t ncargs;
    long *devices;                      /* NULL: every device */
    size_t ndevices;
    int64_t period_ns;
    int reps;
    int spread;                         /* repetitions spread over the round */
    long *local;                        /* machine devices for local spawn */
    size_t nlocal;                      /* 0: all of them */
    int per_node;
    char *nodefile;
    char **nodes;                       /* explicit names, or NULL */
    size_t nnodes;
    char *spawn;                        /* template, NULL: local */
    char *only;                         /* this node's collectors only */
    int started;
    int64_t epoch_ns;
    cg__coll_t *colls;
    size_t ncolls;
};

/* cg_spawn.c: launches collector i; 0 or TELEM_EIO with a sentence. */
int cg__spawn(cg_t *g, size_t i, char *why, size_t why_size);

#endif
