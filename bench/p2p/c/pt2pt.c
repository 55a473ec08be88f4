/* Point-to-point latency and bandwidth for other MPI implementations
 * (Open MPI, MPICH), with the method, sizes, schedule, data check and
 * output lines of the oxmpi program (src/bin/oxmpi_pt2pt.rs) and of the
 * shared definitions in src/lib.rs: a change there must be made here too.
 *
 *   latency:   ping-pong of SIZE bytes (MPI_Send / MPI_Recv), warm-up round
 *              trips, then timed ones; prints "lat <bytes> <usec one way>".
 *   bandwidth: rank 0 posts WINDOW MPI_Isend of SIZE bytes from one buffer,
 *              rank 1 posts WINDOW MPI_Irecv into consecutive slices of one
 *              buffer, both MPI_Waitall, then rank 1 sends a 1-byte ack;
 *              prints "bw <bytes> <MB/s>" (10^6 bytes per MB).
 *   checks:    one untimed round before the warm-up and one after the timed
 *              loop carry a patterned payload that the receiver compares
 *              byte by byte (a failure aborts the job).
 *
 * Usage: mpirun -n 2 pt2pt [--quick] [--sizes LIST]
 * Built and run by scripts/bench-p2p.sh. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define CLEAR_BYTE 0xA5
#define MAX_SIZES 64

static const size_t default_sizes[] = {0, 1, 8, 64, 512, 4096, 65536, 262144, 1 << 20, 4 << 20};

struct schedule { long warmup, iters; };

static struct schedule scaled(long warmup, long iters, int quick)
{
    struct schedule s = {warmup, iters};
    if (quick) {
        s.warmup = warmup / 10 > 1 ? warmup / 10 : 1;
        s.iters = iters / 10 > 2 ? iters / 10 : 2;
    }
    return s;
}

static struct schedule latency_schedule(size_t size, int quick)
{
    if (size <= 8192) return scaled(1000, 10000, quick);
    if (size <= 262144) return scaled(100, 1000, quick);
    return scaled(20, 200, quick);
}

static struct schedule bandwidth_schedule(size_t size, int quick)
{
    if (size <= 8192) return scaled(20, 200, quick);
    if (size <= 262144) return scaled(10, 100, quick);
    if (size <= 1048576) return scaled(4, 40, quick);
    return scaled(2, 10, quick);
}

static inline uint8_t pattern(size_t i, uint32_t seed)
{
    uint32_t x = (uint32_t)i * 0x9E3779B1u + seed * 0x85EBCA77u;
    return (uint8_t)((x ^ (x >> 15)) >> 24);
}

static void fill(uint8_t *buf, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) buf[i] = pattern(i, seed);
}

static uint32_t seed_of(int before, size_t size, uint32_t sender)
{
    return (uint32_t)size * 4u + (before ? 0u : 2u) + sender + 1u;
}

static int rank;

static void check(const uint8_t *buf, size_t n, uint32_t seed, const char *what, size_t size,
                  int before, long message)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != pattern(i, seed)) {
            if (message >= 0)
                fprintf(stderr, "pt2pt: rank %d: %s check %s the timed loop, %zu B, message %ld: "
                        "byte %zu is %#04x, expected %#04x\n", rank, what,
                        before ? "before" : "after", size, message, i, buf[i], pattern(i, seed));
            else
                fprintf(stderr, "pt2pt: rank %d: %s check %s the timed loop, %zu B: "
                        "byte %zu is %#04x, expected %#04x\n", rank, what,
                        before ? "before" : "after", size, i, buf[i], pattern(i, seed));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

static void pingpong(int peer, uint8_t *sbuf, uint8_t *rbuf, size_t size)
{
    if (rank == 0) {
        MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
    }
}

static void latency_check(int peer, uint8_t *sbuf, uint8_t *rbuf, size_t size, int before)
{
    fill(sbuf, size, seed_of(before, size, (uint32_t)rank));
    memset(rbuf, CLEAR_BYTE, size);
    pingpong(peer, sbuf, rbuf, size);
    check(rbuf, size, seed_of(before, size, (uint32_t)peer), "latency", size, before, -1);
}

static void latency(int peer, uint8_t *sbuf, uint8_t *rbuf, size_t size, int quick)
{
    struct schedule s = latency_schedule(size, quick);
    latency_check(peer, sbuf, rbuf, size, 1);
    double start = MPI_Wtime();
    for (long i = 0; i < s.warmup + s.iters; i++) {
        if (i == s.warmup) start = MPI_Wtime();
        pingpong(peer, sbuf, rbuf, size);
    }
    double elapsed = MPI_Wtime() - start;
    latency_check(peer, sbuf, rbuf, size, 0);
    if (rank == 0) {
        printf("lat %zu %.3f\n", size, elapsed * 1e6 / (2.0 * (double)s.iters));
        fflush(stdout);
    }
}

static void window(int peer, uint8_t *sbuf, uint8_t *wbuf, size_t size)
{
    MPI_Request reqs[WINDOW];
    MPI_Status stats[WINDOW]; /* not MPI_STATUSES_IGNORE: gcc 12 warns on MPICH's definition */
    uint8_t ack = 0;
    if (rank == 0) {
        for (int k = 0; k < WINDOW; k++)
            MPI_Isend(sbuf, (int)size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &reqs[k]);
        MPI_Waitall(WINDOW, reqs, stats);
        MPI_Recv(&ack, 1, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        for (int k = 0; k < WINDOW; k++)
            MPI_Irecv(wbuf + (size_t)k * size, (int)size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &reqs[k]);
        MPI_Waitall(WINDOW, reqs, stats);
        MPI_Send(&ack, 1, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
    }
}

static void bandwidth_check(int peer, uint8_t *sbuf, uint8_t *wbuf, size_t size, int before)
{
    if (rank == 0) {
        fill(sbuf, size, seed_of(before, size, 0));
    } else {
        memset(wbuf, CLEAR_BYTE, size * WINDOW);
    }
    window(peer, sbuf, wbuf, size);
    if (rank == 1)
        for (long k = 0; k < WINDOW; k++)
            check(wbuf + (size_t)k * size, size, seed_of(before, size, 0), "bandwidth", size, before, k);
}

static void bandwidth(int peer, uint8_t *sbuf, uint8_t *wbuf, size_t size, int quick)
{
    struct schedule s = bandwidth_schedule(size, quick);
    bandwidth_check(peer, sbuf, wbuf, size, 1);
    double start = MPI_Wtime();
    for (long w = 0; w < s.warmup + s.iters; w++) {
        if (w == s.warmup) start = MPI_Wtime();
        window(peer, sbuf, wbuf, size);
    }
    double elapsed = MPI_Wtime() - start;
    bandwidth_check(peer, sbuf, wbuf, size, 0);
    if (rank == 0) {
        printf("bw %zu %.1f\n", size, (double)size * WINDOW * (double)s.iters / elapsed / 1e6);
        fflush(stdout);
    }
}

static int parse_sizes(const char *list, size_t *out, int *count)
{
    char *copy = strdup(list), *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        unsigned long long v = strtoull(tok, &end, 10);
        if (end == tok) goto bad;
        if (*end == 'K' || *end == 'k') { v *= 1024; end++; }
        else if (*end == 'M' || *end == 'm') { v *= 1024 * 1024; end++; }
        if (*end != '\0' || v > (64ull << 20) || n == MAX_SIZES) goto bad;
        out[n++] = (size_t)v;
        continue;
    bad:
        if (rank == 0)
            fprintf(stderr, "pt2pt: --sizes: `%s` is not a byte count from 0 to 64M (e.g. 0,8,4K,1M)\n", tok);
        free(copy);
        return -1;
    }
    free(copy);
    *count = n;
    return 0;
}

int main(int argc, char **argv)
{
    int nprocs, quick = 0, nsizes = (int)(sizeof default_sizes / sizeof default_sizes[0]);
    size_t sizes[MAX_SIZES];
    memcpy(sizes, default_sizes, sizeof default_sizes);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            if (parse_sizes(argv[++i], sizes, &nsizes) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
        } else {
            if (rank == 0)
                fprintf(stderr, "pt2pt: unknown argument `%s` (expected --quick or --sizes LIST)\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (nprocs != 2) {
        if (rank == 0) fprintf(stderr, "pt2pt: needs exactly 2 ranks, got %d (mpirun -n 2)\n", nprocs);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t max = 0;
    for (int i = 0; i < nsizes; i++) if (sizes[i] > max) max = sizes[i];
    int peer = 1 - rank;
    uint8_t *sbuf = malloc(max ? max : 1), *rbuf = malloc(max ? max : 1);
    uint8_t *wbuf = rank == 1 ? malloc(max ? max * WINDOW : 1) : NULL;
    if (!sbuf || !rbuf || (rank == 1 && !wbuf)) {
        fprintf(stderr, "pt2pt: rank %d: out of memory for %zu-byte buffers\n", rank, max);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Touch every page before measuring (as the Rust programs do). */
    memset(sbuf, CLEAR_BYTE, max ? max : 1);
    memset(rbuf, CLEAR_BYTE, max ? max : 1);
    if (wbuf) memset(wbuf, CLEAR_BYTE, max ? max * WINDOW : 1);

    int version_len;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(version, &version_len);
    if (rank == 0) {
        char *nl = strchr(version, '\n');
        if (nl) *nl = '\0';
        printf("# pt2pt: %s\n", version);
    }
    for (int i = 0; i < nsizes; i++) latency(peer, sbuf, rbuf, sizes[i], quick);
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > 0) bandwidth(peer, sbuf, wbuf, sizes[i], quick);

    free(sbuf);
    free(rbuf);
    free(wbuf);
    MPI_Finalize();
    return 0;
}
