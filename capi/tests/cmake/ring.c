/* A token around every rank, for the CMake test. Prints "cmake ring: ok". */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, token = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        token = 7;
        MPI_Send(&token, 1, MPI_INT, 1 % size, 0, MPI_COMM_WORLD);
    }
    MPI_Recv(&token, 1, MPI_INT, (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank != 0) MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && token == 7) printf("cmake ring: ok\n");
    return token == 7 ? 0 : 1;
}
