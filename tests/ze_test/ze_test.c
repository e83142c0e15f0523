/* ze_test.c - TEST ONLY: a library with Level Zero's C ABI (spec 1.5) for
 * exactly the entry points telem uses, answering values scripted in a file.
 *
 * Built by the tests as libze_test.so, with both device-finding sets
 * (zesInit/zesDriverGet/zesDeviceGet and zeInit/zeDriverGet/zeDeviceGet),
 * and with ZE_TEST_CORE as libze_test_core.so, with the core set only, as
 * Debian 12's loader 1.8: there Sysman answers only when
 * ZES_ENABLE_SYSMAN=1 was set before zeInit.  Never installed; telemd
 * loads it only when a test gives --ze-lib.
 *
 * Init reads the file named by $TELEM_ZE_TEST_SCRIPT, one statement a line:
 *   gpus N | init_fail CODE
 *   gpu I name|serial|driver TEXT             (TEXT: the rest of the line)
 *   gpu I pci DOMAIN BUS DEVICE FUNCTION
 *   gpu I engine ACTIVE_US TS_US STEP_ACTIVE STEP_TS   (group ALL)
 *   gpu I energy UJ TS_US STEP_UJ STEP_TS     each query adds the steps
 *   gpu I mem SIZE FREE                       one module per line
 *   gpu I temp TYPE CELSIUS                   one sensor per line
 *   gpu I freq TYPE ACTUAL_MHZ THROTTLE_BITS  one domain per line
 *   gpu I ras TYPE C0 C1 C2 C3 C4 C5 C6       one error set per line
 *   gpu I firmware NAME VERSION
 *   gpu I fail WHAT CODE   WHAT: engine, energy, mem, temp, freq, ras,
 *                          properties, pci: that query returns CODE
 *   gpu I lost             every query returns ZE_RESULT_ERROR_DEVICE_LOST
 * A malformed line makes init print it and return ZE_RESULT_ERROR_UNKNOWN.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_script.h"

#define API __attribute__((visibility("default")))
#define OK 0u
#define E_UNINIT 0x78000001u
#define E_UNSUPPORTED 0x78000003u
#define E_LOST 0x70000001u
#define E_UNKNOWN 0x7ffffffeu
#define GPUS_MAX 8
#define RES_MAX 4
#define TEXT_MAX 64

enum { R_ENGINE, R_ENERGY, R_MEM, R_TEMP, R_FREQ, R_RAS, R_FW, R_N };
enum { F_PROPS = R_N, F_PCI, F_N };
static const char *const s_kinds[F_N] = {
    "engine", "energy", "mem", "temp", "freq", "ras", "firmware",
    "properties", "pci"
};

typedef struct gpu gpu_t;
typedef struct {                /* one resource: what its handle points at */
    gpu_t *gpu;
    int kind;
    uint32_t type;
    unsigned long long v[8];
    char text[2][TEXT_MAX];
    unsigned long long calls;
} res_t;

struct gpu {
    char text[3][TEXT_MAX];     /* name, serial, driver */
    bool have_pci, lost;
    unsigned long long pci[4];
    uint32_t fail[F_N];
    res_t res[R_N][RES_MAX];
    uint32_t nres[R_N];
};

static struct {
    unsigned int ngpus;
    gpu_t gpus[GPUS_MAX];
    unsigned int init_fail;
    bool loaded, sysman;
    int driver;                 /* the one driver handle's storage */
} S;

static bool
s_resource(gpu_t *g, int kind, char *save)
{
    static const int arity[R_N] = {4, 4, 2, 2, 3, 8, 0};
    if (g->nres[kind] == RES_MAX)
        return false;
    res_t *r = &g->res[kind][g->nres[kind]];
    *r = (res_t) {.gpu = g, .kind = kind};
    if (kind == R_FW) {
        char *name = gts_tok(&save);
        char *ver = gts_tok(&save);
        if (!name || !ver || strlen(name) >= TEXT_MAX
            || strlen(ver) >= TEXT_MAX)
            return false;
        strcpy(r->text[0], name);
        strcpy(r->text[1], ver);
    } else if (!gts_nums(&save, r->v, arity[kind]))
        return false;
    if (kind == R_TEMP || kind == R_FREQ || kind == R_RAS)
        r->type = (uint32_t) r->v[0];
    g->nres[kind]++;
    return true;
}

static bool
s_gpu_line(char *save)
{
    unsigned long long i, v;
    static const char *const texts[3] = {"name", "serial", "driver"};
    if (!gts_num(gts_tok(&save), &i) || i >= S.ngpus)
        return false;
    gpu_t *g = &S.gpus[i];
    char *what = gts_tok(&save);
    int t = gts_key(what, texts, 3);
    if (t >= 0)
        return gts_rest(save, g->text[t], TEXT_MAX);
    if (what && strcmp(what, "lost") == 0)
        return (g->lost = true, gts_tok(&save) == NULL);
    if (what && strcmp(what, "pci") == 0)
        return (g->have_pci = true, gts_nums(&save, g->pci, 4));
    if (what && strcmp(what, "fail") == 0) {
        int k = gts_key(gts_tok(&save), s_kinds, F_N);
        if (k < 0 || !gts_num(gts_tok(&save), &v) || !v)
            return false;
        g->fail[k] = (uint32_t) v;
        return gts_tok(&save) == NULL;
    }
    int k = gts_key(what, s_kinds, F_N);
    return k >= 0 && k < R_N && s_resource(g, k, save);
}

static bool
s_line(char *line)
{
    char *save = NULL;
    char *tok = strtok_r(line, " \t", &save);
    if (!tok || tok[0] == '#')
        return true;
    if (strcmp(tok, "gpu") == 0)
        return s_gpu_line(save);
    return gts_common(tok, &save, &S.ngpus, GPUS_MAX, &S.init_fail) == 1;
}

static uint32_t
s_init(bool sysman)
{
    memset(&S, 0, sizeof S);
    S.ngpus = 1;
    uint32_t rc = gts_read("ze_test", "TELEM_ZE_TEST_SCRIPT", NULL, s_line)
                  ? OK : E_UNKNOWN;
    if (rc == OK)
        rc = S.init_fail;
    S.loaded = rc == OK;
    const char *env = getenv("ZES_ENABLE_SYSMAN");
    S.sysman = sysman || (env && strcmp(env, "1") == 0);
    return rc;
}

static uint32_t
s_drivers(uint32_t *n, void **drv)
{
    if (!S.loaded)
        return E_UNINIT;
    if (*n == 0 || !drv)
        return (*n = 1, OK);
    *n = 1;
    drv[0] = &S.driver;
    return OK;
}

static uint32_t
s_devices(void *drv, uint32_t *n, void **devs)
{
    if (!S.loaded || drv != &S.driver)
        return E_UNINIT;
    uint32_t count = *n < S.ngpus ? *n : S.ngpus;
    for (uint32_t i = 0; devs && i < count; i++)
        devs[i] = &S.gpus[i];
    *n = devs ? count : S.ngpus;
    return OK;
}

API uint32_t zeInit(uint32_t flags) { (void) flags; return s_init(false); }
API uint32_t zeDriverGet(uint32_t *n, void **d) { return s_drivers(n, d); }
API uint32_t zeDeviceGet(void *drv, uint32_t *n, void **d)
{ return s_devices(drv, n, d); }
#ifndef ZE_TEST_CORE
API uint32_t zesInit(uint32_t flags) { (void) flags; return s_init(true); }
API uint32_t zesDriverGet(uint32_t *n, void **d) { return s_drivers(n, d); }
API uint32_t zesDeviceGet(void *drv, uint32_t *n, void **d)
{ return s_devices(drv, n, d); }
#endif

/* ---- Sysman -------------------------------------------------------------- */

static uint32_t
s_dev(void *dev, int what, gpu_t **g)
{
    *g = dev;
    if (!S.loaded || !*g)
        return E_UNINIT;
    if (!S.sysman)
        return E_UNINIT;        /* a core handle without Sysman enabled */
    if ((*g)->lost)
        return E_LOST;
    return (*g)->fail[what];
}

static uint32_t
s_enum(void *dev, int kind, uint32_t *n, void **h)
{
    gpu_t *g;
    uint32_t rc = s_dev(dev, kind, &g);
    if (rc)
        return rc;
    uint32_t count = h ? (*n < g->nres[kind] ? *n : g->nres[kind])
                       : g->nres[kind];
    for (uint32_t i = 0; h && i < count; i++)
        h[i] = &g->res[kind][i];
    *n = count;
    return OK;
}

/* The resource behind h, or an error code in *rc. */
static res_t *
s_res(void *h, uint32_t *rc)
{
    res_t *r = h;
    *rc = r ? s_dev(r->gpu, r->kind, &(gpu_t *) {NULL}) : E_UNINIT;
    return *rc ? NULL : r;
}

typedef struct {
    uint32_t stype;
    void *pNext;
    uint32_t type;
    uint8_t onSubdevice;
    uint32_t subdeviceId;
} head_t;

static uint32_t
s_props(void *h, void *out)
{
    uint32_t rc;
    res_t *r = s_res(h, &rc);
    if (!r)
        return rc;
    head_t *p = out;
    p->type = r->kind == R_ENGINE ? 0 : r->type;
    p->onSubdevice = 0;
    p->subdeviceId = 0;
    return OK;
}

API uint32_t zesDeviceEnumEngineGroups(void *d, uint32_t *n, void **h)
{ return s_enum(d, R_ENGINE, n, h); }
API uint32_t zesDeviceEnumPowerDomains(void *d, uint32_t *n, void **h)
{ return s_enum(d, R_ENERGY, n, h); }
API uint32_t zesDeviceEnumMemoryModules(void *d, uint32_t *n, void **h)
{ return s_enum(d, R_MEM, n, h); }
API uint32_t zesDeviceEnumTemperatureSensors(void *d, uint32_t *n, void **h)
{ return s_enum(d, R_TEMP, n, h); }
API uint32_t zesDeviceEnumFrequencyDomains(void *d, uint32_t *n, void **h)
{ return s_enum(d, R_FREQ, n, h); }
API uint32_t zesDeviceEnumRasErrorSets(void *d, uint32_t *n, void **h)
{ return s_enum(d, R_RAS, n, h); }
API uint32_t zesDeviceEnumFirmwares(void *d, uint32_t *n, void **h)
{ return s_enum(d, R_FW, n, h); }

API uint32_t zesEngineGetProperties(void *h, void *p) { return s_props(h, p); }
API uint32_t zesTemperatureGetProperties(void *h, void *p)
{ return s_props(h, p); }
API uint32_t zesFrequencyGetProperties(void *h, void *p)
{ return s_props(h, p); }
API uint32_t zesRasGetProperties(void *h, void *p) { return s_props(h, p); }
API uint32_t zesMemoryGetProperties(void *h, void *p) { return s_props(h, p); }

API uint32_t zesPowerGetProperties(void *h, void *out)
{
    uint32_t rc;
    if (!s_res(h, &rc))
        return rc;
    struct { uint32_t s; void *n; uint8_t on_sub; } *p = out;
    p->on_sub = 0;
    return OK;
}

/* A counter that moves by its steps at each query. */
static uint32_t
s_counter(void *h, uint64_t *out)
{
    uint32_t rc;
    res_t *r = s_res(h, &rc);
    if (!r)
        return rc;
    out[0] = r->v[0] + r->calls * r->v[2];
    out[1] = r->v[1] + r->calls * r->v[3];
    r->calls++;
    return OK;
}

API uint32_t zesEngineGetActivity(void *h, uint64_t *s)
{ return s_counter(h, s); }
API uint32_t zesPowerGetEnergyCounter(void *h, uint64_t *s)
{ return s_counter(h, s); }

API uint32_t zesMemoryGetState(void *h, void *out)
{
    uint32_t rc;
    res_t *r = s_res(h, &rc);
    if (!r)
        return rc;
    struct { uint32_t s; const void *n; uint32_t health; uint64_t free, size; }
        *st = out;
    st->health = 1;
    st->size = r->v[0];
    st->free = r->v[1];
    return OK;
}

API uint32_t zesTemperatureGetState(void *h, double *t)
{
    uint32_t rc;
    res_t *r = s_res(h, &rc);
    if (!r)
        return rc;
    *t = (double) r->v[1];
    return OK;
}

API uint32_t zesFrequencyGetState(void *h, void *out)
{
    uint32_t rc;
    res_t *r = s_res(h, &rc);
    if (!r)
        return rc;
    struct { uint32_t s; const void *n; double volt, req, tdp, eff, actual;
             uint32_t reasons; } *st = out;
    st->volt = st->req = st->tdp = st->eff = -1;
    st->actual = (double) r->v[1];
    st->reasons = (uint32_t) r->v[2];
    return OK;
}

API uint32_t zesRasGetState(void *h, uint8_t clear, void *out)
{
    uint32_t rc;
    res_t *r = s_res(h, &rc);
    if (!r)
        return rc;
    if (clear)
        return E_UNSUPPORTED;
    struct { uint32_t s; const void *n; uint64_t c[7]; } *st = out;
    for (int k = 0; k < 7; k++)
        st->c[k] = r->v[1 + k];
    return OK;
}

API uint32_t zesFirmwareGetProperties(void *h, void *out)
{
    uint32_t rc;
    res_t *r = s_res(h, &rc);
    if (!r)
        return rc;
    struct { uint32_t s; void *n; uint8_t on_sub; uint32_t sub;
             uint8_t ctl; char name[64], version[64]; } *p = out;
    memcpy(p->name, r->text[0], TEXT_MAX);
    memcpy(p->version, r->text[1], TEXT_MAX);
    return OK;
}

API uint32_t zesDeviceGetProperties(void *dev, void *out)
{
    gpu_t *g;
    uint32_t rc = s_dev(dev, F_PROPS, &g);
    if (rc)
        return rc;
    struct { uint32_t s; void *n; struct { uint32_t s; void *n;
             uint32_t a[6]; uint64_t b; uint32_t c[7]; uint64_t d;
             uint32_t e[2]; uint8_t uuid[16]; char name[256]; } core;
             uint32_t nsub; char serial[64], board[64], brand[64],
             model[64], vendor[64], driver[64]; } *p = out;
    for (int k = 0; k < 16; k++)
        p->core.uuid[k] = (uint8_t) (0x10 * (g - S.gpus) + k);
    snprintf(p->core.name, sizeof p->core.name, "%s", g->text[0]);
    memcpy(p->serial, g->text[1], TEXT_MAX);
    memcpy(p->driver, g->text[2], TEXT_MAX);
    snprintf(p->vendor, sizeof p->vendor, "Intel(R) Corporation");
    return OK;
}

API uint32_t zesDevicePciGetProperties(void *dev, void *out)
{
    gpu_t *g;
    uint32_t rc = s_dev(dev, F_PCI, &g);
    if (rc || !g->have_pci)
        return rc ? rc : E_UNSUPPORTED;
    struct { uint32_t s; void *n; uint32_t a[4]; } *p = out;
    for (int k = 0; k < 4; k++)
        p->a[k] = (uint32_t) g->pci[k];
    return OK;
}
