/* Requests beyond wait: persistent sends and receives started again and
 * again, startall, testany, testsome, waitsome, request_get_status,
 * buffered sends within the attached buffer's budget and one past it,
 * ready sends; sends to oneself, complete as they start, through every
 * completion call; receives from oneself looked at without releasing
 * them, freed, cancelled, and their handles (and a made-up one) used
 * again after release; a waitall over a mixed array with a truncation
 * in it.
 * Ranks pair up (0-1, 2-3, ...); prints "requests: ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "check.h"

static int rank, size, failures = 0;

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    if (peer < size) {
        /* Persistent exchange, five rounds through the same requests. */
        int out = 0, in = -1;
        MPI_Request r[2];
        MPI_Recv_init(&in, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &r[0]);
        MPI_Send_init(&out, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &r[1]);
        for (int round = 0; round < 5; round++) {
            out = 100 * rank + round;
            MPI_Startall(2, r);
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
            CHECK(in == 100 * peer + round, "round %d got %d", round, in);
            CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL, "persistent handles were reset");
        }
        /* Waiting on an inactive persistent request returns at once. */
        MPI_Status st;
        MPI_Wait(&r[0], &st);
        CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG, "inactive wait status %d", st.MPI_SOURCE);
        /* A restart of an active one is refused. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Start(&r[0]);
        int cls = -1, rc = MPI_Start(&r[0]);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_REQUEST, "second start class %d", cls);
        MPI_Start(&r[1]);
        int flag = 0;
        while (!flag) MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
        MPI_Request_free(&r[0]);
        MPI_Request_free(&r[1]);
        CHECK(r[0] == MPI_REQUEST_NULL, "free did not reset");

        /* Several receives, completed with testany, testsome, waitsome. */
        int vals[4] = {-1, -1, -1, -1};
        MPI_Request rr[4];
        for (int i = 0; i < 4; i++) MPI_Irecv(&vals[i], 1, MPI_INT, peer, 10 + i, MPI_COMM_WORLD, &rr[i]);
        for (int i = 3; i >= 0; i--) { int v = rank * 10 + i; MPI_Send(&v, 1, MPI_INT, peer, 10 + i, MPI_COMM_WORLD); }
        int done = 0, idx, outcount, indices[4];
        MPI_Status sts[4];
        flag = 0;
        while (!flag) MPI_Testany(4, rr, &idx, &flag, &st);
        CHECK(idx >= 0 && idx < 4 && rr[idx] == MPI_REQUEST_NULL && vals[idx] == peer * 10 + idx, "testany %d", idx);
        done++;
        MPI_Request_get_status(rr[(idx + 1) % 4], &flag, &st);
        while (done < 4) {
            MPI_Waitsome(4, rr, &outcount, indices, sts);
            for (int k = 0; k < outcount; k++) {
                int i = indices[k];
                CHECK(vals[i] == peer * 10 + i && sts[k].MPI_TAG == 10 + i, "waitsome %d got %d", i, vals[i]);
            }
            done += outcount;
        }
        MPI_Testsome(4, rr, &outcount, indices, sts);
        CHECK(outcount == MPI_UNDEFINED, "testsome of nulls %d", outcount);

        /* Buffered sends within the attached budget; one too many. */
        int need;
        MPI_Pack_size(100, MPI_INT, MPI_COMM_WORLD, &need);
        int bufsize = 2 * (need + MPI_BSEND_OVERHEAD);
        char *attached = malloc(bufsize);
        MPI_Buffer_attach(attached, bufsize);
        int big[100];
        for (int i = 0; i < 100; i++) big[i] = rank + i;
        if (rank % 2 == 0) {
            MPI_Bsend(big, 100, MPI_INT, peer, 20, MPI_COMM_WORLD);
            MPI_Request ib;
            MPI_Ibsend(big, 100, MPI_INT, peer, 21, MPI_COMM_WORLD, &ib);
            MPI_Wait(&ib, MPI_STATUS_IGNORE);
            /* More than the whole budget is refused. */
            static int huge[1000];
            rc = MPI_Bsend(huge, 1000, MPI_INT, peer, 22, MPI_COMM_WORLD);
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_BUFFER, "oversized bsend class %d", cls);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank % 2 == 1) {
            int got[100];
            MPI_Recv(got, 100, MPI_INT, peer, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(got[99] == peer + 99, "bsend got %d", got[99]);
            MPI_Recv(got, 100, MPI_INT, peer, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(got[0] == peer, "ibsend got %d", got[0]);
        }
        void *back;
        int backsize;
        MPI_Buffer_detach(&back, &backsize);
        CHECK(back == attached && backsize == bufsize, "detach gave %p %d", back, backsize);
        free(attached);

        /* A ready send to a posted receive. */
        int rv = -1, sv = rank;
        MPI_Request pre;
        MPI_Irecv(&rv, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &pre);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Rsend(&sv, 1, MPI_INT, peer, 30, MPI_COMM_WORLD);
        MPI_Wait(&pre, MPI_STATUS_IGNORE);
        CHECK(rv == peer, "rsend got %d", rv);
    } else {
        /* An odd one out joins the barriers. */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* Sends to oneself complete as they start: every completion call and
     * MPI_Request_free take their handles, MPI_Start refuses them (calls
     * on requests report through MPI_COMM_WORLD's handler). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int one = 1, two = 2, three = 3, got[3] = {0, 0, 0}, flag = 0, index = -1;
    MPI_Request s1, s2, s3, pair[2];
    MPI_Status st;
    MPI_Isend(&one, 1, MPI_INT, 0, 1, MPI_COMM_SELF, &s1);
    MPI_Isend(&two, 1, MPI_INT, 0, 2, MPI_COMM_SELF, &s2);
    MPI_Isend(&three, 1, MPI_INT, 0, 3, MPI_COMM_SELF, &s3);
    CHECK(s1 != MPI_REQUEST_NULL && s2 != MPI_REQUEST_NULL, "a started send is MPI_REQUEST_NULL");
    MPI_Request_get_status(s1, &flag, &st);
    CHECK(flag && s1 != MPI_REQUEST_NULL, "get_status: flag %d", flag);
    int cls = -1, rc = MPI_Start(&s1);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "start of a one-shot send: class %d", cls);
    CHECK(MPI_Cancel(&s1) == MPI_SUCCESS, "cancel of a complete send");
    MPI_Test(&s1, &flag, &st);
    CHECK(flag && s1 == MPI_REQUEST_NULL, "test: flag %d", flag);
    int cancelled = 1;
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(!cancelled, "a complete send reads cancelled");
    MPI_Request_free(&s2);
    CHECK(s2 == MPI_REQUEST_NULL, "request_free left %d", s2);
    pair[0] = MPI_REQUEST_NULL;
    pair[1] = s3;
    MPI_Waitany(2, pair, &index, &st);
    CHECK(index == 1 && pair[1] == MPI_REQUEST_NULL, "waitany: index %d", index);
    for (int t = 1; t <= 3; t++) MPI_Recv(&got[t - 1], 1, MPI_INT, 0, t, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3, "self got %d %d %d", got[0], got[1], got[2]);

    /* Receives from oneself, straight into the buffer: testall leaves a
     * complete one in place while another is pending, get_status looks
     * without releasing, a pending receive cannot be freed and a complete
     * one can, a cancelled one says so, and a handle already released is
     * refused. */
    int a = -1, b = -1, c = -1, five = 5, six = 6;
    MPI_Request rq[2], kept, copy;
    MPI_Status both[2];
    MPI_Irecv(&a, 1, MPI_INT, 0, 40, MPI_COMM_SELF, &rq[0]);
    MPI_Irecv(&b, 1, MPI_INT, 0, 41, MPI_COMM_SELF, &rq[1]);
    MPI_Send(&five, 1, MPI_INT, 0, 40, MPI_COMM_SELF);
    flag = 1;
    MPI_Testall(2, rq, &flag, MPI_STATUSES_IGNORE);
    CHECK(!flag && rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL, "testall with one pending: flag %d", flag);
    flag = 0;
    MPI_Request_get_status(rq[0], &flag, &st);
    CHECK(flag && st.MPI_TAG == 40 && rq[0] != MPI_REQUEST_NULL, "get_status of a complete receive: flag %d tag %d", flag, st.MPI_TAG);
    MPI_Request_get_status(rq[1], &flag, &st);
    CHECK(!flag, "get_status of a pending receive: flag %d", flag);
    kept = rq[1];
    rc = MPI_Request_free(&kept);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST && kept == rq[1], "free of a pending receive: class %d", cls);
    MPI_Send(&six, 1, MPI_INT, 0, 41, MPI_COMM_SELF);
    MPI_Waitall(2, rq, both);
    CHECK(a == 5 && b == 6 && both[0].MPI_TAG == 40 && both[1].MPI_TAG == 41, "waitall got %d %d, tags %d %d", a, b, both[0].MPI_TAG, both[1].MPI_TAG);
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "waitall left %d %d", rq[0], rq[1]);
    /* Complete as it starts (the message came first). */
    MPI_Send(&six, 1, MPI_INT, 0, 43, MPI_COMM_SELF);
    MPI_Irecv(&c, 1, MPI_INT, 0, 43, MPI_COMM_SELF, &kept);
    CHECK(kept != MPI_REQUEST_NULL, "a receive complete at its start is MPI_REQUEST_NULL");
    flag = 0;
    MPI_Request_get_status(kept, &flag, &st);
    CHECK(flag && st.MPI_TAG == 43 && c == 6, "get_status of a receive complete at its start: flag %d tag %d", flag, st.MPI_TAG);
    copy = kept;
    CHECK(MPI_Request_free(&kept) == MPI_SUCCESS && kept == MPI_REQUEST_NULL, "free of a complete receive");
    rc = MPI_Wait(&copy, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "wait of a freed receive: class %d", cls);
    MPI_Irecv(&c, 1, MPI_INT, 0, 44, MPI_COMM_SELF, &kept);
    copy = kept;
    MPI_Send(&five, 1, MPI_INT, 0, 44, MPI_COMM_SELF);
    MPI_Wait(&kept, &st);
    CHECK(c == 5 && st.MPI_TAG == 44 && kept == MPI_REQUEST_NULL, "wait got %d tag %d", c, st.MPI_TAG);
    rc = MPI_Test(&copy, &flag, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "test of a released receive: class %d", cls);
    rc = MPI_Cancel(&copy);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "cancel of a released receive: class %d", cls);
    /* A handle no request ever had, in the range of the plain ones. */
    MPI_Request forged = -2000001;
    rc = MPI_Wait(&forged, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "wait of a made-up handle: class %d", cls);
    rc = MPI_Cancel(&forged);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "cancel of a made-up handle: class %d", cls);
    MPI_Irecv(&c, 1, MPI_INT, 0, 45, MPI_COMM_SELF, &kept);
    CHECK(MPI_Cancel(&kept) == MPI_SUCCESS, "cancel of a pending receive");
    MPI_Wait(&kept, &st);
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(cancelled && kept == MPI_REQUEST_NULL, "a cancelled receive reads cancelled %d", cancelled);

    /* Waitall over a mixed array whose receives completed before it:
     * plain receives (one complete at its start), a null handle, a
     * receive of a derived type, a truncated receive between them and a
     * send. Each status lands at its own index, every handle is nulled,
     * and the truncation is reported in its status alone. */
    {
        int v[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, strided[3] = {-1, -1, -1};
        int two[2] = {7, 8}, one = -1, out = 9, pre = 3, msg[4] = {50, 51, 52, 54};
        MPI_Datatype every_other;
        MPI_Type_vector(2, 1, 2, MPI_INT, &every_other);
        MPI_Type_commit(&every_other);
        MPI_Request m[8];
        MPI_Status ms[8];
        MPI_Send(&pre, 1, MPI_INT, 0, 55, MPI_COMM_SELF);
        MPI_Irecv(&v[0], 1, MPI_INT, 0, 50, MPI_COMM_SELF, &m[0]);
        MPI_Irecv(&v[1], 1, MPI_INT, 0, 51, MPI_COMM_SELF, &m[1]);
        m[2] = MPI_REQUEST_NULL;
        MPI_Irecv(strided, 1, every_other, 0, 52, MPI_COMM_SELF, &m[3]);
        MPI_Irecv(&one, 1, MPI_INT, 0, 53, MPI_COMM_SELF, &m[4]);
        MPI_Irecv(&v[5], 1, MPI_INT, 0, 54, MPI_COMM_SELF, &m[5]);
        MPI_Irecv(&v[6], 1, MPI_INT, 0, 55, MPI_COMM_SELF, &m[6]);
        MPI_Isend(&out, 1, MPI_INT, 0, 56, MPI_COMM_SELF, &m[7]);
        MPI_Send(&msg[0], 1, MPI_INT, 0, 50, MPI_COMM_SELF);
        MPI_Send(&msg[1], 1, MPI_INT, 0, 51, MPI_COMM_SELF);
        MPI_Send(two, 2, MPI_INT, 0, 52, MPI_COMM_SELF);
        MPI_Send(two, 2, MPI_INT, 0, 53, MPI_COMM_SELF);
        MPI_Send(&msg[3], 1, MPI_INT, 0, 54, MPI_COMM_SELF);
        rc = MPI_Waitall(8, m, ms);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_IN_STATUS, "waitall with a truncation: class %d", cls);
        for (int i = 0; i < 8; i++) CHECK(m[i] == MPI_REQUEST_NULL, "waitall left handle %d as %d", i, m[i]);
        int tags[8] = {50, 51, MPI_ANY_TAG, 52, 53, 54, 55, -1};
        for (int i = 0; i < 8; i++) {
            if (i == 7) continue; /* a send's tag is not defined */
            CHECK(ms[i].MPI_TAG == tags[i], "waitall status %d: tag %d", i, ms[i].MPI_TAG);
            int ecls = -1;
            MPI_Error_class(ms[i].MPI_ERROR, &ecls);
            CHECK(ecls == (i == 4 ? MPI_ERR_TRUNCATE : MPI_SUCCESS), "waitall status %d: error class %d", i, ecls);
        }
        int n = -1;
        MPI_Get_count(&ms[5], MPI_INT, &n);
        CHECK(n == 1 && ms[5].MPI_SOURCE == 0, "waitall status 5: count %d source %d", n, ms[5].MPI_SOURCE);
        CHECK(ms[2].MPI_SOURCE == MPI_ANY_SOURCE, "the null handle's status: source %d", ms[2].MPI_SOURCE);
        CHECK(v[0] == 50 && v[1] == 51 && v[5] == 54 && v[6] == 3, "waitall got %d %d %d %d", v[0], v[1], v[5], v[6]);
        CHECK(strided[0] == 7 && strided[1] == -1 && strided[2] == 8, "the strided receive got %d %d %d", strided[0], strided[1], strided[2]);
        MPI_Type_free(&every_other);
    }

    /* Waitany, Testany, Waitsome and Testsome complete a request that
     * failed like any other: its index, its status (source, tag and the
     * count kept), its handle nulled. The single ones answer its error;
     * the others MPI_ERR_IN_STATUS, each status's MPI_ERROR saying which
     * failed. A pending receive in the array is left as it is. */
    {
        int small = -1, big[2] = {60, 61}, fine = -1, val = 62, other = -1;
        int idx = -5, flag = 0, outc = -1, ind[3] = {-1, -1, -1}, n = -1, ecls = -1;
        MPI_Request q[3];
        MPI_Status qs[3];
        MPI_Irecv(&other, 1, MPI_INT, 0, 69, MPI_COMM_SELF, &q[0]);
        MPI_Request pending = q[0];
        MPI_Irecv(&small, 1, MPI_INT, 0, 60, MPI_COMM_SELF, &q[1]);
        MPI_Send(big, 2, MPI_INT, 0, 60, MPI_COMM_SELF);
        rc = MPI_Waitany(2, q, &idx, &qs[0]);
        MPI_Error_class(rc, &cls);
        MPI_Get_count(&qs[0], MPI_INT, &n);
        CHECK(cls == MPI_ERR_TRUNCATE && idx == 1 && q[1] == MPI_REQUEST_NULL,
              "waitany of a truncation: class %d index %d handle %d", cls, idx, q[1]);
        CHECK(qs[0].MPI_SOURCE == 0 && qs[0].MPI_TAG == 60 && n == 1 && small == 60,
              "waitany's truncated status: source %d tag %d count %d value %d", qs[0].MPI_SOURCE,
              qs[0].MPI_TAG, n, small);

        MPI_Irecv(&small, 1, MPI_INT, 0, 61, MPI_COMM_SELF, &q[1]);
        MPI_Send(big, 2, MPI_INT, 0, 61, MPI_COMM_SELF);
        rc = MPI_Testany(2, q, &idx, &flag, &qs[0]);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE && flag == 1 && idx == 1 && q[1] == MPI_REQUEST_NULL,
              "testany of a truncation: class %d flag %d index %d handle %d", cls, flag, idx, q[1]);
        CHECK(qs[0].MPI_TAG == 61, "testany's truncated status: tag %d", qs[0].MPI_TAG);

        MPI_Irecv(&fine, 1, MPI_INT, 0, 63, MPI_COMM_SELF, &q[1]);
        MPI_Irecv(&small, 1, MPI_INT, 0, 64, MPI_COMM_SELF, &q[2]);
        MPI_Send(&val, 1, MPI_INT, 0, 63, MPI_COMM_SELF);
        MPI_Send(big, 2, MPI_INT, 0, 64, MPI_COMM_SELF);
        rc = MPI_Waitsome(3, q, &outc, ind, qs);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_IN_STATUS && outc == 2 && ind[0] == 1 && ind[1] == 2,
              "waitsome with a truncation: class %d outcount %d indices %d %d", cls, outc, ind[0], ind[1]);
        CHECK(q[0] == pending && q[1] == MPI_REQUEST_NULL && q[2] == MPI_REQUEST_NULL,
              "waitsome's handles: %d %d %d", q[0], q[1], q[2]);
        MPI_Error_class(qs[0].MPI_ERROR, &ecls);
        CHECK(ecls == MPI_SUCCESS && qs[0].MPI_TAG == 63 && fine == 62,
              "waitsome's good status: class %d tag %d value %d", ecls, qs[0].MPI_TAG, fine);
        MPI_Error_class(qs[1].MPI_ERROR, &ecls);
        CHECK(ecls == MPI_ERR_TRUNCATE && qs[1].MPI_TAG == 64,
              "waitsome's truncated status: class %d tag %d", ecls, qs[1].MPI_TAG);

        MPI_Irecv(&small, 1, MPI_INT, 0, 65, MPI_COMM_SELF, &q[1]);
        MPI_Send(big, 2, MPI_INT, 0, 65, MPI_COMM_SELF);
        rc = MPI_Testsome(2, q, &outc, ind, qs);
        MPI_Error_class(rc, &cls);
        MPI_Error_class(qs[0].MPI_ERROR, &ecls);
        CHECK(cls == MPI_ERR_IN_STATUS && outc == 1 && ind[0] == 1 && ecls == MPI_ERR_TRUNCATE &&
                  qs[0].MPI_TAG == 65 && q[1] == MPI_REQUEST_NULL,
              "testsome with a truncation: class %d outcount %d index %d status class %d tag %d",
              cls, outc, ind[0], ecls, qs[0].MPI_TAG);

        MPI_Send(&val, 1, MPI_INT, 0, 69, MPI_COMM_SELF);
        rc = MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS && other == 62 && q[0] == MPI_REQUEST_NULL,
              "the receive left pending: rc %d value %d", rc, other);
    }

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("requests: ok\n");
    return failures ? 1 : 0;
}
