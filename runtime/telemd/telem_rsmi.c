/* telem_rsmi.c - finds rocm_smi's entry points in librocm_smi64 at run time
 * (telem_rsmi.h), with telem_gpulib.c's loader.
 */
#include "telem_rsmi.h"

#include <inttypes.h>
#include <stdio.h>

#include "telem_gpulib.h"

#define S_E(field, name, req) \
    TELEM_GPULIB_E(trsmi_api_t, field, name, NULL, req)

static const telem_gpulib_entry_t s_entries[] = {
    S_E(init, "rsmi_init", true),
    S_E(shut_down, "rsmi_shut_down", true),
    S_E(num_devices, "rsmi_num_monitor_devices", true),
    S_E(busy_percent, "rsmi_dev_busy_percent_get", false),
    S_E(memory_busy_percent, "rsmi_dev_memory_busy_percent_get", false),
    S_E(memory_total, "rsmi_dev_memory_total_get", false),
    S_E(memory_usage, "rsmi_dev_memory_usage_get", false),
    S_E(power_ave, "rsmi_dev_power_ave_get", false),
    S_E(power_cap, "rsmi_dev_power_cap_get", false),
    S_E(energy_count, "rsmi_dev_energy_count_get", false),
    S_E(temp_metric, "rsmi_dev_temp_metric_get", false),
    S_E(clk_freq, "rsmi_dev_gpu_clk_freq_get", false),
    S_E(ecc_count, "rsmi_dev_ecc_count_get", false),
    S_E(gpu_metrics, "rsmi_dev_gpu_metrics_info_get", false),
    S_E(name, "rsmi_dev_name_get", false),
    S_E(vendor_name, "rsmi_dev_vendor_name_get", false),
    S_E(serial, "rsmi_dev_serial_number_get", false),
    S_E(vbios, "rsmi_dev_vbios_version_get", false),
    S_E(unique_id, "rsmi_dev_unique_id_get", false),
    S_E(pci_id, "rsmi_dev_pci_id_get", false),
    S_E(version_str, "rsmi_version_str_get", false),
};
#define S_NENTRIES (sizeof s_entries / sizeof s_entries[0])

_Static_assert(offsetof(trsmi_gpu_metrics_t, throttle_status) == 68
                   && sizeof(trsmi_gpu_metrics_t) == 96,
               "rsmi_gpu_metrics_t v1 layout");
_Static_assert(offsetof(trsmi_gpu_metrics_v13_t, firmware_timestamp) == 96
                   && offsetof(trsmi_gpu_metrics_v13_t, indep_throttle_status)
                          == 112
                   && sizeof(trsmi_gpu_metrics_v13_t)
                          <= TRSMI_GPU_METRICS_BUF,
               "rsmi_gpu_metrics_t layout of rocm_smi 6");

void *
telem_rsmi_load(const char *library, trsmi_api_t *api)
{
    return telem_gpulib_load(library ? library : TELEM_RSMI_DEFAULT,
                             s_entries, S_NENTRIES, api, sizeof *api);
}

int
telem_rsmi_missing(const trsmi_api_t *api, char *buf, size_t size)
{
    return telem_gpulib_missing(s_entries, S_NENTRIES, api, buf, size);
}

const char *
telem_rsmi_block_name(unsigned int bit)
{
    static const char *const names[TRSMI_GPU_BLOCKS] = {
        "umc", "sdma", "gfx", "mmhub", "athub", "pcie_bif", "hdp",
        "xgmi_wafl", "df", "smn", "sem", "mp0", "mp1", "fuse",
    };
    return bit < TRSMI_GPU_BLOCKS ? names[bit] : "unknown";
}

const char *
telem_rsmi_throttler_name(unsigned int bit)
{
    /* the amdgpu driver's SMU_THROTTLER_*_BIT (amdgpu_smu.h): power 0-7,
     * current 16-23, temperature 32-47, others 56-57 */
    static const char *const power[8] = {
        "ppt0", "ppt1", "ppt2", "ppt3", "spl", "fppt", "sppt", "sppt_apu",
    };
    static const char *const current[8] = {
        "tdc_gfx", "tdc_soc", "tdc_mem", "tdc_vdd", "tdc_cvip", "edc_cpu",
        "edc_gfx", "apcc",
    };
    static const char *const temp[16] = {
        "temp_gpu", "temp_core", "temp_mem", "temp_edge", "temp_hotspot",
        "temp_soc", "temp_vr_gfx", "temp_vr_soc", "temp_vr_mem0",
        "temp_vr_mem1", "temp_liquid0", "temp_liquid1", "vrhot0", "vrhot1",
        "prochot_cpu", "prochot_gfx",
    };
    if (bit < 8)
        return power[bit];
    if (bit >= 16 && bit < 24)
        return current[bit - 16];
    if (bit >= 32 && bit < 48)
        return temp[bit - 32];
    return bit == 56 ? "ppm" : bit == 57 ? "fit" : NULL;
}

void
telem_rsmi_bdf(uint64_t id, char *buf, size_t size)
{
    snprintf(buf, size, "%04" PRIx64 ":%02x:%02x.%x", id >> 32,
             (unsigned) (id >> 8) & 0xff, (unsigned) (id >> 3) & 0x1f,
             (unsigned) id & 0x7);
}
