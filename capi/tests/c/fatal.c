/* The default handler, MPI_ERRORS_ARE_FATAL: a send to a bad rank ends
 * the job with a message naming the call and the class. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int x = 0;
    MPI_Send(&x, 1, MPI_INT, 1000, 0, MPI_COMM_WORLD);
    printf("fatal: still running\n");
    MPI_Finalize();
    return 0;
}
