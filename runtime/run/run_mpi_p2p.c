/* run_mpi_p2p.c - libtelem_mpi.so's point-to-point functions: sends and
 * receives (blocking, non-blocking, persistent, matched), probes and the
 * request calls.  Each counts itself (run_mpi.h) and calls its PMPI twin.
 * Bytes: count x type size of the buffer sent or posted for receipt
 * (MPI_Sendrecv both); probes, starts, waits, tests, cancels and frees
 * count calls only, since their data was counted where it was posted.
 */
#include "run_mpi.h"

#define S_COUNT(call, bytes) run_mpi_count(RUN_##call, (bytes))

int
MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
         MPI_Comm comm)
{
    S_COUNT(MPI_Send, run_mpi_bytes(count, type));
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int
MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
          MPI_Comm comm)
{
    S_COUNT(MPI_Bsend, run_mpi_bytes(count, type));
    return PMPI_Bsend(buf, count, type, dest, tag, comm);
}

int
MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
          MPI_Comm comm)
{
    S_COUNT(MPI_Ssend, run_mpi_bytes(count, type));
    return PMPI_Ssend(buf, count, type, dest, tag, comm);
}

int
MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
          MPI_Comm comm)
{
    S_COUNT(MPI_Rsend, run_mpi_bytes(count, type));
    return PMPI_Rsend(buf, count, type, dest, tag, comm);
}

int
MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
          MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Isend, run_mpi_bytes(count, type));
    return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

int
MPI_Ibsend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
           MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Ibsend, run_mpi_bytes(count, type));
    return PMPI_Ibsend(buf, count, type, dest, tag, comm, req);
}

int
MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
           MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Issend, run_mpi_bytes(count, type));
    return PMPI_Issend(buf, count, type, dest, tag, comm, req);
}

int
MPI_Irsend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
           MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Irsend, run_mpi_bytes(count, type));
    return PMPI_Irsend(buf, count, type, dest, tag, comm, req);
}

int
MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag,
         MPI_Comm comm, MPI_Status *status)
{
    S_COUNT(MPI_Recv, run_mpi_bytes(count, type));
    return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

int
MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
          MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Irecv, run_mpi_bytes(count, type));
    return PMPI_Irecv(buf, count, type, source, tag, comm, req);
}

int
MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest,
             int stag, void *rbuf, int rcount, MPI_Datatype rtype,
             int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
    S_COUNT(MPI_Sendrecv,
            run_mpi_bytes(scount, stype) + run_mpi_bytes(rcount, rtype));
    return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype,
                         source, rtag, comm, status);
}

int
MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest,
                     int stag, int source, int rtag, MPI_Comm comm,
                     MPI_Status *status)
{
    S_COUNT(MPI_Sendrecv_replace, 2 * run_mpi_bytes(count, type));
    return PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag,
                                 comm, status);
}

int
MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *msg,
          MPI_Status *status)
{
    S_COUNT(MPI_Mrecv, run_mpi_bytes(count, type));
    return PMPI_Mrecv(buf, count, type, msg, status);
}

int
MPI_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *msg,
           MPI_Request *req)
{
    S_COUNT(MPI_Imrecv, run_mpi_bytes(count, type));
    return PMPI_Imrecv(buf, count, type, msg, req);
}

int
MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    S_COUNT(MPI_Probe, 0);
    return PMPI_Probe(source, tag, comm, status);
}

int
MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    S_COUNT(MPI_Iprobe, 0);
    return PMPI_Iprobe(source, tag, comm, flag, status);
}

int
MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *msg,
           MPI_Status *status)
{
    S_COUNT(MPI_Mprobe, 0);
    return PMPI_Mprobe(source, tag, comm, msg, status);
}

int
MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *msg,
            MPI_Status *status)
{
    S_COUNT(MPI_Improbe, 0);
    return PMPI_Improbe(source, tag, comm, flag, msg, status);
}

int
MPI_Send_init(const void *buf, int count, MPI_Datatype type, int dest,
              int tag, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Send_init, run_mpi_bytes(count, type));
    return PMPI_Send_init(buf, count, type, dest, tag, comm, req);
}

int
MPI_Bsend_init(const void *buf, int count, MPI_Datatype type, int dest,
               int tag, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Bsend_init, run_mpi_bytes(count, type));
    return PMPI_Bsend_init(buf, count, type, dest, tag, comm, req);
}

int
MPI_Ssend_init(const void *buf, int count, MPI_Datatype type, int dest,
               int tag, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Ssend_init, run_mpi_bytes(count, type));
    return PMPI_Ssend_init(buf, count, type, dest, tag, comm, req);
}

int
MPI_Rsend_init(const void *buf, int count, MPI_Datatype type, int dest,
               int tag, MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Rsend_init, run_mpi_bytes(count, type));
    return PMPI_Rsend_init(buf, count, type, dest, tag, comm, req);
}

int
MPI_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag,
              MPI_Comm comm, MPI_Request *req)
{
    S_COUNT(MPI_Recv_init, run_mpi_bytes(count, type));
    return PMPI_Recv_init(buf, count, type, source, tag, comm, req);
}

int
MPI_Start(MPI_Request *req)
{
    S_COUNT(MPI_Start, 0);
    return PMPI_Start(req);
}

int
MPI_Startall(int count, MPI_Request reqs[])
{
    S_COUNT(MPI_Startall, 0);
    return PMPI_Startall(count, reqs);
}

int
MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    S_COUNT(MPI_Wait, 0);
    return PMPI_Wait(req, status);
}

int
MPI_Waitall(int count, MPI_Request reqs[], MPI_Status *statuses)
{
    S_COUNT(MPI_Waitall, 0);
    return PMPI_Waitall(count, reqs, statuses);
}

int
MPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status)
{
    S_COUNT(MPI_Waitany, 0);
    return PMPI_Waitany(count, reqs, index, status);
}

int
MPI_Waitsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
             MPI_Status statuses[])
{
    S_COUNT(MPI_Waitsome, 0);
    return PMPI_Waitsome(incount, reqs, outcount, indices, statuses);
}

int
MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    S_COUNT(MPI_Test, 0);
    return PMPI_Test(req, flag, status);
}

int
MPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    S_COUNT(MPI_Testall, 0);
    return PMPI_Testall(count, reqs, flag, statuses);
}

int
MPI_Testany(int count, MPI_Request reqs[], int *index, int *flag,
            MPI_Status *status)
{
    S_COUNT(MPI_Testany, 0);
    return PMPI_Testany(count, reqs, index, flag, status);
}

int
MPI_Testsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
             MPI_Status statuses[])
{
    S_COUNT(MPI_Testsome, 0);
    return PMPI_Testsome(incount, reqs, outcount, indices, statuses);
}

int
MPI_Cancel(MPI_Request *req)
{
    S_COUNT(MPI_Cancel, 0);
    return PMPI_Cancel(req);
}

int
MPI_Request_free(MPI_Request *req)
{
    S_COUNT(MPI_Request_free, 0);
    return PMPI_Request_free(req);
}
