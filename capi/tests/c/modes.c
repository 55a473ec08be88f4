/* Send modes and blocking probes between pairs of ranks (0-1, 2-3, ...;
 * an odd one out only finalizes): MPI_Ssend to a receive posted late;
 * an MPI_Issend that stays incomplete until its receive is posted;
 * MPI_Irsend to a posted receive; persistent synchronous, buffered and
 * ready sends started round after round; MPI_Probe of a small and of a
 * 1 MiB message before the receive; blocking sends of 1 MiB (past every
 * eager limit) in standard and synchronous mode both ways;
 * MPI_Sendrecv_replace of contiguous, strided and 1 MiB data and with
 * MPI_PROC_NULL on one side; the Fortran conversion of a request. Prints "modes: ok". */
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>
#include "check.h"

#define BIG (1 << 18) /* ints: 1 MiB */
#define ROUNDS 3

static int rank, size, failures = 0;

static void fill(int *p, int n, int seed) {
    for (int i = 0; i < n; i++) p[i] = i ^ seed;
}

static int mismatches(const int *p, int n, int seed) {
    int bad = 0;
    for (int i = 0; i < n; i++) bad += p[i] != (i ^ seed);
    return bad;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1, even = rank % 2 == 0;
    if (peer < size) {
        int v = rank, got = -1, go = 1;
        MPI_Status st;

        /* A synchronous send whose receive is posted late. */
        if (even) {
            MPI_Ssend(&v, 1, MPI_INT, peer, 1, MPI_COMM_WORLD);
        } else {
            usleep(20000);
            MPI_Recv(&got, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &st);
            CHECK(got == peer && st.MPI_TAG == 1, "ssend got %d tag %d", got, st.MPI_TAG);
        }

        /* An MPI_Issend is not complete while its message waits unmatched
         * (the receiver sits in a receive of another tag meanwhile). */
        if (even) {
            MPI_Request r;
            MPI_Issend(&v, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, &r);
            int flag = 0;
            for (int i = 0; i < 50 && !flag; i++) {
                MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
                usleep(1000);
            }
            CHECK(!flag, "an MPI_Issend completed before its receive was posted");
            MPI_Send(&go, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            CHECK(r == MPI_REQUEST_NULL, "issend request not released");
        } else {
            MPI_Recv(&go, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            got = -1;
            MPI_Recv(&got, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(got == peer, "issend got %d", got);
        }

        /* A ready send to a receive the peer says it posted. */
        if (even) {
            MPI_Recv(&go, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Request r;
            MPI_Irsend(&v, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else {
            MPI_Request r;
            got = -1;
            MPI_Irecv(&got, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &r);
            MPI_Send(&go, 1, MPI_INT, peer, 5, MPI_COMM_WORLD);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            CHECK(got == peer, "irsend got %d", got);
        }

        /* Persistent synchronous, buffered and ready sends, each started
         * ROUNDS times; the receiver checks every round's value. */
        int need;
        MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &need);
        int bufsize = ROUNDS * (need + MPI_BSEND_OVERHEAD);
        char *attached = malloc(bufsize);
        MPI_Buffer_attach(attached, bufsize);
        if (even) {
            int sv = 0;
            MPI_Request ss, bs, rs;
            MPI_Ssend_init(&sv, 1, MPI_INT, peer, 6, MPI_COMM_WORLD, &ss);
            MPI_Bsend_init(&sv, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &bs);
            MPI_Rsend_init(&sv, 1, MPI_INT, peer, 8, MPI_COMM_WORLD, &rs);
            CHECK(MPI_Request_f2c(MPI_Request_c2f(ss)) == ss, "request c2f");
            for (int round = 0; round < ROUNDS; round++) {
                sv = 100 * rank + round;
                MPI_Start(&ss);
                MPI_Wait(&ss, MPI_STATUS_IGNORE);
                MPI_Start(&bs);
                MPI_Wait(&bs, MPI_STATUS_IGNORE);
                MPI_Recv(&go, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Start(&rs);
                MPI_Wait(&rs, MPI_STATUS_IGNORE);
                CHECK(ss != MPI_REQUEST_NULL && bs != MPI_REQUEST_NULL && rs != MPI_REQUEST_NULL,
                      "persistent handles were reset");
            }
            MPI_Request_free(&ss);
            MPI_Request_free(&bs);
            MPI_Request_free(&rs);
        } else {
            int rv = -1;
            MPI_Request ready;
            MPI_Recv_init(&rv, 1, MPI_INT, peer, 8, MPI_COMM_WORLD, &ready);
            for (int round = 0; round < ROUNDS; round++) {
                int want = 100 * peer + round;
                MPI_Recv(&got, 1, MPI_INT, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(got == want, "ssend_init round %d got %d", round, got);
                MPI_Recv(&got, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(got == want, "bsend_init round %d got %d", round, got);
                MPI_Start(&ready);
                MPI_Send(&go, 1, MPI_INT, peer, 9, MPI_COMM_WORLD);
                MPI_Wait(&ready, MPI_STATUS_IGNORE);
                CHECK(rv == want, "rsend_init round %d got %d", round, rv);
            }
            MPI_Request_free(&ready);
        }
        void *back;
        int backsize;
        MPI_Buffer_detach(&back, &backsize);
        CHECK(back == attached && backsize == bufsize, "detach gave %p %d", back, backsize);
        free(attached);

        /* MPI_Probe before the receive: a small message, then 1 MiB. */
        int *big = malloc(BIG * sizeof(int));
        if (even) {
            int three[3] = {rank, rank + 1, rank + 2};
            MPI_Send(three, 3, MPI_INT, peer, 10, MPI_COMM_WORLD);
            fill(big, BIG, rank);
            MPI_Send(big, BIG, MPI_INT, peer, 11, MPI_COMM_WORLD);
        } else {
            int n = -1, three[3] = {0};
            MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_INT, &n);
            CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 10 && n == 3, "probe: source %d tag %d count %d",
                  st.MPI_SOURCE, st.MPI_TAG, n);
            MPI_Recv(three, 3, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(three[0] == peer && three[2] == peer + 2, "probed message %d %d", three[0], three[2]);
            MPI_Probe(peer, 11, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_INT, &n);
            CHECK(n == BIG && st.MPI_TAG == 11, "big probe: count %d tag %d", n, st.MPI_TAG);
            MPI_Recv(big, BIG, MPI_INT, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(mismatches(big, BIG, peer) == 0, "big standard send: %d wrong", mismatches(big, BIG, peer));
        }

        /* 1 MiB back in synchronous mode, received as it comes. */
        if (even) {
            MPI_Recv(big, BIG, MPI_INT, peer, 12, MPI_COMM_WORLD, &st);
            int n = -1;
            MPI_Get_count(&st, MPI_INT, &n);
            CHECK(n == BIG && mismatches(big, BIG, peer) == 0, "big synchronous send: count %d, %d wrong", n,
                  mismatches(big, BIG, peer));
        } else {
            fill(big, BIG, rank);
            MPI_Ssend(big, BIG, MPI_INT, peer, 12, MPI_COMM_WORLD);
        }

        /* MPI_Sendrecv_replace: contiguous ints, every other int of a
         * line (the others untouched), 1 MiB both ways at once, and with
         * no destination. */
        int four[4];
        for (int i = 0; i < 4; i++) four[i] = 10 * rank + i;
        MPI_Sendrecv_replace(four, 4, MPI_INT, peer, 13, peer, 13, MPI_COMM_WORLD, &st);
        CHECK(four[0] == 10 * peer && four[3] == 10 * peer + 3 && st.MPI_SOURCE == peer && st.MPI_TAG == 13,
              "replace got %d %d from %d", four[0], four[3], st.MPI_SOURCE);
        MPI_Datatype every_other;
        MPI_Type_vector(4, 1, 2, MPI_INT, &every_other);
        MPI_Type_commit(&every_other);
        int line[8];
        for (int i = 0; i < 8; i++) line[i] = 100 * rank + i;
        MPI_Sendrecv_replace(line, 1, every_other, peer, 14, peer, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 8; i++)
            CHECK(line[i] == (i % 2 ? 100 * rank + i : 100 * peer + i), "replace of a vector: [%d] = %d", i, line[i]);
        MPI_Type_free(&every_other);
        fill(big, BIG, rank);
        MPI_Sendrecv_replace(big, BIG, MPI_INT, peer, 15, peer, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(mismatches(big, BIG, peer) == 0, "big replace: %d wrong", mismatches(big, BIG, peer));
        int one_way = rank;
        if (even) {
            MPI_Sendrecv_replace(&one_way, 1, MPI_INT, MPI_PROC_NULL, 16, peer, 16, MPI_COMM_WORLD, &st);
            CHECK(one_way == peer && st.MPI_SOURCE == peer, "replace without a destination got %d", one_way);
        } else {
            MPI_Sendrecv_replace(&one_way, 1, MPI_INT, peer, 16, MPI_PROC_NULL, 16, MPI_COMM_WORLD, &st);
            CHECK(one_way == rank && st.MPI_SOURCE == MPI_PROC_NULL, "replace without a source changed %d",
                  one_way);
        }
        free(big);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("modes: ok\n");
    return failures ? 1 : 0;
}
