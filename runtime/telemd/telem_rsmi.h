/* telem_rsmi.h - PRIVATE to telemd: the part of AMD's rocm_smi C ABI telem
 * uses, and a loader that finds it in librocm_smi64 at run time.
 *
 * telem builds without AMD's headers: the few types and constants used are
 * declared here with rocm_smi.h's layout and values (rocm_smi_lib 5.2, as
 * Debian 12's librocm-smi-dev ships it; the entry points used have kept
 * their ABI since).  rsmi_init, rsmi_shut_down and
 * rsmi_num_monitor_devices are required; every other entry point is
 * optional (see trsmi_gpu_metrics_v13_t for the one struct that did not
 * keep its size).  Users: the rsmi sampler (telem_sampler_rsmi.c) and the system
 * snapshot (telem_sysinfo_gpu.c).  rocm_smi's calls are thread-safe; the
 * loader keeps no state.
 */
#ifndef TELEM_RSMI_H
#define TELEM_RSMI_H

#include <stddef.h>
#include <stdint.h>

#define TELEM_RSMI_DEFAULT "librocm_smi64.so.1"

typedef uint32_t trsmi_status_t;        /* rsmi_status_t */
#define TRSMI_SUCCESS 0
#define TRSMI_NOT_SUPPORTED 2

#define TRSMI_MEM_TYPE_VRAM 0           /* rsmi_memory_type_t */
#define TRSMI_TEMP_CURRENT 0            /* rsmi_temperature_metric_t */
#define TRSMI_TEMP_TYPE_EDGE 0          /* rsmi_temperature_type_t */
#define TRSMI_TEMP_TYPE_JUNCTION 1
#define TRSMI_TEMP_TYPE_MEMORY 2
#define TRSMI_CLK_TYPE_SYS 0            /* rsmi_clk_type_t */
#define TRSMI_CLK_TYPE_MEM 4
#define TRSMI_SW_COMP_DRIVER 0          /* rsmi_sw_component_t */
#define TRSMI_MAX_NUM_FREQUENCIES 32
#define TRSMI_GPU_BLOCKS 14             /* rsmi_gpu_block_t: bits 0..13 */

typedef struct {                        /* rsmi_frequencies_t */
    uint32_t num_supported;
    uint32_t current;
    uint64_t frequency[TRSMI_MAX_NUM_FREQUENCIES];     /* Hz */
} trsmi_frequencies_t;

typedef struct {                        /* rsmi_error_count_t */
    uint64_t correctable_err;
    uint64_t uncorrectable_err;
} trsmi_error_count_t;

typedef struct {                        /* rsmi_gpu_metrics_t (format 1) */
    uint16_t structure_size;
    uint8_t format_revision, content_revision;
    uint16_t temperature_edge, temperature_hotspot, temperature_mem;
    uint16_t temperature_vrgfx, temperature_vrsoc, temperature_vrmem;
    uint16_t average_gfx_activity, average_umc_activity;
    uint16_t average_mm_activity;
    uint16_t average_socket_power;
    uint64_t energy_accumulator;
    uint64_t system_clock_counter;
    uint16_t average_clocks[7];
    uint16_t current_clocks[7];
    uint32_t throttle_status;
    uint16_t current_fan_speed;
    uint16_t pcie_link_width, pcie_link_speed;
    uint16_t padding;
    uint32_t gfx_activity_acc, mem_actvity_acc;
    uint16_t temperature_hbm[4];
} trsmi_gpu_metrics_t;

/* rsmi_gpu_metrics_t grew with rocm_smi's releases: 96 bytes in 5.x (the
 * struct above), 1,832 in 6.2 and later, which append the fields of
 * metrics tables 1.2 to 1.6 and start them with the two below (ASIC
 * independent throttle bits at byte 112).  rsmi_dev_gpu_metrics_info_get
 * writes its own version's whole struct, so a caller gives it
 * TRSMI_GPU_METRICS_BUF bytes, whatever library it loaded.  A 5.x library
 * leaves the bytes past the first 96 as they were (5.x reads a 1.3 table
 * but copies only its first 96 bytes out); a later one writes them, with
 * every field the device's table lacks set to all ones. */
typedef struct {                        /* rsmi_gpu_metrics_t, rocm_smi 6 */
    trsmi_gpu_metrics_t v1;
    uint64_t firmware_timestamp;
    uint16_t voltage_soc, voltage_gfx, voltage_mem;
    uint64_t indep_throttle_status;     /* SMU_THROTTLER_* bits */
} trsmi_gpu_metrics_v13_t;
#define TRSMI_GPU_METRICS_BUF 16384

typedef trsmi_status_t (*trsmi_dev_u32_fn)(uint32_t, uint32_t *);
typedef trsmi_status_t (*trsmi_dev_u64_fn)(uint32_t, uint64_t *);

/* Entry points; NULL where the library lacks an optional one. */
typedef struct {
    /* required */
    trsmi_status_t (*init)(uint64_t flags);
    trsmi_status_t (*shut_down)(void);
    trsmi_status_t (*num_devices)(uint32_t *);
    /* values */
    trsmi_dev_u32_fn busy_percent;
    trsmi_dev_u32_fn memory_busy_percent;
    trsmi_status_t (*memory_total)(uint32_t, int, uint64_t *);
    trsmi_status_t (*memory_usage)(uint32_t, int, uint64_t *);
    trsmi_status_t (*power_ave)(uint32_t, uint32_t, uint64_t *);    /* uW */
    trsmi_status_t (*power_cap)(uint32_t, uint32_t, uint64_t *);    /* uW */
    trsmi_status_t (*energy_count)(uint32_t, uint64_t *, float *,
                                   uint64_t *);
    trsmi_status_t (*temp_metric)(uint32_t, uint32_t, int,
                                  int64_t *);           /* millidegrees */
    trsmi_status_t (*clk_freq)(uint32_t, int, trsmi_frequencies_t *);
    trsmi_status_t (*ecc_count)(uint32_t, uint64_t, trsmi_error_count_t *);
    trsmi_status_t (*gpu_metrics)(uint32_t, trsmi_gpu_metrics_t *);
    /* names, for the system snapshot */
    trsmi_status_t (*name)(uint32_t, char *, size_t);
    trsmi_status_t (*vendor_name)(uint32_t, char *, size_t);
    trsmi_status_t (*serial)(uint32_t, char *, uint32_t);
    trsmi_status_t (*vbios)(uint32_t, char *, uint32_t);
    trsmi_dev_u64_fn unique_id;
    trsmi_dev_u64_fn pci_id;            /* BDFID */
    trsmi_status_t (*version_str)(int, char *, uint32_t);
} trsmi_api_t;

/* Opens `library` (NULL: TELEM_RSMI_DEFAULT) and fills *api.  Returns the
 * dlopen() handle (the caller dlclose()s it), or NULL. */
void *telem_rsmi_load(const char *library, trsmi_api_t *api);

/* The rocm_smi names of the optional entry points api lacks, as
 * telem_gpulib_missing(). */
int telem_rsmi_missing(const trsmi_api_t *api, char *buf, size_t size);

/* rocm_smi's name of ECC block bit `bit` ("umc", "sdma", ...). */
const char *telem_rsmi_block_name(unsigned int bit);

/* The name of bit `bit` of indep_throttle_status, after the amdgpu
 * driver's SMU_THROTTLER_*_BIT ("ppt0", "temp_hotspot", "prochot_gfx",
 * ...), or NULL for a bit the driver does not name. */
const char *telem_rsmi_throttler_name(unsigned int bit);

/* "DDDD:BB:DD.F" from a BDFID into buf (at least 16 bytes). */
void telem_rsmi_bdf(uint64_t bdfid, char *buf, size_t size);

#endif
