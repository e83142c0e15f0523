/* telem_sysinfo_gpu.c - the snapshot's AMD GPUs (through rocm_smi) and
 * Intel GPUs (through Level Zero Sysman), loaded with dlopen at run time
 * as their samplers do (telem_rsmi.c, telem_ze.c).
 *
 * Each GPU joins the "gpus" array that NVIDIA's fill (telem_sysinfo_nvml.c)
 * with the same keys where they mean the same (index, vendor, name, uuid,
 * pci_bus_id, memory_total_bytes) and its vendor's own: AMD's serial,
 * vbios_version and driver; Intel's serial, driver and firmware (name to
 * version).  rocm_smi has no UUID: AMD's uuid is its 64-bit unique id in
 * hex.  A value the library does not give is null.  Without the library,
 * or with no GPU, the source (gpus_amd, gpus_intel) is skipped with its
 * reason.
 */
#include "telem_sysinfo_int.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "telem_error.h"
#include "telem_rsmi.h"
#include "telem_ze.h"

#define S_GPUS_MAX 64
#define S_TEXT_MAX 256

/* doc's "gpus" array, made when NVIDIA's left none. */
static json_t *
s_gpus(tsi_ctx_t *c, json_t *doc)
{
    json_t *arr = json_object_get(doc, "gpus");
    if (json_is_array(arr))
        return arr;
    tsi_set(c, doc, "gpus", json_array());
    return json_object_get(doc, "gpus");
}

/* A NUL-terminated copy of a fixed-size text field, null when empty. */
static json_t *
s_field(const char *text, size_t size)
{
    char buf[S_TEXT_MAX];
    size_t n = strnlen(text, size);
    if (n == 0 || n >= sizeof buf)
        return json_null();
    memcpy(buf, text, n);
    buf[n] = '\0';
    return tsi_str(buf);
}

/* ---- AMD ----------------------------------------------------------------- */

typedef trsmi_status_t (*s_rsmi_text_fn)(uint32_t, char *, uint32_t);

static json_t *
s_rsmi_text(s_rsmi_text_fn fn, uint32_t i)
{
    char buf[S_TEXT_MAX] = "";
    if (!fn || fn(i, buf, sizeof buf - 1) != TRSMI_SUCCESS)
        return json_null();
    return s_field(buf, sizeof buf);
}

static json_t *
s_rsmi_name(trsmi_status_t (*fn)(uint32_t, char *, size_t), uint32_t i)
{
    char buf[S_TEXT_MAX] = "";
    if (!fn || fn(i, buf, sizeof buf - 1) != TRSMI_SUCCESS)
        return json_null();
    return s_field(buf, sizeof buf);
}

static json_t *
s_rsmi_gpu(tsi_ctx_t *c, const trsmi_api_t *a, uint32_t i, json_t *driver)
{
    json_t *g = json_object();
    if (!g)
        return NULL;
    uint64_t v;
    char buf[32];
    tsi_set(c, g, "index", json_integer(i));
    tsi_set(c, g, "vendor", tsi_str("AMD"));
    tsi_set(c, g, "name", s_rsmi_name(a->name, i));
    json_t *uuid = json_null(), *pci = json_null();
    if (a->unique_id && a->unique_id(i, &v) == TRSMI_SUCCESS) {
        snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
        uuid = tsi_str(buf);
    }
    if (a->pci_id && a->pci_id(i, &v) == TRSMI_SUCCESS) {
        telem_rsmi_bdf(v, buf, sizeof buf);
        pci = tsi_str(buf);
    }
    tsi_set(c, g, "uuid", uuid);
    tsi_set(c, g, "serial", s_rsmi_text(a->serial, i));
    tsi_set(c, g, "pci_bus_id", pci);
    tsi_set(c, g, "vbios_version", s_rsmi_text(a->vbios, i));
    tsi_set(c, g, "driver", json_incref(driver));
    tsi_set(c, g, "memory_total_bytes", a->memory_total
            && a->memory_total(i, TRSMI_MEM_TYPE_VRAM, &v) == TRSMI_SUCCESS
            ? json_integer((json_int_t) v) : json_null());
    return g;
}

static const char *
s_rsmi_gpus(tsi_ctx_t *c, json_t *doc, const trsmi_api_t *a)
{
    uint32_t count = 0;
    if (a->num_devices(&count) != TRSMI_SUCCESS || count == 0)
        return "rocm_smi sees no GPU";
    char buf[S_TEXT_MAX] = "";
    json_t *driver = a->version_str
        && a->version_str(TRSMI_SW_COMP_DRIVER, buf, sizeof buf - 1)
               == TRSMI_SUCCESS ? s_field(buf, sizeof buf) : json_null();
    json_t *arr = s_gpus(c, doc);
    for (uint32_t i = 0; arr && i < count && i < S_GPUS_MAX; i++) {
        json_t *g = s_rsmi_gpu(c, a, i, driver);
        if (g)
            tsi_push(c, arr, g);
    }
    json_decref(driver);
    return NULL;
}

void
tsi_gpu_amd(tsi_ctx_t *c, json_t *doc)
{
    if (!c->o->live)
        return;
    const char *libname = c->o->rsmi_library ? c->o->rsmi_library
                                             : TELEM_RSMI_DEFAULT;
    trsmi_api_t api;
    void *lib = telem_rsmi_load(libname, &api);
    const char *why = "no rocm_smi library";
    if (lib && api.init(0) != TRSMI_SUCCESS)
        why = "rocm_smi did not initialise (no amdgpu driver)";
    else if (lib) {
        why = s_rsmi_gpus(c, doc, &api);
        api.shut_down();
    }
    if (lib)
        dlclose(lib);
    if (why)
        tsi_skip(c, "gpus_amd", "%s: %s", libname, why);
}

/* ---- Intel --------------------------------------------------------------- */

static json_t *
s_ze_firmware(tsi_ctx_t *c, const tze_api_t *a, tze_device_t dev)
{
    tze_handle_t h[8];
    uint32_t n = a->firmware_properties
                 ? telem_ze_enum(a->enum_firmware, dev, h, 8) : 0;
    if (n == 0)
        return json_null();
    json_t *fw = json_object();
    for (uint32_t i = 0; fw && i < n; i++) {
        tzes_firmware_properties_t p;
        memset(&p, 0, sizeof p);
        p.stype = TZES_STYPE_FIRMWARE_PROPERTIES;
        if (a->firmware_properties(h[i], &p) != TZE_SUCCESS
            || !strnlen(p.name, sizeof p.name)
            || strnlen(p.name, sizeof p.name) == sizeof p.name)
            continue;
        tsi_set(c, fw, p.name, s_field(p.version, sizeof p.version));
    }
    return fw;
}

static json_t *
s_ze_gpu(tsi_ctx_t *c, const tze_api_t *a, tze_device_t dev, int i)
{
    json_t *g = json_object();
    if (!g)
        return NULL;
    tzes_device_properties_t p;
    memset(&p, 0, sizeof p);
    p.stype = TZES_STYPE_DEVICE_PROPERTIES;
    p.core.stype = TZE_STYPE_DEVICE_PROPERTIES;
    bool props = a->device_properties
                 && a->device_properties(dev, &p) == TZE_SUCCESS;
    tzes_pci_properties_t pci = {.stype = TZES_STYPE_PCI_PROPERTIES};
    char buf[64];
    tsi_set(c, g, "index", json_integer(i));
    tsi_set(c, g, "vendor", tsi_str("Intel"));
    tsi_set(c, g, "name", props ? s_field(p.core.name, sizeof p.core.name)
                                : json_null());
    json_t *uuid = json_null();
    if (props) {
        const uint8_t *u = p.core.uuid;
        snprintf(buf, sizeof buf, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x"
                 "-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4],
                 u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                 u[14], u[15]);
        uuid = tsi_str(buf);
    }
    tsi_set(c, g, "uuid", uuid);
    tsi_set(c, g, "serial", props ? s_field(p.serialNumber,
                                            sizeof p.serialNumber)
                                  : json_null());
    json_t *bus = json_null();
    if (a->pci_properties && a->pci_properties(dev, &pci) == TZE_SUCCESS) {
        snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", pci.domain, pci.bus,
                 pci.device, pci.function);
        bus = tsi_str(buf);
    }
    tsi_set(c, g, "pci_bus_id", bus);
    tsi_set(c, g, "driver", props ? s_field(p.driverVersion,
                                            sizeof p.driverVersion)
                                  : json_null());
    tsi_set(c, g, "firmware", s_ze_firmware(c, a, dev));
    return g;
}

void
tsi_gpu_intel(tsi_ctx_t *c, json_t *doc)
{
    if (!c->o->live)
        return;
    const char *libname = c->o->ze_library ? c->o->ze_library
                                           : TELEM_ZE_DEFAULT;
    tze_api_t api;
    void *lib = telem_ze_load(libname, &api);
    tze_device_t devs[S_GPUS_MAX];
    int n = lib ? telem_ze_devices(&api, devs, S_GPUS_MAX) : -1;
    json_t *arr = n > 0 ? s_gpus(c, doc) : NULL;
    for (int i = 0; arr && i < n; i++) {
        json_t *g = s_ze_gpu(c, &api, devs[i], i);
        if (g)
            tsi_push(c, arr, g);
    }
    if (lib)
        dlclose(lib);
    if (n <= 0)
        tsi_skip(c, "gpus_intel", "%s: %s", libname,
                 !lib ? "no Level Zero loader"
                 : n < 0 ? "Level Zero did not initialise"
                         : "Level Zero sees no GPU");
}
