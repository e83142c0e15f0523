/* telem_sampler_proc_meta.c - what the proc sampler's series mean: the
 * help, unit and type /metrics and the catalog show for each.
 *
 * Names follow Dragon's telemetry where it has one (cpu_percent, used_ram,
 * load_average, num_running_processes) and node_exporter's conventions
 * otherwise: snake_case, base units (bytes, seconds).  Counters read from
 * the kernel are exposed as rates against the previous sample (gauges
 * named *_per_second) or, for CPU time, as a percent of the interval, as
 * cpu_percent always was.
 */
#include "telem_sampler_proc_int.h"

#define G TELEM_METRIC_GAUGE
#define CORE " of one core (tag cpu) since the previous sample, 0-100."
#define NODE " of the node's CPU time, all cores together, since the " \
             "previous sample, 0-100."
#define MEM(m, field, what) \
    {m, G, "bytes", what " (" field " in /proc/meminfo)."}
#define IFACE " (tag iface; loopback not reported)."
#define DISK " (tag disk; partitions, loop and ram devices not reported)."

const telem_meta_t tproc_metrics[] = {
    {"cpu_percent", G, "percent",
     "Share of the node's CPU time, all cores together, that was busy (not "
     "idle, not waiting for I/O) since the previous sample, 0-100."},
    {"cpu_user_percent", G, "percent", "User time (user + nice)" NODE},
    {"cpu_system_percent", G, "percent", "System (kernel) time" NODE},
    {"cpu_iowait_percent", G, "percent", "Time idle waiting for I/O" NODE},
    {"cpu_irq_percent", G, "percent", "Interrupt time (irq + softirq)" NODE},
    {"cpu_steal_percent", G, "percent",
     "Time stolen by the hypervisor for other guests" NODE},
    {"cpu_core_percent", G, "percent",
     "Busy time (not idle, not waiting for I/O)" CORE},
    {"cpu_core_user_percent", G, "percent", "User time (user + nice)" CORE},
    {"cpu_core_system_percent", G, "percent", "System (kernel) time" CORE},
    {"cpu_core_iowait_percent", G, "percent", "Time idle waiting for I/O"
     CORE},
    {"cpu_core_irq_percent", G, "percent", "Interrupt time (irq + softirq)"
     CORE},
    {"cpu_core_steal_percent", G, "percent",
     "Time stolen by the hypervisor for other guests" CORE},
    {"used_ram", G, "percent",
     "Memory in use as a percent of MemTotal: (MemTotal - MemAvailable) / "
     "MemTotal * 100."},
    {"mem_used_bytes", G, "bytes",
     "Memory in use: MemTotal - MemAvailable."},
    MEM("mem_available_bytes", "MemAvailable",
        "Memory available to new work without swapping"),
    MEM("mem_total_bytes", "MemTotal", "Usable physical memory"),
    MEM("mem_free_bytes", "MemFree", "Memory not used for anything"),
    MEM("mem_buffers_bytes", "Buffers", "Block device buffers"),
    MEM("mem_cached_bytes", "Cached", "Page cache, without swap cache"),
    MEM("mem_active_bytes", "Active", "Memory used recently"),
    MEM("mem_inactive_bytes", "Inactive",
        "Memory not used recently, first to be reclaimed"),
    MEM("mem_dirty_bytes", "Dirty", "Memory waiting to be written back"),
    MEM("mem_writeback_bytes", "Writeback", "Memory being written back"),
    MEM("mem_anon_bytes", "AnonPages", "Anonymous pages mapped by processes"),
    MEM("mem_mapped_bytes", "Mapped", "Files mapped into memory"),
    MEM("mem_shmem_bytes", "Shmem", "Shared memory and tmpfs"),
    MEM("mem_slab_bytes", "Slab", "Kernel slab caches"),
    MEM("mem_slab_reclaimable_bytes", "SReclaimable",
        "Slab memory that can be reclaimed"),
    MEM("mem_slab_unreclaimable_bytes", "SUnreclaim",
        "Slab memory that cannot be reclaimed"),
    MEM("mem_page_tables_bytes", "PageTables", "Page tables"),
    MEM("mem_commit_limit_bytes", "CommitLimit",
        "Memory that can be committed under strict overcommit"),
    MEM("mem_committed_bytes", "Committed_AS",
        "Memory committed to processes, used or not"),
    MEM("mem_hugetlb_bytes", "Hugetlb", "Memory in huge pages of every size"),
    MEM("swap_total_bytes", "SwapTotal", "Swap space"),
    MEM("swap_free_bytes", "SwapFree", "Swap space not in use"),
    MEM("swap_cached_bytes", "SwapCached",
        "Memory swapped out and back in, still in swap"),
    {"swap_used_bytes", G, "bytes",
     "Swap space in use: SwapTotal - SwapFree."},
    {"hugepages", G, "",
     "Huge pages of the default size in the pool (HugePages_Total)."},
    {"hugepages_free", G, "",
     "Huge pages of the pool not yet allocated (HugePages_Free)."},
    {"hugepages_reserved", G, "",
     "Huge pages promised but not yet allocated (HugePages_Rsvd)."},
    {"hugepages_surplus", G, "",
     "Huge pages above the pool's size (HugePages_Surp)."},
    MEM("hugepage_size_bytes", "Hugepagesize", "Default huge page size"),
    {"load_average", G, "", "Load average over the last minute."},
    {"load_average_5", G, "", "Load average over the last 5 minutes."},
    {"load_average_15", G, "", "Load average over the last 15 minutes."},
    {"num_running_processes", G, "",
     "Processes (not threads) whose /proc/<pid> directory belongs to the "
     "job's user, i.e. whose effective uid is the job's."},
    {"procs_running", G, "",
     "Runnable tasks on the node, all users (procs_running in /proc/stat)."},
    {"context_switches_per_second", G, "1/s",
     "Context switches per second on the node since the previous sample."},
    {"uptime_seconds", G, "seconds", "Time since the node booted."},
    {"net_rx_bytes_per_second", G, "bytes/s",
     "Bytes received per second on a network interface" IFACE},
    {"net_tx_bytes_per_second", G, "bytes/s",
     "Bytes sent per second on a network interface" IFACE},
    {"net_rx_errors_per_second", G, "1/s",
     "Receive errors per second on a network interface" IFACE},
    {"net_tx_errors_per_second", G, "1/s",
     "Transmit errors per second on a network interface" IFACE},
    {"net_rx_drops_per_second", G, "1/s",
     "Received packets dropped per second on a network interface" IFACE},
    {"net_tx_drops_per_second", G, "1/s",
     "Packets dropped per second before sending on a network interface"
     IFACE},
    {"disk_read_bytes_per_second", G, "bytes/s",
     "Bytes read per second from a whole disk" DISK},
    {"disk_write_bytes_per_second", G, "bytes/s",
     "Bytes written per second to a whole disk" DISK},
    {"disk_reads_per_second", G, "1/s",
     "Reads completed per second (read IOPS) on a whole disk" DISK},
    {"disk_writes_per_second", G, "1/s",
     "Writes completed per second (write IOPS) on a whole disk" DISK},
    {"disk_read_latency_seconds", G, "seconds",
     "Average time a read completed since the previous sample took, queue "
     "included (0 when none completed)" DISK},
    {"disk_write_latency_seconds", G, "seconds",
     "Average time a write completed since the previous sample took, queue "
     "included (0 when none completed)" DISK},
    {"disk_busy_percent", G, "percent",
     "Share of the time since the previous sample the disk had I/O in "
     "flight, 0-100 (%util in iostat)" DISK},
    {NULL, G, NULL, NULL}
};
