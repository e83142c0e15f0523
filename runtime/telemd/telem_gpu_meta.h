/* telem_gpu_meta.h - PRIVATE to telemd: the description (name, type, unit,
 * help) of every GPU series whose name the nvml, rsmi and ze samplers
 * share.
 *
 * A series name has one meaning whatever the vendor, so that a query, a
 * detector or a Prometheus dashboard reads every GPU through one name.
 * telemd keeps one description per name (the last sampler that opened
 * gives it), so a shared name must be described the same way by every
 * sampler, whichever of them a node opens: each entry below is used as is
 * in the samplers' metrics tables (telem_sampler_nvml.c, _rsmi.c, _ze.c).
 * The help names what each vendor's value is where they differ.
 * test_sampler_gpu_vendors checks that no name is described two ways.
 */
#ifndef TELEM_GPU_META_H
#define TELEM_GPU_META_H

#include "telem_types.h"

#define TELEM_GPU_TAGS " (tag gpu; AMD and Intel GPUs add tag vendor)."

#define TELEM_GPU_META_UTILIZATION                                          \
    {"gpu_utilization", TELEM_METRIC_GAUGE, "percent",                      \
     "Percent of the last sample period the GPU was busy, as its driver "   \
     "reports it (NVIDIA: a kernel ran; AMD: busy percent; Intel: the "     \
     "engines were active)" TELEM_GPU_TAGS}
#define TELEM_GPU_META_MEMORY_UTILIZATION                                   \
    {"gpu_memory_utilization", TELEM_METRIC_GAUGE, "percent",               \
     "Percent of the last sample period GPU memory was read or written"     \
     TELEM_GPU_TAGS}
#define TELEM_GPU_META_POWER                                                \
    {"gpu_power_w", TELEM_METRIC_GAUGE, "W",                                \
     "Power drawn by the GPU (NVIDIA: the board; AMD: the socket's "        \
     "average; Intel: the average over the last sample period, from the "   \
     "energy counter)" TELEM_GPU_TAGS}
#define TELEM_GPU_META_POWER_LIMIT                                          \
    {"gpu_power_limit_w", TELEM_METRIC_GAUGE, "W",                          \
     "Power limit (cap) the driver enforces on the GPU" TELEM_GPU_TAGS}
#define TELEM_GPU_META_ENERGY                                               \
    {"gpu_energy_joules_total", TELEM_METRIC_COUNTER, "joules",             \
     "Energy the GPU used, the driver's energy counter" TELEM_GPU_TAGS}
#define TELEM_GPU_META_TEMPERATURE                                          \
    {"gpu_temperature_c", TELEM_METRIC_GAUGE, "celsius",                    \
     "GPU temperature (NVIDIA: the die; AMD: the edge sensor, or the "      \
     "junction where there is none; Intel: the hottest GPU sensor)"         \
     TELEM_GPU_TAGS}
#define TELEM_GPU_META_TEMPERATURE_MEMORY                                   \
    {"gpu_temperature_memory_c", TELEM_METRIC_GAUGE, "celsius",             \
     "GPU memory (VRAM, HBM) temperature (Intel: the hottest memory "       \
     "sensor)" TELEM_GPU_TAGS}
#define TELEM_GPU_META_MEMORY_USED                                          \
    {"gpu_memory_used_bytes", TELEM_METRIC_GAUGE, "bytes",                  \
     "GPU memory allocated (NVIDIA: with the few hundred MiB the driver "   \
     "sets aside)" TELEM_GPU_TAGS}
#define TELEM_GPU_META_MEMORY_TOTAL                                         \
    {"gpu_memory_total_bytes", TELEM_METRIC_GAUGE, "bytes",                 \
     "GPU memory installed (Intel: allocatable, over all modules)"          \
     TELEM_GPU_TAGS}
#define TELEM_GPU_META_SM_CLOCK                                             \
    {"gpu_sm_clock_hertz", TELEM_METRIC_GAUGE, "hertz",                     \
     "Current GPU core clock (NVIDIA: SM; AMD: system clock; Intel: the "   \
     "GPU domain's actual frequency)" TELEM_GPU_TAGS}
#define TELEM_GPU_META_MEMORY_CLOCK                                         \
    {"gpu_memory_clock_hertz", TELEM_METRIC_GAUGE, "hertz",                 \
     "Current GPU memory clock" TELEM_GPU_TAGS}
#define TELEM_GPU_META_ECC_CORRECTED                                        \
    {"gpu_ecc_corrected_errors_total", TELEM_METRIC_COUNTER, "",            \
     "Corrected ECC errors since the driver was loaded (NVIDIA: the "       \
     "volatile count; AMD: summed over the GPU's blocks)" TELEM_GPU_TAGS}
#define TELEM_GPU_META_ECC_UNCORRECTED                                      \
    {"gpu_ecc_uncorrected_errors_total", TELEM_METRIC_COUNTER, "",          \
     "Uncorrected ECC errors since the driver was loaded (NVIDIA: the "     \
     "volatile count; AMD: summed over the GPU's blocks)" TELEM_GPU_TAGS}
#define TELEM_GPU_META_CLOCKS_EVENT                                         \
    {"gpu_clocks_event", TELEM_METRIC_GAUGE, "",                            \
     "1 while the clock-event (throttle) reason named by tag reason "       \
     "holds, else 0; the reasons are each vendor's own names (tags gpu, "   \
     "reason; AMD and Intel GPUs add tag vendor)."}
#define TELEM_GPU_META_THROTTLED                                            \
    {"gpu_throttled", TELEM_METRIC_GAUGE, "",                               \
     "1 while the GPU reports any throttle reason, else 0" TELEM_GPU_TAGS}
#define TELEM_GPU_META_LOST                                                 \
    {"gpu_lost", TELEM_METRIC_GAUGE, "",                                    \
     "1 when the GPU was lost (fallen off the bus) or, for AMD and Intel, " \
     "no query of it answered at this sample, else 0" TELEM_GPU_TAGS}

#endif
