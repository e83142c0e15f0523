/* run_mpi_coll.c - libtelem_mpi.so's collectives, blocking and
 * non-blocking.  Each counts itself (run_mpi.h) and calls its PMPI twin.
 *
 * Bytes: the size of this process's data buffer as the call's counts and
 * datatypes describe it, on an intracommunicator:
 *   Bcast, Reduce, Allreduce, Scan, Exscan      count x size
 *   Reduce_scatter(_block)                      the send buffer: the sum
 *                                               of recvcounts (recvcount x
 *                                               ranks) x size
 *   Gather(v), Allgather(v)                     sendcount x size; with
 *                                               MPI_IN_PLACE this rank's
 *                                               block of the receive buffer
 *   Scatter(v)                                  the root: everything it
 *                                               sends; the others: what
 *                                               they receive
 *   Alltoall(v,w)                               everything this rank sends
 *                                               (MPI_IN_PLACE: the receive
 *                                               buffer)
 *   Barrier                                     none
 * The I forms count as their blocking forms.
 */
#include "run_mpi.h"

#define S_COUNT(call, bytes) run_mpi_count(RUN_##call, (bytes))

static int
s_is_root(int root, MPI_Comm comm)
{
    return root == MPI_ROOT || root == run_mpi_rank(comm);
}

static uint64_t
s_gather(const void *sbuf, int scount, MPI_Datatype stype, int rcount,
         MPI_Datatype rtype)
{
    return sbuf == MPI_IN_PLACE ? run_mpi_bytes(rcount, rtype)
                                : run_mpi_bytes(scount, stype);
}

static uint64_t
s_gatherv(const void *sbuf, int scount, MPI_Datatype stype,
          const int *rcounts, MPI_Datatype rtype, MPI_Comm comm)
{
    if (sbuf != MPI_IN_PLACE)
        return run_mpi_bytes(scount, stype);
    return rcounts ? run_mpi_bytes(rcounts[run_mpi_rank(comm)], rtype) : 0;
}

static uint64_t
s_scatter(int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype,
          int root, MPI_Comm comm)
{
    if (!s_is_root(root, comm))
        return run_mpi_bytes(rcount, rtype);
    return run_mpi_bytes(scount, stype) * (uint64_t) run_mpi_size(comm);
}

static uint64_t
s_scatterv(const int *scounts, MPI_Datatype stype, int rcount,
           MPI_Datatype rtype, int root, MPI_Comm comm)
{
    if (!s_is_root(root, comm))
        return run_mpi_bytes(rcount, rtype);
    return run_mpi_bytes_v(scounts, run_mpi_size(comm), stype);
}

static uint64_t
s_alltoall(const void *sbuf, int scount, MPI_Datatype stype, int rcount,
           MPI_Datatype rtype, MPI_Comm comm)
{
    uint64_t n = (uint64_t) run_mpi_size(comm);
    return n * (sbuf == MPI_IN_PLACE ? run_mpi_bytes(rcount, rtype)
                                     : run_mpi_bytes(scount, stype));
}

static uint64_t
s_alltoallv(const void *sbuf, const int *scounts, MPI_Datatype stype,
            const int *rcounts, MPI_Datatype rtype, MPI_Comm comm)
{
    int n = run_mpi_size(comm);
    return sbuf == MPI_IN_PLACE ? run_mpi_bytes_v(rcounts, n, rtype)
                                : run_mpi_bytes_v(scounts, n, stype);
}

static uint64_t
s_alltoallw(const void *sbuf, const int *scounts, const MPI_Datatype *stypes,
            const int *rcounts, const MPI_Datatype *rtypes, MPI_Comm comm)
{
    int n = run_mpi_size(comm);
    const int *counts = sbuf == MPI_IN_PLACE ? rcounts : scounts;
    const MPI_Datatype *types = sbuf == MPI_IN_PLACE ? rtypes : stypes;
    uint64_t sum = 0;
    for (int i = 0; counts && types && i < n; i++)
        sum += run_mpi_bytes(counts[i], types[i]);
    return sum;
}

static uint64_t
s_reduce_scatter(const int *rcounts, MPI_Datatype type, MPI_Comm comm)
{
    return run_mpi_bytes_v(rcounts, run_mpi_size(comm), type);
}

/* ---- blocking ----------------------------------------------------------- */

int
MPI_Barrier(MPI_Comm comm)
{
    S_COUNT(MPI_Barrier, 0);
    return PMPI_Barrier(comm);
}

int
MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    S_COUNT(MPI_Bcast, run_mpi_bytes(count, type));
    return PMPI_Bcast(buf, count, type, root, comm);
}

int
MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
           MPI_Op op, int root, MPI_Comm comm)
{
    S_COUNT(MPI_Reduce, run_mpi_bytes(count, type));
    return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
}

int
MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
              MPI_Op op, MPI_Comm comm)
{
    S_COUNT(MPI_Allreduce, run_mpi_bytes(count, type));
    return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
}

int
MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
           int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    S_COUNT(MPI_Gather, s_gather(sbuf, scount, stype, rcount, rtype));
    return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

int
MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
            const int rcounts[], const int displs[], MPI_Datatype rtype,
            int root, MPI_Comm comm)
{
    S_COUNT(MPI_Gatherv, s_gatherv(sbuf, scount, stype, rcounts, rtype, comm));
    return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype,
                        root, comm);
}

int
MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
            int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    S_COUNT(MPI_Scatter, s_scatter(scount, stype, rcount, rtype, root, comm));
    return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

int
MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[],
             MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
             int root, MPI_Comm comm)
{
    S_COUNT(MPI_Scatterv,
            s_scatterv(scounts, stype, rcount, rtype, root, comm));
    return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype,
                         root, comm);
}

int
MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
              int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    S_COUNT(MPI_Allgather, s_gather(sbuf, scount, stype, rcount, rtype));
    return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int
MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
               const int rcounts[], const int displs[], MPI_Datatype rtype,
               MPI_Comm comm)
{
    S_COUNT(MPI_Allgatherv,
            s_gatherv(sbuf, scount, stype, rcounts, rtype, comm));
    return PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype,
                           comm);
}

int
MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
             int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    S_COUNT(MPI_Alltoall, s_alltoall(sbuf, scount, stype, rcount, rtype, comm));
    return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int
MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
              MPI_Datatype stype, void *rbuf, const int rcounts[],
              const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    S_COUNT(MPI_Alltoallv,
            s_alltoallv(sbuf, scounts, stype, rcounts, rtype, comm));
    return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts,
                          rdispls, rtype, comm);
}

int
MPI_Alltoallw(const void *sbuf, const int scounts[], const int sdispls[],
              const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
              const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm)
{
    S_COUNT(MPI_Alltoallw,
            s_alltoallw(sbuf, scounts, stypes, rcounts, rtypes, comm));
    return PMPI_Alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts,
                          rdispls, rtypes, comm);
}

int
MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
                   MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    S_COUNT(MPI_Reduce_scatter, s_reduce_scatter(rcounts, type, comm));
    return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm);
}

int
MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                         MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    S_COUNT(MPI_Reduce_scatter_block,
            run_mpi_bytes(rcount, type) * (uint64_t) run_mpi_size(comm));
    return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, type, op, comm);
}

int
MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
         MPI_Op op, MPI_Comm comm)
{
    S_COUNT(MPI_Scan, run_mpi_bytes(count, type));
    return PMPI_Scan(sbuf, rbuf, count, type, op, comm);
}

int
MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
           MPI_Op op, MPI_Comm comm)
{
    S_COUNT(MPI_Exscan, run_mpi_bytes(count, type));
    return PMPI_Exscan(sbuf, rbuf, count, type, op, comm);
}

/* ---- non-blocking ------------------------------------------------------- */

int
MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Ibarrier, 0);
    return PMPI_Ibarrier(comm, req);
}

int
MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
           MPI_Request *req)
{
    S_COUNT(MPI_Ibcast, run_mpi_bytes(count, type));
    return PMPI_Ibcast(buf, count, type, root, comm, req);
}

int
MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
            MPI_Op op, int root, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Ireduce, run_mpi_bytes(count, type));
    return PMPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, req);
}

int
MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
               MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Iallreduce, run_mpi_bytes(count, type));
    return PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, req);
}

int
MPI_Igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
            int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
            MPI_Request *req)
{
    S_COUNT(MPI_Igather, s_gather(sbuf, scount, stype, rcount, rtype));
    return PMPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm,
                        req);
}

int
MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
             const int rcounts[], const int displs[], MPI_Datatype rtype,
             int root, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Igatherv,
            s_gatherv(sbuf, scount, stype, rcounts, rtype, comm));
    return PMPI_Igatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype,
                         root, comm, req);
}

int
MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
             int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
             MPI_Request *req)
{
    S_COUNT(MPI_Iscatter,
            s_scatter(scount, stype, rcount, rtype, root, comm));
    return PMPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm,
                         req);
}

int
MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[],
              MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
              int root, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Iscatterv,
            s_scatterv(scounts, stype, rcount, rtype, root, comm));
    return PMPI_Iscatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype,
                          root, comm, req);
}

int
MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
               int rcount, MPI_Datatype rtype, MPI_Comm comm,
               MPI_Request *req)
{
    S_COUNT(MPI_Iallgather, s_gather(sbuf, scount, stype, rcount, rtype));
    return PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm,
                           req);
}

int
MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                const int rcounts[], const int displs[], MPI_Datatype rtype,
                MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Iallgatherv,
            s_gatherv(sbuf, scount, stype, rcounts, rtype, comm));
    return PMPI_Iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype,
                            comm, req);
}

int
MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
              int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Ialltoall,
            s_alltoall(sbuf, scount, stype, rcount, rtype, comm));
    return PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm,
                          req);
}

int
MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[],
               MPI_Datatype stype, void *rbuf, const int rcounts[],
               const int rdispls[], MPI_Datatype rtype, MPI_Comm comm,
               MPI_Request *req)
{
    S_COUNT(MPI_Ialltoallv,
            s_alltoallv(sbuf, scounts, stype, rcounts, rtype, comm));
    return PMPI_Ialltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts,
                           rdispls, rtype, comm, req);
}

int
MPI_Ialltoallw(const void *sbuf, const int scounts[], const int sdispls[],
               const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
               const int rdispls[], const MPI_Datatype rtypes[],
               MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Ialltoallw,
            s_alltoallw(sbuf, scounts, stypes, rcounts, rtypes, comm));
    return PMPI_Ialltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts,
                           rdispls, rtypes, comm, req);
}

int
MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
                    MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                    MPI_Request *req)
{
    S_COUNT(MPI_Ireduce_scatter, s_reduce_scatter(rcounts, type, comm));
    return PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, type, op, comm, req);
}

int
MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                          MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                          MPI_Request *req)
{
    S_COUNT(MPI_Ireduce_scatter_block,
            run_mpi_bytes(rcount, type) * (uint64_t) run_mpi_size(comm));
    return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, type, op, comm,
                                      req);
}

int
MPI_Iscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
          MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Iscan, run_mpi_bytes(count, type));
    return PMPI_Iscan(sbuf, rbuf, count, type, op, comm, req);
}

int
MPI_Iexscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
            MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Iexscan, run_mpi_bytes(count, type));
    return PMPI_Iexscan(sbuf, rbuf, count, type, op, comm, req);
}
