/* nvml_test.c - TEST ONLY: a library with NVML's C ABI for exactly the
 * entry points telem uses, answering values scripted in a file.
 *
 * Built by the tests as libnvml_test.so (and, with NVML_TEST_OLD, as
 * libnvml_test_old.so: an older driver without nvmlDeviceGetRemappedRows,
 * nvmlDeviceGetFieldValues and nvmlDeviceGetTotalEnergyConsumption, with
 * the clock-event reasons and the event wait under their older names).
 * Never installed; telemd loads it only when a test gives --nvml-lib.
 *
 * The first nvmlInit_v2 (NVML counts inits and shutdowns; the script is
 * read again only after the last shutdown) reads the file named by
 * $TELEM_NVML_TEST_SCRIPT, one
 * statement a line ('#' starts a comment):
 *   gpus N                      GPUs NVML reports (1-16)
 *   driver TEXT | nvml TEXT     driver and NVML versions
 *   init_fail CODE              nvmlInit_v2 returns CODE
 *   gpu I name|uuid|pci|vbios|inforom TEXT    (TEXT: the rest of the line)
 *   gpu I util GPU MEM | power_mw V | temp V | memory TOTAL USED
 *   gpu I clock_sm_mhz V | clock_mem_mhz V | power_limit_mw V | energy_mj V
 *   gpu I clocks_event MASK | ecc CORRECTED UNCORRECTED
 *   gpu I retired SBE DBE PENDING | remapped CORR UNC PENDING FAILURE
 *   gpu I pcie_replay V | recovery ACTION
 *   gpu I nvlink LINK ACTIVE CRC_FLIT CRC_DATA REPLAY RECOVERY
 *   gpu I fail WHAT CODE        the query WHAT (a key above, or handle,
 *                               nvlink_errors, register) returns CODE
 *   gpu I lost                  every query of GPU I returns GPU_IS_LOST
 *   xid I CODE AFTER_MS         an XID event on GPU I, delivered by the
 *                               event wait once AFTER_MS passed since init
 *   at AFTER_MS gpu I ...       a gpu statement that takes effect at the
 *                               first query once AFTER_MS passed since
 *                               init (an ECC count that grows, a GPU lost
 *                               mid-run)
 * The file's name may hold "{node}", replaced by $TELEM_NODE (as the
 * launcher sets it for each telemd), so that each virtual node of one
 * machine reads its own script.
 * Numbers are C integers (0x.. allowed).  A value never set is
 * NVML_ERROR_NOT_SUPPORTED, as a board without the feature answers; an
 * unset recovery is a field whose own nvmlReturn is NOT_SUPPORTED.  A
 * malformed line makes nvmlInit_v2 print it on stderr and return
 * NVML_ERROR_UNKNOWN (999).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_test_script.h"

#define API __attribute__((visibility("default")))
#define OK 0
#define E_INVALID 2
#define E_NOT_SUPPORTED 3
#define E_INSUFFICIENT_SIZE 7
#define E_TIMEOUT 10
#define E_LOST 15
#define E_UNKNOWN 999
#define GPUS_MAX 16
#define LINKS_MAX 18
#define XIDS_MAX 256
#define LATER_MAX 64
#define TEXT_MAX 96

enum {                          /* scripted values, by key */
    K_UTIL, K_POWER, K_TEMP, K_MEMORY, K_CLOCK_SM, K_CLOCK_MEM, K_LIMIT,
    K_ENERGY, K_EVENT, K_ECC, K_RETIRED, K_REMAPPED, K_PCIE, K_RECOVERY,
    K_NAME, K_UUID, K_PCI, K_VBIOS, K_INFOROM, K_HANDLE, K_NVLINK_ERRORS,
    K_REGISTER, K_N
};
static const char *const s_keys[K_N] = {
    "util", "power_mw", "temp", "memory", "clock_sm_mhz", "clock_mem_mhz",
    "power_limit_mw", "energy_mj", "clocks_event", "ecc", "retired",
    "remapped", "pcie_replay", "recovery", "name", "uuid", "pci", "vbios",
    "inforom", "handle", "nvlink_errors", "register"
};
static const int s_arity[K_N] = {2, 1, 1, 2, 1, 1, 1, 1, 1, 2, 3, 4, 1, 1};

typedef struct {
    bool set[K_N];
    int fail[K_N];              /* 0 or the code to return */
    unsigned long long v[K_N][4];
    char text[K_N][TEXT_MAX];
    bool lost;
    bool link[LINKS_MAX];
    unsigned long long link_v[LINKS_MAX][5];
    bool registered;
} gpu_t;

typedef struct {
    unsigned int gpu;
    unsigned long long code;
    long long after_ms;
    bool delivered;
} xid_t;

typedef struct {
    long long after_ms;
    char line[256];
    bool applied;
} later_t;

static struct {
    pthread_mutex_t lock;
    later_t later[LATER_MAX];
    unsigned int nlater;
    unsigned int ngpus;
    gpu_t gpus[GPUS_MAX];
    char driver[TEXT_MAX], nvml[TEXT_MAX];
    int init_fail;
    xid_t xids[XIDS_MAX];
    unsigned int nxids;
    struct timespec t0;
    int event_set;              /* the one event set's storage */
    int refs;                   /* inits not yet shut down, as NVML counts */
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- the script ---------------------------------------------------------- */

/* "gpu I ..." after "gpu": false when malformed. */
static bool
s_gpu_line(char *save)
{
    unsigned long long i, v[5];
    char *tok = gts_tok(&save);
    if (!gts_num(tok, &i) || i >= S.ngpus)
        return false;
    gpu_t *g = &S.gpus[i];
    char *what = gts_tok(&save);
    if (!what)
        return false;
    if (strcmp(what, "lost") == 0)
        return (g->lost = true, gts_tok(&save) == NULL);
    if (strcmp(what, "fail") == 0) {
        int k = gts_key(gts_tok(&save), s_keys, K_N);
        if (k < 0 || !gts_num(gts_tok(&save), &v[0]) || v[0] == 0)
            return false;
        g->fail[k] = (int) v[0];
        return gts_tok(&save) == NULL;
    }
    if (strcmp(what, "nvlink") == 0) {
        for (int k = 0; k < 6; k++)
            if (!gts_num(gts_tok(&save), k ? &v[k - 1] : &i))
                return false;
        if (i >= LINKS_MAX)
            return false;
        g->link[i] = true;
        memcpy(g->link_v[i], v, sizeof v);
        return gts_tok(&save) == NULL;
    }
    int k = gts_key(what, s_keys, K_N);
    if (k < 0 || k == K_HANDLE || k == K_NVLINK_ERRORS || k == K_REGISTER)
        return false;
    g->set[k] = true;
    if (k >= K_NAME)            /* text: the rest of the line */
        return gts_rest(save, g->text[k], TEXT_MAX);
    for (int a = 0; a < s_arity[k]; a++)
        if (!gts_num(gts_tok(&save), &g->v[k][a]))
            return false;
    return gts_tok(&save) == NULL;
}

/* "at AFTER_MS gpu I ...": kept for later, its gpu statement checked now
 * on a copy of the GPUs. */
static bool
s_later(char *save)
{
    unsigned long long ms;
    if (!gts_num(gts_tok(&save), &ms) || S.nlater == LATER_MAX)
        return false;
    char *rest = save + strspn(save, " \t"), copy[256];
    if (strncmp(rest, "gpu", 3) != 0 || strlen(rest) >= sizeof copy)
        return false;
    snprintf(copy, sizeof copy, "%s", rest);
    static gpu_t keep[GPUS_MAX];
    memcpy(keep, S.gpus, sizeof keep);
    char *save2 = NULL;
    strtok_r(copy, " \t", &save2);
    bool ok = s_gpu_line(save2);
    memcpy(S.gpus, keep, sizeof keep);
    if (!ok)
        return false;
    later_t *l = &S.later[S.nlater++];
    l->after_ms = (long long) ms;
    l->applied = false;
    snprintf(l->line, sizeof l->line, "%s", rest);
    return true;
}

static bool
s_line(char *line)
{
    char *save = NULL;
    unsigned long long a, b, c;
    char *tok = strtok_r(line, " \t", &save);
    if (!tok || tok[0] == '#')
        return true;
    if (strcmp(tok, "at") == 0)
        return s_later(save);
    if (strcmp(tok, "gpu") == 0)
        return s_gpu_line(save);
    if (strcmp(tok, "driver") == 0 || strcmp(tok, "nvml") == 0)
        return gts_rest(save, tok[0] == 'd' ? S.driver : S.nvml, TEXT_MAX);
    if (strcmp(tok, "xid") == 0) {
        if (!gts_num(gts_tok(&save), &a) || a >= S.ngpus
            || !gts_num(gts_tok(&save), &b)
            || !gts_num(gts_tok(&save), &c)
            || S.nxids == XIDS_MAX)
            return false;
        S.xids[S.nxids++] = (xid_t) {(unsigned) a, b, (long long) c, false};
        return true;
    }
    unsigned fail = 0;
    int rc = gts_common(tok, &save, &S.ngpus, GPUS_MAX, &fail);
    if (rc == 1 && fail)
        S.init_fail = (int) fail;
    return rc == 1;
}

/* The script's name, "{node}" replaced by $TELEM_NODE. */
static const char *
s_path(char *buf, size_t size)
{
    const char *path = getenv("TELEM_NVML_TEST_SCRIPT");
    const char *at = path ? strstr(path, "{node}") : NULL;
    const char *node = getenv("TELEM_NODE");
    if (!at)
        return path;
    int n = snprintf(buf, size, "%.*s%s%s", (int) (at - path), path,
                     node ? node : "", at + 6);
    return n > 0 && (size_t) n < size ? buf : NULL;
}

static int
s_load(void)
{
    char pbuf[4096];
    const char *path = s_path(pbuf, sizeof pbuf);
    memset(S.gpus, 0, sizeof S.gpus);
    S.ngpus = 1;
    S.nxids = 0;
    S.nlater = 0;
    S.init_fail = 0;
    S.driver[0] = S.nvml[0] = '\0';
    return gts_read("nvml_test", "TELEM_NVML_TEST_SCRIPT", path ? path : "",
                    s_line) ? OK : E_UNKNOWN;
}

/* ---- the library --------------------------------------------------------- */

API int nvmlInit_v2(void)
{
    pthread_mutex_lock(&S.lock);
    int rc = OK;
    if (S.refs == 0) {
        rc = s_load();
        if (rc == OK)
            rc = S.init_fail;
        clock_gettime(CLOCK_MONOTONIC, &S.t0);
    }
    if (rc == OK)
        S.refs++;
    pthread_mutex_unlock(&S.lock);
    return rc;
}

API int nvmlShutdown(void)
{
    pthread_mutex_lock(&S.lock);
    if (S.refs > 0)
        S.refs--;
    pthread_mutex_unlock(&S.lock);
    return OK;
}

API int nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = S.ngpus;
    return OK;
}

API int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
    if (i >= S.ngpus)
        return E_INVALID;
    if (S.gpus[i].fail[K_HANDLE])
        return S.gpus[i].fail[K_HANDLE];
    *dev = &S.gpus[i];
    return OK;
}

static long long s_elapsed_ms(void);

/* Applies the "at" statements that are due. */
static void
s_apply_later(void)
{
    pthread_mutex_lock(&S.lock);
    for (unsigned int i = 0; i < S.nlater; i++) {
        later_t *l = &S.later[i];
        if (l->applied || l->after_ms > s_elapsed_ms())
            continue;
        char copy[256], *save = NULL;
        snprintf(copy, sizeof copy, "%s", l->line);
        strtok_r(copy, " \t", &save);
        s_gpu_line(save);            /* checked when the script was read */
        l->applied = true;
    }
    pthread_mutex_unlock(&S.lock);
}

/* The scripted answer of key k on dev: OK with *g, or the code. */
static int
s_get(void *dev, int k, gpu_t **g)
{
    s_apply_later();
    *g = dev;
    if (!*g)
        return E_INVALID;
    if ((*g)->lost)
        return E_LOST;
    if ((*g)->fail[k])
        return (*g)->fail[k];
    return (*g)->set[k] || k == K_REGISTER || k == K_NVLINK_ERRORS
           ? OK : E_NOT_SUPPORTED;
}

#define GET(dev, k) gpu_t *g; int rc_ = s_get(dev, k, &g); if (rc_) return rc_

API int nvmlDeviceGetUtilizationRates(void *dev, unsigned int *u)
{
    GET(dev, K_UTIL);
    u[0] = (unsigned) g->v[K_UTIL][0];
    u[1] = (unsigned) g->v[K_UTIL][1];
    return OK;
}

API int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw)
{
    GET(dev, K_POWER);
    *mw = (unsigned) g->v[K_POWER][0];
    return OK;
}

API int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *t)
{
    GET(dev, K_TEMP);
    if (sensor != 0)
        return E_INVALID;
    *t = (unsigned) g->v[K_TEMP][0];
    return OK;
}

API int nvmlDeviceGetMemoryInfo(void *dev, unsigned long long *m)
{
    GET(dev, K_MEMORY);
    m[0] = g->v[K_MEMORY][0];
    m[2] = g->v[K_MEMORY][1];
    m[1] = m[0] - m[2];
    return OK;
}

API int nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz)
{
    int k = type == 1 ? K_CLOCK_SM : type == 2 ? K_CLOCK_MEM : -1;
    if (k < 0)
        return E_INVALID;
    GET(dev, k);
    *mhz = (unsigned) g->v[k][0];
    return OK;
}

API int nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned int *mw)
{
    GET(dev, K_LIMIT);
    *mw = (unsigned) g->v[K_LIMIT][0];
    return OK;
}

static int
s_clocks_event(void *dev, unsigned long long *mask)
{
    GET(dev, K_EVENT);
    *mask = g->v[K_EVENT][0];
    return OK;
}

API int nvmlDeviceGetTotalEccErrors(void *dev, int type, int counter,
                                    unsigned long long *n)
{
    GET(dev, K_ECC);
    if (type < 0 || type > 1 || counter != 0)
        return E_INVALID;
    *n = g->v[K_ECC][type];
    return OK;
}

API int nvmlDeviceGetRetiredPages(void *dev, int cause, unsigned int *count,
                                  unsigned long long *addresses)
{
    GET(dev, K_RETIRED);
    if (cause < 0 || cause > 1 || !count)
        return E_INVALID;
    unsigned int have = (unsigned) g->v[K_RETIRED][cause];
    bool fits = *count >= have;
    for (unsigned int i = 0; fits && addresses && i < have; i++)
        addresses[i] = 0x1000ULL * (i + 1);
    *count = have;
    return fits ? OK : E_INSUFFICIENT_SIZE;
}

API int nvmlDeviceGetRetiredPagesPendingStatus(void *dev, unsigned int *p)
{
    GET(dev, K_RETIRED);
    *p = g->v[K_RETIRED][2] != 0;
    return OK;
}

API int nvmlDeviceGetPcieReplayCounter(void *dev, unsigned int *n)
{
    GET(dev, K_PCIE);
    *n = (unsigned) g->v[K_PCIE][0];
    return OK;
}

API int nvmlDeviceGetNvLinkState(void *dev, unsigned int link,
                                 unsigned int *active)
{
    gpu_t *g = dev;
    if (!g)
        return E_INVALID;
    if (g->lost)
        return E_LOST;
    if (link >= LINKS_MAX || !g->link[link])
        return E_NOT_SUPPORTED;
    *active = g->link_v[link][0] != 0;
    return OK;
}

API int nvmlDeviceGetNvLinkErrorCounter(void *dev, unsigned int link,
                                        int counter, unsigned long long *v)
{
    GET(dev, K_NVLINK_ERRORS);
    if (link >= LINKS_MAX || !g->link[link] || counter < 0 || counter > 3)
        return E_NOT_SUPPORTED;
    static const int col[4] = {3, 4, 1, 2};  /* replay, recovery, flit, data */
    *v = g->link_v[link][col[counter]];
    return OK;
}

static int
s_text(void *dev, int k, char *buf, unsigned int len)
{
    GET(dev, k);
    if (strlen(g->text[k]) >= len)
        return E_INSUFFICIENT_SIZE;
    memcpy(buf, g->text[k], strlen(g->text[k]) + 1);
    return OK;
}

API int nvmlDeviceGetName(void *dev, char *b, unsigned int n)
{ return s_text(dev, K_NAME, b, n); }
API int nvmlDeviceGetUUID(void *dev, char *b, unsigned int n)
{ return s_text(dev, K_UUID, b, n); }
API int nvmlDeviceGetVbiosVersion(void *dev, char *b, unsigned int n)
{ return s_text(dev, K_VBIOS, b, n); }
API int nvmlDeviceGetInforomImageVersion(void *dev, char *b, unsigned int n)
{ return s_text(dev, K_INFOROM, b, n); }

API int nvmlSystemGetDriverVersion(char *b, unsigned int n)
{
    if (!S.driver[0])
        return E_NOT_SUPPORTED;
    return strlen(S.driver) < n ? (memcpy(b, S.driver, strlen(S.driver) + 1),
                                   OK) : E_INSUFFICIENT_SIZE;
}


API int nvmlSystemGetNVMLVersion(char *b, unsigned int n)
{
    if (!S.nvml[0])
        return E_NOT_SUPPORTED;
    return strlen(S.nvml) < n ? (memcpy(b, S.nvml, strlen(S.nvml) + 1), OK)
                              : E_INSUFFICIENT_SIZE;
}

typedef struct {                /* nvmlPciInfo_t (v3) */
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} pci_t;

API int nvmlDeviceGetPciInfo_v3(void *dev, pci_t *pci)
{
    GET(dev, K_PCI);
    memset(pci, 0, sizeof *pci);
    snprintf(pci->bus_id, sizeof pci->bus_id, "%.31s", g->text[K_PCI]);
    snprintf(pci->bus_id_legacy, sizeof pci->bus_id_legacy, "%.15s",
             g->text[K_PCI]);
    return OK;
}

/* ---- events ---------------------------------------------------------------- */

typedef struct {                /* nvmlEventData_t */
    void *device;
    unsigned long long event_type, event_data;
    unsigned int gpu_instance_id, compute_instance_id;
} event_t;

API int nvmlEventSetCreate(void **set)
{
    *set = &S.event_set;
    return OK;
}

API int nvmlDeviceRegisterEvents(void *dev, unsigned long long types,
                                 void *set)
{
    GET(dev, K_REGISTER);
    if (set != &S.event_set || !(types & 0x8ULL))
        return E_INVALID;
    g->registered = true;
    return OK;
}

API int nvmlEventSetFree(void *set)
{
    return set == &S.event_set ? OK : E_INVALID;
}

static long long
s_elapsed_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - S.t0.tv_sec) * 1000LL
           + (now.tv_nsec - S.t0.tv_nsec) / 1000000LL;
}

/* The next XID of a registered GPU not yet delivered, or NULL. */
static xid_t *
s_next_xid(void)
{
    xid_t *next = NULL;
    for (unsigned int i = 0; i < S.nxids; i++) {
        xid_t *x = &S.xids[i];
        if (!x->delivered && S.gpus[x->gpu].registered
            && (!next || x->after_ms < next->after_ms))
            next = x;
    }
    return next;
}

/* Blocks like NVML's wait: until the next scripted XID is due or the
 * timeout passes, whichever is first. */
static int
s_wait(void *set, event_t *ev, unsigned int timeout_ms)
{
    if (set != &S.event_set || !ev)
        return E_INVALID;
    pthread_mutex_lock(&S.lock);
    xid_t *x = s_next_xid();
    long long now = s_elapsed_ms();
    long long due = x ? x->after_ms - now : (long long) timeout_ms;
    if (due > (long long) timeout_ms)
        due = timeout_ms;
    pthread_mutex_unlock(&S.lock);
    if (due > 0) {
        struct timespec d = {due / 1000, (due % 1000) * 1000000L};
        while (nanosleep(&d, &d) != 0 && errno == EINTR)
            continue;
    }
    pthread_mutex_lock(&S.lock);
    x = s_next_xid();
    int rc = E_TIMEOUT;
    if (x && x->after_ms <= s_elapsed_ms()) {
        x->delivered = true;
        memset(ev, 0, sizeof *ev);
        ev->device = &S.gpus[x->gpu];
        ev->event_type = 0x8ULL;
        ev->event_data = x->code;
        rc = OK;
    }
    pthread_mutex_unlock(&S.lock);
    return rc;
}

#ifndef NVML_TEST_OLD
API int nvmlEventSetWait_v2(void *set, event_t *ev, unsigned int ms)
{ return s_wait(set, ev, ms); }
API int nvmlDeviceGetCurrentClocksEventReasons(void *dev,
                                               unsigned long long *mask)
{ return s_clocks_event(dev, mask); }

API int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj)
{
    GET(dev, K_ENERGY);
    *mj = g->v[K_ENERGY][0];
    return OK;
}

API int nvmlDeviceGetRemappedRows(void *dev, unsigned int *corr,
                                  unsigned int *unc, unsigned int *pending,
                                  unsigned int *failure)
{
    GET(dev, K_REMAPPED);
    *corr = (unsigned) g->v[K_REMAPPED][0];
    *unc = (unsigned) g->v[K_REMAPPED][1];
    *pending = (unsigned) g->v[K_REMAPPED][2];
    *failure = (unsigned) g->v[K_REMAPPED][3];
    return OK;
}

typedef struct {                /* nvmlFieldValue_t */
    unsigned int field_id, scope_id;
    long long timestamp, latency_usec;
    int value_type, nvml_return;
    union { double d; unsigned int ui; unsigned long long ull; } value;
} field_t;

API int nvmlDeviceGetFieldValues(void *dev, int n, field_t *f)
{
    gpu_t *g = dev;
    if (!g || n < 0 || (n && !f))
        return E_INVALID;
    for (int i = 0; i < n; i++) {
        f[i].nvml_return = s_get(dev, K_RECOVERY, &g);
        if (f[i].field_id != 230)
            f[i].nvml_return = E_NOT_SUPPORTED;
        if (f[i].nvml_return == OK) {
            f[i].value_type = 1;            /* NVML_VALUE_TYPE_UNSIGNED_INT */
            f[i].value.ui = (unsigned) g->v[K_RECOVERY][0];
        }
    }
    return g->lost ? E_LOST : OK;
}
#else
API int nvmlEventSetWait(void *set, event_t *ev, unsigned int ms)
{ return s_wait(set, ev, ms); }
API int nvmlDeviceGetCurrentClocksThrottleReasons(void *dev,
                                                  unsigned long long *mask)
{ return s_clocks_event(dev, mask); }
#endif
