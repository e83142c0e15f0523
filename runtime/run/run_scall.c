/* run_scall.c - system-call slots, names and I/O classes (run_scall.h).
 *
 * The architectures' tokens are libseccomp's SCMP_ARCH_* values, which are
 * the kernel's AUDIT_ARCH_* values PTRACE_GET_SYSCALL_INFO reports, except
 * x32: the kernel reports AUDIT_ARCH_X86_64 with __X32_SYSCALL_BIT in the
 * number, libseccomp has a token of its own for it.  The list of I/O calls
 * is a list of names (the one thing this file decides); their numbers on
 * every architecture come from libseccomp.
 */
#include "run_scall.h"

#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"

#define S_X32_BIT UINT64_C(0x40000000)

struct run_scall {
    unsigned char io[RUN_SCALL_SLOTS];
};

/* The architectures, in slot order; x32 is recognised by its number. */
static const uint32_t s_arches[RUN_SCALL_ARCHES] = {
    SCMP_ARCH_X86_64, SCMP_ARCH_X86, SCMP_ARCH_X32, SCMP_ARCH_AARCH64,
    SCMP_ARCH_ARM,
};
enum { S_X86_64 = 0, S_X32 = 2 };

/* System calls whose non-negative return value is the bytes they moved. */
static const char *const s_io_names[] = {
    "read", "write", "pread64", "pwrite64", "readv", "writev",
    "preadv", "pwritev", "preadv2", "pwritev2",
    "send", "recv", "sendto", "recvfrom", "sendmsg", "recvmsg",
    "sendfile", "sendfile64", "splice", "tee", "vmsplice",
    "copy_file_range", "process_vm_readv", "process_vm_writev",
};

size_t
run_scall_slot(uint32_t audit_arch, uint64_t nr)
{
    size_t a = 0;
    while (a < RUN_SCALL_ARCHES && s_arches[a] != audit_arch)
        a++;
    if (a == S_X86_64 && (nr & S_X32_BIT)) {
        a = S_X32;
        nr &= ~S_X32_BIT;
    }
    if (a == RUN_SCALL_ARCHES || nr >= RUN_SCALL_NR_MAX)
        return RUN_SCALL_OTHER;
    return a * RUN_SCALL_NR_MAX + (size_t) nr;
}

/* The number libseccomp knows slot `slot`'s call by (x32's carry the bit). */
static int
s_number(size_t slot, uint32_t *arch)
{
    size_t a = slot / RUN_SCALL_NR_MAX;
    int nr = (int) (slot % RUN_SCALL_NR_MAX);
    *arch = s_arches[a];
    return a == S_X32 ? (int) (nr | S_X32_BIT) : nr;
}

run_scall_t *
run_scall_new(void)
{
    run_scall_t *sc = calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    size_t n = sizeof s_io_names / sizeof s_io_names[0];
    for (size_t a = 0; a < RUN_SCALL_ARCHES; a++)
        for (size_t i = 0; i < n; i++) {
            int nr = seccomp_syscall_resolve_name_arch(s_arches[a],
                                                       s_io_names[i]);
            if (nr < 0)
                continue;     /* not a call of this architecture */
            size_t slot = run_scall_slot(s_arches[a] == SCMP_ARCH_X32
                                             ? SCMP_ARCH_X86_64
                                             : s_arches[a],
                                         (uint64_t) nr);
            if (slot != RUN_SCALL_OTHER)
                sc->io[slot] = 1;
        }
    return sc;
}

void
run_scall_destroy(run_scall_t **scall_p)
{
    if (!scall_p || !*scall_p)
        return;
    free(*scall_p);
    *scall_p = NULL;
}

int
run_scall_is_io(const run_scall_t *scall, size_t slot)
{
    return slot < RUN_SCALL_SLOTS && scall->io[slot];
}

int
run_scall_name(void *arg, size_t slot, char *buf, size_t size)
{
    (void) arg;
    int n;
    if (slot >= RUN_SCALL_OTHER) {
        n = snprintf(buf, size, "unknown");
    } else {
        uint32_t arch;
        int nr = s_number(slot, &arch);
        char *name = seccomp_syscall_resolve_num_arch(arch, nr);
        if (name)
            n = snprintf(buf, size, "%s", name);
        else
            n = snprintf(buf, size, "syscall_%zu", slot % RUN_SCALL_NR_MAX);
        free(name);
    }
    return n < 0 || (size_t) n >= size ? TELEM_ETOOBIG : 0;
}
