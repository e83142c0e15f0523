/* run_mpi.h - the inside of libtelem_mpi.so, the MPI interposition library
 * telem_run -m preloads (private to runtime/run; the library's interface
 * is MPI itself).
 *
 * The library defines MPI functions that count their call and bytes and
 * call the PMPI function of the same name.  Its files:
 *   run_mpi.c       the table, the push thread, MPI_Init(_thread) and
 *                   MPI_Finalize
 *   run_mpi_p2p.c   point-to-point calls, requests and probes
 *   run_mpi_coll.c  collectives, blocking and not
 *   run_mpi_rma.c   one-sided calls and windows
 *   run_mpi_io.c    MPI-IO
 * The four wrapper files use the inline functions here (over
 * run_mpi_hot, which run_mpi.c fills), nothing else of run_mpi.c.
 *
 * Bytes are count x PMPI_Type_size(datatype) of the data the call moves
 * out of (or, for a receive, into) this process's buffers; docs/telem_run.md
 * gives the rule for every call.
 */
#ifndef RUN_MPI_H
#define RUN_MPI_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "run_counts.h"

/* Every function counted, in slot order. */
#define RUN_MPI_CALLS(X)                                                    \
    X(MPI_Init) X(MPI_Init_thread) X(MPI_Finalize)                          \
    X(MPI_Send) X(MPI_Bsend) X(MPI_Ssend) X(MPI_Rsend)                      \
    X(MPI_Isend) X(MPI_Ibsend) X(MPI_Issend) X(MPI_Irsend)                  \
    X(MPI_Recv) X(MPI_Irecv) X(MPI_Sendrecv) X(MPI_Sendrecv_replace)        \
    X(MPI_Mrecv) X(MPI_Imrecv) X(MPI_Probe) X(MPI_Iprobe) X(MPI_Mprobe)     \
    X(MPI_Improbe) X(MPI_Send_init) X(MPI_Bsend_init) X(MPI_Ssend_init)     \
    X(MPI_Rsend_init) X(MPI_Recv_init) X(MPI_Start) X(MPI_Startall)         \
    X(MPI_Wait) X(MPI_Waitall) X(MPI_Waitany) X(MPI_Waitsome)               \
    X(MPI_Test) X(MPI_Testall) X(MPI_Testany) X(MPI_Testsome)               \
    X(MPI_Cancel) X(MPI_Request_free)                                       \
    X(MPI_Barrier) X(MPI_Bcast) X(MPI_Reduce) X(MPI_Allreduce)              \
    X(MPI_Gather) X(MPI_Gatherv) X(MPI_Scatter) X(MPI_Scatterv)             \
    X(MPI_Allgather) X(MPI_Allgatherv) X(MPI_Alltoall) X(MPI_Alltoallv)     \
    X(MPI_Alltoallw) X(MPI_Reduce_scatter) X(MPI_Reduce_scatter_block)      \
    X(MPI_Scan) X(MPI_Exscan)                                               \
    X(MPI_Ibarrier) X(MPI_Ibcast) X(MPI_Ireduce) X(MPI_Iallreduce)          \
    X(MPI_Igather) X(MPI_Igatherv) X(MPI_Iscatter) X(MPI_Iscatterv)         \
    X(MPI_Iallgather) X(MPI_Iallgatherv) X(MPI_Ialltoall)                   \
    X(MPI_Ialltoallv) X(MPI_Ialltoallw) X(MPI_Ireduce_scatter)              \
    X(MPI_Ireduce_scatter_block) X(MPI_Iscan) X(MPI_Iexscan)                \
    X(MPI_Put) X(MPI_Get) X(MPI_Accumulate) X(MPI_Get_accumulate)           \
    X(MPI_Fetch_and_op) X(MPI_Compare_and_swap) X(MPI_Rput) X(MPI_Rget)     \
    X(MPI_Raccumulate) X(MPI_Rget_accumulate)                               \
    X(MPI_Win_create) X(MPI_Win_allocate) X(MPI_Win_free) X(MPI_Win_fence)  \
    X(MPI_Win_lock) X(MPI_Win_unlock) X(MPI_Win_lock_all)                   \
    X(MPI_Win_unlock_all) X(MPI_Win_flush) X(MPI_Win_flush_all)             \
    X(MPI_Win_flush_local) X(MPI_Win_flush_local_all) X(MPI_Win_post)       \
    X(MPI_Win_start) X(MPI_Win_complete) X(MPI_Win_wait)                    \
    X(MPI_File_open) X(MPI_File_close) X(MPI_File_read)                     \
    X(MPI_File_read_all) X(MPI_File_read_at) X(MPI_File_read_at_all)        \
    X(MPI_File_read_shared) X(MPI_File_read_ordered) X(MPI_File_write)      \
    X(MPI_File_write_all) X(MPI_File_write_at) X(MPI_File_write_at_all)     \
    X(MPI_File_write_shared) X(MPI_File_write_ordered) X(MPI_File_iread)    \
    X(MPI_File_iread_at) X(MPI_File_iread_all) X(MPI_File_iread_at_all)     \
    X(MPI_File_iwrite) X(MPI_File_iwrite_at) X(MPI_File_iwrite_all)         \
    X(MPI_File_iwrite_at_all) X(MPI_File_sync) X(MPI_File_set_view)

#define RUN_MPI_ENUM(name) RUN_##name,
enum { RUN_MPI_CALLS(RUN_MPI_ENUM) RUN_MPI_NCALLS };
#undef RUN_MPI_ENUM

/* What the wrappers read on every call, kept together on one cache line
 * or two.  run_mpi.c owns it and fills it in MPI_Init: the cells are
 * published last (release), so a wrapper that sees them sees the rest. */
#define RUN_MPI_TYPE_CACHE 64           /* a power of two */
typedef struct {
    _Atomic(run_counts_cell_t *) cells; /* NULL outside Init..Finalize */
    _Atomic int mt;                     /* MPI_THREAD_MULTIPLE: atomic adds */
    /* The sizes of MPI's predefined datatypes, direct-mapped by handle:
       predefined handles never change, so the cache is never stale. */
    MPI_Datatype types[RUN_MPI_TYPE_CACHE];
    uint32_t sizes[RUN_MPI_TYPE_CACHE];
} run_mpi_hot_t;

extern run_mpi_hot_t run_mpi_hot __attribute__((visibility("hidden")));

/* Counts one call of `call` (a RUN_MPI_* slot) moving `bytes`; nothing
 * before MPI_Init or after MPI_Finalize.  Thread-safe as the program's
 * thread level asks (atomic adds under MPI_THREAD_MULTIPLE). */
static inline void
run_mpi_count(int call, uint64_t bytes)
{
    run_counts_cell_t *cells
        = atomic_load_explicit(&run_mpi_hot.cells, memory_order_acquire);
    if (__builtin_expect(cells == NULL, 0))
        return;
    if (atomic_load_explicit(&run_mpi_hot.mt, memory_order_relaxed))
        run_counts_add_mt(&cells[call], bytes);
    else
        run_counts_add(&cells[call], bytes);
}

static inline size_t
run_mpi_type_slot(MPI_Datatype type)
{
    uintptr_t h = (uintptr_t) type;
    return (size_t) ((h ^ (h >> 6) ^ (h >> 12)) & (RUN_MPI_TYPE_CACHE - 1));
}

/* PMPI_Type_size(type) (0 for a bad type), off the wrappers' fast path. */
uint64_t run_mpi_type_size_slow(MPI_Datatype type)
    __attribute__((visibility("hidden"), noinline, cold));

/* The size of `type` in bytes (0 for a bad type): from the cache for a
 * predefined type, else PMPI_Type_size. */
static inline uint64_t
run_mpi_type_size(MPI_Datatype type)
{
    size_t i = run_mpi_type_slot(type);
    if (__builtin_expect(run_mpi_hot.types[i] == type, 1))
        return run_mpi_hot.sizes[i];
    return run_mpi_type_size_slow(type);
}

/* count x the size of `type` (0 for a count <= 0). */
static inline uint64_t
run_mpi_bytes(int count, MPI_Datatype type)
{
    return count > 0 ? (uint64_t) count * run_mpi_type_size(type) : 0;
}

/* The sum of counts[0..n-1] (those > 0) x the size of `type`. */
static inline uint64_t
run_mpi_bytes_v(const int *counts, int n, MPI_Datatype type)
{
    uint64_t sum = 0;
    for (int i = 0; counts && i < n; i++)
        sum += counts[i] > 0 ? (uint64_t) counts[i] : 0;
    return sum ? sum * run_mpi_type_size(type) : 0;
}

/* The size of `comm` and this process's rank in it (0 on an error). */
static inline int
run_mpi_size(MPI_Comm comm)
{
    int n = 0;
    return PMPI_Comm_size(comm, &n) == MPI_SUCCESS ? n : 0;
}

static inline int
run_mpi_rank(MPI_Comm comm)
{
    int r = 0;
    return PMPI_Comm_rank(comm, &r) == MPI_SUCCESS ? r : 0;
}

#endif
