/* rsmi_test.c - TEST ONLY: a library with rocm_smi's C ABI (rocm_smi_lib
 * 5.2) for exactly the entry points telem uses, answering values scripted
 * in a file.
 *
 * Built by the tests as librsmi_test.so (and, with RSMI_TEST_OLD, as
 * librsmi_test_old.so: a library without rsmi_dev_gpu_metrics_info_get and
 * rsmi_dev_energy_count_get).  Never installed; telemd loads it only when
 * a test gives --rocm-smi-lib.
 *
 * rsmi_init and rsmi_shut_down are counted, as rocm_smi counts them: the
 * first rsmi_init reads the file named by $TELEM_RSMI_TEST_SCRIPT and the
 * GPUs answer until the last rsmi_shut_down (telemd's sampler and its
 * system snapshot each hold one).  The file has one statement a line ('#'
 * starts a comment):
 *   gpus N                      GPUs rocm_smi reports (1-16)
 *   init_fail CODE              rsmi_init returns CODE
 *   driver TEXT                 the driver version
 *   gpu I name|vendor|serial|vbios TEXT       (TEXT: the rest of the line)
 *   gpu I busy PCT | mem_busy PCT | vram TOTAL USED | power_uw V
 *   gpu I cap_uw V | energy COUNT RESOLUTION_NJ | temp_edge MILLIC
 *   gpu I temp_junction MILLIC | temp_memory MILLIC | clk_sys HZ
 *   gpu I clk_mem HZ | throttle BITS [INDEP] | unique_id V | pci_id BDFID
 *   gpu I ecc BIT CORRECTABLE UNCORRECTABLE   (BIT: the block's bit, 0-13)
 *   gpu I fail WHAT CODE        the query WHAT (a key above) returns CODE
 *   gpu I gone                  every query of GPU I returns FILE_ERROR
 * rsmi_dev_gpu_metrics_info_get writes rocm_smi 5.2's 96-byte struct
 * (throttle_status BITS), or, where the throttle line has INDEP, rocm_smi
 * 6.2's 1,832-byte one, as a newer library would: the ASIC-independent
 * bits INDEP at byte 112 and every field of its own past the first 96
 * bytes all ones (not in the table).
 * Numbers are C integers.  A value never set is RSMI_STATUS_NOT_SUPPORTED.
 * A malformed line makes rsmi_init print it on stderr and return
 * RSMI_STATUS_UNKNOWN_ERROR.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_script.h"

#define API __attribute__((visibility("default")))
#define OK 0u
#define E_INVALID 1u
#define E_NOT_SUPPORTED 2u
#define E_FILE 3u
#define E_UNKNOWN 0xFFFFFFFFu
#define GPUS_MAX 16
#define TEXT_MAX 96

enum {
    K_BUSY, K_MEM_BUSY, K_VRAM, K_POWER, K_CAP, K_ENERGY, K_TEDGE,
    K_TJUNCTION, K_TMEM, K_CLK_SYS, K_CLK_MEM, K_THROTTLE, K_UID, K_PCI,
    K_ECC, K_NAME, K_VENDOR, K_SERIAL, K_VBIOS, K_N
};
static const char *const s_keys[K_N] = {
    "busy", "mem_busy", "vram", "power_uw", "cap_uw", "energy", "temp_edge",
    "temp_junction", "temp_memory", "clk_sys", "clk_mem", "throttle",
    "unique_id", "pci_id", "ecc", "name", "vendor", "serial", "vbios"
};
static const int s_arity[K_ECC] = {1, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1};

typedef struct {
    bool set[K_N], gone, metrics_v6;
    uint32_t fail[K_N];
    unsigned long long v[K_N][2];
    bool ecc[14];
    unsigned long long ecc_v[14][2];
    char text[K_N][TEXT_MAX];
} gpu_t;

static struct {
    unsigned int ngpus;
    gpu_t gpus[GPUS_MAX];
    char driver[TEXT_MAX];
    unsigned int init_fail;
    bool loaded;
    unsigned int refs;          /* rsmi_init calls not shut down yet */
} S;
static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;

/* "gpu I fail WHAT CODE": the query WHAT answers CODE. */
static bool
s_fail(gpu_t *g, char *save)
{
    unsigned long long v;
    int k = gts_key(gts_tok(&save), s_keys, K_N);
    if (k < 0 || !gts_num(gts_tok(&save), &v) || !v)
        return false;
    g->fail[k] = (uint32_t) v;
    return gts_tok(&save) == NULL;
}

static bool
s_gpu_line(char *save)
{
    unsigned long long i, v[3];
    if (!gts_num(gts_tok(&save), &i) || i >= S.ngpus)
        return false;
    gpu_t *g = &S.gpus[i];
    char *what = gts_tok(&save);
    if (what && strcmp(what, "gone") == 0)
        return (g->gone = true, gts_tok(&save) == NULL);
    if (what && strcmp(what, "fail") == 0)
        return s_fail(g, save);
    int k = gts_key(what, s_keys, K_N);
    if (k < 0)
        return false;
    g->set[k] = true;
    if (k >= K_NAME)
        return gts_rest(save, g->text[k], TEXT_MAX);
    int n = k == K_ECC ? 3 : s_arity[k];
    for (int a = 0; a < n; a++)
        if (!gts_num(gts_tok(&save), &v[a]))
            return false;
    if (k == K_THROTTLE) {
        char *indep = gts_tok(&save);
        g->metrics_v6 = indep != NULL;
        if (indep && !gts_num(indep, &v[1]))
            return false;
    }
    if (k == K_ECC) {
        if (v[0] >= 14)
            return false;
        g->ecc[v[0]] = true;
        memcpy(g->ecc_v[v[0]], v + 1, sizeof g->ecc_v[0]);
    } else
        memcpy(g->v[k], v, sizeof g->v[k]);
    return gts_tok(&save) == NULL;
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
    if (strcmp(tok, "driver") == 0)
        return gts_rest(save, S.driver, TEXT_MAX);
    return gts_common(tok, &save, &S.ngpus, GPUS_MAX, &S.init_fail) == 1;
}

static uint32_t
s_load(void)
{
    memset(&S, 0, sizeof S);
    S.ngpus = 1;
    return gts_read("rsmi_test", "TELEM_RSMI_TEST_SCRIPT", NULL, s_line)
           ? OK : E_UNKNOWN;
}

/* ---- the library ------------------------------------------------------- */

API uint32_t rsmi_init(uint64_t flags)
{
    (void) flags;
    pthread_mutex_lock(&s_lock);
    uint32_t rc = OK;
    if (S.refs == 0) {
        rc = s_load();
        if (rc == OK)
            rc = S.init_fail;
        S.loaded = rc == OK;
    }
    if (rc == OK)
        S.refs++;
    pthread_mutex_unlock(&s_lock);
    return rc;
}

API uint32_t rsmi_shut_down(void)
{
    pthread_mutex_lock(&s_lock);
    if (S.refs > 0 && --S.refs == 0)
        S.loaded = false;
    pthread_mutex_unlock(&s_lock);
    return OK;
}

API uint32_t rsmi_num_monitor_devices(uint32_t *n)
{
    *n = S.loaded ? S.ngpus : 0;
    return OK;
}

/* The scripted answer of key k on GPU i: OK with *g, or the code. */
static uint32_t
s_get(uint32_t i, int k, gpu_t **g)
{
    if (!S.loaded || i >= S.ngpus)
        return E_INVALID;
    *g = &S.gpus[i];
    if ((*g)->gone)
        return E_FILE;
    if ((*g)->fail[k])
        return (*g)->fail[k];
    return (*g)->set[k] ? OK : E_NOT_SUPPORTED;
}

#define GET(i, k) gpu_t *g; uint32_t rc_ = s_get(i, k, &g); if (rc_) return rc_

API uint32_t rsmi_dev_busy_percent_get(uint32_t i, uint32_t *p)
{ GET(i, K_BUSY); *p = (uint32_t) g->v[K_BUSY][0]; return OK; }

API uint32_t rsmi_dev_memory_busy_percent_get(uint32_t i, uint32_t *p)
{ GET(i, K_MEM_BUSY); *p = (uint32_t) g->v[K_MEM_BUSY][0]; return OK; }

API uint32_t rsmi_dev_memory_total_get(uint32_t i, int type, uint64_t *v)
{ GET(i, K_VRAM); if (type != 0) return E_INVALID;
  *v = g->v[K_VRAM][0]; return OK; }

API uint32_t rsmi_dev_memory_usage_get(uint32_t i, int type, uint64_t *v)
{ GET(i, K_VRAM); if (type != 0) return E_INVALID;
  *v = g->v[K_VRAM][1]; return OK; }

API uint32_t rsmi_dev_power_ave_get(uint32_t i, uint32_t s, uint64_t *v)
{ GET(i, K_POWER); if (s != 0) return E_INVALID;
  *v = g->v[K_POWER][0]; return OK; }

API uint32_t rsmi_dev_power_cap_get(uint32_t i, uint32_t s, uint64_t *v)
{ GET(i, K_CAP); if (s != 0) return E_INVALID;
  *v = g->v[K_CAP][0]; return OK; }

#ifndef RSMI_TEST_OLD
API uint32_t rsmi_dev_energy_count_get(uint32_t i, uint64_t *count,
                                        float *res, uint64_t *ts)
{
    GET(i, K_ENERGY);
    *count = g->v[K_ENERGY][0];
    *res = (float) ((double) g->v[K_ENERGY][1] / 1000.0);  /* uJ */
    *ts = 1;
    return OK;
}

API uint32_t rsmi_dev_gpu_metrics_info_get(uint32_t i, void *out)
{
    GET(i, K_THROTTLE);
    /* rsmi_gpu_metrics_t: throttle_status at byte 68; rocm_smi 6.2's
     * indep_throttle_status at byte 112 of 1,832 */
    unsigned char buf[1832];
    size_t size = g->metrics_v6 ? sizeof buf : 96;
    memset(buf, 0, 96);
    memset(buf + 96, 0xff, sizeof buf - 96);
    buf[0] = (unsigned char) (size & 0xff);
    buf[1] = (unsigned char) (size >> 8);
    buf[2] = 1;
    buf[3] = 3;
    uint32_t bits = (uint32_t) g->v[K_THROTTLE][0];
    memcpy(buf + 68, &bits, sizeof bits);
    uint64_t indep = g->v[K_THROTTLE][1];
    memcpy(buf + 112, &indep, sizeof indep);
    memcpy(out, buf, size);
    return OK;
}
#endif

API uint32_t rsmi_dev_temp_metric_get(uint32_t i, uint32_t sensor,
                                       int metric, int64_t *t)
{
    static const int keys[3] = {K_TEDGE, K_TJUNCTION, K_TMEM};
    if (sensor > 2 || metric != 0)
        return E_INVALID;
    GET(i, keys[sensor]);
    *t = (int64_t) g->v[keys[sensor]][0];
    return OK;
}

API uint32_t rsmi_dev_gpu_clk_freq_get(uint32_t i, int type, void *out)
{
    int k = type == 0 ? K_CLK_SYS : type == 4 ? K_CLK_MEM : -1;
    if (k < 0)
        return E_NOT_SUPPORTED;
    GET(i, k);
    struct { uint32_t num, cur; uint64_t f[32]; } f;
    memset(&f, 0, sizeof f);
    f.num = 3;
    f.cur = 2;
    f.f[0] = 500000000;
    f.f[1] = 800000000;
    f.f[2] = g->v[k][0];
    memcpy(out, &f, sizeof f);
    return OK;
}

API uint32_t rsmi_dev_ecc_count_get(uint32_t i, uint64_t block, uint64_t *ec)
{
    GET(i, K_ECC);
    for (int b = 0; b < 14; b++)
        if (block == (1ull << b) && g->ecc[b]) {
            ec[0] = g->ecc_v[b][0];
            ec[1] = g->ecc_v[b][1];
            return OK;
        }
    return E_NOT_SUPPORTED;
}

static uint32_t
s_text_get(uint32_t i, int k, char *buf, size_t len)
{
    GET(i, k);
    snprintf(buf, len, "%s", g->text[k]);
    return OK;
}

API uint32_t rsmi_dev_name_get(uint32_t i, char *b, size_t n)
{ return s_text_get(i, K_NAME, b, n); }
API uint32_t rsmi_dev_vendor_name_get(uint32_t i, char *b, size_t n)
{ return s_text_get(i, K_VENDOR, b, n); }
API uint32_t rsmi_dev_serial_number_get(uint32_t i, char *b, uint32_t n)
{ return s_text_get(i, K_SERIAL, b, n); }
API uint32_t rsmi_dev_vbios_version_get(uint32_t i, char *b, uint32_t n)
{ return s_text_get(i, K_VBIOS, b, n); }

API uint32_t rsmi_dev_unique_id_get(uint32_t i, uint64_t *v)
{ GET(i, K_UID); *v = g->v[K_UID][0]; return OK; }
API uint32_t rsmi_dev_pci_id_get(uint32_t i, uint64_t *v)
{ GET(i, K_PCI); *v = g->v[K_PCI][0]; return OK; }

API uint32_t rsmi_version_str_get(int comp, char *b, uint32_t n)
{
    if (comp != 0 || !S.driver[0])
        return E_NOT_SUPPORTED;
    snprintf(b, n, "%s", S.driver);
    return OK;
}
