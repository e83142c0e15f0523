/* fuzz_slurmd.c - libFuzzer target: how telemd finds and watches the
 * node's slurmd in the proc tree (runtime/telemd/telemd_slurmd.c): every
 * <pid>/stat (comm in parentheses, state, start time), <pid>/cmdline
 * (NUL-separated, "-N NODE") and <pid>/ns/net link, and self/ns/net,
 * through telemd_slurmd_find() and telemd_slurmd_alive().
 *
 * Input: a tree (tests/fuzz/fuzz.h) whose proc/ is the proc root; then,
 * before the second look, every next/<pid>/stat is written over
 * proc/<pid>/stat (a restarted or reused pid).  Oracles beyond the
 * sanitizers: a process found is one whose stat file exists and names
 * slurmd; once a watch says gone it stays gone; when none is found, the
 * reason is a NUL-terminated sentence within its buffer.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "telem_log.h"
#include "telemd_slurmd.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    telem_log_init("fuzz_slurmd", TELEM_LOG_ERROR);
    return 0;
}

/* The found process's stat file exists and its comm is "slurmd". */
static void
s_check_found(const char *proc, pid_t pid)
{
    char path[FZ_PATH_MAX], buf[1024];
    snprintf(path, sizeof path, "%s/%ld/stat", proc, (long) pid);
    FILE *f = fopen(path, "r");
    FZ_CHECK(f != NULL);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    FZ_CHECK(strstr(buf, "(slurmd)") != NULL);
}

static void
s_next_round(const char *root, pid_t pid)
{
    char from[FZ_PATH_MAX], to[FZ_PATH_MAX];
    snprintf(from, sizeof from, "%s/next/%ld/stat", root, (long) pid);
    snprintf(to, sizeof to, "%s/proc/%ld/stat", root, (long) pid);
    rename(from, to);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *root = fz_fresh_dir("t");
    fz_tree(root, data, size);
    char proc[FZ_PATH_MAX], why[64];
    snprintf(proc, sizeof proc, "%s/proc", root);
    const char *nodes[] = { "n1", "n2", "" };
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        memset(why, 'x', sizeof why);
        telemd_slurmd_t *w = telemd_slurmd_find(proc, nodes[i], why,
                                                sizeof why);
        if (!w) {             /* the reason: a sentence that fits */
            FZ_CHECK(memchr(why, '\0', sizeof why) != NULL);
            continue;
        }
        pid_t pid = telemd_slurmd_pid(w);
        s_check_found(proc, pid);
        int alive = telemd_slurmd_alive(w, why, sizeof why);
        s_next_round(root, pid);
        int again = telemd_slurmd_alive(w, why, sizeof why);
        FZ_CHECK(alive || !again);
        FZ_CHECK(telemd_slurmd_lost(w, why, sizeof why) == !again);
        telemd_slurmd_destroy(&w);
        FZ_CHECK(w == NULL);
    }
    return 0;
}
