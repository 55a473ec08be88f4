/* Point-to-point, collectives and communicators through mpi.h: every rank
 * checks what it receives and prints "basic: ok" when all is right; any
 * mismatch prints what differs and exits with 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static int failures = 0;

int main(int argc, char **argv) {
    int rank = -1, size = 0, flag = 0, provided = -1;
    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 0, "initialized before init");
    CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS, "init");
    CHECK(provided == MPI_THREAD_FUNNELED, "provided %d", provided);
    int level = -1, main_thread = 0;
    MPI_Query_thread(&level);
    MPI_Is_thread_main(&main_thread);
    CHECK(level == MPI_THREAD_FUNNELED && main_thread == 1, "query_thread %d, is_thread_main %d", level, main_thread);
    MPI_Initialized(&flag);
    CHECK(flag == 1, "not initialized after init");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks, has %d", size);
    int v, sv;
    CHECK(MPI_Get_version(&v, &sv) == MPI_SUCCESS && v == 3 && sv == 1, "version %d.%d", v, sv);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    CHECK(strncmp(lib, "oxmpi", 5) == 0 && (int)strlen(lib) == len, "library version '%s'", lib);
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(host, &len);
    CHECK(len > 0 && (int)strlen(host) == len, "processor name '%s'", host);

    /* A ring of ints, blocking. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out[4] = {rank, rank * 10, rank * 100, -rank}, in[4] = {0};
    MPI_Status st;
    if (rank == 0) {
        MPI_Send(out, 4, MPI_INT, next, 7, MPI_COMM_WORLD);
        MPI_Recv(in, 4, MPI_INT, prev, 7, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(in, 4, MPI_INT, prev, 7, MPI_COMM_WORLD, &st);
        MPI_Send(out, 4, MPI_INT, next, 7, MPI_COMM_WORLD);
    }
    CHECK(in[0] == prev && in[1] == prev * 10 && in[3] == -prev, "ring got %d %d", in[0], in[1]);
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 7, "status %d %d", st.MPI_SOURCE, st.MPI_TAG);
    int count = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 4, "count %d", count);
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    CHECK(count == 2, "count as doubles %d", count);

    /* Non-blocking both ways, any source, waitall. */
    double dout = rank + 0.5, din = -1;
    MPI_Request reqs[2];
    MPI_Irecv(&din, 1, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&dout, 1, MPI_DOUBLE, next, 3, MPI_COMM_WORLD, &reqs[1]);
    MPI_Status sts[2];
    CHECK(MPI_Waitall(2, reqs, sts) == MPI_SUCCESS, "waitall");
    CHECK(din == prev + 0.5 && sts[0].MPI_SOURCE == prev && sts[0].MPI_TAG == 3, "irecv %g", din);
    CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "requests not reset");

    /* A strided (vector) type on the wire: every other int. */
    MPI_Datatype every_other;
    MPI_Type_vector(3, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int sz;
    MPI_Aint lb, ext;
    MPI_Type_size(every_other, &sz);
    MPI_Type_get_extent(every_other, &lb, &ext);
    CHECK(sz == 12 && lb == 0 && ext == 20, "vector size %d extent %ld", sz, (long)ext);
    int strided[6] = {rank, -1, rank + 1, -1, rank + 2, -1}, got[6] = {0, 9, 0, 9, 0, 9};
    MPI_Sendrecv(strided, 1, every_other, next, 5, got, 1, every_other, prev, 5, MPI_COMM_WORLD, &st);
    CHECK(got[0] == prev && got[2] == prev + 1 && got[4] == prev + 2 && got[1] == 9 && got[5] == 9,
          "vector got %d %d %d %d", got[0], got[1], got[2], got[4]);
    MPI_Get_elements(&st, every_other, &count);
    CHECK(count == 3, "elements %d", count);
    MPI_Count count_x = -1, size_x = -1, lb_x = -1, ext_x = -1, tlb_x = -1, text_x = -1;
    MPI_Get_elements_x(&st, every_other, &count_x);
    MPI_Type_size_x(every_other, &size_x);
    MPI_Type_get_extent_x(every_other, &lb_x, &ext_x);
    MPI_Type_get_true_extent_x(every_other, &tlb_x, &text_x);
    CHECK(count_x == 3 && size_x == 12 && lb_x == 0 && ext_x == 20 && tlb_x == 0 && text_x == 20,
          "the _x forms: elements %lld size %lld extent %lld %lld true %lld %lld", count_x, size_x, lb_x, ext_x,
          tlb_x, text_x);
    MPI_Type_free(&every_other);
    CHECK(every_other == MPI_DATATYPE_NULL, "type handle not reset");

    /* MPI_PROC_NULL completes at once. */
    MPI_Recv(in, 4, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "proc null source %d", st.MPI_SOURCE);

    /* Collectives. */
    MPI_Barrier(MPI_COMM_WORLD);
    long long big[3] = {0};
    if (rank == 1) { big[0] = 42; big[1] = -7; big[2] = 1LL << 40; }
    MPI_Bcast(big, 3, MPI_LONG_LONG, 1, MPI_COMM_WORLD);
    CHECK(big[0] == 42 && big[1] == -7 && big[2] == (1LL << 40), "bcast %lld", big[0]);
    int mine[2] = {rank, 1}, sum[2] = {0, 0};
    MPI_Allreduce(mine, sum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum[0] == size * (size - 1) / 2 && sum[1] == size, "allreduce %d %d", sum[0], sum[1]);
    double mx = rank, res = -1;
    MPI_Reduce(&mx, &res, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) CHECK(res == size - 1, "reduce max %g", res);
    int inplace = rank + 1;
    MPI_Allreduce(MPI_IN_PLACE, &inplace, 1, MPI_INT, MPI_PROD, MPI_COMM_WORLD);
    int fact = 1;
    for (int i = 1; i <= size; i++) fact *= i;
    CHECK(inplace == fact, "in-place prod %d", inplace);
    struct { double v; int i; } loc = {(double)(rank % 2), rank}, best;
    MPI_Allreduce(&loc, &best, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(best.v == 1.0 && best.i == 1, "maxloc %g at %d", best.v, best.i);
    int *all = malloc(sizeof(int) * size);
    MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) CHECK(all[i] == i, "allgather[%d] = %d", i, all[i]);
    int *gathered = malloc(sizeof(int) * size);
    MPI_Gather(&rank, 1, MPI_INT, gathered, 1, MPI_INT, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1)
        for (int i = 0; i < size; i++) CHECK(gathered[i] == i, "gather[%d] = %d", i, gathered[i]);
    int piece = -1;
    for (int i = 0; i < size; i++) all[i] = 100 + i;
    MPI_Scatter(all, 1, MPI_INT, &piece, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(piece == 100 + rank, "scatter %d", piece);
    int *to = malloc(sizeof(int) * size), *from = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) to[i] = rank * 1000 + i;
    MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) CHECK(from[i] == i * 1000 + rank, "alltoall[%d] = %d", i, from[i]);

    /* Communicators: split by parity, dup, compare, free. */
    MPI_Comm half, twin;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    CHECK(hsize == (size + 1 - rank % 2) / 2, "half size %d", hsize);
    CHECK(hrank == hsize - 1 - rank / 2, "half rank %d (key orders by -rank)", hrank);
    int hsum = 0;
    MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
    int expect = 0;
    for (int i = rank % 2; i < size; i += 2) expect += i;
    CHECK(hsum == expect, "half sum %d != %d", hsum, expect);
    MPI_Comm_dup(MPI_COMM_WORLD, &twin);
    int cmp = -1;
    MPI_Comm_compare(MPI_COMM_WORLD, twin, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "compare %d", cmp);
    MPI_Comm_compare(twin, twin, &cmp);
    CHECK(cmp == MPI_IDENT, "compare self %d", cmp);
    MPI_Comm_free(&half);
    MPI_Comm_free(&twin);
    CHECK(half == MPI_COMM_NULL && twin == MPI_COMM_NULL, "free did not reset the handles");
    MPI_Comm none;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &none);
    if (rank == 0) CHECK(none == MPI_COMM_NULL, "undefined color gave a communicator");
    else MPI_Comm_free(&none);

    /* Pack and unpack. */
    char packed[64];
    int pos = 0, vals[3] = {1, 2, 3}, back[3] = {0};
    double d = 2.5, dback = 0;
    MPI_Pack(vals, 3, MPI_INT, packed, sizeof packed, &pos, MPI_COMM_WORLD);
    MPI_Pack(&d, 1, MPI_DOUBLE, packed, sizeof packed, &pos, MPI_COMM_WORLD);
    CHECK(pos == 20, "pack position %d", pos);
    pos = 0;
    MPI_Unpack(packed, sizeof packed, &pos, back, 3, MPI_INT, MPI_COMM_WORLD);
    MPI_Unpack(packed, sizeof packed, &pos, &dback, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    CHECK(back[2] == 3 && dback == 2.5, "unpack %d %g", back[2], dback);

    double t0 = MPI_Wtime();
    CHECK(MPI_Wtime() >= t0 && MPI_Wtick() > 0, "clock");
    int all_ok = 0;
    MPI_Allreduce(&failures, &all_ok, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    MPI_Finalized(&flag);
    CHECK(flag == 1, "not finalized");
    if (rank == 0 && all_ok == 0 && failures == 0) printf("basic: ok\n");
    return failures ? 1 : 0;
}
