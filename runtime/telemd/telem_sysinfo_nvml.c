/* telem_sysinfo_nvml.c - the snapshot's NVIDIA GPUs ("gpus",
 * "gpu_driver", "nvml_version") through NVML, loaded with dlopen at run
 * time as the nvml sampler does (telem_nvml.c), so telem builds and runs
 * without the driver.
 *
 * Each GPU is named by vendor, model, UUID, PCI bus id, VBIOS and inforom
 * image version, with its memory.  A value the driver does not give (an
 * entry point an old driver lacks, a query that fails) is null; a GPU
 * without a handle is left out.  Without NVML, or with no GPU, the section
 * is skipped with its reason.
 */
#include "telem_sysinfo_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "telem_error.h"
#include "telem_nvml.h"

#define S_GPUS_MAX 64
#define S_TEXT_MAX 256

/* What a text query gives, as a JSON string; null when it fails. */
static json_t *
s_text(tnvml_dev_text_fn fn, tnvml_device_t dev)
{
    char buf[S_TEXT_MAX] = "";
    if (!fn || fn(dev, buf, sizeof buf - 1) != TNVML_SUCCESS)
        return json_null();
    buf[sizeof buf - 1] = '\0';
    return tsi_str(buf);
}

static json_t *
s_pci(const tnvml_api_t *api, tnvml_device_t dev)
{
    tnvml_pci_t pci;
    memset(&pci, 0, sizeof pci);
    if (!api->get_pci || api->get_pci(dev, &pci) != TNVML_SUCCESS)
        return json_null();
    pci.bus_id[sizeof pci.bus_id - 1] = '\0';
    return tsi_str(pci.bus_id);
}

static json_t *
s_gpu(tsi_ctx_t *c, const tnvml_api_t *api, unsigned int i)
{
    tnvml_device_t dev;
    if (api->get_handle(i, &dev) != TNVML_SUCCESS)
        return NULL;
    json_t *g = json_object();
    if (!g)
        return NULL;
    tnvml_memory_t mem;
    tsi_set(c, g, "index", json_integer(i));
    tsi_set(c, g, "vendor", tsi_str("NVIDIA"));
    tsi_set(c, g, "name", s_text(api->get_name, dev));
    tsi_set(c, g, "uuid", s_text(api->get_uuid, dev));
    tsi_set(c, g, "pci_bus_id", s_pci(api, dev));
    tsi_set(c, g, "vbios_version", s_text(api->get_vbios, dev));
    tsi_set(c, g, "inforom_version", s_text(api->get_inforom, dev));
    tsi_set(c, g, "memory_total_bytes", api->get_memory
            && api->get_memory(dev, &mem) == TNVML_SUCCESS
            ? json_integer((json_int_t) mem.total) : json_null());
    return g;
}

/* A system-wide text query into doc[key], when it answers. */
static void
s_system_text(tsi_ctx_t *c, json_t *doc, const char *key,
              tnvml_return_t (*fn)(char *, unsigned int))
{
    char buf[S_TEXT_MAX] = "";
    if (fn && fn(buf, sizeof buf - 1) == TNVML_SUCCESS) {
        buf[sizeof buf - 1] = '\0';
        tsi_set(c, doc, key, tsi_str(buf));
    }
}

/* The GPUs of an initialised NVML into doc; a reason when there are none. */
static const char *
s_gpus(tsi_ctx_t *c, json_t *doc, const tnvml_api_t *api)
{
    unsigned int count = 0;
    if (api->get_count(&count) != TNVML_SUCCESS || count == 0)
        return "NVML sees no GPU";
    s_system_text(c, doc, "gpu_driver", api->driver_version);
    s_system_text(c, doc, "nvml_version", api->nvml_version);
    json_t *arr = json_array();
    for (unsigned int i = 0; arr && i < count && i < S_GPUS_MAX; i++) {
        json_t *g = s_gpu(c, api, i);
        if (g)
            tsi_push(c, arr, g);
    }
    tsi_set(c, doc, "gpus", arr);
    return NULL;
}

void
tsi_gpu(tsi_ctx_t *c, json_t *doc)
{
    if (!c->o->live)
        return;                 /* fixture trees hold no NVML */
    const char *libname = c->o->nvml_library ? c->o->nvml_library
                                             : TELEM_NVML_DEFAULT;
    tnvml_api_t api;
    void *lib = telem_nvml_load(libname, &api);
    const char *why = NULL;
    if (!lib)
        why = "no NVML library";
    else if (api.init() != TNVML_SUCCESS)
        why = "NVML did not initialise (no driver loaded)";
    else {
        why = s_gpus(c, doc, &api);
        api.shutdown();
    }
    if (lib)
        dlclose(lib);
    if (why)
        tsi_skip(c, "gpus", "%s: %s", libname, why);
}
