/* bench_run_pingpong.c - an 8-byte MPI ping-pong between ranks 0 and 1,
 * for bench_run.sh: the cost telem_run -m adds to the smallest messages.
 *
 *   mpirun -np 2 bench_run_pingpong [ROUND_TRIPS]    (default 200000)
 *
 * After 1,000 warm-up round trips and a barrier, rank 0 times ROUND_TRIPS
 * round trips of one 8-byte MPI_Send and MPI_Recv each way with MPI_Wtime
 * and prints "pingpong: 8 bytes, N round trips, X ns per round trip".
 * Then it times 20 million sends to MPI_PROC_NULL, which MPI
 * returns from at once: the cost of one call with nothing to move, where
 * an interposition library's own cost shows best ("null send: X ns per
 * call").
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void
s_trips(int rank, long n, double *msg)
{
    for (long i = 0; i < n; i++) {
        if (rank == 0) {
            MPI_Send(msg, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(msg, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(msg, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(msg, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
        }
    }
}

int
main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = argc > 1 ? atol(argv[1]) : 200000;
    if (size != 2 || n < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 bench_run_pingpong"
                            " [ROUND_TRIPS]\n");
        MPI_Finalize();
        return 2;
    }
    double msg = 0;
    s_trips(rank, 1000, &msg);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    s_trips(rank, n, &msg);
    double t = MPI_Wtime() - t0;
    if (rank == 0) {
        printf("pingpong: 8 bytes, %ld round trips, %.1f ns per round"
               " trip\n", n, t * 1e9 / (double) n);
        long calls = 20000000;
        t0 = MPI_Wtime();
        for (long i = 0; i < calls; i++)
            MPI_Send(&msg, 1, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
        t = MPI_Wtime() - t0;
        printf("null send: %.2f ns per call\n", t * 1e9 / (double) calls);
    }
    MPI_Finalize();
    return 0;
}
