/* Collective latency for other MPI implementations (Open MPI, MPICH), with
 * the method, sizes, schedule and output lines of the oxmpi program
 * (src/bin/oxmpi_coll.rs): a change there must be made here too.
 *
 *   For each operation and size: warm-up calls, an MPI_Barrier, then timed
 *   calls; rank 0 prints "coll <op> <bytes> <usec per call>" (the mean over
 *   the timed calls on rank 0). Sizes are bytes per rank: the reductions
 *   combine doubles with MPI_SUM (SIZE / 8 elements), bcast sends SIZE
 *   bytes from rank 0, reduce reduces to rank 0, alltoall and allgather
 *   move SIZE bytes to and from every rank. One checked call per operation
 *   and size (before the warm-up) compares the result with the expected
 *   values; a failure aborts the job.
 *
 * Usage: mpirun -n N coll [--quick] [--sizes LIST] [--ops LIST] [--repeat K]
 * (--ops runs only the operations listed; --repeat multiplies the timed
 * calls, for profiling.)
 * Built and run by scripts/bench-coll.sh. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 32

static const size_t default_sizes[] = {8, 64, 512, 4096, 65536, 1 << 20};

static void schedule(size_t size, int quick, long *warmup, long *iters)
{
    if (size <= 4096) { *warmup = 200; *iters = 2000; }
    else if (size <= 65536) { *warmup = 20; *iters = 200; }
    else { *warmup = 5; *iters = 30; }
    if (quick) { *warmup = *warmup / 10 + 1; *iters = *iters / 10 + 2; }
}

static void fail(const char *what, size_t size, int rank)
{
    fprintf(stderr, "coll: %s of %zu bytes: wrong result at rank %d\n", what, size, rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void check(const char *op, size_t size, int rank, int n, double *dbuf, char *bbuf)
{
    size_t count = size / 8;
    if (!strcmp(op, "allreduce")) {
        for (size_t i = 0; i < count; i++) dbuf[i] = rank + 1 + (double)i;
        double *out = malloc(size ? size : 1);
        MPI_Allreduce(dbuf, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (size_t i = 0; i < count; i++)
            if (out[i] != n * (n + 1) / 2.0 + n * (double)i) fail(op, size, rank);
        free(out);
    } else if (!strcmp(op, "bcast")) {
        for (size_t i = 0; i < size; i++) bbuf[i] = rank == 0 ? (char)(i * 7) : 0;
        MPI_Bcast(bbuf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
        for (size_t i = 0; i < size; i++) if (bbuf[i] != (char)(i * 7)) fail(op, size, rank);
    } else if (!strcmp(op, "reduce")) {
        for (size_t i = 0; i < count; i++) dbuf[i] = rank + 1 + (double)i;
        double *out = malloc(size ? size : 1);
        MPI_Reduce(dbuf, out, (int)count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            for (size_t i = 0; i < count; i++)
                if (out[i] != n * (n + 1) / 2.0 + n * (double)i) fail(op, size, rank);
        free(out);
    } else if (!strcmp(op, "alltoall") || !strcmp(op, "allgather")) {
        int all = !strcmp(op, "alltoall");
        char *out = malloc(size * n + 1);
        for (size_t j = 0; j < (size_t)(all ? n : 1); j++)
            for (size_t i = 0; i < size; i++) bbuf[j * size + i] = (char)(rank * 31 + j * 7 + i);
        if (all) MPI_Alltoall(bbuf, (int)size, MPI_BYTE, out, (int)size, MPI_BYTE, MPI_COMM_WORLD);
        else MPI_Allgather(bbuf, (int)size, MPI_BYTE, out, (int)size, MPI_BYTE, MPI_COMM_WORLD);
        for (size_t r = 0; r < (size_t)n; r++)
            for (size_t i = 0; i < size; i++)
                if (out[r * size + i] != (char)(r * 31 + (all ? rank : 0) * 7 + i)) fail(op, size, rank);
        free(out);
    }
}

static void call(const char *op, size_t size, int n, double *dbuf, double *dout, char *bbuf, char *bout)
{
    int count = (int)(size / 8);
    if (!strcmp(op, "allreduce"))
        MPI_Allreduce(dbuf, dout, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(op, "bcast"))
        MPI_Bcast(bbuf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (!strcmp(op, "reduce"))
        MPI_Reduce(dbuf, dout, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (!strcmp(op, "barrier"))
        MPI_Barrier(MPI_COMM_WORLD);
    else if (!strcmp(op, "alltoall"))
        MPI_Alltoall(bbuf, (int)size, MPI_BYTE, bout, (int)size, MPI_BYTE, MPI_COMM_WORLD);
    else if (!strcmp(op, "allgather"))
        MPI_Allgather(bbuf, (int)size, MPI_BYTE, bout, (int)size, MPI_BYTE, MPI_COMM_WORLD);
    (void)n;
}

/* Whether NAME is one of the comma-separated words of LIST. */
static int listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && !strncmp(p, name, len)) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, n, quick = 0;
    long repeat = 1;
    const char *only = NULL;
    size_t sizes[MAX_SIZES];
    size_t nsizes = sizeof default_sizes / sizeof default_sizes[0];
    memcpy(sizes, default_sizes, sizeof default_sizes);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--quick")) quick = 1;
        else if (!strcmp(argv[a], "--sizes") && a + 1 < argc) {
            nsizes = 0;
            for (char *s = strtok(argv[++a], ","); s && nsizes < MAX_SIZES; s = strtok(NULL, ","))
                sizes[nsizes++] = strtoull(s, NULL, 10);
        } else if (!strcmp(argv[a], "--ops") && a + 1 < argc) only = argv[++a];
        else if (!strcmp(argv[a], "--repeat") && a + 1 < argc) {
            repeat = strtol(argv[++a], NULL, 10);
            if (repeat < 1) repeat = 1;
        }
    }
    size_t largest = 8;
    for (size_t k = 0; k < nsizes; k++) if (sizes[k] > largest) largest = sizes[k];
    double *dbuf = calloc(largest / 8 + 1, 8), *dout = calloc(largest / 8 + 1, 8);
    char *bbuf = calloc(largest * n + 1, 1), *bout = calloc(largest * n + 1, 1);
    if (rank == 0) printf("# coll: %s, %d ranks\n", "C program over MPI", n);
    const char *ops[] = {"allreduce", "bcast", "reduce", "barrier", "alltoall", "allgather"};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        if (only && !listed(only, ops[o])) continue;
        for (size_t k = 0; k < nsizes; k++) {
            size_t size = sizes[k];
            if (!strcmp(ops[o], "barrier") && k > 0) break;
            if (strcmp(ops[o], "barrier")) check(ops[o], size, rank, n, dbuf, bbuf);
            long warmup, iters;
            /* A barrier moves no data: the schedule of the smallest calls. */
            schedule(strcmp(ops[o], "barrier") ? size : 0, quick, &warmup, &iters);
            iters *= repeat;
            for (long i = 0; i < warmup; i++) call(ops[o], size, n, dbuf, dout, bbuf, bout);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) call(ops[o], size, n, dbuf, dout, bbuf, bout);
            double t = (MPI_Wtime() - t0) / iters;
            if (rank == 0) printf("coll %s %zu %.3f\n", ops[o], !strcmp(ops[o], "barrier") ? 0 : size, t * 1e6);
        }
    }
    fflush(stdout);
    free(dbuf); free(dout); free(bbuf); free(bout);
    MPI_Finalize();
    return 0;
}
