/* Collectives over non-contiguous datatypes: every collective with a
 * vector with gaps, a resized vector, contiguous ints on the other side
 * (different types, matching signatures), v forms with displacements that
 * leave gaps, in-place forms, reductions over vectors of doubles and ints
 * with predefined operations and the program's own (on a vector and on a
 * struct), blocking and non-blocking (completed by wait, a test loop and
 * waitall), neighborhood collectives and alltoallw, MPI_Reduce_local over
 * a vector, and the refusal of reductions the kernels cannot do. Every
 * buffer starts filled with a sentinel; whatever the call must not write
 * (the gaps of a type, the space between blocks) must keep it. Expected
 * values are computed here from the rule that made the data. Prints
 * "coll_types: ok". */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static int rank, size, failures = 0;
static int mode; /* 0 blocking; 1 MPI_Wait; 2 an MPI_Test loop; 3 MPI_Waitall */
static const char *mode_name[] = {"blocking", "wait", "test", "waitall"};

#define SENT (-7)
#define DSENT (-7.25)

static void finish(MPI_Request *r) {
    if (mode == 1) MPI_Wait(r, MPI_STATUS_IGNORE);
    else if (mode == 2) { int f = 0; while (!f) MPI_Test(r, &f, MPI_STATUS_IGNORE); }
    else MPI_Waitall(1, r, MPI_STATUSES_IGNORE);
    CHECK(*r == MPI_REQUEST_NULL, "%s: the request is not MPI_REQUEST_NULL after completion", mode_name[mode]);
}

/* The blocking call B, or (modes 1-3) the non-blocking call I, which
 * writes the request `rq`, completed by `finish`. */
#define RUN(B, I)                                              \
    do {                                                       \
        if (mode == 0) { B; }                                  \
        else { MPI_Request rq = MPI_REQUEST_NULL; I; finish(&rq); } \
    } while (0)

/* A type of `per` values per element, `stride` values apart, elements
 * `ext` values apart (in ints or doubles). */
typedef struct { MPI_Datatype t; int per, stride, ext; const char *name; } Ty;
static Ty V, RV, CI, VD, VI2;

/* Where the j-th value of a packed sequence lies in a buffer of the type. */
static int pos(const Ty *t, int j) { return (j / t->per) * t->ext + (j % t->per) * t->stride; }
static int elems(const Ty *t, int values) { return values / t->per; }

static int *ibuf(const Ty *t, int n) {
    int *b = malloc(sizeof(int) * (n * t->ext + 1));
    for (int i = 0; i < n * t->ext + 1; i++) b[i] = SENT;
    return b;
}
static double *dbuf(const Ty *t, int n) {
    double *b = malloc(sizeof(double) * (n * t->ext + 1));
    for (int i = 0; i < n * t->ext + 1; i++) b[i] = DSENT;
    return b;
}

/* The whole of `got` against `want`, both of `n` elements of `t`. */
static void same(const char *what, const Ty *t, const int *got, const int *want, int n) {
    for (int i = 0; i < n * t->ext + 1; i++)
        if (got[i] != want[i]) {
            CHECK(0, "%s (%s, %s): [%d] = %d, want %d", what, t->name, mode_name[mode], i, got[i], want[i]);
            return;
        }
}
static void dsame(const char *what, const Ty *t, const double *got, const double *want, int n) {
    for (int i = 0; i < n * t->ext + 1; i++)
        if (got[i] != want[i]) {
            CHECK(0, "%s (%s, %s): [%d] = %g, want %g", what, t->name, mode_name[mode], i, got[i], want[i]);
            return;
        }
}

/* ---- data movement: 6 ints per rank (2 elements of V, 6 of CI) ---- */

static void t_bcast(const Ty *at_root, const Ty *others) {
    int root = size - 1;
    const Ty *t = rank == root ? at_root : others;
    int n = elems(t, 6);
    int *b = ibuf(t, n), *w = ibuf(t, n);
    for (int j = 0; j < 6; j++) {
        if (rank == root) b[pos(t, j)] = 500 + j;
        w[pos(t, j)] = 500 + j;
    }
    RUN(MPI_Bcast(b, n, t->t, root, MPI_COMM_WORLD), MPI_Ibcast(b, n, t->t, root, MPI_COMM_WORLD, &rq));
    same("bcast", t, b, w, n);
    free(b); free(w);
}

static void t_gather(const Ty *s, const Ty *r, int in_place) {
    int root = size > 1 ? 1 : 0, me_root = rank == root;
    int sn = elems(s, 6), rn = elems(r, 6);
    int *sb = ibuf(s, sn), *rb = ibuf(r, rn * size), *w = ibuf(r, rn * size);
    for (int j = 0; j < 6; j++) sb[pos(s, j)] = 100 * rank + j;
    if (in_place && me_root)
        for (int j = 0; j < 6; j++) rb[pos(r, rank * 6 + j)] = 100 * rank + j;
    if (me_root)
        for (int q = 0; q < size; q++)
            for (int j = 0; j < 6; j++) w[pos(r, q * 6 + j)] = 100 * q + j;
    const void *sp = in_place && me_root ? MPI_IN_PLACE : sb;
    RUN(MPI_Gather(sp, sn, s->t, rb, rn, r->t, root, MPI_COMM_WORLD),
        MPI_Igather(sp, sn, s->t, rb, rn, r->t, root, MPI_COMM_WORLD, &rq));
    same(in_place ? "gather in place" : "gather", r, rb, w, rn * size);
    free(sb); free(rb); free(w);
}

static void t_scatter(const Ty *s, const Ty *r, int in_place) {
    int root = 0, me_root = rank == root;
    int sn = elems(s, 6), rn = elems(r, 6);
    int *sb = ibuf(s, sn * size), *rb = ibuf(r, rn), *w = ibuf(r, rn), *ws = ibuf(s, sn * size);
    if (me_root)
        for (int q = 0; q < size; q++)
            for (int j = 0; j < 6; j++) sb[pos(s, q * 6 + j)] = ws[pos(s, q * 6 + j)] = 200 * q + j + 1;
    if (!(in_place && me_root))
        for (int j = 0; j < 6; j++) w[pos(r, j)] = 200 * rank + j + 1;
    void *rp = in_place && me_root ? MPI_IN_PLACE : rb;
    RUN(MPI_Scatter(sb, sn, s->t, rp, rn, r->t, root, MPI_COMM_WORLD),
        MPI_Iscatter(sb, sn, s->t, rp, rn, r->t, root, MPI_COMM_WORLD, &rq));
    same(in_place ? "scatter in place" : "scatter", r, rb, w, rn);
    same("scatter's send buffer", s, sb, ws, sn * size);
    free(sb); free(rb); free(w); free(ws);
}

static void t_allgather(const Ty *s, const Ty *r, int in_place) {
    int sn = elems(s, 6), rn = elems(r, 6);
    int *sb = ibuf(s, sn), *rb = ibuf(r, rn * size), *w = ibuf(r, rn * size);
    for (int j = 0; j < 6; j++) sb[pos(s, j)] = 300 * rank + j;
    if (in_place)
        for (int j = 0; j < 6; j++) rb[pos(r, rank * 6 + j)] = 300 * rank + j;
    for (int q = 0; q < size; q++)
        for (int j = 0; j < 6; j++) w[pos(r, q * 6 + j)] = 300 * q + j;
    const void *sp = in_place ? MPI_IN_PLACE : sb;
    RUN(MPI_Allgather(sp, sn, s->t, rb, rn, r->t, MPI_COMM_WORLD),
        MPI_Iallgather(sp, sn, s->t, rb, rn, r->t, MPI_COMM_WORLD, &rq));
    same(in_place ? "allgather in place" : "allgather", r, rb, w, rn * size);
    free(sb); free(rb); free(w);
}

static void t_alltoall(const Ty *s, const Ty *r, int in_place) {
    int sn = elems(s, 6), rn = elems(r, 6);
    int *sb = ibuf(s, sn * size), *rb = ibuf(r, rn * size), *w = ibuf(r, rn * size);
    for (int q = 0; q < size; q++)
        for (int j = 0; j < 6; j++) {
            sb[pos(s, q * 6 + j)] = 1000 * rank + 10 * q + j;
            if (in_place) rb[pos(r, q * 6 + j)] = 1000 * rank + 10 * q + j;
            w[pos(r, q * 6 + j)] = 1000 * q + 10 * rank + j;
        }
    const void *sp = in_place ? MPI_IN_PLACE : sb;
    RUN(MPI_Alltoall(sp, sn, s->t, rb, rn, r->t, MPI_COMM_WORLD),
        MPI_Ialltoall(sp, sn, s->t, rb, rn, r->t, MPI_COMM_WORLD, &rq));
    same(in_place ? "alltoall in place" : "alltoall", r, rb, w, rn * size);
    free(sb); free(rb); free(w);
}

/* ---- v forms: rank q's block holds 3 (q + 1) ints ---- */

/* Counts and displacements (in elements of t) of blocks of 3 (q + 1)
 * ints, an element of gap before each; `reverse` lays them out from the
 * last rank to the first. Answers the buffer's elements. */
static int v_layout(const Ty *t, int *counts, int *displs, int reverse) {
    int at = 0;
    for (int k = 0; k < size; k++) {
        int q = reverse ? size - 1 - k : k;
        counts[q] = elems(t, 3 * (q + 1));
        displs[q] = at + 1;
        at += counts[q] + 1;
    }
    return at + 1;
}

static void t_gatherv(const Ty *s, const Ty *r, int in_place) {
    int root = size - 1, me_root = rank == root;
    int *c = malloc(sizeof(int) * size), *d = malloc(sizeof(int) * size);
    int total = v_layout(r, c, d, 1), sn = elems(s, 3 * (rank + 1));
    int *sb = ibuf(s, sn), *rb = ibuf(r, total), *w = ibuf(r, total);
    for (int j = 0; j < 3 * (rank + 1); j++) sb[pos(s, j)] = 100 * rank + j;
    if (in_place && me_root)
        for (int j = 0; j < 3 * (rank + 1); j++) rb[pos(r, d[rank] * r->per + j)] = 100 * rank + j;
    if (me_root)
        for (int q = 0; q < size; q++)
            for (int j = 0; j < 3 * (q + 1); j++) w[pos(r, d[q] * r->per + j)] = 100 * q + j;
    const void *sp = in_place && me_root ? MPI_IN_PLACE : sb;
    RUN(MPI_Gatherv(sp, sn, s->t, rb, c, d, r->t, root, MPI_COMM_WORLD),
        MPI_Igatherv(sp, sn, s->t, rb, c, d, r->t, root, MPI_COMM_WORLD, &rq));
    same(in_place ? "gatherv in place" : "gatherv", r, rb, w, total);
    free(c); free(d); free(sb); free(rb); free(w);
}

static void t_scatterv(const Ty *s, const Ty *r, int in_place) {
    int root = 0, me_root = rank == root;
    int *c = malloc(sizeof(int) * size), *d = malloc(sizeof(int) * size);
    int total = v_layout(s, c, d, 0), rn = elems(r, 3 * (rank + 1));
    int *sb = ibuf(s, total), *ws = ibuf(s, total), *rb = ibuf(r, rn), *w = ibuf(r, rn);
    if (me_root)
        for (int q = 0; q < size; q++)
            for (int j = 0; j < 3 * (q + 1); j++) sb[pos(s, d[q] * s->per + j)] = ws[pos(s, d[q] * s->per + j)] = 7 * q + j;
    if (!(in_place && me_root))
        for (int j = 0; j < 3 * (rank + 1); j++) w[pos(r, j)] = 7 * rank + j;
    void *rp = in_place && me_root ? MPI_IN_PLACE : rb;
    RUN(MPI_Scatterv(sb, c, d, s->t, rp, rn, r->t, root, MPI_COMM_WORLD),
        MPI_Iscatterv(sb, c, d, s->t, rp, rn, r->t, root, MPI_COMM_WORLD, &rq));
    same(in_place ? "scatterv in place" : "scatterv", r, rb, w, rn);
    same("scatterv's send buffer", s, sb, ws, total);
    free(c); free(d); free(sb); free(ws); free(rb); free(w);
}

static void t_allgatherv(const Ty *s, const Ty *r, int in_place) {
    int *c = malloc(sizeof(int) * size), *d = malloc(sizeof(int) * size);
    int total = v_layout(r, c, d, 1), sn = elems(s, 3 * (rank + 1));
    int *sb = ibuf(s, sn), *rb = ibuf(r, total), *w = ibuf(r, total);
    for (int j = 0; j < 3 * (rank + 1); j++) sb[pos(s, j)] = 40 * rank + j;
    if (in_place)
        for (int j = 0; j < 3 * (rank + 1); j++) rb[pos(r, d[rank] * r->per + j)] = 40 * rank + j;
    for (int q = 0; q < size; q++)
        for (int j = 0; j < 3 * (q + 1); j++) w[pos(r, d[q] * r->per + j)] = 40 * q + j;
    const void *sp = in_place ? MPI_IN_PLACE : sb;
    RUN(MPI_Allgatherv(sp, sn, s->t, rb, c, d, r->t, MPI_COMM_WORLD),
        MPI_Iallgatherv(sp, sn, s->t, rb, c, d, r->t, MPI_COMM_WORLD, &rq));
    same(in_place ? "allgatherv in place" : "allgatherv", r, rb, w, total);
    free(c); free(d); free(sb); free(rb); free(w);
}

/* Rank a sends rank b 3 (1 + (a + b) % 3) ints: symmetric, as in place
 * requires. */
static int pair_values(int a, int b) { return 3 * (1 + (a + b) % 3); }

static void t_alltoallv(const Ty *s, const Ty *r, int in_place) {
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int stot = 1, rtot = 1;
    for (int q = 0; q < size; q++) { sc[q] = elems(s, pair_values(rank, q)); sd[q] = stot; stot += sc[q] + 1; }
    for (int q = size - 1; q >= 0; q--) { rc[q] = elems(r, pair_values(q, rank)); rd[q] = rtot; rtot += rc[q] + 2; }
    int *sb = ibuf(s, stot), *rb = ibuf(r, rtot), *w = ibuf(r, rtot);
    for (int q = 0; q < size; q++)
        for (int j = 0; j < pair_values(rank, q); j++) {
            sb[pos(s, sd[q] * s->per + j)] = 1000 * rank + 10 * q + j;
            if (in_place) rb[pos(r, rd[q] * r->per + j)] = 1000 * rank + 10 * q + j;
            w[pos(r, rd[q] * r->per + j)] = 1000 * q + 10 * rank + j;
        }
    const void *sp = in_place ? MPI_IN_PLACE : sb;
    RUN(MPI_Alltoallv(sp, sc, sd, s->t, rb, rc, rd, r->t, MPI_COMM_WORLD),
        MPI_Ialltoallv(sp, sc, sd, s->t, rb, rc, rd, r->t, MPI_COMM_WORLD, &rq));
    same(in_place ? "alltoallv in place" : "alltoallv", r, rb, w, rtot);
    free(sc); free(sd); free(rc); free(rd); free(sb); free(rb); free(w);
}

/* Each data-moving collective with each pair of types. */
static void data_movement(void) {
    const Ty *pairs[][2] = {{&V, &V}, {&V, &CI}, {&CI, &RV}, {&RV, &V}};
    for (int k = 0; k < 4; k++) {
        const Ty *a = pairs[k][0], *b = pairs[k][1];
        t_bcast(a, b);
        for (int in_place = 0; in_place <= 1; in_place++) {
            t_gather(a, b, in_place);
            t_scatter(a, b, in_place);
            t_allgather(a, b, in_place);
            t_alltoall(a, b, in_place);
            t_gatherv(a, b, in_place);
            t_scatterv(a, b, in_place);
            t_allgatherv(a, b, in_place);
            t_alltoallv(a, b, in_place);
        }
    }
}

/* ---- reductions over VD: 2 doubles per element, 2 doubles of gap ---- */

static double dval(int r, int j) { return r + 0.5 * j + 1; }
static int ival(int r, int j) { return (r * 7 + j * 3) % 11 - 5; }

/* Fills `n` elements of VD at b with dval(r, j + first). */
static void dfill(double *b, int n, int r, int first) {
    for (int j = 0; j < 2 * n; j++) b[pos(&VD, j)] = dval(r, first + j);
}
static double dsum(int from, int to, int j) {
    double s = 0;
    for (int q = from; q < to; q++) s += dval(q, j);
    return s;
}

static void t_reduce(int in_place) {
    int root = size - 1, me_root = rank == root, n = 3;
    double *sb = dbuf(&VD, n), *rb = dbuf(&VD, n), *w = dbuf(&VD, n);
    dfill(sb, n, rank, 0);
    if (in_place && me_root) dfill(rb, n, rank, 0);
    if (me_root)
        for (int j = 0; j < 2 * n; j++) w[pos(&VD, j)] = dsum(0, size, j);
    const void *sp = in_place && me_root ? MPI_IN_PLACE : sb;
    RUN(MPI_Reduce(sp, rb, n, VD.t, MPI_SUM, root, MPI_COMM_WORLD),
        MPI_Ireduce(sp, rb, n, VD.t, MPI_SUM, root, MPI_COMM_WORLD, &rq));
    dsame(in_place ? "reduce in place" : "reduce", &VD, rb, w, n);
    free(sb); free(rb); free(w);
}

static void t_allreduce(int in_place) {
    int n = 3;
    double *sb = dbuf(&VD, n), *rb = dbuf(&VD, n), *w = dbuf(&VD, n);
    dfill(in_place ? rb : sb, n, rank, 0);
    for (int j = 0; j < 2 * n; j++) w[pos(&VD, j)] = dsum(0, size, j);
    const void *sp = in_place ? MPI_IN_PLACE : sb;
    RUN(MPI_Allreduce(sp, rb, n, VD.t, MPI_SUM, MPI_COMM_WORLD),
        MPI_Iallreduce(sp, rb, n, VD.t, MPI_SUM, MPI_COMM_WORLD, &rq));
    dsame(in_place ? "allreduce in place" : "allreduce", &VD, rb, w, n);
    /* MPI_MAX over a vector of ints with gaps. */
    int m = elems(&VI2, 8);
    int *is = ibuf(&VI2, m), *ir = ibuf(&VI2, m), *iw = ibuf(&VI2, m);
    for (int j = 0; j < 8; j++) {
        (in_place ? ir : is)[pos(&VI2, j)] = ival(rank, j);
        int mx = ival(0, j);
        for (int q = 1; q < size; q++) if (ival(q, j) > mx) mx = ival(q, j);
        iw[pos(&VI2, j)] = mx;
    }
    RUN(MPI_Allreduce(in_place ? MPI_IN_PLACE : is, ir, m, VI2.t, MPI_MAX, MPI_COMM_WORLD),
        MPI_Iallreduce(in_place ? MPI_IN_PLACE : is, ir, m, VI2.t, MPI_MAX, MPI_COMM_WORLD, &rq));
    same(in_place ? "allreduce max in place" : "allreduce max", &VI2, ir, iw, m);
    free(sb); free(rb); free(w); free(is); free(ir); free(iw);
}

static void t_reduce_scatter(int in_place) {
    /* block: one element (2 doubles) per rank */
    double *sb = dbuf(&VD, size), *rb = dbuf(&VD, in_place ? size : 1), *w = dbuf(&VD, in_place ? size : 1);
    dfill(in_place ? rb : sb, size, rank, 0);
    for (int j = 0; j < 2; j++) w[pos(&VD, j)] = dsum(0, size, 2 * rank + j);
    const void *sp = in_place ? MPI_IN_PLACE : sb;
    RUN(MPI_Reduce_scatter_block(sp, rb, 1, VD.t, MPI_SUM, MPI_COMM_WORLD),
        MPI_Ireduce_scatter_block(sp, rb, 1, VD.t, MPI_SUM, MPI_COMM_WORLD, &rq));
    if (in_place) /* past the result: undefined data, but the gaps stay */
        for (int j = 2; j < 2 * size; j++) w[pos(&VD, j)] = rb[pos(&VD, j)];
    dsame(in_place ? "reduce_scatter_block in place" : "reduce_scatter_block", &VD, rb, w, in_place ? size : 1);
    free(sb); free(rb); free(w);
    /* v: rank q gets q + 1 elements */
    int *counts = malloc(sizeof(int) * size), total = 0, first = 0;
    for (int q = 0; q < size; q++) { counts[q] = q + 1; if (q < rank) first += q + 1; total += q + 1; }
    int mine = rank + 1, len = in_place ? total : mine;
    sb = dbuf(&VD, total); rb = dbuf(&VD, len); w = dbuf(&VD, len);
    dfill(in_place ? rb : sb, total, rank, 0);
    for (int j = 0; j < 2 * mine; j++) w[pos(&VD, j)] = dsum(0, size, 2 * first + j);
    RUN(MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : sb, rb, counts, VD.t, MPI_SUM, MPI_COMM_WORLD),
        MPI_Ireduce_scatter(in_place ? MPI_IN_PLACE : sb, rb, counts, VD.t, MPI_SUM, MPI_COMM_WORLD, &rq));
    if (in_place) /* past the result: undefined data, but the gaps stay */
        for (int j = 2 * mine; j < 2 * total; j++) w[pos(&VD, j)] = rb[pos(&VD, j)];
    dsame(in_place ? "reduce_scatter in place" : "reduce_scatter", &VD, rb, w, len);
    free(counts); free(sb); free(rb); free(w);
}

static void t_scans(int in_place) {
    int n = 2;
    double *sb = dbuf(&VD, n), *rb = dbuf(&VD, n), *w = dbuf(&VD, n);
    dfill(in_place ? rb : sb, n, rank, 0);
    for (int j = 0; j < 2 * n; j++) w[pos(&VD, j)] = dsum(0, rank + 1, j);
    RUN(MPI_Scan(in_place ? MPI_IN_PLACE : sb, rb, n, VD.t, MPI_SUM, MPI_COMM_WORLD),
        MPI_Iscan(in_place ? MPI_IN_PLACE : sb, rb, n, VD.t, MPI_SUM, MPI_COMM_WORLD, &rq));
    dsame(in_place ? "scan in place" : "scan", &VD, rb, w, n);
    free(rb); free(w);
    rb = dbuf(&VD, n); w = dbuf(&VD, n);
    if (in_place) dfill(rb, n, rank, 0);
    for (int j = 0; j < 2 * n; j++) w[pos(&VD, j)] = rank == 0 ? rb[pos(&VD, j)] : dsum(0, rank, j);
    RUN(MPI_Exscan(in_place ? MPI_IN_PLACE : sb, rb, n, VD.t, MPI_SUM, MPI_COMM_WORLD),
        MPI_Iexscan(in_place ? MPI_IN_PLACE : sb, rb, n, VD.t, MPI_SUM, MPI_COMM_WORLD, &rq));
    /* rank 0's result is undefined; its gaps are not */
    if (rank == 0) for (int j = 0; j < 2 * n; j++) w[pos(&VD, j)] = rb[pos(&VD, j)];
    dsame(in_place ? "exscan in place" : "exscan", &VD, rb, w, n);
    free(sb); free(rb); free(w);
}

/* The program's operation on VD: sums the first double of each element,
 * keeps the larger second; called with VD and elements laid out as VD. */
static int vd_calls_ok = 1;
static void vd_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    double *a = in, *b = inout;
    if (*dt != VD.t) vd_calls_ok = 0;
    for (int k = 0; k < *len; k++) {
        b[k * VD.ext] += a[k * VD.ext];
        if (a[k * VD.ext + VD.stride] > b[k * VD.ext + VD.stride]) b[k * VD.ext + VD.stride] = a[k * VD.ext + VD.stride];
    }
}

/* A struct with a hole: { int; double; } (bytes 4 to 8 are padding). */
typedef struct { int a; double d; } Pair;
static MPI_Datatype ST;
static int st_calls_ok = 1;
static void st_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    Pair *x = in, *y = inout;
    if (*dt != ST) st_calls_ok = 0;
    for (int k = 0; k < *len; k++) { y[k].a += x[k].a; if (x[k].d > y[k].d) y[k].d = x[k].d; }
}

static void t_user_ops(void) {
    MPI_Op vop, sop;
    MPI_Op_create(vd_op, 1, &vop);
    MPI_Op_create(st_op, 0, &sop);
    int n = 3;
    double *sb = dbuf(&VD, n), *rb = dbuf(&VD, n), *w = dbuf(&VD, n);
    dfill(sb, n, rank, 0);
    for (int j = 0; j < 2 * n; j++) {
        double x = j % 2 == 0 ? dsum(0, size, j) : dval(size - 1, j);
        w[pos(&VD, j)] = x;
    }
    RUN(MPI_Allreduce(sb, rb, n, VD.t, vop, MPI_COMM_WORLD),
        MPI_Iallreduce(sb, rb, n, VD.t, vop, MPI_COMM_WORLD, &rq));
    dsame("allreduce with the program's operation", &VD, rb, w, n);
    CHECK(vd_calls_ok, "the operation on VD was called with another datatype");
    /* The struct, non-commutative, reduced to the root. */
    Pair in[2], out[2];
    memset(out, 0x5a, sizeof out);
    for (int k = 0; k < 2; k++) { in[k].a = rank + k; in[k].d = (rank * 5 + k * 3) % 7; }
    RUN(MPI_Reduce(in, out, 2, ST, sop, 0, MPI_COMM_WORLD),
        MPI_Ireduce(in, out, 2, ST, sop, 0, MPI_COMM_WORLD, &rq));
    if (rank == 0)
        for (int k = 0; k < 2; k++) {
            int a = 0; double d = -1;
            for (int q = 0; q < size; q++) { a += q + k; if ((q * 5 + k * 3) % 7 > d) d = (q * 5 + k * 3) % 7; }
            CHECK(out[k].a == a && out[k].d == d, "reduce of structs [%d] = {%d, %g}, want {%d, %g} (%s)", k, out[k].a, out[k].d, a, d, mode_name[mode]);
            unsigned char pad[4];
            memset(pad, 0x5a, 4);
            CHECK(memcmp((char *)&out[k] + 4, pad, 4) == 0, "reduce of structs wrote the padding of [%d]", k);
        }
    CHECK(st_calls_ok, "the operation on the struct was called with another datatype");
    MPI_Op_free(&vop);
    MPI_Op_free(&sop);
    free(sb); free(rb); free(w);
}

/* MPI_Reduce_local over VD with MPI_SUM and the program's operation. */
static void t_reduce_local(void) {
    int n = 3;
    double *a = dbuf(&VD, n), *b = dbuf(&VD, n), *w = dbuf(&VD, n);
    dfill(a, n, 2, 0);
    dfill(b, n, 5, 0);
    for (int j = 0; j < 2 * n; j++) w[pos(&VD, j)] = dval(2, j) + dval(5, j);
    MPI_Reduce_local(a, b, n, VD.t, MPI_SUM);
    dsame("reduce_local", &VD, b, w, n);
    MPI_Op vop;
    MPI_Op_create(vd_op, 1, &vop);
    dfill(b, n, 5, 0);
    dfill(a, n, 9, 0);
    for (int j = 0; j < 2 * n; j++) w[pos(&VD, j)] = j % 2 == 0 ? dval(9, j) + dval(5, j) : dval(9, j);
    MPI_Reduce_local(a, b, n, VD.t, vop);
    dsame("reduce_local with the program's operation", &VD, b, w, n);
    MPI_Op_free(&vop);
    free(a); free(b); free(w);
}

static void reductions(void) {
    for (int in_place = 0; in_place <= 1; in_place++) {
        t_reduce(in_place);
        t_allreduce(in_place);
        t_reduce_scatter(in_place);
        t_scans(in_place);
    }
    t_user_ops();
    /* A contiguous derived type of one primitive: reduced as its values. */
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_LONG, &two);
    MPI_Type_commit(&two);
    long lin[4] = {rank, 2 * rank, 3, rank * rank}, lout[4] = {0, 0, 0, 0};
    RUN(MPI_Allreduce(lin, lout, 2, two, MPI_SUM, MPI_COMM_WORLD),
        MPI_Iallreduce(lin, lout, 2, two, MPI_SUM, MPI_COMM_WORLD, &rq));
    long s1 = (long)size * (size - 1) / 2, s2 = 0;
    for (int q = 0; q < size; q++) s2 += (long)q * q;
    CHECK(lout[0] == s1 && lout[1] == 2 * s1 && lout[2] == 3L * size && lout[3] == s2,
          "allreduce of contiguous longs %ld %ld %ld %ld", lout[0], lout[1], lout[2], lout[3]);
    MPI_Type_free(&two);
}

/* ---- refusals under MPI_ERRORS_RETURN ---- */

static void expect(const char *what, int rc, int want_class, const char *want_text) {
    int cls = -1, len = 0;
    char text[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    CHECK(cls == want_class && strstr(text, want_text) != NULL, "%s: class %d (want %d), text '%s' (want '%s')",
          what, cls, want_class, text, want_text);
}

static void refusals(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    Pair in[2] = {{1, 1.0}, {2, 2.0}}, out[2];
    expect("a predefined operation on a struct of int and double",
           MPI_Allreduce(in, out, 2, ST, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_TYPE, "several types");
    MPI_Request r = MPI_REQUEST_NULL;
    expect("the same, non-blocking", MPI_Iallreduce(in, out, 2, ST, MPI_SUM, MPI_COMM_WORLD, &r), MPI_ERR_TYPE,
           "MPI_Op_create");
    CHECK(r == MPI_REQUEST_NULL, "a refused MPI_Iallreduce made a request");
    double d[8];
    expect("MPI_MAXLOC on a vector of doubles", MPI_Reduce(d, d + 4, 1, VD.t, MPI_MAXLOC, 0, MPI_COMM_WORLD), MPI_ERR_TYPE,
           "MPI_MAXLOC");
    /* Sides that do not match: 6 ints sent to each rank, room for 3 from each. */
    int six[16], three[64];
    expect("allgather with sides that do not match", MPI_Allgather(six, 2, V.t, three, 3, MPI_INT, MPI_COMM_WORLD),
           MPI_ERR_TRUNCATE, "must match");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* ---- neighborhood collectives over a ring ---- */

static void neighborhood(void) {
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Comm ring;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &ring);
    /* allgather: 2 elements of V out, 6 ints of RV in */
    int *sb = ibuf(&V, 2), *rb = ibuf(&RV, 2), *w = ibuf(&RV, 2);
    for (int j = 0; j < 6; j++) { sb[pos(&V, j)] = 60 * rank + j; w[pos(&RV, j)] = 60 * left + j; }
    RUN(MPI_Neighbor_allgather(sb, 2, V.t, rb, 2, RV.t, ring),
        MPI_Ineighbor_allgather(sb, 2, V.t, rb, 2, RV.t, ring, &rq));
    same("neighbor_allgather", &RV, rb, w, 2);
    free(rb); free(w);
    /* alltoall into contiguous ints */
    int ci[7];
    for (int i = 0; i < 7; i++) ci[i] = SENT;
    RUN(MPI_Neighbor_alltoall(sb, 2, V.t, ci, 6, MPI_INT, ring),
        MPI_Ineighbor_alltoall(sb, 2, V.t, ci, 6, MPI_INT, ring, &rq));
    for (int j = 0; j < 6; j++) CHECK(ci[j] == 60 * left + j, "neighbor_alltoall[%d] = %d (%s)", j, ci[j], mode_name[mode]);
    CHECK(ci[6] == SENT, "neighbor_alltoall wrote past its block");
    /* allgatherv and alltoallv with a displacement of one element of RV */
    int one = 2, displ = 1;
    rb = ibuf(&RV, 3); w = ibuf(&RV, 3);
    for (int j = 0; j < 6; j++) w[pos(&RV, RV.per + j)] = 60 * left + j;
    RUN(MPI_Neighbor_allgatherv(sb, 2, V.t, rb, &one, &displ, RV.t, ring),
        MPI_Ineighbor_allgatherv(sb, 2, V.t, rb, &one, &displ, RV.t, ring, &rq));
    same("neighbor_allgatherv", &RV, rb, w, 3);
    free(rb);
    rb = ibuf(&RV, 3);
    int zero = 0;
    RUN(MPI_Neighbor_alltoallv(sb, &one, &zero, V.t, rb, &one, &displ, RV.t, ring),
        MPI_Ineighbor_alltoallv(sb, &one, &zero, V.t, rb, &one, &displ, RV.t, ring, &rq));
    same("neighbor_alltoallv", &RV, rb, w, 3);
    free(sb); free(rb); free(w);
    MPI_Comm_free(&ring);
    /* alltoallw: 2 elements of V to each rank, received as 6 ints with an
     * int of gap before each block */
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size), *rc = malloc(sizeof(int) * size);
    int *rd = malloc(sizeof(int) * size);
    MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * size), *rt = malloc(sizeof(MPI_Datatype) * size);
    sb = ibuf(&V, 2 * size);
    int *ib = ibuf(&CI, 7 * size), *iw = ibuf(&CI, 7 * size);
    for (int q = 0; q < size; q++) {
        sc[q] = 2; sd[q] = (int)(q * 2 * V.ext * sizeof(int)); st[q] = V.t;
        rc[q] = 6; rd[q] = (int)((q * 7 + 1) * sizeof(int)); rt[q] = MPI_INT;
        for (int j = 0; j < 6; j++) { sb[pos(&V, q * 6 + j)] = 1000 * rank + 10 * q + j; iw[q * 7 + 1 + j] = 1000 * q + 10 * rank + j; }
    }
    RUN(MPI_Alltoallw(sb, sc, sd, st, ib, rc, rd, rt, MPI_COMM_WORLD),
        MPI_Ialltoallw(sb, sc, sd, st, ib, rc, rd, rt, MPI_COMM_WORLD, &rq));
    same("alltoallw", &CI, ib, iw, 7 * size);
    free(sc); free(sd); free(rc); free(rd); free(st); free(rt); free(sb); free(ib); free(iw);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* V: 3 ints, one int between each (extent 5 ints); RV: V resized to 6
     * ints; CI: plain ints; VD: 2 doubles 3 apart (extent 4 doubles); VI2:
     * 2 ints 2 apart, resized to 4 ints. */
    MPI_Type_vector(3, 1, 2, MPI_INT, &V.t);
    MPI_Type_create_resized(V.t, 0, 6 * sizeof(int), &RV.t);
    MPI_Type_vector(2, 1, 3, MPI_DOUBLE, &VD.t);
    MPI_Datatype vi;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vi);
    MPI_Type_create_resized(vi, 0, 4 * sizeof(int), &VI2.t);
    MPI_Type_free(&vi);
    V.per = RV.per = 3; V.stride = RV.stride = 2; V.ext = 5; RV.ext = 6;
    VD.per = 2; VD.stride = 3; VD.ext = 4;
    VI2.per = 2; VI2.stride = 2; VI2.ext = 4;
    CI.t = MPI_INT; CI.per = CI.stride = CI.ext = 1;
    V.name = "vector"; RV.name = "resized vector"; CI.name = "ints"; VD.name = "vector of doubles";
    VI2.name = "resized vector of ints";
    int blocklens[2] = {1, 1};
    MPI_Aint displs[2] = {offsetof(Pair, a), offsetof(Pair, d)};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, blocklens, displs, types, &ST);
    MPI_Datatype all[] = {V.t, RV.t, VD.t, VI2.t, ST};
    for (int i = 0; i < 5; i++) MPI_Type_commit(&all[i]);
    V.t = all[0]; RV.t = all[1]; VD.t = all[2]; VI2.t = all[3]; ST = all[4];
    MPI_Aint lb, ext;
    MPI_Type_get_extent(ST, &lb, &ext);
    CHECK(ext == sizeof(Pair), "the struct's extent is %ld, want %zu", (long)ext, sizeof(Pair));

    for (mode = 0; mode < 4; mode++) {
        data_movement();
        reductions();
        neighborhood();
    }
    t_reduce_local();
    refusals();

    for (int i = 0; i < 5; i++) MPI_Type_free(&all[i]);
    int sum = 0;
    MPI_Allreduce(&failures, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && sum == 0) printf("coll_types: ok\n");
    return failures ? 1 : 0;
}
