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

void
telem_rsmi_bdf(uint64_t id, char *buf, size_t size)
{
    snprintf(buf, size, "%04" PRIx64 ":%02x:%02x.%x", id >> 32,
             (unsigned) (id >> 8) & 0xff, (unsigned) (id >> 3) & 0x1f,
             (unsigned) id & 0x7);
}
