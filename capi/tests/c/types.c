/* Derived datatypes through mpi.h: a C struct described with
 * MPI_Get_address and sent between ranks, subarray and darray types on
 * the wire, indexed and hvector types on the wire, duplicates, true
 * extents, the block constructors, envelopes and contents, names, and
 * external32 bytes. Prints "types: ok". */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static int rank, size, failures = 0;

struct particle { char kind; double pos[3]; int id; };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    int active = peer < size;

    /* A struct described by its members' addresses. */
    struct particle ps[2];
    MPI_Aint base, addr[3];
    MPI_Get_address(&ps[0], &base);
    MPI_Get_address(&ps[0].kind, &addr[0]);
    MPI_Get_address(&ps[0].pos, &addr[1]);
    MPI_Get_address(&ps[0].id, &addr[2]);
    for (int i = 0; i < 3; i++) addr[i] -= base;
    int lens[3] = {1, 3, 1};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, ptype;
    MPI_Type_create_struct(3, lens, addr, types, &ptype);
    MPI_Type_commit(&ptype);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(ptype, &lb, &ext);
    CHECK(ext == sizeof(struct particle), "struct extent %ld, sizeof %zu", (long)ext, sizeof(struct particle));
    for (int i = 0; i < 2; i++) {
        ps[i].kind = 'a' + rank + i;
        ps[i].id = 10 * rank + i;
        for (int k = 0; k < 3; k++) ps[i].pos[k] = rank + i + k / 10.0;
    }
    struct particle got[2];
    memset(got, 0, sizeof got);
    if (active) {
        MPI_Sendrecv(ps, 2, ptype, peer, 1, got, 2, ptype, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 2; i++)
            CHECK(got[i].kind == 'a' + peer + i && got[i].id == 10 * peer + i && got[i].pos[2] == peer + i + 0.2,
                  "particle %d: %c %d %g", i, got[i].kind, got[i].id, got[i].pos[2]);
    }

    /* A 4x6 array's 2x3 block at (1, 2), as a subarray. */
    int grid[4][6], block[2][3];
    for (int i = 0; i < 4; i++) for (int j = 0; j < 6; j++) grid[i][j] = 100 * rank + 10 * i + j;
    int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
    MPI_Datatype sub;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub);
    MPI_Type_commit(&sub);
    if (active) {
        MPI_Sendrecv(grid, 1, sub, peer, 2, block, 6, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++)
            CHECK(block[i][j] == 100 * peer + 10 * (i + 1) + j + 2, "subarray[%d][%d] = %d", i, j, block[i][j]);
    }

    /* A darray: 8 ints block-distributed over 2 processes; rank 0 of the
     * grid owns 0..4. */
    int gs[1] = {8}, dist[1] = {MPI_DISTRIBUTE_BLOCK}, darg[1] = {MPI_DISTRIBUTE_DFLT_DARG}, ps_[1] = {2};
    MPI_Datatype part;
    MPI_Type_create_darray(2, 1, 1, gs, dist, darg, ps_, MPI_ORDER_C, MPI_INT, &part);
    MPI_Type_commit(&part);
    int sz;
    MPI_Type_size(part, &sz);
    MPI_Type_get_extent(part, &lb, &ext);
    CHECK(sz == 16 && lb == 0 && ext == 32, "darray size %d extent %ld", sz, (long)ext);
    int line[8] = {0, 1, 2, 3, 4, 5, 6, 7}, mine[4] = {0};
    int pos = 0;
    char buf[64];
    MPI_Pack(line, 1, part, buf, sizeof buf, &pos, MPI_COMM_WORLD);
    pos = 0;
    MPI_Unpack(buf, sizeof buf, &pos, mine, 4, MPI_INT, MPI_COMM_WORLD);
    CHECK(mine[0] == 4 && mine[3] == 7, "darray part %d..%d", mine[0], mine[3]);

    /* Block constructors, envelope and contents. */
    MPI_Datatype ib, hib, hix;
    int displs[3] = {0, 3, 7};
    MPI_Aint hdispls[3] = {0, 12, 28};
    int blens[3] = {2, 2, 1};
    MPI_Type_create_indexed_block(3, 2, displs, MPI_INT, &ib);
    MPI_Type_create_hindexed_block(3, 2, hdispls, MPI_INT, &hib);
    MPI_Type_create_hindexed(3, blens, hdispls, MPI_INT, &hix);
    int ni, na, nd, comb;
    MPI_Type_get_envelope(ib, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_INDEXED_BLOCK && ni == 5 && na == 0 && nd == 1, "indexed_block envelope %d %d %d %d", ni, na, nd, comb);
    int ints[5];
    MPI_Aint addrs[1];
    MPI_Datatype dts[1];
    MPI_Type_get_contents(ib, 5, 0, 1, ints, addrs, dts);
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[4] == 7 && dts[0] == MPI_INT, "contents %d %d %d %d", ints[0], ints[1], ints[4], dts[0]);
    MPI_Type_get_envelope(hix, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_HINDEXED && ni == 4 && na == 3, "hindexed envelope %d %d %d", ni, na, comb);
    MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_NAMED, "named %d", comb);
    int s1, s2, s3;
    MPI_Type_size(ib, &s1); MPI_Type_size(hib, &s2); MPI_Type_size(hix, &s3);
    CHECK(s1 == 24 && s2 == 24 && s3 == 20, "block sizes %d %d %d", s1, s2, s3);

    /* indexed and hvector on the wire: the columns 0 and 3 of a 3x6 int
     * array (an hvector of two rows' strides), and the elements 0-1, 5
     * and 9-11 of a line (indexed); a true extent without the resized
     * bounds; a duplicate that keeps the type map. */
    int mat[3][6], cols[6] = {0}, picked[6] = {0};
    for (int i = 0; i < 3; i++) for (int j = 0; j < 6; j++) mat[i][j] = 100 * rank + 10 * i + j;
    MPI_Datatype col, two_cols, idx, idx_dup, wide;
    MPI_Type_vector(3, 1, 6, MPI_INT, &col);
    MPI_Type_create_hvector(2, 1, 3 * sizeof(int), col, &two_cols);
    MPI_Type_commit(&two_cols);
    int ilens[3] = {2, 1, 3}, idisp[3] = {0, 5, 9};
    MPI_Type_indexed(3, ilens, idisp, MPI_INT, &idx);
    MPI_Type_dup(idx, &idx_dup);
    MPI_Type_commit(&idx_dup);
    int line12[12];
    for (int i = 0; i < 12; i++) line12[i] = 1000 * rank + i;
    if (active) {
        MPI_Sendrecv(mat, 1, two_cols, peer, 3, cols, 6, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < 6; k++) {
            int c = k < 3 ? 0 : 3, r = k % 3;
            CHECK(cols[k] == 100 * peer + 10 * r + c, "hvector element %d = %d", k, cols[k]);
        }
        MPI_Sendrecv(line12, 1, idx_dup, peer, 4, picked, 6, MPI_INT, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int want[6] = {0, 1, 5, 9, 10, 11};
        for (int k = 0; k < 6; k++)
            CHECK(picked[k] == 1000 * peer + want[k], "indexed element %d = %d", k, picked[k]);
    }
    MPI_Type_get_envelope(idx_dup, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_DUP && ni == 0 && na == 0 && nd == 1, "dup envelope %d %d %d %d", ni, na, nd, comb);
    MPI_Type_get_contents(idx_dup, 0, 0, 1, ints, addrs, dts);
    MPI_Type_get_envelope(dts[0], &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_INDEXED && ni == 7, "dup contents: combiner %d", comb);
    MPI_Type_free(&dts[0]);
    MPI_Type_get_envelope(two_cols, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_HVECTOR && ni == 2 && na == 1 && nd == 1, "hvector envelope %d %d %d %d", ni, na, nd, comb);
    MPI_Type_get_envelope(idx, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_INDEXED && ni == 7 && na == 0 && nd == 1, "indexed envelope %d %d %d %d", ni, na, nd, comb);
    MPI_Aint tlb, text;
    MPI_Type_create_resized(idx, -8, 64, &wide);
    MPI_Type_get_extent(wide, &lb, &ext);
    MPI_Type_get_true_extent(wide, &tlb, &text);
    CHECK(lb == -8 && ext == 64 && tlb == 0 && text == 12 * (MPI_Aint)sizeof(int),
          "resized extent %ld %ld, true %ld %ld", (long)lb, (long)ext, (long)tlb, (long)text);
    MPI_Type_get_true_extent(two_cols, &tlb, &text);
    CHECK(tlb == 0 && text == (2 * 6 + 3 + 1) * (MPI_Aint)sizeof(int), "hvector true extent %ld %ld", (long)tlb,
          (long)text);
    MPI_Type_free(&col); MPI_Type_free(&two_cols); MPI_Type_free(&idx); MPI_Type_free(&idx_dup);
    MPI_Type_free(&wide);

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Type_get_name(MPI_DOUBLE, name, &len);
    CHECK(strcmp(name, "MPI_DOUBLE") == 0, "name '%s'", name);
    MPI_Type_set_name(ptype, "particle");
    MPI_Type_get_name(ptype, name, &len);
    CHECK(strcmp(name, "particle") == 0 && len == 8, "set name '%s'", name);

    /* external32: big-endian. */
    int v[2] = {1, -2};
    unsigned char ext32[8];
    MPI_Aint epos = 0, esz;
    MPI_Pack_external_size("external32", 2, MPI_INT, &esz);
    MPI_Pack_external("external32", v, 2, MPI_INT, ext32, sizeof ext32, &epos);
    CHECK(esz == 8 && epos == 8 && ext32[3] == 1 && ext32[4] == 0xff && ext32[7] == 0xfe, "external32 bytes");
    int w[2] = {0, 0};
    epos = 0;
    MPI_Unpack_external("external32", ext32, sizeof ext32, &epos, w, 2, MPI_INT);
    CHECK(w[0] == 1 && w[1] == -2, "external32 back %d %d", w[0], w[1]);

    MPI_Type_free(&ptype); MPI_Type_free(&sub); MPI_Type_free(&part);
    MPI_Type_free(&ib); MPI_Type_free(&hib); MPI_Type_free(&hix);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("types: ok\n");
    return failures ? 1 : 0;
}
