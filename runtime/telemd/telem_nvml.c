/* telem_nvml.c - finds NVML's entry points in libnvidia-ml at run time
 * (telem_nvml.h).
 *
 * One table names every entry point with the offset of its pointer in
 * tnvml_api_t; an entry may name an older spelling that the same driver
 * generation exported under another name with the same signature (the
 * clock-event reasons were "throttle reasons" before driver 535, the
 * event wait had no _v2 before 450).
 */
#include "telem_nvml.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;           /* current NVML name */
    const char *older;          /* older name with the same ABI, or NULL */
    size_t offset;              /* of the pointer in tnvml_api_t */
    bool required;
} s_entry_t;

#define S_E(field, name, older, req) \
    {name, older, offsetof(tnvml_api_t, field), req}

static const s_entry_t s_entries[] = {
    S_E(init, "nvmlInit_v2", NULL, true),
    S_E(shutdown, "nvmlShutdown", NULL, true),
    S_E(get_count, "nvmlDeviceGetCount_v2", NULL, true),
    S_E(get_handle, "nvmlDeviceGetHandleByIndex_v2", NULL, true),
    S_E(get_utilization, "nvmlDeviceGetUtilizationRates", NULL, false),
    S_E(get_power, "nvmlDeviceGetPowerUsage", NULL, false),
    S_E(get_temperature, "nvmlDeviceGetTemperature", NULL, false),
    S_E(get_memory, "nvmlDeviceGetMemoryInfo", NULL, false),
    S_E(get_clock, "nvmlDeviceGetClockInfo", NULL, false),
    S_E(get_power_limit, "nvmlDeviceGetEnforcedPowerLimit", NULL, false),
    S_E(get_energy, "nvmlDeviceGetTotalEnergyConsumption", NULL, false),
    S_E(get_clocks_event, "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons", false),
    S_E(get_ecc, "nvmlDeviceGetTotalEccErrors", NULL, false),
    S_E(get_retired_pages, "nvmlDeviceGetRetiredPages", NULL, false),
    S_E(get_retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus", NULL,
        false),
    S_E(get_remapped_rows, "nvmlDeviceGetRemappedRows", NULL, false),
    S_E(get_pcie_replay, "nvmlDeviceGetPcieReplayCounter", NULL, false),
    S_E(get_nvlink_state, "nvmlDeviceGetNvLinkState", NULL, false),
    S_E(get_nvlink_errors, "nvmlDeviceGetNvLinkErrorCounter", NULL, false),
    S_E(get_field_values, "nvmlDeviceGetFieldValues", NULL, false),
    S_E(event_set_create, "nvmlEventSetCreate", NULL, false),
    S_E(register_events, "nvmlDeviceRegisterEvents", NULL, false),
    S_E(event_set_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait", false),
    S_E(event_set_free, "nvmlEventSetFree", NULL, false),
    S_E(get_name, "nvmlDeviceGetName", NULL, false),
    S_E(get_uuid, "nvmlDeviceGetUUID", NULL, false),
    S_E(get_pci, "nvmlDeviceGetPciInfo_v3", NULL, false),
    S_E(get_vbios, "nvmlDeviceGetVbiosVersion", NULL, false),
    S_E(get_inforom, "nvmlDeviceGetInforomImageVersion", NULL, false),
    S_E(driver_version, "nvmlSystemGetDriverVersion", NULL, false),
    S_E(nvml_version, "nvmlSystemGetNVMLVersion", NULL, false),
};
#define S_NENTRIES (sizeof s_entries / sizeof s_entries[0])

/* The pointer slot of entry e in api. */
static void *
s_slot(const tnvml_api_t *api, const s_entry_t *e)
{
    return (char *) api + e->offset;
}

void *
telem_nvml_load(const char *library, tnvml_api_t *api)
{
    memset(api, 0, sizeof *api);
    void *lib = dlopen(library ? library : TELEM_NVML_DEFAULT,
                       RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return NULL;
    for (size_t i = 0; i < S_NENTRIES; i++) {
        const s_entry_t *e = &s_entries[i];
        void *sym = dlsym(lib, e->name);
        if (!sym && e->older)
            sym = dlsym(lib, e->older);
        if (!sym && e->required) {
            dlclose(lib);
            memset(api, 0, sizeof *api);
            return NULL;
        }
        /* POSIX gives a dlsym() result and a function pointer one size
         * and representation; memcpy converts without a cast ISO C leaves
         * undefined. */
        _Static_assert(sizeof sym == sizeof api->init, "pointer sizes");
        memcpy(s_slot(api, e), &sym, sizeof sym);
    }
    return lib;
}

int
telem_nvml_missing(const tnvml_api_t *api, char *buf, size_t size)
{
    int n = 0;
    size_t len = 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < S_NENTRIES; i++) {
        void *p;
        memcpy(&p, s_slot(api, &s_entries[i]), sizeof p);
        if (p)
            continue;
        if (size > len) {
            int w = snprintf(buf + len, size - len, "%s%s", n ? ", " : "",
                             s_entries[i].name);
            len += w > 0 ? (size_t) w : 0;
        }
        n++;
    }
    return n;
}
