/* Every function of a feature oxmpi does not have yet (one-sided
 * communication, MPI-IO, dynamic processes) links, calls the error
 * handler of MPI_COMM_WORLD, and fails with
 * MPI_ERR_UNSUPPORTED_OPERATION and a message naming the call and the
 * feature; nothing is written to its output arguments. The Fortran
 * conversions of windows and files are the identity. Prints
 * "unsupported: ok". */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static int rank, failures = 0, handled = 0, last_code = MPI_SUCCESS;

static void count_handler(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    handled++;
    last_code = *code;
}

/* Checks the code `rc` of calling `name`, which belongs to `feature`. */
static void expect(const char *name, int rc, const char *feature) {
    static int calls = 0;
    calls++;
    int cls = -1, len = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "%s: class %d", name, cls);
    CHECK(strstr(text, name) != NULL && strstr(text, feature) != NULL, "%s: message '%s'", name, text);
    CHECK(handled == calls && last_code == rc, "%s: handler called %d times for %d calls, code %d", name,
          handled, calls, last_code);
}

#define ONE_SIDED "one-sided"
#define IO "MPI-IO"
#define DYNAMIC "dynamic processes"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(count_handler, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);

    int x[4] = {1, 2, 3, 4}, y[4] = {0}, z[4] = {0}, disp = -1;
    MPI_Aint size = -1;
    void *base = NULL;
    MPI_Win win = MPI_WIN_NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);

    expect("MPI_Win_create", MPI_Win_create(x, sizeof x, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win), ONE_SIDED);
    expect("MPI_Win_allocate", MPI_Win_allocate(16, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win), ONE_SIDED);
    expect("MPI_Win_allocate_shared", MPI_Win_allocate_shared(16, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win),
           ONE_SIDED);
    expect("MPI_Win_create_dynamic", MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win), ONE_SIDED);
    CHECK(win == MPI_WIN_NULL && base == NULL, "a window was handed out: %d %p", win, base);
    expect("MPI_Win_shared_query", MPI_Win_shared_query(win, 0, &size, &disp, &base), ONE_SIDED);
    CHECK(size == -1 && disp == -1, "shared_query wrote %ld %d", (long)size, disp);
    expect("MPI_Win_attach", MPI_Win_attach(win, x, sizeof x), ONE_SIDED);
    expect("MPI_Win_detach", MPI_Win_detach(win, x), ONE_SIDED);
    expect("MPI_Win_fence", MPI_Win_fence(0, win), ONE_SIDED);
    expect("MPI_Win_lock", MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win), ONE_SIDED);
    expect("MPI_Win_unlock", MPI_Win_unlock(0, win), ONE_SIDED);
    expect("MPI_Win_lock_all", MPI_Win_lock_all(0, win), ONE_SIDED);
    expect("MPI_Win_unlock_all", MPI_Win_unlock_all(win), ONE_SIDED);
    expect("MPI_Win_flush", MPI_Win_flush(0, win), ONE_SIDED);
    expect("MPI_Win_flush_all", MPI_Win_flush_all(win), ONE_SIDED);
    expect("MPI_Win_flush_local", MPI_Win_flush_local(0, win), ONE_SIDED);
    expect("MPI_Win_flush_local_all", MPI_Win_flush_local_all(win), ONE_SIDED);
    expect("MPI_Win_sync", MPI_Win_sync(win), ONE_SIDED);
    expect("MPI_Win_post", MPI_Win_post(world, 0, win), ONE_SIDED);
    expect("MPI_Win_start", MPI_Win_start(world, 0, win), ONE_SIDED);
    expect("MPI_Win_complete", MPI_Win_complete(win), ONE_SIDED);
    expect("MPI_Win_wait", MPI_Win_wait(win), ONE_SIDED);
    expect("MPI_Put", MPI_Put(x, 1, MPI_INT, 0, 0, 1, MPI_INT, win), ONE_SIDED);
    expect("MPI_Get", MPI_Get(y, 1, MPI_INT, 0, 0, 1, MPI_INT, win), ONE_SIDED);
    expect("MPI_Rput", MPI_Rput(x, 1, MPI_INT, 0, 0, 1, MPI_INT, win, &req), ONE_SIDED);
    expect("MPI_Rget", MPI_Rget(y, 1, MPI_INT, 0, 0, 1, MPI_INT, win, &req), ONE_SIDED);
    CHECK(req == MPI_REQUEST_NULL, "a request was handed out: %d", req);
    expect("MPI_Accumulate", MPI_Accumulate(x, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win), ONE_SIDED);
    expect("MPI_Get_accumulate",
           MPI_Get_accumulate(x, 1, MPI_INT, y, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win), ONE_SIDED);
    expect("MPI_Fetch_and_op", MPI_Fetch_and_op(x, y, MPI_INT, 0, 0, MPI_SUM, win), ONE_SIDED);
    expect("MPI_Compare_and_swap", MPI_Compare_and_swap(x, y, z, MPI_INT, 0, 0, win), ONE_SIDED);
    CHECK(y[0] == 0 && z[0] == 0, "one-sided calls wrote %d %d", y[0], z[0]);
    expect("MPI_Win_free", MPI_Win_free(&win), ONE_SIDED);

    MPI_File fh = MPI_FILE_NULL;
    MPI_Status st;
    MPI_Offset fsize = -1;
    expect("MPI_File_open",
           MPI_File_open(MPI_COMM_WORLD, "oxmpi-unsupported.dat", MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh),
           IO);
    CHECK(fh == MPI_FILE_NULL, "a file was handed out: %d", fh);
    expect("MPI_File_set_view", MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), IO);
    expect("MPI_File_read", MPI_File_read(fh, y, 1, MPI_INT, &st), IO);
    expect("MPI_File_read_at", MPI_File_read_at(fh, 0, y, 1, MPI_INT, &st), IO);
    expect("MPI_File_read_all", MPI_File_read_all(fh, y, 1, MPI_INT, &st), IO);
    expect("MPI_File_write", MPI_File_write(fh, x, 1, MPI_INT, &st), IO);
    expect("MPI_File_write_at", MPI_File_write_at(fh, 0, x, 1, MPI_INT, &st), IO);
    expect("MPI_File_write_all", MPI_File_write_all(fh, x, 1, MPI_INT, &st), IO);
    expect("MPI_File_get_size", MPI_File_get_size(fh, &fsize), IO);
    CHECK(fsize == -1 && y[0] == 0, "MPI-IO calls wrote %lld %d", fsize, y[0]);
    expect("MPI_File_seek", MPI_File_seek(fh, 0, MPI_SEEK_SET), IO);
    expect("MPI_File_sync", MPI_File_sync(fh), IO);
    expect("MPI_File_close", MPI_File_close(&fh), IO);
    expect("MPI_File_delete", MPI_File_delete("oxmpi-unsupported.dat", MPI_INFO_NULL), IO);
    FILE *made = fopen("oxmpi-unsupported.dat", "r");
    CHECK(made == NULL, "MPI_File_open made the file");
    if (made) fclose(made);

    MPI_Comm inter = MPI_COMM_NULL;
    char port[MPI_MAX_PORT_NAME] = "";
    int errcodes[1] = {-1};
    expect("MPI_Comm_spawn",
           MPI_Comm_spawn("true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errcodes), DYNAMIC);
    expect("MPI_Open_port", MPI_Open_port(MPI_INFO_NULL, port), DYNAMIC);
    CHECK(inter == MPI_COMM_NULL && port[0] == '\0' && errcodes[0] == -1, "dynamic calls wrote their outputs");
    expect("MPI_Close_port", MPI_Close_port(port), DYNAMIC);
    expect("MPI_Comm_accept", MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter), DYNAMIC);
    expect("MPI_Comm_connect", MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter), DYNAMIC);
    expect("MPI_Comm_disconnect", MPI_Comm_disconnect(&inter), DYNAMIC);

    CHECK(MPI_Win_f2c(MPI_Win_c2f(7)) == 7 && MPI_File_f2c(MPI_File_c2f(9)) == 9 &&
              MPI_Win_f2c(MPI_Win_c2f(MPI_WIN_NULL)) == MPI_WIN_NULL,
          "window and file conversions");

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&eh);
    MPI_Group_free(&world);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("unsupported: ok\n");
    return failures ? 1 : 0;
}
