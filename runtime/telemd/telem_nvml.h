/* telem_nvml.h - PRIVATE to telemd: the part of NVML's C ABI telem uses,
 * and a loader that finds it in libnvidia-ml at run time.
 *
 * telem builds without NVIDIA's headers (they are not in Debian main), so
 * the few types and constants used are declared here, with NVML's layout
 * and values.  telem_nvml_load() dlopen()s the library and looks every
 * entry point up with dlsym(); the four without which nothing can be read
 * (init, shutdown, count, handle) are required, every other one is
 * optional: an older driver that lacks one leaves its pointer NULL, and
 * only the values that need it are left out (telem_nvml_missing() names
 * them for the one log line).  Users: the nvml sampler
 * (telem_sampler_nvml*.c) and the system snapshot (telem_sysinfo_nvml.c).
 * Thread safety: NVML's own calls are thread-safe; the loader keeps no
 * state of its own.
 */
#ifndef TELEM_NVML_H
#define TELEM_NVML_H

#include <stddef.h>

#define TELEM_NVML_DEFAULT "libnvidia-ml.so.1"

/* nvmlReturn_t values used here */
typedef int tnvml_return_t;
#define TNVML_SUCCESS 0
#define TNVML_ERROR_NOT_SUPPORTED 3
#define TNVML_ERROR_INSUFFICIENT_SIZE 7
#define TNVML_ERROR_TIMEOUT 10
#define TNVML_ERROR_GPU_IS_LOST 15

typedef struct tnvml_device *tnvml_device_t;     /* nvmlDevice_t */
typedef struct tnvml_event_set *tnvml_event_set_t; /* nvmlEventSet_t */

typedef struct {                /* nvmlUtilization_t */
    unsigned int gpu, memory;
} tnvml_utilization_t;

typedef struct {                /* nvmlMemory_t */
    unsigned long long total, free, used;
} tnvml_memory_t;

typedef struct {                /* nvmlPciInfo_t (v3) */
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} tnvml_pci_t;

typedef struct {                /* nvmlEventData_t */
    tnvml_device_t device;
    unsigned long long event_type;
    unsigned long long event_data;      /* the XID for XID events */
    unsigned int gpu_instance_id, compute_instance_id;
} tnvml_event_t;

typedef union {                 /* nvmlValue_t */
    double d;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
    unsigned short us;
} tnvml_value_t;

typedef struct {                /* nvmlFieldValue_t */
    unsigned int field_id, scope_id;
    long long timestamp, latency_usec;
    int value_type;             /* nvmlValueType_t, TNVML_VALUE_* */
    tnvml_return_t nvml_return;
    tnvml_value_t value;
} tnvml_field_value_t;

#define TNVML_VALUE_DOUBLE 0
#define TNVML_VALUE_UINT 1
#define TNVML_VALUE_ULONG 2
#define TNVML_VALUE_ULONGLONG 3
#define TNVML_VALUE_SLONGLONG 4
#define TNVML_VALUE_SINT 5
#define TNVML_VALUE_USHORT 6

#define TNVML_TEMPERATURE_GPU 0
#define TNVML_CLOCK_SM 1
#define TNVML_CLOCK_MEM 2
#define TNVML_MEMORY_ERROR_CORRECTED 0
#define TNVML_MEMORY_ERROR_UNCORRECTED 1
#define TNVML_VOLATILE_ECC 0
#define TNVML_PAGE_RETIREMENT_MULTIPLE_SBE 0
#define TNVML_PAGE_RETIREMENT_DBE 1
#define TNVML_NVLINK_MAX_LINKS 18
#define TNVML_NVLINK_ERROR_DL_REPLAY 0
#define TNVML_NVLINK_ERROR_DL_RECOVERY 1
#define TNVML_NVLINK_ERROR_DL_CRC_FLIT 2
#define TNVML_NVLINK_ERROR_DL_CRC_DATA 3
#define TNVML_EVENT_XID_CRITICAL 0x8ULL    /* nvmlEventTypeXidCriticalError */
#define TNVML_FI_GPU_RECOVERY_ACTION 230   /* NVML_FI_DEV_GET_GPU_RECOVERY_ACTION */

typedef tnvml_return_t (*tnvml_dev_uint_fn)(tnvml_device_t, unsigned int *);
typedef tnvml_return_t (*tnvml_dev_ull_fn)(tnvml_device_t,
                                           unsigned long long *);
typedef tnvml_return_t (*tnvml_dev_text_fn)(tnvml_device_t, char *,
                                            unsigned int);

/* Entry points; NULL where the library lacks an optional one. */
typedef struct {
    /* required */
    tnvml_return_t (*init)(void);
    tnvml_return_t (*shutdown)(void);
    tnvml_return_t (*get_count)(unsigned int *);
    tnvml_return_t (*get_handle)(unsigned int, tnvml_device_t *);
    /* values */
    tnvml_return_t (*get_utilization)(tnvml_device_t, tnvml_utilization_t *);
    tnvml_dev_uint_fn get_power;                /* mW */
    tnvml_return_t (*get_temperature)(tnvml_device_t, int, unsigned int *);
    tnvml_return_t (*get_memory)(tnvml_device_t, tnvml_memory_t *);
    tnvml_return_t (*get_clock)(tnvml_device_t, int, unsigned int *); /* MHz */
    tnvml_dev_uint_fn get_power_limit;          /* enforced, mW */
    tnvml_dev_ull_fn get_energy;                /* mJ since driver load */
    tnvml_dev_ull_fn get_clocks_event;          /* reasons bitmask */
    tnvml_return_t (*get_ecc)(tnvml_device_t, int, int, unsigned long long *);
    tnvml_return_t (*get_retired_pages)(tnvml_device_t, int, unsigned int *,
                                        unsigned long long *);
    tnvml_dev_uint_fn get_retired_pending;      /* nvmlEnableState_t */
    tnvml_return_t (*get_remapped_rows)(tnvml_device_t, unsigned int *,
                                        unsigned int *, unsigned int *,
                                        unsigned int *);
    tnvml_dev_uint_fn get_pcie_replay;
    tnvml_return_t (*get_nvlink_state)(tnvml_device_t, unsigned int,
                                       unsigned int *);
    tnvml_return_t (*get_nvlink_errors)(tnvml_device_t, unsigned int, int,
                                        unsigned long long *);
    tnvml_return_t (*get_field_values)(tnvml_device_t, int,
                                       tnvml_field_value_t *);
    /* events */
    tnvml_return_t (*event_set_create)(tnvml_event_set_t *);
    tnvml_return_t (*register_events)(tnvml_device_t, unsigned long long,
                                      tnvml_event_set_t);
    tnvml_return_t (*event_set_wait)(tnvml_event_set_t, tnvml_event_t *,
                                     unsigned int);
    tnvml_return_t (*event_set_free)(tnvml_event_set_t);
    /* names, for the system snapshot */
    tnvml_dev_text_fn get_name;
    tnvml_dev_text_fn get_uuid;
    tnvml_return_t (*get_pci)(tnvml_device_t, tnvml_pci_t *);
    tnvml_dev_text_fn get_vbios;
    tnvml_return_t (*get_inforom)(tnvml_device_t, char *, unsigned int);
    tnvml_return_t (*driver_version)(char *, unsigned int);
    tnvml_return_t (*nvml_version)(char *, unsigned int);
} tnvml_api_t;

/* Opens `library` (NULL: TELEM_NVML_DEFAULT) and fills *api.  Returns the
 * dlopen() handle (the caller dlclose()s it), or NULL when the library
 * cannot be loaded or lacks a required entry point. */
void *telem_nvml_load(const char *library, tnvml_api_t *api);

/* Writes into buf the NVML names of the optional entry points api lacks,
 * separated by ", " ("" when none; cut to size).  Returns how many. */
int telem_nvml_missing(const tnvml_api_t *api, char *buf, size_t size);

#endif
