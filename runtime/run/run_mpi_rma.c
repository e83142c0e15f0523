/* run_mpi_rma.c - libtelem_mpi.so's one-sided functions: the data calls
 * and the window and synchronisation calls.  Each counts itself
 * (run_mpi.h) and calls its PMPI twin.
 * Bytes: origin_count x the origin datatype's size for Put, Get,
 * Accumulate, Get_accumulate and their request forms; one element of the
 * datatype for Fetch_and_op and Compare_and_swap; none for the window and
 * synchronisation calls.
 */
#include "run_mpi.h"

#define S_COUNT(call, bytes) run_mpi_count(RUN_##call, (bytes))

int
MPI_Put(const void *oaddr, int ocount, MPI_Datatype otype, int trank,
        MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win)
{
    S_COUNT(MPI_Put, run_mpi_bytes(ocount, otype));
    return PMPI_Put(oaddr, ocount, otype, trank, tdisp, tcount, ttype, win);
}

int
MPI_Get(void *oaddr, int ocount, MPI_Datatype otype, int trank,
        MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win)
{
    S_COUNT(MPI_Get, run_mpi_bytes(ocount, otype));
    return PMPI_Get(oaddr, ocount, otype, trank, tdisp, tcount, ttype, win);
}

int
MPI_Accumulate(const void *oaddr, int ocount, MPI_Datatype otype, int trank,
               MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Op op,
               MPI_Win win)
{
    S_COUNT(MPI_Accumulate, run_mpi_bytes(ocount, otype));
    return PMPI_Accumulate(oaddr, ocount, otype, trank, tdisp, tcount, ttype,
                           op, win);
}

int
MPI_Get_accumulate(const void *oaddr, int ocount, MPI_Datatype otype,
                   void *raddr, int rcount, MPI_Datatype rtype, int trank,
                   MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Op op,
                   MPI_Win win)
{
    S_COUNT(MPI_Get_accumulate, run_mpi_bytes(ocount, otype));
    return PMPI_Get_accumulate(oaddr, ocount, otype, raddr, rcount, rtype,
                               trank, tdisp, tcount, ttype, op, win);
}

int
MPI_Fetch_and_op(const void *oaddr, void *raddr, MPI_Datatype type,
                 int trank, MPI_Aint tdisp, MPI_Op op, MPI_Win win)
{
    S_COUNT(MPI_Fetch_and_op, run_mpi_bytes(1, type));
    return PMPI_Fetch_and_op(oaddr, raddr, type, trank, tdisp, op, win);
}

int
MPI_Compare_and_swap(const void *oaddr, const void *caddr, void *raddr,
                     MPI_Datatype type, int trank, MPI_Aint tdisp, MPI_Win win)
{
    S_COUNT(MPI_Compare_and_swap, run_mpi_bytes(1, type));
    return PMPI_Compare_and_swap(oaddr, caddr, raddr, type, trank, tdisp, win);
}

int
MPI_Rput(const void *oaddr, int ocount, MPI_Datatype otype, int trank,
         MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win,
         MPI_Request *req)
{
    S_COUNT(MPI_Rput, run_mpi_bytes(ocount, otype));
    return PMPI_Rput(oaddr, ocount, otype, trank, tdisp, tcount, ttype, win,
                     req);
}

int
MPI_Rget(void *oaddr, int ocount, MPI_Datatype otype, int trank,
         MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win,
         MPI_Request *req)
{
    S_COUNT(MPI_Rget, run_mpi_bytes(ocount, otype));
    return PMPI_Rget(oaddr, ocount, otype, trank, tdisp, tcount, ttype, win,
                     req);
}

int
MPI_Raccumulate(const void *oaddr, int ocount, MPI_Datatype otype, int trank,
                MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Op op,
                MPI_Win win, MPI_Request *req)
{
    S_COUNT(MPI_Raccumulate, run_mpi_bytes(ocount, otype));
    return PMPI_Raccumulate(oaddr, ocount, otype, trank, tdisp, tcount, ttype,
                            op, win, req);
}

int
MPI_Rget_accumulate(const void *oaddr, int ocount, MPI_Datatype otype,
                    void *raddr, int rcount, MPI_Datatype rtype, int trank,
                    MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Op op,
                    MPI_Win win, MPI_Request *req)
{
    S_COUNT(MPI_Rget_accumulate, run_mpi_bytes(ocount, otype));
    return PMPI_Rget_accumulate(oaddr, ocount, otype, raddr, rcount, rtype,
                                trank, tdisp, tcount, ttype, op, win, req);
}

int
MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info,
               MPI_Comm comm, MPI_Win *win)
{
    S_COUNT(MPI_Win_create, 0);
    return PMPI_Win_create(base, size, disp_unit, info, comm, win);
}

int
MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                 void *baseptr, MPI_Win *win)
{
    S_COUNT(MPI_Win_allocate, 0);
    return PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win);
}

int
MPI_Win_free(MPI_Win *win)
{
    S_COUNT(MPI_Win_free, 0);
    return PMPI_Win_free(win);
}

int
MPI_Win_fence(int assert, MPI_Win win)
{
    S_COUNT(MPI_Win_fence, 0);
    return PMPI_Win_fence(assert, win);
}

int
MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    S_COUNT(MPI_Win_lock, 0);
    return PMPI_Win_lock(lock_type, rank, assert, win);
}

int
MPI_Win_unlock(int rank, MPI_Win win)
{
    S_COUNT(MPI_Win_unlock, 0);
    return PMPI_Win_unlock(rank, win);
}

int
MPI_Win_lock_all(int assert, MPI_Win win)
{
    S_COUNT(MPI_Win_lock_all, 0);
    return PMPI_Win_lock_all(assert, win);
}

int
MPI_Win_unlock_all(MPI_Win win)
{
    S_COUNT(MPI_Win_unlock_all, 0);
    return PMPI_Win_unlock_all(win);
}

int
MPI_Win_flush(int rank, MPI_Win win)
{
    S_COUNT(MPI_Win_flush, 0);
    return PMPI_Win_flush(rank, win);
}

int
MPI_Win_flush_all(MPI_Win win)
{
    S_COUNT(MPI_Win_flush_all, 0);
    return PMPI_Win_flush_all(win);
}

int
MPI_Win_flush_local(int rank, MPI_Win win)
{
    S_COUNT(MPI_Win_flush_local, 0);
    return PMPI_Win_flush_local(rank, win);
}

int
MPI_Win_flush_local_all(MPI_Win win)
{
    S_COUNT(MPI_Win_flush_local_all, 0);
    return PMPI_Win_flush_local_all(win);
}

int
MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
    S_COUNT(MPI_Win_post, 0);
    return PMPI_Win_post(group, assert, win);
}

int
MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
    S_COUNT(MPI_Win_start, 0);
    return PMPI_Win_start(group, assert, win);
}

int
MPI_Win_complete(MPI_Win win)
{
    S_COUNT(MPI_Win_complete, 0);
    return PMPI_Win_complete(win);
}

int
MPI_Win_wait(MPI_Win win)
{
    S_COUNT(MPI_Win_wait, 0);
    return PMPI_Win_wait(win);
}
