/* Requests from several threads at once, at MPI_THREAD_MULTIPLE: each of
 * four threads exchanges messages with the same thread of the partner
 * rank (rank ^ 1) on a tag of its own, many times, through MPI_Isend and
 * MPI_Irecv completed by MPI_Wait, an MPI_Test loop and MPI_Waitall, or
 * with the send's request freed, and checks every value it receives. The
 * threads share the process's request table; a request one thread makes
 * must stay exactly what it was while the others make and complete
 * theirs. Run on an even number of ranks. Prints "threads: ok". */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "check.h"

#define THREADS 4
#define ROUNDS 2000

static int rank, size, failures = 0;
static pthread_mutex_t failures_lock = PTHREAD_MUTEX_INITIALIZER;
/* What each round sends: untouched after, as a freed send needs. */
static int sent[THREADS][ROUNDS][2];

static void *exchange(void *arg) {
    int t = (int)(long)arg, peer = rank ^ 1, bad = 0;
    int main_thread = -1, level = -1;
    MPI_Is_thread_main(&main_thread);
    MPI_Query_thread(&level);
    if (main_thread != 0 || level != MPI_THREAD_MULTIPLE) {
        pthread_mutex_lock(&failures_lock);
        CHECK(0, "thread %d: is main %d, level %d", t, main_thread, level);
        pthread_mutex_unlock(&failures_lock);
    }
    for (int i = 0; i < ROUNDS && bad < 5; i++) {
        int *out = sent[t][i], in[2] = {-1, -1};
        out[0] = rank * 1000000 + t * 10000 + i;
        out[1] = i;
        MPI_Request r[2];
        MPI_Irecv(in, 2, MPI_INT, peer, t, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out, 2, MPI_INT, peer, t, MPI_COMM_WORLD, &r[1]);
        switch (i % 4) {
        case 0:
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
            break;
        case 1:
            MPI_Wait(&r[1], MPI_STATUS_IGNORE);
            MPI_Wait(&r[0], MPI_STATUS_IGNORE);
            break;
        case 2: {
            int done = 0;
            while (!done) MPI_Test(&r[0], &done, MPI_STATUS_IGNORE);
            MPI_Wait(&r[1], MPI_STATUS_IGNORE);
            break;
        }
        default: {
            /* The send's request freed at once (its buffer is never
             * written again), the receive's status checked. */
            MPI_Status st;
            MPI_Request_free(&r[1]);
            MPI_Wait(&r[0], &st);
            if (st.MPI_SOURCE != peer || st.MPI_TAG != t) bad++;
            break;
        }
        }
        if (r[0] != MPI_REQUEST_NULL || r[1] != MPI_REQUEST_NULL) bad++;
        if (in[0] != peer * 1000000 + t * 10000 + i || in[1] != i) {
            pthread_mutex_lock(&failures_lock);
            CHECK(0, "thread %d round %d: got %d %d", t, i, in[0], in[1]);
            pthread_mutex_unlock(&failures_lock);
            bad++;
        }
    }
    if (bad) {
        pthread_mutex_lock(&failures_lock);
        CHECK(0, "thread %d: %d bad rounds", t, bad);
        pthread_mutex_unlock(&failures_lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    int main_thread = 0, level = -1;
    MPI_Is_thread_main(&main_thread);
    MPI_Query_thread(&level);
    CHECK(main_thread == 1 && level == MPI_THREAD_MULTIPLE, "initializing thread: is main %d, level %d", main_thread,
          level);
    CHECK(size % 2 == 0, "run on an even number of ranks, not %d", size);
    if (size % 2 == 0) {
        pthread_t th[THREADS];
        for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, exchange, (void *)t);
        for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
        /* The initializing thread still uses the table after the others. */
        int one = 1, sum = 0;
        MPI_Request r;
        MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(sum == size, "iallreduce after the threads: %d", sum);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("threads: ok\n");
    return failures ? 1 : 0;
}
