/* telem_ze.h - PRIVATE to telemd: the part of Intel's Level Zero Sysman C
 * ABI telem uses, and a loader that finds it in libze_loader at run time.
 *
 * telem builds without the Level Zero headers: the types and constants
 * used are declared here with zes_api.h's layout and values (spec 1.5, as
 * Debian 12's libze-dev 1.8 ships it).  Devices are found through
 * zesInit, zesDriverGet and zesDeviceGet where the loader has them (newer
 * loaders), else through the core zeInit, zeDriverGet and zeDeviceGet with
 * ZES_ENABLE_SYSMAN=1 in the environment (a core device handle is then a
 * Sysman one); a loader with neither set is not loaded.  Every Sysman
 * query is optional.  Users: the ze sampler (telem_sampler_ze.c) and the
 * system snapshot (telem_sysinfo_gpu.c).  The loader keeps no state.
 */
#ifndef TELEM_ZE_H
#define TELEM_ZE_H

#include <stddef.h>
#include <stdint.h>

#define TELEM_ZE_DEFAULT "libze_loader.so.1"

typedef uint32_t tze_result_t;          /* ze_result_t */
#define TZE_SUCCESS 0
#define TZE_ERROR_DEVICE_LOST 0x70000001u

typedef struct tze_driver *tze_driver_t;
typedef struct tze_device *tze_device_t;
typedef struct tze_handle *tze_handle_t;        /* engine, mem, power, ... */

/* zes_structure_type_t values */
#define TZES_STYPE_DEVICE_PROPERTIES 0x1
#define TZES_STYPE_PCI_PROPERTIES 0x2
#define TZES_STYPE_ENGINE_PROPERTIES 0x5
#define TZES_STYPE_FIRMWARE_PROPERTIES 0x8
#define TZES_STYPE_FREQ_PROPERTIES 0x9
#define TZES_STYPE_MEM_PROPERTIES 0xb
#define TZES_STYPE_POWER_PROPERTIES 0xd
#define TZES_STYPE_RAS_PROPERTIES 0xf
#define TZES_STYPE_TEMP_PROPERTIES 0x14
#define TZES_STYPE_FREQ_STATE 0x1b
#define TZES_STYPE_MEM_STATE 0x1e
#define TZES_STYPE_RAS_STATE 0x22
#define TZE_STYPE_DEVICE_PROPERTIES 0x3

#define TZES_ENGINE_GROUP_ALL 0
#define TZES_ENGINE_GROUP_COMPUTE_ALL 1
#define TZES_TEMP_SENSORS_GPU 1
#define TZES_TEMP_SENSORS_MEMORY 2
#define TZES_FREQ_DOMAIN_GPU 0
#define TZES_FREQ_DOMAIN_MEMORY 1
#define TZES_RAS_ERROR_TYPE_CORRECTABLE 0
#define TZES_RAS_ERROR_TYPE_UNCORRECTABLE 1
#define TZES_RAS_CATEGORIES 7
#define TZES_STRING_SIZE 64

typedef struct {                        /* ze_device_properties_t */
    uint32_t stype;
    void *pNext;
    uint32_t type, vendorId, deviceId, flags, subdeviceId, coreClockRate;
    uint64_t maxMemAllocSize;
    uint32_t maxHardwareContexts, maxCommandQueuePriority, numThreadsPerEU;
    uint32_t physicalEUSimdWidth, numEUsPerSubslice, numSubslicesPerSlice;
    uint32_t numSlices;
    uint64_t timerResolution;
    uint32_t timestampValidBits, kernelTimestampValidBits;
    uint8_t uuid[16];
    char name[256];
} tze_core_properties_t;

typedef struct {                        /* zes_device_properties_t */
    uint32_t stype;
    void *pNext;
    tze_core_properties_t core;
    uint32_t numSubdevices;
    char serialNumber[TZES_STRING_SIZE], boardNumber[TZES_STRING_SIZE];
    char brandName[TZES_STRING_SIZE], modelName[TZES_STRING_SIZE];
    char vendorName[TZES_STRING_SIZE], driverVersion[TZES_STRING_SIZE];
} tzes_device_properties_t;

typedef struct {                        /* zes_pci_properties_t */
    uint32_t stype;
    void *pNext;
    uint32_t domain, bus, device, function;
    int32_t gen, width;
    int64_t maxBandwidth;
    uint8_t haveBandwidthCounters, havePacketCounters, haveReplayCounters;
} tzes_pci_properties_t;

typedef struct {                        /* zes_firmware_properties_t */
    uint32_t stype;
    void *pNext;
    uint8_t onSubdevice;
    uint32_t subdeviceId;
    uint8_t canControl;
    char name[TZES_STRING_SIZE], version[TZES_STRING_SIZE];
} tzes_firmware_properties_t;

/* The head shared by the engine, temperature, frequency and RAS
 * properties: stype, pNext, the resource's type, onSubdevice. */
typedef struct {                        /* zes_engine_properties_t */
    uint32_t stype;
    void *pNext;
    uint32_t type;
    uint8_t onSubdevice;
    uint32_t subdeviceId;
} tzes_engine_properties_t, tzes_ras_properties_t;

typedef struct {                        /* zes_temp_properties_t */
    uint32_t stype;
    void *pNext;
    uint32_t type;
    uint8_t onSubdevice;
    uint32_t subdeviceId;
    double maxTemperature;
    uint8_t isCriticalTempSupported, isThreshold1Supported;
    uint8_t isThreshold2Supported;
} tzes_temp_properties_t;

typedef struct {                        /* zes_freq_properties_t */
    uint32_t stype;
    void *pNext;
    uint32_t type;
    uint8_t onSubdevice;
    uint32_t subdeviceId;
    uint8_t canControl, isThrottleEventSupported;
    double min, max;
} tzes_freq_properties_t;

typedef struct {                        /* zes_power_properties_t */
    uint32_t stype;
    void *pNext;
    uint8_t onSubdevice;
    uint32_t subdeviceId;
    uint8_t canControl, isEnergyThresholdSupported;
    int32_t defaultLimit, minLimit, maxLimit;
} tzes_power_properties_t;

typedef struct {                        /* zes_mem_properties_t */
    uint32_t stype;
    void *pNext;
    uint32_t type;
    uint8_t onSubdevice;
    uint32_t subdeviceId;
    uint32_t location;
    uint64_t physicalSize;
    int32_t busWidth, numChannels;
} tzes_mem_properties_t;

typedef struct {                        /* zes_mem_state_t */
    uint32_t stype;
    const void *pNext;
    uint32_t health;
    uint64_t free, size;
} tzes_mem_state_t;

typedef struct {                        /* zes_freq_state_t */
    uint32_t stype;
    const void *pNext;
    double currentVoltage, request, tdp, efficient, actual;    /* MHz */
    uint32_t throttleReasons;
} tzes_freq_state_t;

typedef struct {                        /* zes_ras_state_t */
    uint32_t stype;
    const void *pNext;
    uint64_t category[TZES_RAS_CATEGORIES];
} tzes_ras_state_t;

typedef struct {                        /* zes_engine_stats_t and */
    uint64_t value;                     /* zes_power_energy_counter_t: */
    uint64_t timestamp;                 /* activeTime or energy, in us/uJ */
} tzes_counter_t;

typedef tze_result_t (*tzes_enum_fn)(tze_device_t, uint32_t *,
                                     tze_handle_t *);
typedef tze_result_t (*tzes_props_fn)(tze_handle_t, void *);

/* Entry points; NULL where the loader lacks one. */
typedef struct {
    /* finding the devices: the Sysman set, or the core set */
    tze_result_t (*zes_init)(uint32_t flags);
    tze_result_t (*zes_driver_get)(uint32_t *, tze_driver_t *);
    tze_result_t (*zes_device_get)(tze_driver_t, uint32_t *, tze_device_t *);
    tze_result_t (*ze_init)(uint32_t flags);
    tze_result_t (*ze_driver_get)(uint32_t *, tze_driver_t *);
    tze_result_t (*ze_device_get)(tze_driver_t, uint32_t *, tze_device_t *);
    /* the device */
    tze_result_t (*device_properties)(tze_device_t,
                                      tzes_device_properties_t *);
    tze_result_t (*pci_properties)(tze_device_t, tzes_pci_properties_t *);
    /* resources: enumerate, properties, state */
    tzes_enum_fn enum_engines;
    tzes_props_fn engine_properties;
    tze_result_t (*engine_activity)(tze_handle_t, tzes_counter_t *);
    tzes_enum_fn enum_memory;
    tzes_props_fn memory_properties;
    tze_result_t (*memory_state)(tze_handle_t, tzes_mem_state_t *);
    tzes_enum_fn enum_power;
    tzes_props_fn power_properties;
    tze_result_t (*power_energy)(tze_handle_t, tzes_counter_t *);
    tzes_enum_fn enum_temperature;
    tzes_props_fn temperature_properties;
    tze_result_t (*temperature_state)(tze_handle_t, double *);
    tzes_enum_fn enum_frequency;
    tzes_props_fn frequency_properties;
    tze_result_t (*frequency_state)(tze_handle_t, tzes_freq_state_t *);
    tzes_enum_fn enum_ras;
    tzes_props_fn ras_properties;
    tze_result_t (*ras_state)(tze_handle_t, uint8_t clear,
                              tzes_ras_state_t *);
    tzes_enum_fn enum_firmware;
    tzes_props_fn firmware_properties;
} tze_api_t;

/* Opens `library` (NULL: TELEM_ZE_DEFAULT) and fills *api.  Returns the
 * dlopen() handle (the caller dlclose()s it), or NULL when it cannot be
 * loaded or has neither set of device-finding entry points. */
void *telem_ze_load(const char *library, tze_api_t *api);

/* The Level Zero names of the Sysman queries api lacks (not of the
 * device-finding set not used), as telem_gpulib_missing(). */
int telem_ze_missing(const tze_api_t *api, char *buf, size_t size);

/* Initialises Level Zero and lists up to max devices into devs (all
 * drivers).  Returns how many, or -1 when initialisation fails.  With the
 * core set it sets ZES_ENABLE_SYSMAN=1 first unless already set. */
int telem_ze_devices(const tze_api_t *api, tze_device_t *devs, int max);

/* Up to max handles of one resource kind of dev; how many (0 on error). */
uint32_t telem_ze_enum(tzes_enum_fn fn, tze_device_t dev, tze_handle_t *h,
                       uint32_t max);

#endif
