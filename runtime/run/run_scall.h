/* run_scall.h - system calls as telem_run's tracer counts them.
 *
 * A traced thread's system call is known by its architecture (the
 * AUDIT_ARCH_* value PTRACE_GET_SYSCALL_INFO reports; one process may be a
 * 32-bit one on a 64-bit kernel) and its number.  This module maps the
 * pair to a slot of the counter table (run_counts.h), names the slot from
 * libseccomp's tables (seccomp_syscall_resolve_num_arch: the kernel's
 * numbering as libseccomp maintains it, nothing typed here), and says which
 * slots are I/O calls whose non-negative return value is a byte count
 * (read, write, pread64, pwrite64, readv, writev, preadv(2), pwritev(2),
 * send, recv, sendto, recvfrom, sendmsg, recvmsg, sendfile(64), splice,
 * tee, vmsplice, copy_file_range, process_vm_readv, process_vm_writev).
 *
 * Slots: RUN_SCALL_NR_MAX numbers for each of x86-64, i386, x32, aarch64
 * and arm, then one slot for any other architecture or a number beyond
 * the range.  A number libseccomp does not know is named "syscall_<nr>".
 *
 * Thread safety: run_scall_new() and run_scall_destroy() once; the other
 * functions only read the table and may be called from any thread.
 */
#ifndef RUN_SCALL_H
#define RUN_SCALL_H

#include <stddef.h>
#include <stdint.h>

#define RUN_SCALL_NR_MAX 1024        /* numbers per architecture */
#define RUN_SCALL_ARCHES 5
#define RUN_SCALL_SLOTS (RUN_SCALL_ARCHES * RUN_SCALL_NR_MAX + 1)
#define RUN_SCALL_OTHER (RUN_SCALL_SLOTS - 1)

typedef struct run_scall run_scall_t;

/* Builds the table of I/O slots from libseccomp's names.  Returns NULL
 * when out of memory. */
run_scall_t *run_scall_new(void);

/* Frees it; accepts NULL and nulls the caller's pointer. */
void run_scall_destroy(run_scall_t **scall_p);

/* The slot of system call `nr` of architecture `audit_arch`
 * (RUN_SCALL_OTHER when either is outside the table). */
size_t run_scall_slot(uint32_t audit_arch, uint64_t nr);

/* 1 when the slot's call returns a byte count, else 0. */
int run_scall_is_io(const run_scall_t *scall, size_t slot);

/* Writes the slot's name ("write", "syscall_462", "unknown" for
 * RUN_SCALL_OTHER) into buf.  Returns 0, or TELEM_ETOOBIG when it does
 * not fit.  Matches run_counts_label_fn (arg unused). */
int run_scall_name(void *arg, size_t slot, char *buf, size_t size);

#endif
