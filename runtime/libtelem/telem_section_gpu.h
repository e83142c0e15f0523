/* telem_section_gpu.h - PRIVATE to libtelem: the device time of a section
 * (telem.h, telem_section_begin_gpu), for telem_section.c.
 *
 * A table of TELEM_SECTION_GPU_PENDING pairs of CUDA events, each with a
 * generation that changes when the pair is taken, so that a handle ended
 * twice or forged cannot touch a pair that is another section's now.
 *
 * Call order: telem_section.c calls this; this calls the public API
 * (telem_add_data_tags) and telem_int.h's flush hook, never telem_section.c.
 */
#ifndef TELEM_SECTION_GPU_H
#define TELEM_SECTION_GPU_H

#include <stdint.h>

/* Records the begin event of a new pair on `stream`.  Returns 0 with
 * *idx and *gen set, or -1 (no driver, no context, no free pair, a failed
 * call: counted) and the section goes on without a device part. */
int tsg_begin(void *stream, uint32_t *idx, uint32_t *gen);

/* Records the end event of pair idx (if gen is still its generation) for
 * section `name` (a string that lives as long as the process) ended at
 * realtime `ts_ns`, then reads the pairs whose end has completed. */
void tsg_end(uint32_t idx, uint32_t gen, const char *name, int64_t ts_ns);

#endif
