// A C++ program through mpicxx: mpi.h is usable from C++ (extern "C").
#include <mpi.h>
#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> ranks(size);
    MPI_Allgather(&rank, 1, MPI_INT, ranks.data(), 1, MPI_INT, MPI_COMM_WORLD);
    bool ok = true;
    for (int i = 0; i < size; i++) ok = ok && ranks[i] == i;
    MPI_Finalize();
    if (rank == 0 && ok) std::printf("hello.cc: ok\n");
    return ok ? 0 : 1;
}
