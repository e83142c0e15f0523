/* merge_sort.c - example application for telem_launch: a merge sort that
 * forks workers recursively, and a cluster-wide stop on too many
 * processes, through the watcher and the distributed dictionary.
 *
 * For every input size, rank r of the job sorts its share of the input
 * (numbers drawn from (seed, index), so any rank can regenerate the whole
 * input): the sort forks a child for one half and sorts the other half
 * itself, recursively, down to --min-chunk elements or --max-depth levels;
 * halves live in shared memory and are merged by the parent.  Each rank
 * puts its sorted share into the dictionary; rank 0 merges the shares,
 * checks that the result is sorted and holds exactly the input (count and
 * sum), and prints one line per size: time, nodes, peak processes and
 * cut-off.
 *
 * The stop: a proc-threshold watch on num_running_processes.  With
 * --limit N, rank 0 starts telem_watch --detector proc-threshold:limit=N
 * (it reads every node of the job through the node file) with the action
 * `telem_dict event-set <ns>/stop`: when any node runs more than N
 * processes, the dictionary's cluster-wide event "<ns>/stop" is set
 * (ddict_event_set()).  Anyone may set it the same way.  Every rank checks
 * the event before each size and has a thread waiting for it (notified by
 * the dictionary, not polling) that raises a flag in shared memory; every
 * forked worker reads the flag before forking again, so from then on the
 * recursion stops and sorts locally.  The smallest depth where it stopped
 * is the cut-off, recorded with telem_add_data.  Forked workers only
 * compute in shared memory; sockets stay in the first process.
 *
 * --until-stop R repeats the last size, at most R more times, until a
 * round shows a cut-off: a demonstration that ends on behaviour, not on
 * time.  Rank 0 decides after each round and tells the others through the
 * dictionary.  Keys and events are per round, under --ns: run a job again
 * in the same run directory with another --ns (the stop event stays set).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <spawn.h>

#include <telem/ddict.h>
#include <telem/telem.h>

#define S_SIZES_MAX 16

typedef struct {
    long sizes[S_SIZES_MAX];
    int nsizes;
    long min_chunk;
    int max_depth;
    unsigned long seed;
    const char *ns;
    long limit;                 /* proc-threshold limit; 0: no watch */
    const char *period;         /* the watch's period, seconds */
    int until_stop;             /* repeat the last size up to this often */
    const char *bindir;         /* telem_watch and telem_dict */
    int64_t timeout_ms;
    int rank, nnodes;
} s_opts_t;

/* Shared by every process of one rank's fork tree. */
typedef struct {
    volatile int stop;          /* the stop event was seen */
    int live, peak;             /* processes of the tree now, and at most */
    int cutoff;                 /* smallest depth that stopped for `stop` */
} s_shared_t;

static const char s_usage[] =
"Usage: merge_sort [OPTIONS]\n"
"Example application for telem_launch: a merge sort that forks workers\n"
"recursively on every node; a watcher event (proc-threshold) sets a\n"
"cluster-wide stop event in the dictionary and the recursion then sorts\n"
"locally.  Rank 0 merges the nodes' shares, checks the result and prints,\n"
"per input size: time, nodes, peak processes and cut-off.\n"
"\n"
"Options:\n"
"  -s, --sizes LIST      input sizes, comma-separated, at most 16\n"
"                        (default 100000,1000000,4000000)\n"
"  -c, --min-chunk N     sort locally below N elements (default 10000)\n"
"  -D, --max-depth D     fork at most D levels, 0-16 (default 6)\n"
"      --seed S          random seed (default 1)\n"
"  -n, --ns NAME         dictionary namespace and event prefix\n"
"                        (default merge_sort)\n"
"  -l, --limit N         rank 0 runs telem_watch --detector\n"
"                        proc-threshold:limit=N, whose action sets the\n"
"                        stop event (default 0: no watch of its own; the\n"
"                        event may also be set by anyone else)\n"
"      --watch-period S  the watch's period (default 0.2)\n"
"  -u, --until-stop R    after the sizes, sort the last size again, at\n"
"                        most R times, until a cut-off is seen (default 0)\n"
"      --bindir DIR      where telem_watch and telem_dict are (default:\n"
"                        this program's directory)\n"
"      --timeout MS      deadline of each dictionary call (default 30000)\n"
"  -h, --help            show this help\n"
"\n"
"Environment (set by telem_launch): TELEM_RANK, TELEM_NNODES,\n"
"TELEM_DICT_NODEFILE, TELEM_RUNDIR, TELEM_NODE, TELEM_LEVEL.\n"
"Exit status: 0 sorted, 1 failure (wrong result, dictionary), 2 bad\n"
"command line.\n";

/* ---- input -------------------------------------------------------------- */

static uint32_t
s_value(unsigned long seed, long size, long i)
{
    uint64_t x = ((uint64_t) seed << 40) ^ ((uint64_t) size << 20)
                 ^ (uint64_t) i ^ 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return (uint32_t) (x >> 32);
}

static int
s_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
    return (x > y) - (x < y);
}

/* ---- the forking sort --------------------------------------------------- */

static void
s_merge(uint32_t *v, uint32_t *tmp, long lo, long mid, long hi)
{
    long i = lo, j = mid, k = lo;
    while (i < mid && j < hi)
        tmp[k++] = v[i] <= v[j] ? v[i++] : v[j++];
    while (i < mid)
        tmp[k++] = v[i++];
    while (j < hi)
        tmp[k++] = v[j++];
    memcpy(v + lo, tmp + lo, (size_t) (hi - lo) * sizeof *v);
}

static void
s_note_cutoff(s_shared_t *sh, int depth)
{
    int cur = __atomic_load_n(&sh->cutoff, __ATOMIC_RELAXED);
    while ((cur < 0 || depth < cur)
           && !__atomic_compare_exchange_n(&sh->cutoff, &cur, depth, 0,
                                           __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void
s_sort(const s_opts_t *o, s_shared_t *sh, uint32_t *v, uint32_t *tmp,
       long lo, long hi, int depth)
{
    if (hi - lo <= o->min_chunk || depth >= o->max_depth || sh->stop) {
        if (sh->stop && hi - lo > o->min_chunk && depth < o->max_depth)
            s_note_cutoff(sh, depth);
        qsort(v + lo, (size_t) (hi - lo), sizeof *v, s_cmp);
        return;
    }
    long mid = lo + (hi - lo) / 2;
    int live = __atomic_add_fetch(&sh->live, 1, __ATOMIC_RELAXED);
    int peak = __atomic_load_n(&sh->peak, __ATOMIC_RELAXED);
    while (live > peak && !__atomic_compare_exchange_n(
               &sh->peak, &peak, live, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    pid_t pid = fork();
    if (pid == 0) {
        s_sort(o, sh, v, tmp, lo, mid, depth + 1);
        __atomic_sub_fetch(&sh->live, 1, __ATOMIC_RELAXED);
        _exit(0);
    }
    if (pid < 0) {              /* no more processes: sort this half here */
        __atomic_sub_fetch(&sh->live, 1, __ATOMIC_RELAXED);
        s_sort(o, sh, v, tmp, lo, mid, o->max_depth);
    }
    s_sort(o, sh, v, tmp, mid, hi, depth + 1);
    int status = 0;
    if (pid > 0 && (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)
                    || WEXITSTATUS(status) != 0))
        s_sort(o, sh, v, tmp, lo, mid, o->max_depth);   /* redo it here */
    s_merge(v, tmp, lo, mid, hi);
}

/* ---- the stop event ----------------------------------------------------- */

typedef struct {
    const s_opts_t *o;
    s_shared_t *sh;
    volatile int done;
} s_watch_t;

/* Rank 0: starts telem_watch with a proc-threshold detector whose action
 * sets "<ns>/stop" in the dictionary (telem_dict event-set, i.e.
 * ddict_event_set()).  Returns its pid, or -1. */
static pid_t
s_watch_start(const s_opts_t *o)
{
    char watch[1024], det[64], name[128], exec[2400];
    snprintf(watch, sizeof watch, "%s/telem_watch", o->bindir);
    snprintf(det, sizeof det, "proc-threshold:limit=%ld", o->limit);
    snprintf(name, sizeof name, "%s_watch", o->ns);
    snprintf(exec, sizeof exec, "'%s/telem_dict' event-set '%s/stop'",
             o->bindir, o->ns);
    char *argv[] = { watch, "--detector", det, "--period", (char *) o->period,
                     "--name", name, "--exec", exec, NULL };
    extern char **environ;
    pid_t pid;
    if (posix_spawn(&pid, watch, NULL, NULL, argv, environ) != 0) {
        fprintf(stderr, "merge_sort: cannot start %s: %s\n", watch,
                strerror(errno));
        return -1;
    }
    return pid;
}

/* Every rank: waits for "<ns>/stop" and raises the shared flag. */
static void *
s_stop_waiter(void *arg)
{
    s_watch_t *w = arg;
    char ev[DDICT_NS_LIMIT + 16];
    snprintf(ev, sizeof ev, "%s/stop", w->o->ns);
    ddict_t *d = ddict_open(NULL, w->o->ns, w->o->timeout_ms, NULL);
    while (d && !w->done) {
        int rc = ddict_event_wait(d, ev, 500);
        if (rc == 0) {
            w->sh->stop = 1;
            break;
        }
        if (rc != TELEM_ETIMEDOUT)
            break;
    }
    ddict_close(&d);
    return NULL;
}

/* ---- one size ----------------------------------------------------------- */

typedef struct {
    double seconds;
    int peak, cutoff;
} s_stats_t;

static void *
s_shared_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sorts this rank's share of `size` and puts it, with its figures, into
 * the dictionary. */
static int
s_sort_share(const s_opts_t *o, s_shared_t *sh, ddict_t *d, int round,
             long size)
{
    long lo = (long) ((__int128) size * o->rank / o->nnodes);
    long hi = (long) ((__int128) size * (o->rank + 1) / o->nnodes), n = hi - lo;
    size_t bytes = (size_t) n * sizeof(uint32_t);
    uint32_t *v = s_shared_alloc(bytes), *tmp = s_shared_alloc(bytes);
    int rc = TELEM_ENOMEM;
    char ev[DDICT_NS_LIMIT + 16];
    snprintf(ev, sizeof ev, "%s/stop", o->ns);
    if (ddict_event_is_set(d, ev) == 1)     /* seen before this size */
        sh->stop = 1;
    if (v && tmp) {
        for (long i = 0; i < n; i++)
            v[i] = s_value(o->seed, size, lo + i);
        sh->live = sh->peak = 1;
        sh->cutoff = -1;
        double t0 = s_now();
        s_sort(o, sh, v, tmp, 0, n, 0);
        s_stats_t st = { s_now() - t0, sh->peak, sh->cutoff };
        char key[DDICT_NS_LIMIT + 64], sz[24], stats[96];
        snprintf(sz, sizeof sz, "%ld", size);
        telem_add_data_tags("merge_sort_seconds", st.seconds, 0, 1, 1,
                            "size", sz);
        telem_add_data_tags("merge_sort_peak_processes", st.peak, 0, 1, 1,
                            "size", sz);
        telem_add_data_tags("merge_sort_cutoff_depth",
                            st.cutoff >= 0 ? st.cutoff : o->max_depth, 0, 1,
                            1, "size", sz);
        int klen = snprintf(key, sizeof key, "sorted/%d/%d", round, o->rank);
        rc = ddict_put(d, key, (size_t) klen, v, bytes, NULL);
        int slen = snprintf(stats, sizeof stats, "%.6f %d %d", st.seconds,
                            st.peak, st.cutoff);
        klen = snprintf(key, sizeof key, "stats/%d/%d", round, o->rank);
        if (rc == 0)
            rc = ddict_put(d, key, (size_t) klen, stats, (size_t) slen, NULL);
        snprintf(key, sizeof key, "%s/sorted/%d/%d", o->ns, round, o->rank);
        if (rc == 0)
            rc = ddict_event_set(d, key);
    }
    if (v)
        munmap(v, bytes ? bytes : 1);
    if (tmp)
        munmap(tmp, bytes ? bytes : 1);
    return rc;
}

/* Rank 0: waits for rank r's share of `size` and fetches it. */
static int
s_fetch(const s_opts_t *o, ddict_t *d, int round, int r, void **share,
        size_t *bytes, s_stats_t *st)
{
    char key[DDICT_NS_LIMIT + 64];
    snprintf(key, sizeof key, "%s/sorted/%d/%d", o->ns, round, r);
    int rc;
    while ((rc = ddict_event_wait(d, key, o->timeout_ms)) == TELEM_ETIMEDOUT)
        ;
    int klen = snprintf(key, sizeof key, "sorted/%d/%d", round, r);
    if (rc == 0)
        rc = ddict_get(d, key, (size_t) klen, share, bytes, NULL);
    void *text = NULL;
    size_t tlen;
    klen = snprintf(key, sizeof key, "stats/%d/%d", round, r);
    if (rc == 0 && (rc = ddict_get(d, key, (size_t) klen, &text, &tlen,
                                   NULL)) == 0
        && sscanf(text, "%lf %d %d", &st->seconds, &st->peak, &st->cutoff)
               != 3)
        rc = TELEM_EPROTO;
    free(text);
    return rc;
}

/* Rank 0: merges every rank's share and checks the result; prints the
 * size's line.  Returns 0 when sorted and complete. */
static int
s_check(const s_opts_t *o, ddict_t *d, int round, long size, int *cutoff)
{
    uint32_t *all = malloc((size_t) size * sizeof *all + 1);
    uint32_t *tmp = malloc((size_t) size * sizeof *tmp + 1);
    s_stats_t worst = { 0, 0, -1 };
    long have = 0;
    int rc = all && tmp ? 0 : TELEM_ENOMEM;
    double t0 = s_now();
    for (int r = 0; r < o->nnodes && rc == 0; r++) {
        void *share = NULL;
        size_t bytes = 0;
        s_stats_t st;
        rc = s_fetch(o, d, round, r, &share, &bytes, &st);
        long n = (long) (bytes / sizeof *all);
        if (rc == 0 && have + n > size)
            rc = TELEM_EPROTO;
        if (rc == 0) {
            memcpy(all + have, share, (size_t) n * sizeof *all);
            s_merge(all, tmp, 0, have, have + n);
            have += n;
            worst.seconds = st.seconds > worst.seconds ? st.seconds
                                                       : worst.seconds;
            worst.peak = st.peak > worst.peak ? st.peak : worst.peak;
            if (st.cutoff >= 0 && (worst.cutoff < 0 || st.cutoff < worst.cutoff))
                worst.cutoff = st.cutoff;
        }
        free(share);
    }
    uint64_t sum = 0, want = 0;
    int sorted = rc == 0 && have == size;
    for (long i = 0; sorted && i < size; i++) {
        sum += all[i];
        want += s_value(o->seed, size, i);
        sorted = i == 0 || all[i - 1] <= all[i];
    }
    sorted = sorted && sum == want;
    char cut[32] = "none";
    if (worst.cutoff >= 0)
        snprintf(cut, sizeof cut, "depth %d", worst.cutoff);
    if (rc == 0)
        printf("merge_sort: size %ld: %.3f s (slowest node) + %.3f s gather "
               "on %d node(s); peak %d processes per node; cut-off %s; "
               "sorted: %s\n", size, worst.seconds, s_now() - t0, o->nnodes,
               worst.peak, cut, sorted ? "yes" : "NO");
    else
        fprintf(stderr, "merge_sort: size %ld: %s\n", size,
                telem_strerror(rc));
    fflush(stdout);
    free(all);
    free(tmp);
    *cutoff = worst.cutoff;
    return rc ? rc : sorted ? 0 : TELEM_EINVAL;
}

/* ---- command line and main ---------------------------------------------- */

static int
s_bad(const char *flag, const char *value, const char *why)
{
    fprintf(stderr, "merge_sort: invalid %s '%s': %s\n"
            "Try 'merge_sort --help'.\n", flag, value, why);
    return 2;
}

static int
s_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int
s_sizes(const char *arg, s_opts_t *o)
{
    char buf[512];
    if (snprintf(buf, sizeof buf, "%s", arg) >= (int) sizeof buf)
        return s_bad("--sizes", arg, "too long");
    o->nsizes = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (o->nsizes == S_SIZES_MAX)
            return s_bad("--sizes", arg, "at most 16 sizes");
        if (s_long(t, 1, 1L << 26, &o->sizes[o->nsizes++]))
            return s_bad("--sizes", arg, "each size is 1-67108864");
    }
    return o->nsizes ? -1 : s_bad("--sizes", arg, "no size");
}

static int
s_option(int c, const char *arg, s_opts_t *o)
{
    long v;
    char *end;
    switch (c) {
    case 's': return s_sizes(arg, o);
    case 'c': if (s_long(arg, 1, 1L << 26, &o->min_chunk))
                  return s_bad("--min-chunk", arg, "expected 1-67108864");
              return -1;
    case 'D': if (s_long(arg, 0, 16, &v))
                  return s_bad("--max-depth", arg, "expected 0-16");
              o->max_depth = (int) v; return -1;
    case 'S': o->seed = strtoul(arg, &end, 10);
              return *arg && !*end ? -1 : s_bad("--seed", arg, "not a number");
    case 'n': if (!*arg || strlen(arg) > 100
                  || strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                 "QRSTUVWXYZ0123456789_.-") != strlen(arg))
                  return s_bad("--ns", arg, "1-100 letters, digits, _ . -");
              o->ns = arg; return -1;
    case 'l': if (s_long(arg, 0, 1000000000, &o->limit))
                  return s_bad("--limit", arg, "expected 0-1000000000");
              return -1;
    case 'p': if (strtod(arg, &end) < 0.05 || *end || !*arg)
                  return s_bad("--watch-period", arg, "expected >= 0.05");
              o->period = arg; return -1;
    case 'u': if (s_long(arg, 0, 1000, &v))
                  return s_bad("--until-stop", arg, "expected 0-1000");
              o->until_stop = (int) v; return -1;
    case 'B': o->bindir = arg; return -1;
    case 'o': if (s_long(arg, 1, 3600000, &v))
                  return s_bad("--timeout", arg, "expected 1-3600000");
              o->timeout_ms = v; return -1;
    case 'h': fputs(s_usage, stdout); return 0;
    default: fputs("Try 'merge_sort --help'.\n", stderr); return 2;
    }
}

/* The directory of this program: where telem_watch and telem_dict are. */
static void
s_default_bindir(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    buf[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(buf, size, ".");
}

static int
s_parse(int argc, char **argv, s_opts_t *o, char *bindir, size_t size)
{
    static const struct option opts[] = {
        { "sizes", 1, NULL, 's' }, { "min-chunk", 1, NULL, 'c' },
        { "max-depth", 1, NULL, 'D' }, { "seed", 1, NULL, 'S' },
        { "ns", 1, NULL, 'n' }, { "limit", 1, NULL, 'l' },
        { "watch-period", 1, NULL, 'p' }, { "until-stop", 1, NULL, 'u' },
        { "bindir", 1, NULL, 'B' }, { "timeout", 1, NULL, 'o' },
        { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    *o = (s_opts_t) { { 100000, 1000000, 4000000 }, 3, 10000, 6, 1,
                      "merge_sort", 0, "0.2", 0, NULL, 30000, 0, 1 };
    int c, rc;
    while ((c = getopt_long(argc, argv, "s:c:D:n:l:u:h", opts, NULL)) != -1)
        if ((rc = s_option(c, optarg, o)) >= 0)
            return rc;
    if (optind < argc) {
        fprintf(stderr, "merge_sort: unexpected argument '%s'\n"
                "Try 'merge_sort --help'.\n", argv[optind]);
        return 2;
    }
    long nnodes = 1, rank = 0;
    const char *e = getenv("TELEM_NNODES"), *r = getenv("TELEM_RANK");
    if ((e && s_long(e, 1, 100000, &nnodes))
        || (r && s_long(r, 0, nnodes - 1, &rank))) {
        fprintf(stderr, "merge_sort: bad TELEM_NNODES or TELEM_RANK\n");
        return 2;
    }
    o->nnodes = (int) nnodes;
    o->rank = (int) rank;
    if (!o->bindir) {
        s_default_bindir(bindir, size);
        o->bindir = bindir;
    }
    return -1;
}

/* After round `round`: whether every rank sorts another round.  Rank 0
 * decides (another round while no cut-off was seen, within the bound) and
 * tells the others through the dictionary. */
static int
s_more(const s_opts_t *o, ddict_t *d, int round, int cutoff, int *more)
{
    char key[32], ev[DDICT_NS_LIMIT + 32];
    int klen = snprintf(key, sizeof key, "round/%d", round);
    snprintf(ev, sizeof ev, "%s/round/%d", o->ns, round);
    if (o->rank == 0) {
        *more = cutoff < 0 && round + 1 < o->nsizes + o->until_stop;
        int rc = ddict_put(d, key, (size_t) klen, *more ? "1" : "0", 1, NULL);
        return rc ? rc : ddict_event_set(d, ev);
    }
    int rc;
    while ((rc = ddict_event_wait(d, ev, o->timeout_ms)) == TELEM_ETIMEDOUT)
        ;
    void *val = NULL;
    size_t vlen;
    if (rc == 0 && (rc = ddict_get(d, key, (size_t) klen, &val, &vlen, NULL))
                       == 0)
        *more = vlen == 1 && *(char *) val == '1';
    free(val);
    return rc;
}

/* Sorts every size (and, with --until-stop, the last one again until the
 * stop cuts the recursion).  Returns 0 or the first error. */
static int
s_rounds(const s_opts_t *o, s_shared_t *sh, ddict_t *d)
{
    int rc = 0, more = 1;
    for (int round = 0; rc == 0 && more; round++) {
        long size = o->sizes[round < o->nsizes ? round : o->nsizes - 1];
        int cutoff = -1;
        rc = s_sort_share(o, sh, d, round, size);
        if (rc == 0 && o->rank == 0)
            rc = s_check(o, d, round, size, &cutoff);
        if (rc)
            fprintf(stderr, "merge_sort: size %ld failed: %s\n", size,
                    telem_strerror(rc));
        else if (round + 1 >= o->nsizes && !o->until_stop)
            more = 0;
        else if (round + 1 >= o->nsizes)
            rc = s_more(o, d, round, cutoff, &more);
    }
    return rc;
}

int
main(int argc, char **argv)
{
    s_opts_t o;
    char bindir[1024];
    int rc = s_parse(argc, argv, &o, bindir, sizeof bindir);
    if (rc >= 0)
        return rc;
    pid_t watch = o.rank == 0 && o.limit > 0 ? s_watch_start(&o) : -1;
    int err = 0;
    s_shared_t *sh = s_shared_alloc(sizeof *sh);
    ddict_t *d = ddict_open(NULL, o.ns, o.timeout_ms, &err);
    telem_init();
    s_watch_t w = { &o, sh, 0 };
    pthread_t waiter;
    int have_waiter = sh && d
        && pthread_create(&waiter, NULL, s_stop_waiter, &w) == 0;
    if (!sh || !d) {
        fprintf(stderr, "merge_sort: %s\n", sh ? telem_strerror(err)
                                               : "out of memory");
        rc = 1;
    }
    else if (o.limit > 0 && o.rank == 0 && watch < 0)
        rc = 1;
    else
        rc = s_rounds(&o, sh, d) ? 1 : 0;
    w.done = 1;
    if (have_waiter)
        pthread_join(waiter, NULL);
    if (watch > 0) {
        kill(watch, SIGTERM);
        waitpid(watch, NULL, 0);
    }
    ddict_close(&d);
    if (sh)
        munmap(sh, sizeof *sh);
    telem_finalize();
    return rc;
}
