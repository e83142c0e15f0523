/* run_mpi_io.c - libtelem_mpi.so's MPI-IO functions.  Each counts itself
 * (run_mpi.h) and calls its PMPI twin.
 * Bytes: count x the datatype's size for every read and write, blocking or
 * not, individual, shared or collective; none for open, close, sync and
 * set_view.
 */
#include "run_mpi.h"

#define S_COUNT(call, bytes) run_mpi_count(RUN_##call, (bytes))

/* One read or write at the individual file pointer, with a status. */
#define S_RW(call, bufq)                                                     \
    int call(MPI_File fh, bufq void *buf, int count, MPI_Datatype type,     \
             MPI_Status *status)                                             \
    {                                                                        \
        S_COUNT(call, run_mpi_bytes(count, type));                           \
        return P##call(fh, buf, count, type, status);                        \
    }

/* One read or write at an explicit offset, with a status. */
#define S_RW_AT(call, bufq)                                                  \
    int call(MPI_File fh, MPI_Offset off, bufq void *buf, int count,        \
             MPI_Datatype type, MPI_Status *status)                          \
    {                                                                        \
        S_COUNT(call, run_mpi_bytes(count, type));                           \
        return P##call(fh, off, buf, count, type, status);                   \
    }

/* The non-blocking forms: a request instead of a status. */
#define S_IRW(call, bufq)                                                    \
    int call(MPI_File fh, bufq void *buf, int count, MPI_Datatype type,     \
             MPI_Request *req)                                               \
    {                                                                        \
        S_COUNT(call, run_mpi_bytes(count, type));                           \
        return P##call(fh, buf, count, type, req);                           \
    }

#define S_IRW_AT(call, bufq)                                                 \
    int call(MPI_File fh, MPI_Offset off, bufq void *buf, int count,        \
             MPI_Datatype type, MPI_Request *req)                            \
    {                                                                        \
        S_COUNT(call, run_mpi_bytes(count, type));                           \
        return P##call(fh, off, buf, count, type, req);                      \
    }

#define S_NOCONST

S_RW(MPI_File_read, S_NOCONST)
S_RW(MPI_File_read_all, S_NOCONST)
S_RW(MPI_File_read_shared, S_NOCONST)
S_RW(MPI_File_read_ordered, S_NOCONST)
S_RW_AT(MPI_File_read_at, S_NOCONST)
S_RW_AT(MPI_File_read_at_all, S_NOCONST)
S_RW(MPI_File_write, const)
S_RW(MPI_File_write_all, const)
S_RW(MPI_File_write_shared, const)
S_RW(MPI_File_write_ordered, const)
S_RW_AT(MPI_File_write_at, const)
S_RW_AT(MPI_File_write_at_all, const)
S_IRW(MPI_File_iread, S_NOCONST)
S_IRW(MPI_File_iread_all, S_NOCONST)
S_IRW_AT(MPI_File_iread_at, S_NOCONST)
S_IRW_AT(MPI_File_iread_at_all, S_NOCONST)
S_IRW(MPI_File_iwrite, const)
S_IRW(MPI_File_iwrite_all, const)
S_IRW_AT(MPI_File_iwrite_at, const)
S_IRW_AT(MPI_File_iwrite_at_all, const)

int
MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info,
              MPI_File *fh)
{
    S_COUNT(MPI_File_open, 0);
    return PMPI_File_open(comm, filename, amode, info, fh);
}

int
MPI_File_close(MPI_File *fh)
{
    S_COUNT(MPI_File_close, 0);
    return PMPI_File_close(fh);
}

int
MPI_File_sync(MPI_File fh)
{
    S_COUNT(MPI_File_sync, 0);
    return PMPI_File_sync(fh);
}

int
MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype,
                  MPI_Datatype filetype, const char *datarep, MPI_Info info)
{
    S_COUNT(MPI_File_set_view, 0);
    return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
}
