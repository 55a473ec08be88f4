/* MPI_MINLOC and MPI_MAXLOC over derived types made of pairs: a vector of
 * MPI_DOUBLE_INT with gaps, a contiguous type of MPI_SHORT_INT (padding in
 * every pair), an indexed block of MPI_LONG_INT, a struct of a double and
 * an int resized to 12 bytes (pairs packed one after another, as no C
 * struct lays them out), and a contiguous type of MPI_2INT (the kernels'
 * own layout). Each goes through allreduce (from a send buffer and in
 * place), reduce, scan, reduce_scatter_block and MPI_Reduce_local,
 * blocking and non-blocking. Every buffer starts filled with a sentinel
 * byte, which the gaps and the pairs' padding must keep; the expected
 * results are computed here from the rule that made the data, with ties
 * going to the smaller index. Also checks the refusal of MPI_MAXLOC on
 * types that are not pairs. Prints "coll_pairs: ok". */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static int rank, size, failures = 0;
static int blocking; /* 1: the blocking call; 0: the non-blocking one and MPI_Wait */

#define SENTINEL 0xA5

/* The value of a pair is a double, short, long or int. */
enum kind { DOUBLE, SHORT, LONG, INT };

/* A type of `pairs` pairs per element, `ext` bytes apart; pair k of an
 * element has its value at `at[k]` and its index `index_at` bytes after
 * the value. */
typedef struct {
    MPI_Datatype t;
    int pairs;
    size_t ext, index_at;
    size_t at[3];
    enum kind kind;
    const char *name;
} Ty;

/* Where pair j of a buffer of elements of `t` has its value. */
static size_t value_at(const Ty *t, int j) { return (j / t->pairs) * t->ext + t->at[j % t->pairs]; }

static unsigned char *buffer(const Ty *t, int n) {
    unsigned char *b = malloc(n * t->ext + 16);
    memset(b, SENTINEL, n * t->ext + 16);
    return b;
}

static void put(const Ty *t, unsigned char *b, int j, long value, int index) {
    unsigned char *v = b + value_at(t, j);
    switch (t->kind) {
    case DOUBLE: { double d = (double)value + 0.5; memcpy(v, &d, sizeof d); break; }
    case SHORT: { short s = (short)value; memcpy(v, &s, sizeof s); break; }
    case LONG: { long l = value * 1000000007L; memcpy(v, &l, sizeof l); break; }
    case INT: { int i = (int)value; memcpy(v, &i, sizeof i); break; }
    }
    memcpy(v + t->index_at, &index, sizeof index);
}

/* The value rank q contributes at pair j (ties are common), and its index
 * (larger for smaller ranks, so a tie's winner is not simply the first
 * rank). */
static long val(int q, int j) { return (q * 3 + j * 5) % 4 - 1; }
static int idx(int q, int j) { return (size - q) * 10 + j; }

/* Fills `b` with rank q's `pairs` pairs. */
static void fill(const Ty *t, unsigned char *b, int q, int pairs) {
    for (int j = 0; j < pairs; j++) put(t, b, j, val(q, j), idx(q, j));
}

/* The MINLOC (max = 0) or MAXLOC (max = 1) of the pairs at pair j over
 * ranks `from` to `to`, stored at pair `k` of `b`. */
static void expect_at(const Ty *t, unsigned char *b, int k, int j, int from, int to, int max) {
    long best = val(from, j);
    int best_index = idx(from, j);
    for (int q = from + 1; q <= to; q++) {
        long v = val(q, j);
        int i = idx(q, j);
        if ((max ? v > best : v < best) || (v == best && i < best_index)) { best = v; best_index = i; }
    }
    put(t, b, k, best, best_index);
}

static void same(const char *what, const Ty *t, const unsigned char *got, const unsigned char *want, int n) {
    for (size_t i = 0; i < n * t->ext + 16; i++)
        if (got[i] != want[i]) {
            CHECK(0, "%s (%s, %s): byte %zu is %#x, want %#x", what, t->name, blocking ? "blocking" : "non-blocking",
                  i, got[i], want[i]);
            return;
        }
}

static void done(int rc, MPI_Request *r) {
    CHECK(rc == MPI_SUCCESS, "a call failed with %d", rc);
    if (!blocking) MPI_Wait(r, MPI_STATUS_IGNORE);
}

static void t_allreduce(const Ty *t, int in_place, MPI_Op op, int max) {
    int n = 2, pairs = n * t->pairs;
    unsigned char *s = buffer(t, n), *r = buffer(t, n), *w = buffer(t, n);
    fill(t, in_place ? r : s, rank, pairs);
    for (int j = 0; j < pairs; j++) expect_at(t, w, j, j, 0, size - 1, max);
    const void *sp = in_place ? MPI_IN_PLACE : s;
    MPI_Request rq;
    done(blocking ? MPI_Allreduce(sp, r, n, t->t, op, MPI_COMM_WORLD)
                  : MPI_Iallreduce(sp, r, n, t->t, op, MPI_COMM_WORLD, &rq),
         &rq);
    same(in_place ? "allreduce in place" : "allreduce", t, r, w, n);
    free(s); free(r); free(w);
}

static void t_reduce(const Ty *t, MPI_Op op, int max) {
    int n = 3, pairs = n * t->pairs, root = size - 1;
    unsigned char *s = buffer(t, n), *r = buffer(t, n), *w = buffer(t, n);
    fill(t, s, rank, pairs);
    if (rank == root)
        for (int j = 0; j < pairs; j++) expect_at(t, w, j, j, 0, size - 1, max);
    MPI_Request rq;
    done(blocking ? MPI_Reduce(s, r, n, t->t, op, root, MPI_COMM_WORLD)
                  : MPI_Ireduce(s, r, n, t->t, op, root, MPI_COMM_WORLD, &rq),
         &rq);
    same("reduce", t, r, w, n);
    free(s); free(r); free(w);
}

static void t_scan(const Ty *t, MPI_Op op, int max) {
    int n = 1, pairs = n * t->pairs;
    unsigned char *s = buffer(t, n), *r = buffer(t, n), *w = buffer(t, n);
    fill(t, s, rank, pairs);
    for (int j = 0; j < pairs; j++) expect_at(t, w, j, j, 0, rank, max);
    MPI_Request rq;
    done(blocking ? MPI_Scan(s, r, n, t->t, op, MPI_COMM_WORLD) : MPI_Iscan(s, r, n, t->t, op, MPI_COMM_WORLD, &rq),
         &rq);
    same("scan", t, r, w, n);
    free(s); free(r); free(w);
}

static void t_reduce_scatter_block(const Ty *t, MPI_Op op, int max) {
    int pairs = size * t->pairs;
    unsigned char *s = buffer(t, size), *r = buffer(t, 1), *w = buffer(t, 1);
    fill(t, s, rank, pairs);
    for (int k = 0; k < t->pairs; k++) expect_at(t, w, k, rank * t->pairs + k, 0, size - 1, max);
    MPI_Request rq;
    done(blocking ? MPI_Reduce_scatter_block(s, r, 1, t->t, op, MPI_COMM_WORLD)
                  : MPI_Ireduce_scatter_block(s, r, 1, t->t, op, MPI_COMM_WORLD, &rq),
         &rq);
    same("reduce_scatter_block", t, r, w, 1);
    free(s); free(r); free(w);
}

static void t_reduce_local(const Ty *t, MPI_Op op, int max) {
    int n = 2, pairs = n * t->pairs;
    unsigned char *a = buffer(t, n), *b = buffer(t, n), *w = buffer(t, n);
    /* Rank 1's pairs into rank 0's: the local reduction of two ranks. */
    fill(t, a, 1, pairs);
    fill(t, b, 0, pairs);
    for (int j = 0; j < pairs; j++) expect_at(t, w, j, j, 0, 1, max);
    CHECK(MPI_Reduce_local(a, b, n, t->t, op) == MPI_SUCCESS, "MPI_Reduce_local failed");
    same("reduce_local", t, b, w, n);
    free(a); free(b); free(w);
}

static void t_type(const Ty *t) {
    for (blocking = 1; blocking >= 0; blocking--)
        for (int max = 0; max <= 1; max++) {
            MPI_Op op = max ? MPI_MAXLOC : MPI_MINLOC;
            t_allreduce(t, 0, op, max);
            t_allreduce(t, 1, op, max);
            t_reduce(t, op, max);
            t_scan(t, op, max);
            t_reduce_scatter_block(t, op, max);
        }
    t_reduce_local(t, MPI_MINLOC, 0);
    t_reduce_local(t, MPI_MAXLOC, 1);
}

static void expect_refused(const char *what, MPI_Datatype t) {
    char in[256], out[256];
    memset(in, 0, sizeof in);
    int rc = MPI_Allreduce(in, out, 1, t, MPI_MAXLOC, MPI_COMM_WORLD);
    int cls = -1, len = 0;
    char text[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    CHECK(cls == MPI_ERR_TYPE && strstr(text, "pairs") != NULL, "MPI_MAXLOC on %s: class %d, text '%s'", what, cls,
          text);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    struct di { double v; int i; };
    struct si { short v; int i; };
    struct li { long v; int i; };

    /* Two MPI_DOUBLE_INT, one pair's extent apart: 48 bytes per element. */
    Ty vdi = {MPI_DATATYPE_NULL, 2, 3 * sizeof(struct di), offsetof(struct di, i), {0, 2 * sizeof(struct di)},
              DOUBLE, "vector of MPI_DOUBLE_INT"};
    MPI_Type_vector(2, 1, 2, MPI_DOUBLE_INT, &vdi.t);
    /* Three MPI_SHORT_INT in a row. */
    Ty csi = {MPI_DATATYPE_NULL, 3, 3 * sizeof(struct si), offsetof(struct si, i),
              {0, sizeof(struct si), 2 * sizeof(struct si)}, SHORT, "contiguous MPI_SHORT_INT"};
    MPI_Type_contiguous(3, MPI_SHORT_INT, &csi.t);
    /* MPI_LONG_INT at blocks 0 and 2 of 3. */
    int displs[2] = {0, 2};
    Ty ili = {MPI_DATATYPE_NULL, 2, 3 * sizeof(struct li), offsetof(struct li, i), {0, 2 * sizeof(struct li)}, LONG,
              "indexed block of MPI_LONG_INT"};
    MPI_Type_create_indexed_block(2, 1, displs, MPI_LONG_INT, &ili.t);
    /* A double and an int, 12 bytes apart: pairs packed tight. */
    Ty tight = {MPI_DATATYPE_NULL, 1, 12, 8, {0}, DOUBLE, "struct of a double and an int, resized to 12"};
    int lens[2] = {1, 1};
    MPI_Aint at[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_INT}, st;
    MPI_Type_create_struct(2, lens, at, types, &st);
    MPI_Type_create_resized(st, 0, 12, &tight.t);
    MPI_Type_free(&st);
    /* Two MPI_2INT: already the kernels' layout. */
    Ty c2i = {MPI_DATATYPE_NULL, 2, 16, 4, {0, 8}, INT, "contiguous MPI_2INT"};
    MPI_Type_contiguous(2, MPI_2INT, &c2i.t);

    Ty *all[] = {&vdi, &csi, &ili, &tight, &c2i};
    for (int i = 0; i < 5; i++) {
        MPI_Type_commit(&all[i]->t);
        MPI_Aint lb, ext;
        MPI_Type_get_extent(all[i]->t, &lb, &ext);
        CHECK((size_t)ext == all[i]->ext, "%s: extent %ld, want %zu", all[i]->name, (long)ext, all[i]->ext);
    }
    for (int i = 0; i < 5; i++) t_type(all[i]);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype vd, swapped;
    MPI_Type_vector(2, 1, 3, MPI_DOUBLE, &vd);
    MPI_Type_commit(&vd);
    expect_refused("a vector of doubles", vd);
    MPI_Datatype swapped_types[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Aint swapped_at[2] = {0, 8};
    MPI_Type_create_struct(2, lens, swapped_at, swapped_types, &swapped);
    MPI_Type_commit(&swapped);
    expect_refused("a struct of an int then a double", swapped);
    MPI_Type_free(&vd);
    MPI_Type_free(&swapped);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    for (int i = 0; i < 5; i++) MPI_Type_free(&all[i]->t);
    int sum = 0;
    MPI_Allreduce(&failures, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && sum == 0) printf("coll_pairs: ok\n");
    return failures ? 1 : 0;
}
