/* Error paths under MPI_ERRORS_RETURN: each bad argument gives its class,
 * and MPI_Error_string says what was wrong. Prints "errors: ok". */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, failures = 0;

static void expect(const char *what, int rc, int want_class, const char *want_text) {
    int cls = -1, len = 0;
    char text[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    if (cls != want_class || strstr(text, want_text) == NULL) {
        fprintf(stderr, "rank %d: %s: class %d (want %d), text '%s' (want '%s')\n", rank, what, cls,
                want_class, text, want_text);
        failures++;
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Errhandler eh = -1;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    if (eh != MPI_ERRORS_ARE_FATAL) { fprintf(stderr, "default handler %d\n", eh); failures++; }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x[4] = {0};
    expect("bad rank", MPI_Send(x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "rank");
    expect("bad tag", MPI_Send(x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG, "tag -5");
    expect("bad count", MPI_Send(x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "count is -1");
    expect("bad type", MPI_Send(x, 1, 999, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "datatype handle 999");
    MPI_Datatype raw;
    MPI_Type_contiguous(2, MPI_INT, &raw);
    expect("uncommitted type", MPI_Send(x, 1, raw, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Type_commit");
    MPI_Type_free(&raw);
    expect("bad op", MPI_Allreduce(x, x + 1, 1, MPI_INT, 99, MPI_COMM_WORLD), MPI_ERR_OP, "operation handle 99");
    expect("op on a type it does not take", MPI_Allreduce(x, x + 1, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_TYPE, "MPI_LONG_DOUBLE");
    expect("bad root", MPI_Bcast(x, 1, MPI_INT, -4, MPI_COMM_WORLD), MPI_ERR_ROOT, "root -4");
    expect("null comm", MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, "MPI_COMM_NULL");
    expect("free world", MPI_Comm_free(&(MPI_Comm){MPI_COMM_WORLD}), MPI_ERR_COMM, "cannot be freed");
    expect("null request wait", MPI_Wait(NULL, MPI_STATUS_IGNORE), MPI_ERR_ARG, "null pointer");
    /* MPI_Irecv leaves its common path for each of these, and the full
     * checks report it; nothing is posted. */
    MPI_Request ir = MPI_REQUEST_NULL;
    expect("irecv bad rank", MPI_Irecv(x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD, &ir), MPI_ERR_RANK,
           "rank");
    expect("irecv negative rank", MPI_Irecv(x, 1, MPI_INT, -7, 0, MPI_COMM_WORLD, &ir), MPI_ERR_RANK,
           "rank -7");
    expect("irecv bad tag", MPI_Irecv(x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &ir), MPI_ERR_TAG, "tag -5");
    expect("irecv bad count", MPI_Irecv(x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, &ir), MPI_ERR_COUNT,
           "count is -1");
    expect("irecv bad type", MPI_Irecv(x, 1, 999, 0, 0, MPI_COMM_WORLD, &ir), MPI_ERR_TYPE,
           "datatype handle 999");
    expect("irecv null comm", MPI_Irecv(x, 1, MPI_INT, 0, 0, MPI_COMM_NULL, &ir), MPI_ERR_COMM,
           "MPI_COMM_NULL");
    expect("irecv null request", MPI_Irecv(x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG,
           "null pointer");
    expect("irecv null buffer", MPI_Irecv(NULL, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &ir), MPI_ERR_BUFFER,
           "null pointer, but the message has 4 bytes");
    if (ir != MPI_REQUEST_NULL) { fprintf(stderr, "rank %d: a refused MPI_Irecv set its request\n", rank); failures++; }
    /* A call that cannot hand out its request starts nothing. */
    expect("isend null request", MPI_Isend(x, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG,
           "null pointer");
    expect("ibsend null request", MPI_Ibsend(x, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG,
           "null pointer");
    /* MPI_Send and MPI_Ssend leave their common path for each of these,
     * and the full checks report it; nothing is sent. */
    expect("send negative rank", MPI_Send(x, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "rank -7");
    expect("send null comm", MPI_Send(x, 1, MPI_INT, rank, 0, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_COMM_NULL");
    expect("send null buffer", MPI_Send(NULL, 1, MPI_INT, rank, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER,
           "null pointer, but the message has 4 bytes");
    expect("recv null buffer", MPI_Recv(NULL, 2, MPI_INT, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_BUFFER,
           "8 bytes");
    expect("send of nothing from a null buffer", MPI_Send(NULL, 0, MPI_INT, rank, 5, MPI_COMM_WORLD), MPI_SUCCESS, "");
    MPI_Recv(NULL, 0, MPI_INT, rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    expect("ssend bad rank", MPI_Ssend(x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "rank");
    expect("ssend bad tag", MPI_Ssend(x, 1, MPI_INT, rank, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG, "tag");
    expect("send to MPI_PROC_NULL", MPI_Send(x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD), MPI_SUCCESS, "");
    /* An exchange with a bad half starts neither half (the receive of
     * the good half would wait for ever). */
    expect("sendrecv bad dest", MPI_Sendrecv(x, 1, MPI_INT, size + 5, 0, x + 1, 1, MPI_INT, rank, 0, MPI_COMM_WORLD,
                                             MPI_STATUS_IGNORE), MPI_ERR_RANK, "destination rank");
    expect("sendrecv bad source", MPI_Sendrecv(x, 1, MPI_INT, rank, 0, x + 1, 1, MPI_INT, -7, 0, MPI_COMM_WORLD,
                                               MPI_STATUS_IGNORE), MPI_ERR_RANK, "source rank -7");
    expect("sendrecv_replace bad tag", MPI_Sendrecv_replace(x, 1, MPI_INT, rank, -3, rank, 0, MPI_COMM_WORLD,
                                                            MPI_STATUS_IGNORE), MPI_ERR_TAG, "tag -3");
    expect("sendrecv_replace bad source", MPI_Sendrecv_replace(x, 1, MPI_INT, rank, 0, size, 0, MPI_COMM_WORLD,
                                                               MPI_STATUS_IGNORE), MPI_ERR_RANK, "source rank");
    int waiting = 1;
    MPI_Iprobe(rank, 0, MPI_COMM_WORLD, &waiting, MPI_STATUS_IGNORE);
    if (waiting) { fprintf(stderr, "rank %d: a refused MPI_Isend or MPI_Send sent its message\n", rank); failures++; }
    /* Nothing was posted: a message to this rank with tag 0 is still
     * waiting after them, and the receive that takes it is the only one. */
    MPI_Send(x, 1, MPI_INT, rank, 0, MPI_COMM_WORLD);
    waiting = 0;
    MPI_Iprobe(rank, 0, MPI_COMM_WORLD, &waiting, MPI_STATUS_IGNORE);
    if (!waiting) { fprintf(stderr, "rank %d: a refused MPI_Irecv took a message\n", rank); failures++; }
    MPI_Recv(x, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Request bogus = 12345;
    expect("unknown request", MPI_Wait(&bogus, MPI_STATUS_IGNORE), MPI_ERR_REQUEST, "not an active request");
    /* Truncation: rank 1 sends 4 ints, rank 0 receives room for 2 (the
     * status still says where the message came from and what was kept),
     * then the same through MPI_Irecv and MPI_Wait, whose handle is
     * released. */
    if (rank == 1) {
        MPI_Send(x, 4, MPI_INT, 0, 9, MPI_COMM_WORLD);
        MPI_Send(x, 4, MPI_INT, 0, 10, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        MPI_Status st;
        int n = -1;
        expect("truncate", MPI_Recv(x, 2, MPI_INT, 1, 9, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE, "");
        MPI_Get_count(&st, MPI_INT, &n);
        if (st.MPI_SOURCE != 1 || st.MPI_TAG != 9 || n != 2) {
            fprintf(stderr, "truncated recv status: source %d tag %d count %d\n", st.MPI_SOURCE, st.MPI_TAG, n);
            failures++;
        }
        MPI_Request r;
        MPI_Irecv(x, 2, MPI_INT, 1, 10, MPI_COMM_WORLD, &r);
        expect("truncate in wait", MPI_Wait(&r, &st), MPI_ERR_TRUNCATE, "");
        if (st.MPI_SOURCE != 1 || st.MPI_TAG != 10 || r != MPI_REQUEST_NULL) {
            fprintf(stderr, "truncated wait: source %d tag %d handle %d\n", st.MPI_SOURCE, st.MPI_TAG, r);
            failures++;
        }
    }
    /* A pack buffer too small. */
    char small[4];
    int pos = 0;
    expect("pack", MPI_Pack(x, 2, MPI_INT, small, 4, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, "8 bytes");
    int len;
    char text[MPI_MAX_ERROR_STRING];
    MPI_Error_string(MPI_ERR_TAG, text, &len);
    if (strcmp(text, "MPI_ERR_TAG: invalid tag") != 0) { fprintf(stderr, "class string '%s'\n", text); failures++; }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("errors: ok\n");
    return failures ? 1 : 0;
}
