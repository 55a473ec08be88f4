/* Matched probes and receives: every rank but 0 gets from rank 0 a large
 * message (rendezvous) on tag 7, a small one on tag 5 and a strided one on
 * tag 6. It claims the large one first with MPI_Improbe, checks that
 * probes no longer see a claimed message, receives the strided one into a
 * vector type with MPI_Mrecv and the large one with MPI_Imrecv; then
 * MPI_PROC_NULL, truncation and the refusal of a used message handle.
 * Prints "mprobe: ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "check.h"

static int rank, size, failures = 0;

#define BIG (1 << 18) /* ints: 1 MiB */

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *big = malloc(BIG * sizeof(int));
    if (rank == 0) {
        for (int peer = 1; peer < size; peer++) {
            for (int i = 0; i < BIG; i++) big[i] = i ^ peer;
            int small[3] = {peer, 2 * peer, 3 * peer};
            int strided[4] = {10 + peer, 20 + peer, 30 + peer, 40 + peer};
            MPI_Request r[3];
            MPI_Isend(big, BIG, MPI_INT, peer, 7, MPI_COMM_WORLD, &r[0]);
            MPI_Isend(small, 3, MPI_INT, peer, 5, MPI_COMM_WORLD, &r[1]);
            MPI_Isend(strided, 4, MPI_INT, peer, 6, MPI_COMM_WORLD, &r[2]);
            MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
            /* One more for the truncation check. */
            MPI_Send(small, 3, MPI_INT, peer, 8, MPI_COMM_WORLD);
        }
    } else {
        MPI_Message big_msg = MPI_MESSAGE_NULL, msg = MPI_MESSAGE_NULL;
        MPI_Status st;
        int flag = 0;
        while (!flag) MPI_Improbe(0, 7, MPI_COMM_WORLD, &flag, &big_msg, &st);
        CHECK(big_msg != MPI_MESSAGE_NULL && big_msg != MPI_MESSAGE_NO_PROC, "big message handle %d", big_msg);
        int n = -1;
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 7 && n == BIG, "big probe: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, n);
        /* Claimed: no probe sees it again. */
        MPI_Iprobe(0, 7, MPI_COMM_WORLD, &flag, &st);
        CHECK(!flag, "iprobe saw a claimed message");
        MPI_Message again;
        MPI_Improbe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &flag, &again, &st);
        CHECK(!flag, "improbe claimed a message twice");

        /* The small one, by wildcard, blocking. */
        MPI_Mprobe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &msg, &st);
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 5, "small probe: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        int small[3] = {0, 0, 0};
        MPI_Mrecv(small, 3, MPI_INT, &msg, &st);
        CHECK(msg == MPI_MESSAGE_NULL, "mrecv left the handle at %d", msg);
        CHECK(small[0] == rank && small[1] == 2 * rank && small[2] == 3 * rank, "small got %d %d %d", small[0], small[1], small[2]);
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(n == 3 && st.MPI_SOURCE == 0, "small status count %d source %d", n, st.MPI_SOURCE);

        /* The strided one, into every other int. */
        MPI_Datatype every_other;
        MPI_Type_vector(4, 1, 2, MPI_INT, &every_other);
        MPI_Type_commit(&every_other);
        int spread[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
        MPI_Mprobe(0, 6, MPI_COMM_WORLD, &msg, &st);
        MPI_Mrecv(spread, 1, every_other, &msg, &st);
        for (int i = 0; i < 8; i++) {
            int want = i % 2 ? -1 : 10 * (i / 2 + 1) + rank;
            CHECK(spread[i] == want, "spread[%d] = %d, want %d", i, spread[i], want);
        }
        MPI_Type_free(&every_other);

        /* The big one, non-blocking. */
        int *got = calloc(BIG, sizeof(int));
        MPI_Request r;
        MPI_Imrecv(got, BIG, MPI_INT, &big_msg, &r);
        CHECK(big_msg == MPI_MESSAGE_NULL, "imrecv left the handle at %d", big_msg);
        MPI_Wait(&r, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(n == BIG && st.MPI_TAG == 7, "big status count %d tag %d", n, st.MPI_TAG);
        int bad = 0;
        for (int i = 0; i < BIG; i++) bad += got[i] != (i ^ rank);
        CHECK(bad == 0, "%d ints of the big message differ", bad);
        free(got);

        /* A message longer than the buffer: truncated, with the class. */
        MPI_Mprobe(0, 8, MPI_COMM_WORLD, &msg, &st);
        int two[2];
        int rc = MPI_Mrecv(two, 2, MPI_INT, &msg, &st), cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "truncated mrecv class %d", cls);

        /* A used handle, and MPI_MESSAGE_NULL, are refused. */
        msg = MPI_MESSAGE_NULL;
        rc = MPI_Mrecv(two, 2, MPI_INT, &msg, &st);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_REQUEST, "mrecv of MPI_MESSAGE_NULL: class %d", cls);
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        CHECK(len > 0, "no message for the refused mrecv");
    }

    /* MPI_PROC_NULL: a message at once, received empty. */
    MPI_Message none;
    MPI_Status st;
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &none, &st);
    CHECK(none == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "proc null probe: message %d source %d", none, st.MPI_SOURCE);
    int x = 42, n = -1;
    MPI_Mrecv(&x, 1, MPI_INT, &none, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(none == MPI_MESSAGE_NULL && n == 0 && x == 42, "proc null mrecv: message %d count %d", none, n);
    CHECK(MPI_Message_f2c(MPI_Message_c2f(none)) == none, "message fortran round trip");

    free(big);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("mprobe: ok\n");
    MPI_Finalize();
    return all != 0;
}
