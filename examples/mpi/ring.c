/* ring.c - an MPI ring with calls and bytes known in advance, for
 * telem_run -m (docs/telem_run.md):
 *
 *   mpirun -np 4 telem_run -m -- ./ring [ROUNDS] [COUNT]
 *
 * Every round passes a message of COUNT ints (default 1024) once around
 * the ring of all ranks: each rank makes exactly one MPI_Send and one
 * MPI_Recv of COUNT ints per round (ROUNDS rounds, default 100), then one
 * MPI_Allreduce of one double and one MPI_Barrier.  Per rank:
 *   MPI_Send, MPI_Recv   ROUNDS calls, ROUNDS x COUNT x 4 bytes each
 *   MPI_Allreduce        1 call, 8 bytes;  MPI_Barrier  1 call
 *   MPI_Init, MPI_Finalize, 1 call each
 * The message's first int counts its hops; rank 0 prints the total and
 * checks it (ROUNDS x ranks), so a broken ring fails (exit status 1).
 * It needs at least 2 ranks.  It lives apart from the other examples
 * because it is built with MPI, not with telem: telem_run -m counts it
 * from the outside.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char s_usage[] =
"Usage: mpirun -np N ring [ROUNDS] [COUNT]   (N >= 2)\n"
"Passes a message of COUNT ints (default 1024) ROUNDS times (default 100)\n"
"around the ring of ranks, then one MPI_Allreduce and one MPI_Barrier;\n"
"every rank makes exactly ROUNDS MPI_Send and ROUNDS MPI_Recv.\n";

static int
s_arg(int argc, char **argv, int i, int dflt)
{
    if (argc <= i)
        return dflt;
    char *end;
    long v = strtol(argv[i], &end, 10);
    return *end || v < 1 || v > 1 << 24 ? -1 : (int) v;
}

int
main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(s_usage, stdout);
        return 0;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = s_arg(argc, argv, 1, 100), count = s_arg(argc, argv, 2, 1024);
    if (rounds < 0 || count < 0 || size < 2) {
        if (rank == 0)
            fputs(s_usage, stderr);
        MPI_Finalize();
        return 2;
    }
    int *msg = calloc((size_t) count, sizeof *msg);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int r = 0; r < rounds; r++) {
        if (rank == 0) {
            msg[0]++;
            MPI_Send(msg, count, MPI_INT, next, 0, MPI_COMM_WORLD);
            MPI_Recv(msg, count, MPI_INT, prev, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(msg, count, MPI_INT, prev, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            msg[0]++;
            MPI_Send(msg, count, MPI_INT, next, 0, MPI_COMM_WORLD);
        }
    }
    double mine = rank, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    int ok = 1;
    if (rank == 0) {
        ok = msg[0] == rounds * size && sum == size * (size - 1) / 2.0;
        printf("ring: %d ranks, %d rounds of %d ints, %d hops%s\n", size,
               rounds, count, msg[0], ok ? "" : " (WRONG)");
    }
    free(msg);
    MPI_Finalize();
    return ok ? 0 : 1;
}
