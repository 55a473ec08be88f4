/* Groups, MPI_Comm_create, MPI_Comm_split_type, communicator names and
 * attributes (keyvals with copy and delete callbacks, the predefined
 * attributes). Prints "groups: ok". */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static int rank, size, failures = 0;

static int copies = 0, deletes = 0;

static int count_copy(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c; (void)k; (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm c, int k, void *value, void *extra) {
    (void)c; (void)k; (void)value;
    deletes += *(int *)extra;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Groups. */
    MPI_Group world, evens, odds, back, uni;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int gs, gr;
    MPI_Group_size(world, &gs);
    MPI_Group_rank(world, &gr);
    CHECK(gs == size && gr == rank, "world group %d %d", gs, gr);
    int range[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(world, 1, range, &evens);
    MPI_Group_difference(world, evens, &odds);
    int ne, no;
    MPI_Group_size(evens, &ne);
    MPI_Group_size(odds, &no);
    CHECK(ne == (size + 1) / 2 && no == size / 2, "evens %d odds %d", ne, no);
    MPI_Group_rank(evens, &gr);
    CHECK(gr == (rank % 2 == 0 ? rank / 2 : MPI_UNDEFINED), "rank in evens %d", gr);
    MPI_Group_union(odds, evens, &uni);
    int cmp;
    MPI_Group_compare(uni, world, &cmp);
    CHECK(cmp == (size > 2 ? MPI_SIMILAR : (size == 2 ? MPI_SIMILAR : MPI_IDENT)), "union compare %d", cmp);
    int from[2] = {0, size - 1}, to[2];
    MPI_Group_translate_ranks(world, 2, from, evens, to);
    CHECK(to[0] == 0 && to[1] == ((size - 1) % 2 == 0 ? (size - 1) / 2 : MPI_UNDEFINED), "translate %d %d", to[0], to[1]);
    int rev[64];
    for (int i = 0; i < size; i++) rev[i] = size - 1 - i;
    MPI_Group_incl(world, size, rev, &back);
    MPI_Group_compare(back, world, &cmp);
    CHECK(cmp == (size == 1 ? MPI_IDENT : MPI_SIMILAR), "reversed compare %d", cmp);

    /* A communicator of the reversed group: rank order reversed. */
    MPI_Comm reversed;
    MPI_Comm_create(MPI_COMM_WORLD, back, &reversed);
    int rr;
    MPI_Comm_rank(reversed, &rr);
    CHECK(rr == size - 1 - rank, "reversed rank %d", rr);
    /* Of the evens only: odd ranks get MPI_COMM_NULL. */
    MPI_Comm even_comm;
    MPI_Comm_create(MPI_COMM_WORLD, evens, &even_comm);
    if (rank % 2) CHECK(even_comm == MPI_COMM_NULL, "odd rank got a communicator");
    else {
        int esz;
        MPI_Comm_size(even_comm, &esz);
        CHECK(esz == ne, "even comm size %d", esz);
        MPI_Comm_free(&even_comm);
    }
    /* Exclusions and intersections give the odds and evens again. */
    MPI_Group no_evens, no_evens_range, common, none;
    int exclude[64], nx = 0;
    for (int i = 0; i < size; i += 2) exclude[nx++] = i;
    MPI_Group_excl(world, nx, exclude, &no_evens);
    MPI_Group_compare(no_evens, odds, &cmp);
    CHECK(cmp == MPI_IDENT, "excl of the evens against the odds %d", cmp);
    MPI_Group_range_excl(world, 1, range, &no_evens_range);
    MPI_Group_compare(no_evens_range, odds, &cmp);
    CHECK(cmp == MPI_IDENT, "range_excl of the evens against the odds %d", cmp);
    MPI_Group_rank(no_evens_range, &gr);
    CHECK(gr == (rank % 2 ? rank / 2 : MPI_UNDEFINED), "rank in range_excl %d", gr);
    /* An intersection keeps the first group's order. */
    MPI_Group_intersection(evens, back, &common);
    MPI_Group_compare(common, evens, &cmp);
    CHECK(cmp == MPI_IDENT, "intersection in the evens' order %d", cmp);
    MPI_Group_free(&common);
    MPI_Group_intersection(back, evens, &common);
    MPI_Group_compare(common, evens, &cmp);
    CHECK(cmp == (ne > 1 ? MPI_SIMILAR : MPI_IDENT), "intersection in reversed order %d", cmp);
    MPI_Group_intersection(odds, evens, &none);
    int nn = -1;
    MPI_Group_size(none, &nn);
    CHECK(nn == 0, "disjoint intersection of size %d", nn);
    if (none != MPI_GROUP_EMPTY) MPI_Group_free(&none);
    int excl_bad = 0, excl_rc;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int out_of_range[1] = {size};
    MPI_Group excl_fail = MPI_GROUP_NULL;
    excl_rc = MPI_Group_excl(world, 1, out_of_range, &excl_fail);
    MPI_Error_class(excl_rc, &excl_bad);
    CHECK(excl_bad == MPI_ERR_RANK, "excl of rank %d: class %d", size, excl_bad);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Group_free(&no_evens); MPI_Group_free(&no_evens_range); MPI_Group_free(&common);
    /* The Fortran conversions are the identity on every handle. */
    MPI_Info info;
    MPI_Info_create(&info);
    CHECK(MPI_Group_f2c(MPI_Group_c2f(world)) == world && MPI_Comm_f2c(MPI_Comm_c2f(reversed)) == reversed &&
              MPI_Info_f2c(MPI_Info_c2f(info)) == info &&
              MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN &&
              MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_NULL)) == MPI_COMM_NULL,
          "c2f and f2c");
    MPI_Info_free(&info);
    MPI_Group_free(&world); MPI_Group_free(&evens); MPI_Group_free(&odds);
    MPI_Group_free(&back); MPI_Group_free(&uni);
    CHECK(world == MPI_GROUP_NULL, "group handle not reset");

    /* No communicator is an intercommunicator. */
    int inter = -1;
    MPI_Comm_test_inter(MPI_COMM_WORLD, &inter);
    CHECK(inter == 0, "world is an intercommunicator: %d", inter);
    MPI_Comm_test_inter(reversed, &inter);
    CHECK(inter == 0, "a created communicator is an intercommunicator: %d", inter);

    /* All ranks share this node. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int nsz;
    MPI_Comm_size(node, &nsz);
    CHECK(nsz == size, "node size %d", nsz);

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0, "world name '%s'", name);
    MPI_Comm_set_name(reversed, "reversed");
    MPI_Comm_get_name(reversed, name, &len);
    CHECK(strcmp(name, "reversed") == 0 && len == 8, "set name '%s'", name);

    /* Attributes. */
    int *tag_ub, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    CHECK(flag && *tag_ub >= 32767, "tag ub %d", flag ? *tag_ub : -1);
    int *global;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);
    CHECK(flag && (*global == 0 || *global == 1), "wtime is global");
    int one = 1, key, kept = 0, stored = 42;
    MPI_Comm_create_keyval(count_copy, count_delete, &key, &one);
    int nocopy;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &nocopy, NULL);
    MPI_Comm_set_attr(node, key, &stored);
    MPI_Comm_set_attr(node, nocopy, &kept);
    int *got;
    MPI_Comm_get_attr(node, key, &got, &flag);
    CHECK(flag && got == &stored, "get attr");
    MPI_Comm twin;
    MPI_Comm_dup(node, &twin);
    CHECK(copies == 1, "copies %d", copies);
    MPI_Comm_get_attr(twin, key, &got, &flag);
    CHECK(flag && *got == 42, "copied attr");
    MPI_Comm_get_attr(twin, nocopy, &got, &flag);
    CHECK(!flag, "null copy copied");
    MPI_Comm_free(&twin);
    CHECK(deletes == 1, "deletes after free %d", deletes);
    MPI_Comm_delete_attr(node, key);
    CHECK(deletes == 2, "deletes after delete %d", deletes);
    MPI_Comm_get_attr(node, key, &got, &flag);
    CHECK(!flag, "deleted attribute still there");
    MPI_Comm_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID, "keyval not reset");

    /* MPI 1's names for the same: the tag bound, a duplicated value
     * through MPI_DUP_FN, a deleted one. */
    int *ub1 = NULL, old_key, old_value = 7;
    MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &ub1, &flag);
    CHECK(flag && ub1 && *ub1 == *tag_ub, "MPI_Attr_get of MPI_TAG_UB");
    MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &old_key, NULL);
    MPI_Attr_put(node, old_key, &old_value);
    MPI_Comm old_twin;
    MPI_Comm_dup(node, &old_twin);
    MPI_Attr_get(old_twin, old_key, &got, &flag);
    CHECK(flag && got == &old_value, "MPI_DUP_FN copied %p", (void *)got);
    MPI_Attr_delete(old_twin, old_key);
    MPI_Attr_get(old_twin, old_key, &got, &flag);
    CHECK(!flag, "MPI_Attr_delete left the value");
    MPI_Comm_free(&old_twin);
    MPI_Keyval_free(&old_key);
    CHECK(old_key == MPI_KEYVAL_INVALID, "MPI_Keyval_free did not reset the keyval");
    /* A keyval freed while a communicator holds a value of it stays until
     * that value goes: freeing the communicator still runs its delete
     * callback. */
    int in_use, counted = 3, deletes_before = deletes;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, &in_use, &one);
    MPI_Comm_set_attr(node, in_use, &counted);
    MPI_Comm_free_keyval(&in_use);
    CHECK(in_use == MPI_KEYVAL_INVALID && deletes == deletes_before, "freeing a keyval in use deleted its value");
    MPI_Comm_free(&node);
    CHECK(deletes == deletes_before + 1, "the freed keyval's value was not deleted with its communicator (%d)",
          deletes - deletes_before);
    MPI_Comm_free(&reversed);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("groups: ok\n");
    return failures ? 1 : 0;
}
