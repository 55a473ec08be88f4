/* Cartesian topologies, info objects, MPI_Alloc_mem, the program's own
 * reduction operations (a non-commutative one checks the order), error
 * handlers and classes of its own, MPI_Reduce_local, the Fortran handle
 * conversions, and a feature oxmpi does not have yet. Prints "misc: ok". */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static int rank, size, failures = 0;

/* 2x2 matrix product, row-major, in order: inout = in * inout. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                    a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof c);
    }
}

static int handled = 0, last_code = 0;
static void my_handler(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    handled++;
    last_code = *code;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Dims_create and a periodic ring of all ranks in 2-D. */
    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    CHECK(dims[0] * dims[1] == size && dims[0] >= dims[1], "dims %d x %d", dims[0], dims[1]);
    int d12[2] = {0, 0};
    MPI_Dims_create(12, 2, d12);
    CHECK(d12[0] == 4 && d12[1] == 3, "dims of 12: %d x %d", d12[0], d12[1]);
    int periods[2] = {1, 0};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    int topo, coords[2], back, nd;
    MPI_Topo_test(cart, &topo);
    CHECK(topo == MPI_CART, "topo %d", topo);
    MPI_Topo_test(MPI_COMM_WORLD, &topo);
    CHECK(topo == MPI_UNDEFINED, "world topo %d", topo);
    MPI_Cartdim_get(cart, &nd);
    int got_dims[2] = {0, 0}, got_periods[2] = {-1, -1}, got_coords[2] = {-1, -1};
    MPI_Cart_get(cart, 2, got_dims, got_periods, got_coords);
    CHECK(got_dims[0] == dims[0] && got_dims[1] == dims[1] && got_periods[0] == 1 && got_periods[1] == 0 &&
              got_coords[0] == rank / dims[1] && got_coords[1] == rank % dims[1],
          "cart_get: dims %d x %d, periods %d %d, coords %d %d", got_dims[0], got_dims[1], got_periods[0],
          got_periods[1], got_coords[0], got_coords[1]);
    MPI_Cart_coords(cart, rank, 2, coords);
    MPI_Cart_rank(cart, coords, &back);
    CHECK(nd == 2 && back == rank && coords[0] == rank / dims[1] && coords[1] == rank % dims[1], "coords %d %d", coords[0], coords[1]);
    int src, dst;
    MPI_Cart_shift(cart, 0, 1, &src, &dst);
    CHECK(dst == ((coords[0] + 1) % dims[0]) * dims[1] + coords[1], "periodic shift dest %d", dst);
    MPI_Cart_shift(cart, 1, 1, &src, &dst);
    CHECK(coords[1] == dims[1] - 1 ? dst == MPI_PROC_NULL : dst == rank + 1, "edge shift dest %d", dst);
    int keep[2] = {0, 1};
    MPI_Comm row;
    MPI_Cart_sub(cart, keep, &row);
    int rsz, rr;
    MPI_Comm_size(row, &rsz);
    MPI_Comm_rank(row, &rr);
    CHECK(rsz == dims[1] && rr == coords[1], "row %d of %d", rr, rsz);
    MPI_Comm_free(&row);
    MPI_Comm_free(&cart);

    /* Info. */
    MPI_Info info, copy;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alpha", "1");
    MPI_Info_set(info, "beta", "two");
    MPI_Info_set(info, "alpha", "one");
    int nkeys, flag, vlen;
    char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
    MPI_Info_get_nkeys(info, &nkeys);
    MPI_Info_get_nthkey(info, 1, key);
    MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL, val, &flag);
    CHECK(nkeys == 2 && strcmp(key, "beta") == 0 && flag && strcmp(val, "one") == 0, "info %d %s %s", nkeys, key, val);
    MPI_Info_get_valuelen(info, "beta", &vlen, &flag);
    CHECK(flag && vlen == 3, "valuelen %d", vlen);
    MPI_Info_dup(info, &copy);
    MPI_Info_delete(info, "alpha");
    MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL, val, &flag);
    CHECK(!flag, "deleted key still there");
    MPI_Info_get(copy, "alpha", MPI_MAX_INFO_VAL, val, &flag);
    CHECK(flag, "dup lost a key");
    MPI_Info_free(&info);
    MPI_Info_free(&copy);
    CHECK(info == MPI_INFO_NULL, "info handle not reset");

    /* Alloc_mem. */
    double *mem;
    MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &mem);
    CHECK(mem != NULL && ((MPI_Aint)mem % 64) == 0, "alloc_mem %p", (void *)mem);
    for (int i = 0; i < 1000; i++) mem[i] = i;
    MPI_Free_mem(mem);

    /* A non-commutative operation: the product of every rank's matrix in
     * rank order. Rank r contributes [[1, r], [0, 1]]; their product is
     * [[1, sum r], [0, 1]], and any other order gives the same, so use
     * [[1, r], [r, 1]]-like data whose product depends on the order. */
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    MPI_Op mul;
    MPI_Op_create(matmul, 0, &mul);
    int commute = -1;
    MPI_Op_commutative(mul, &commute);
    CHECK(commute == 0, "commutative %d", commute);
    int m[4] = {1, rank + 1, 0, 2}, prod[4];
    MPI_Allreduce(m, prod, 1, mat, mul, MPI_COMM_WORLD);
    int want[4] = {1, 1, 0, 2};
    for (int r = 1; r < size; r++) {
        int a[4] = {want[0], want[1], want[2], want[3]}, b[4] = {1, r + 1, 0, 2};
        want[0] = a[0] * b[0] + a[1] * b[2]; want[1] = a[0] * b[1] + a[1] * b[3];
        want[2] = a[2] * b[0] + a[3] * b[2]; want[3] = a[2] * b[1] + a[3] * b[3];
    }
    CHECK(memcmp(prod, want, sizeof want) == 0, "ordered product %d %d %d %d, want %d %d %d %d",
          prod[0], prod[1], prod[2], prod[3], want[0], want[1], want[2], want[3]);
    /* MPI_Reduce_local, with the program's operation and a predefined one. */
    int la[4] = {1, 1, 0, 1}, lb[4] = {1, 0, 1, 1};
    MPI_Reduce_local(la, lb, 1, mat, mul);
    CHECK(lb[0] == 2 && lb[1] == 1 && lb[2] == 1 && lb[3] == 1, "reduce_local user %d %d %d %d", lb[0], lb[1], lb[2], lb[3]);
    double da[3] = {1, 2, 3}, db[3] = {10, 20, 30};
    MPI_Reduce_local(da, db, 3, MPI_DOUBLE, MPI_SUM);
    CHECK(db[0] == 11 && db[2] == 33, "reduce_local sum %g %g", db[0], db[2]);
    /* Fortran handles are the C ones. */
    CHECK(MPI_Type_f2c(MPI_Type_c2f(mat)) == mat && MPI_Op_f2c(MPI_Op_c2f(mul)) == mul, "c2f");
    MPI_Op_free(&mul);
    CHECK(mul == MPI_OP_NULL, "op handle not reset");

    /* An error handler of our own, and classes and codes we add. */
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(my_handler, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    int x = 0, rc = MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(handled == 1 && last_code == rc && cls == MPI_ERR_RANK, "handler %d code %d class %d", handled, last_code, cls);
    int myclass, mycode, len;
    MPI_Add_error_class(&myclass);
    MPI_Add_error_code(myclass, &mycode);
    MPI_Add_error_string(mycode, "the widget is broken");
    char text[MPI_MAX_ERROR_STRING];
    MPI_Error_string(mycode, text, &len);
    MPI_Error_class(mycode, &cls);
    CHECK(strcmp(text, "the widget is broken") == 0 && cls == myclass && myclass > MPI_ERR_CONVERSION, "added '%s' class %d", text, cls);
    MPI_Comm_call_errhandler(MPI_COMM_WORLD, mycode);
    CHECK(handled == 2 && last_code == mycode, "call_errhandler %d", handled);

    /* Not there yet: one-sided. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Win win;
    rc = MPI_Win_create(&x, sizeof x, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION && strstr(text, "one-sided") != NULL, "win_create %d '%s'", cls, text);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    CHECK(parent == MPI_COMM_NULL, "parent %d", parent);
    MPI_Errhandler_free(&eh);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("misc: ok\n");
    return failures ? 1 : 0;
}
