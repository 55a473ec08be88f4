/* The v collectives, reduce_scatter, scan and exscan, and every
 * collective's non-blocking form, each checked against what MPI defines.
 * Rank r contributes values made from r; prints "collv: ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static int rank, size, failures = 0;

/* Rank q sends q + 1 ints to everyone, value 100 * q + i. */
static void check_varcount(int blocking) {
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size), total = 0;
    for (int q = 0; q < size; q++) { counts[q] = q + 1; displs[q] = total; total += q + 2; }
    int *mine = malloc(sizeof(int) * (rank + 1)), *all = malloc(sizeof(int) * total);
    for (int i = 0; i <= rank; i++) mine[i] = 100 * rank + i;
    int root = size - 1;
    MPI_Request r;
    /* gatherv to the last rank, with a gap of one int between blocks */
    memset(all, 0xff, sizeof(int) * total);
    if (blocking) MPI_Gatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
    else { MPI_Igatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD, &r); MPI_Wait(&r, MPI_STATUS_IGNORE); }
    if (rank == root)
        for (int q = 0; q < size; q++)
            for (int i = 0; i <= q; i++)
                CHECK(all[displs[q] + i] == 100 * q + i, "gatherv[%d][%d] = %d", q, i, all[displs[q] + i]);
    /* allgatherv */
    memset(all, 0xff, sizeof(int) * total);
    if (blocking) MPI_Allgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    else { MPI_Iallgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD, &r); MPI_Wait(&r, MPI_STATUS_IGNORE); }
    for (int q = 0; q < size; q++)
        for (int i = 0; i <= q; i++)
            CHECK(all[displs[q] + i] == 100 * q + i, "allgatherv[%d][%d] = %d", q, i, all[displs[q] + i]);
    /* scatterv from rank 0 of what allgatherv gathered: each gets its own back */
    int *back = calloc(rank + 1, sizeof(int));
    if (blocking) MPI_Scatterv(all, counts, displs, MPI_INT, back, rank + 1, MPI_INT, 0, MPI_COMM_WORLD);
    else { MPI_Iscatterv(all, counts, displs, MPI_INT, back, rank + 1, MPI_INT, 0, MPI_COMM_WORLD, &r); MPI_Wait(&r, MPI_STATUS_IGNORE); }
    for (int i = 0; i <= rank; i++) CHECK(back[i] == 100 * rank + i, "scatterv[%d] = %d", i, back[i]);
    /* alltoallv: rank r sends q + 1 ints to rank q (value 1000 r + q), receives r + 1 from each */
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size), *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int stot = 0, rtot = 0;
    for (int q = 0; q < size; q++) { sc[q] = q + 1; sd[q] = stot; stot += q + 1; rc[q] = rank + 1; rd[q] = rtot; rtot += rank + 1; }
    int *sb = malloc(sizeof(int) * stot), *rb = malloc(sizeof(int) * rtot);
    for (int q = 0; q < size; q++) for (int i = 0; i < sc[q]; i++) sb[sd[q] + i] = 1000 * rank + q;
    if (blocking) MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD);
    else { MPI_Ialltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, &r); MPI_Wait(&r, MPI_STATUS_IGNORE); }
    for (int q = 0; q < size; q++) for (int i = 0; i < rc[q]; i++) CHECK(rb[rd[q] + i] == 1000 * q + rank, "alltoallv from %d = %d", q, rb[rd[q] + i]);
    free(counts); free(displs); free(mine); free(all); free(back); free(sc); free(sd); free(rc); free(rd); free(sb); free(rb);
}

static void check_reductions(int blocking) {
    MPI_Request r;
    /* reduce_scatter: rank q gets q + 1 elements of the sum */
    int *counts = malloc(sizeof(int) * size), total = 0;
    for (int q = 0; q < size; q++) { counts[q] = q + 1; total += q + 1; }
    long *in = malloc(sizeof(long) * total), *out = calloc(rank + 1, sizeof(long));
    for (int i = 0; i < total; i++) in[i] = rank * 10 + i;
    if (blocking) MPI_Reduce_scatter(in, out, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    else { MPI_Ireduce_scatter(in, out, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &r); MPI_Wait(&r, MPI_STATUS_IGNORE); }
    int first = rank * (rank + 1) / 2;
    for (int i = 0; i <= rank; i++) {
        long want = 10L * size * (size - 1) / 2 + (long)size * (first + i);
        CHECK(out[i] == want, "reduce_scatter[%d] = %ld, want %ld", i, out[i], want);
    }
    /* reduce_scatter_block: 2 each */
    double *din = malloc(sizeof(double) * 2 * size), dout[2] = {0, 0};
    for (int i = 0; i < 2 * size; i++) din[i] = rank + i;
    if (blocking) MPI_Reduce_scatter_block(din, dout, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    else { MPI_Ireduce_scatter_block(din, dout, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &r); MPI_Wait(&r, MPI_STATUS_IGNORE); }
    CHECK(dout[0] == size - 1 + 2 * rank && dout[1] == size + 2 * rank, "reduce_scatter_block %g %g", dout[0], dout[1]);
    /* scan and exscan: prefix sums of rank + 1 */
    int v = rank + 1, s = -1, e = -1;
    if (blocking) { MPI_Scan(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); MPI_Exscan(&v, &e, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); }
    else {
        MPI_Request two[2];
        MPI_Iscan(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &two[0]);
        MPI_Wait(&two[0], MPI_STATUS_IGNORE);
        MPI_Iexscan(&v, &e, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &two[1]);
        MPI_Wait(&two[1], MPI_STATUS_IGNORE);
    }
    CHECK(s == (rank + 1) * (rank + 2) / 2, "scan %d", s);
    if (rank > 0) CHECK(e == rank * (rank + 1) / 2, "exscan %d", e);
    free(counts); free(in); free(out); free(din);
}

static void check_immediate_basics(void) {
    MPI_Request r[4];
    int x = rank == 0 ? 77 : 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Ibcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD, &r[0]);
    int flag = 0;
    while (!flag) MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
    CHECK(x == 77, "ibcast %d", x);
    int one = 1, sum = 0, mx = -1, g = -1;
    MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Ireduce(&rank, &mx, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD, &r[1]);
    MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    CHECK(sum == size, "iallreduce %d", sum);
    if (rank == 0) CHECK(mx == size - 1, "ireduce %d", mx);
    int *all = malloc(sizeof(int) * size), *to = malloc(sizeof(int) * size), *from = malloc(sizeof(int) * size);
    MPI_Iallgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &r[0]);
    MPI_Waitall(1, r, MPI_STATUSES_IGNORE);
    for (int i = 0; i < size; i++) CHECK(all[i] == i, "iallgather[%d] = %d", i, all[i]);
    MPI_Igather(&rank, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    if (rank == 0) for (int i = 0; i < size; i++) CHECK(all[i] == i, "igather[%d] = %d", i, all[i]);
    for (int i = 0; i < size; i++) all[i] = 50 + i;
    MPI_Iscatter(all, 1, MPI_INT, &g, 1, MPI_INT, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    CHECK(g == 50 + rank, "iscatter %d", g);
    for (int i = 0; i < size; i++) to[i] = rank * 100 + i;
    MPI_Ialltoall(to, 1, MPI_INT, from, 1, MPI_INT, MPI_COMM_WORLD, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < size; i++) CHECK(from[i] == i * 100 + rank, "ialltoall[%d] = %d", i, from[i]);
    /* In place: allgather and allreduce. */
    all[rank] = rank * 3;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) CHECK(all[i] == i * 3, "in-place allgather[%d] = %d", i, all[i]);
    free(all); free(to); free(from);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int blocking = 1; blocking >= 0; blocking--) {
        check_varcount(blocking);
        check_reductions(blocking);
    }
    check_immediate_basics();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("collv: ok\n");
    return failures ? 1 : 0;
}
