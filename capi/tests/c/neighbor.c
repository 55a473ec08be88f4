/* Distributed graphs and neighborhood collectives (blocking and not, over
 * a distributed graph, an MPI-1 graph and a Cartesian ring), MPI_Alltoallw with a type per peer,
 * and a non-blocking one completed by MPI_Waitany. Prints
 * "neighbor: ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "check.h"

static int rank, size, failures = 0;

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;

    /* A directed ring: receive from the left, send to the right, and the
     * right neighbour twice over (to check blocks keep their order). */
    int sources[2] = {left, left}, dests[2] = {right, right};
    MPI_Comm ring;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, sources, MPI_UNWEIGHTED, 2, dests, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &ring);
    int topo, indeg, outdeg, weighted, srcs[2], dsts[2];
    MPI_Topo_test(ring, &topo);
    MPI_Dist_graph_neighbors_count(ring, &indeg, &outdeg, &weighted);
    MPI_Dist_graph_neighbors(ring, 2, srcs, MPI_UNWEIGHTED, 2, dsts, MPI_UNWEIGHTED);
    CHECK(topo == MPI_DIST_GRAPH && indeg == 2 && outdeg == 2 && !weighted && srcs[1] == left && dsts[0] == right,
          "graph %d %d %d", topo, indeg, outdeg);

    int mine = 100 + rank, got[2] = {-1, -1};
    MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, ring);
    CHECK(got[0] == 100 + left && got[1] == 100 + left, "allgather %d %d", got[0], got[1]);
    int out2[2] = {10 * rank, 10 * rank + 1};
    MPI_Request req[2];
    MPI_Ineighbor_alltoall(out2, 1, MPI_INT, got, 1, MPI_INT, ring, &req[0]);
    req[1] = MPI_REQUEST_NULL;
    int index = -1;
    MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE);
    CHECK(index == 0 && req[0] == MPI_REQUEST_NULL, "waitany index %d", index);
    /* Block i of the sender goes to its i-th destination. */
    CHECK(got[0] == 10 * left && got[1] == 10 * left + 1, "alltoall %d %d", got[0], got[1]);
    int counts[2] = {1, 1}, displs[2] = {1, 0};
    MPI_Neighbor_alltoallv(out2, counts, displs, MPI_INT, got, counts, displs, MPI_INT, ring);
    CHECK(got[1] == 10 * left + 1 && got[0] == 10 * left, "alltoallv %d %d", got[0], got[1]);
    int rc2[2] = {1, 1}, rd2[2] = {0, 1}, all4[3] = {0, 0, 0};
    MPI_Ineighbor_allgatherv(&mine, 1, MPI_INT, all4, rc2, rd2, MPI_INT, ring, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    CHECK(all4[0] == 100 + left && all4[1] == 100 + left, "allgatherv %d", all4[0]);
    /* alltoallw: an int then a double, in bytes. */
    struct { int i; double d; } sendw = {rank, rank + 0.5}, recvw = {-1, -1};
    int wc[2] = {1, 1};
    MPI_Aint wd[2] = {0, 8};
    MPI_Datatype wt[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Neighbor_alltoallw(&sendw, wc, wd, wt, &recvw, wc, wd, wt, ring);
    CHECK(recvw.i == left && recvw.d == left + 0.5, "alltoallw %d %g", recvw.i, recvw.d);
    /* The same, non-blocking, with the blocks swapped in the buffers. */
    struct { double d; int i; } sendw2 = {rank + 0.25, rank}, recvw2 = {-1, -1};
    MPI_Aint wd2[2] = {8, 0};
    MPI_Datatype wt2[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Ineighbor_alltoallw(&sendw2, wc, wd2, wt2, &recvw2, wc, wd2, wt2, ring, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    CHECK(recvw2.i == left && recvw2.d == left + 0.25, "ineighbor_alltoallw %d %g", recvw2.i, recvw2.d);
    MPI_Comm_free(&ring);

    /* A periodic Cartesian ring: neighbours are left then right. */
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    int both[2] = {-1, -1};
    MPI_Neighbor_allgather(&mine, 1, MPI_INT, both, 1, MPI_INT, cart);
    CHECK(both[0] == 100 + left && both[1] == 100 + right, "cart allgather %d %d", both[0], both[1]);
    MPI_Comm_free(&cart);

    /* An MPI-1 graph: an undirected ring (each node's neighbours are its
     * left and right). */
    int *gindex = malloc(sizeof(int) * size), *edges = malloc(sizeof(int) * 2 * size);
    for (int i = 0; i < size; i++) {
        gindex[i] = 2 * (i + 1);
        edges[2 * i] = (i + size - 1) % size;
        edges[2 * i + 1] = (i + 1) % size;
    }
    MPI_Comm graph;
    MPI_Graph_create(MPI_COMM_WORLD, size, gindex, edges, 0, &graph);
    int nn, ne, nb, gn[2];
    MPI_Topo_test(graph, &topo);
    MPI_Graphdims_get(graph, &nn, &ne);
    MPI_Graph_neighbors_count(graph, rank, &nb);
    MPI_Graph_neighbors(graph, rank, 2, gn);
    CHECK(topo == MPI_GRAPH && nn == size && ne == 2 * size && nb == 2 && gn[0] == left && gn[1] == right,
          "graph %d %d %d %d", topo, nn, ne, nb);
    int *got_index = malloc(sizeof(int) * size), *got_edges = malloc(sizeof(int) * 2 * size), same = 1;
    MPI_Graph_get(graph, size, 2 * size, got_index, got_edges);
    for (int i = 0; i < size; i++)
        same &= got_index[i] == gindex[i] && got_edges[2 * i] == edges[2 * i] && got_edges[2 * i + 1] == edges[2 * i + 1];
    CHECK(same, "graph_get differs from what graph_create took");
    free(got_index);
    free(got_edges);
    int viag[2] = {-1, -1};
    MPI_Neighbor_allgather(&mine, 1, MPI_INT, viag, 1, MPI_INT, graph);
    CHECK(viag[0] == 100 + left && viag[1] == 100 + right, "graph allgather %d %d", viag[0], viag[1]);
    MPI_Comm_free(&graph);
    free(gindex);
    free(edges);

    /* Alltoallw over everyone: to rank q, q + 1 ints at byte 4 * q * (q + 1) / 2. */
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size), *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    MPI_Datatype *ts = malloc(sizeof(MPI_Datatype) * size);
    int stot = 0, rtot = 0;
    for (int q = 0; q < size; q++) {
        sc[q] = q + 1; sd[q] = 4 * stot; stot += q + 1;
        rc[q] = rank + 1; rd[q] = 4 * rtot; rtot += rank + 1;
        ts[q] = MPI_INT;
    }
    int *sb = malloc(sizeof(int) * stot), *rb = malloc(sizeof(int) * rtot);
    for (int q = 0; q < size; q++) for (int i = 0; i <= q; i++) sb[sd[q] / 4 + i] = 1000 * rank + q;
    MPI_Request wreq;
    MPI_Ialltoallw(sb, sc, sd, ts, rb, rc, rd, ts, MPI_COMM_WORLD, &wreq);
    int flag = 0;
    while (!flag) MPI_Test(&wreq, &flag, MPI_STATUS_IGNORE);
    for (int q = 0; q < size; q++) for (int i = 0; i <= rank; i++)
        CHECK(rb[rd[q] / 4 + i] == 1000 * q + rank, "alltoallw from %d = %d", q, rb[rd[q] / 4 + i]);
    free(sc); free(sd); free(rc); free(rd); free(ts); free(sb); free(rb);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("neighbor: ok\n");
    return failures ? 1 : 0;
}
