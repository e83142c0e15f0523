/* telem_ze.c - finds Level Zero Sysman's entry points in libze_loader at
 * run time (telem_ze.h), with telem_gpulib.c's loader, and lists the
 * devices through whichever device-finding set the loader has.
 */
#include "telem_ze.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "telem_gpulib.h"

#define S_E(field, name) TELEM_GPULIB_E(tze_api_t, field, name, NULL, false)

/* The device-finding sets first: telem_ze_missing() skips them. */
#define S_FINDING 6
static const telem_gpulib_entry_t s_entries[] = {
    S_E(zes_init, "zesInit"),
    S_E(zes_driver_get, "zesDriverGet"),
    S_E(zes_device_get, "zesDeviceGet"),
    S_E(ze_init, "zeInit"),
    S_E(ze_driver_get, "zeDriverGet"),
    S_E(ze_device_get, "zeDeviceGet"),
    S_E(device_properties, "zesDeviceGetProperties"),
    S_E(pci_properties, "zesDevicePciGetProperties"),
    S_E(enum_engines, "zesDeviceEnumEngineGroups"),
    S_E(engine_properties, "zesEngineGetProperties"),
    S_E(engine_activity, "zesEngineGetActivity"),
    S_E(enum_memory, "zesDeviceEnumMemoryModules"),
    S_E(memory_properties, "zesMemoryGetProperties"),
    S_E(memory_state, "zesMemoryGetState"),
    S_E(enum_power, "zesDeviceEnumPowerDomains"),
    S_E(power_properties, "zesPowerGetProperties"),
    S_E(power_energy, "zesPowerGetEnergyCounter"),
    S_E(enum_temperature, "zesDeviceEnumTemperatureSensors"),
    S_E(temperature_properties, "zesTemperatureGetProperties"),
    S_E(temperature_state, "zesTemperatureGetState"),
    S_E(enum_frequency, "zesDeviceEnumFrequencyDomains"),
    S_E(frequency_properties, "zesFrequencyGetProperties"),
    S_E(frequency_state, "zesFrequencyGetState"),
    S_E(enum_ras, "zesDeviceEnumRasErrorSets"),
    S_E(ras_properties, "zesRasGetProperties"),
    S_E(ras_state, "zesRasGetState"),
    S_E(enum_firmware, "zesDeviceEnumFirmwares"),
    S_E(firmware_properties, "zesFirmwareGetProperties"),
};
#define S_NENTRIES (sizeof s_entries / sizeof s_entries[0])

static int
s_sysman_set(const tze_api_t *a)
{
    return a->zes_init && a->zes_driver_get && a->zes_device_get;
}

static int
s_core_set(const tze_api_t *a)
{
    return a->ze_init && a->ze_driver_get && a->ze_device_get;
}

void *
telem_ze_load(const char *library, tze_api_t *api)
{
    void *lib = telem_gpulib_load(library ? library : TELEM_ZE_DEFAULT,
                                  s_entries, S_NENTRIES, api, sizeof *api);
    if (lib && !s_sysman_set(api) && !s_core_set(api)) {
        dlclose(lib);
        lib = NULL;
    }
    return lib;
}

int
telem_ze_missing(const tze_api_t *api, char *buf, size_t size)
{
    return telem_gpulib_missing(s_entries + S_FINDING,
                                S_NENTRIES - S_FINDING, api, buf, size);
}

int
telem_ze_devices(const tze_api_t *api, tze_device_t *devs, int max)
{
    int sysman = s_sysman_set(api);
    if (!sysman)
        setenv("ZES_ENABLE_SYSMAN", "1", 0);
    tze_result_t (*init)(uint32_t) = sysman ? api->zes_init : api->ze_init;
    tze_result_t (*drivers)(uint32_t *, tze_driver_t *) =
        sysman ? api->zes_driver_get : api->ze_driver_get;
    tze_result_t (*devices)(tze_driver_t, uint32_t *, tze_device_t *) =
        sysman ? api->zes_device_get : api->ze_device_get;
    tze_driver_t drv[8];
    uint32_t ndrv = 8;
    if (init(0) != TZE_SUCCESS || drivers(&ndrv, drv) != TZE_SUCCESS)
        return -1;
    int n = 0;
    for (uint32_t d = 0; d < ndrv && d < 8 && n < max; d++) {
        uint32_t count = (uint32_t) (max - n);
        if (devices(drv[d], &count, devs + n) == TZE_SUCCESS)
            n += (int) (count < (uint32_t) (max - n) ? count
                                                     : (uint32_t) (max - n));
    }
    return n;
}

uint32_t
telem_ze_enum(tzes_enum_fn fn, tze_device_t dev, tze_handle_t *h,
              uint32_t max)
{
    uint32_t count = max;
    if (!fn || fn(dev, &count, h) != TZE_SUCCESS)
        return 0;
    return count < max ? count : max;
}
