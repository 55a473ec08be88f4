/* MPI_Dist_graph_create with edges given in several ways (all by one
 * process, by processes that are not their endpoints, the same edge more
 * than once, weighted and not, empty degrees), checked against the
 * documented neighbour order (by giving rank, then in the order given);
 * neighbourhood collectives over each graph, which must pair the k-th
 * edge a -> b at both ends; weights from MPI_Dist_graph_create_adjacent;
 * the errors of bad arguments at one process, which every process sees.
 * Prints "dist_graph: ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static int rank, size, failures = 0;

#define MAXE 64

/* What one process gives to MPI_Dist_graph_create; `weighted` says
 * whether it passes `weights` (else MPI_UNWEIGHTED, and the weights here
 * are the 1s the library reports for an unweighted graph). */
struct given {
    int n, sources[8], degrees[8], dests[MAXE], weights[MAXE], weighted, empty;
};

/* What process g gives in graph `which`. */
static void give(int which, int g, struct given *x) {
    memset(x, 0, sizeof *x);
    switch (which) {
    case 0: /* A ring, every edge given by rank 0. */
        if (g == 0) {
            x->n = size;
            for (int i = 0; i < size; i++) {
                x->sources[i] = i;
                x->degrees[i] = 1;
                x->dests[i] = (i + 1) % size;
                x->weights[i] = 1;
            }
        }
        break;
    case 1: /* Weighted: g -> g + 1 twice, and 0 -> size - 1 from everyone. */
        x->weighted = 1;
        x->n = 2;
        x->sources[0] = g;
        x->degrees[0] = 2;
        x->sources[1] = 0;
        x->degrees[1] = 1;
        x->dests[0] = x->dests[1] = (g + 1) % size;
        x->dests[2] = size - 1;
        x->weights[0] = 10 * g + 1;
        x->weights[1] = 10 * g + 2;
        x->weights[2] = 1000 + g;
        break;
    case 2: /* Empty degrees; odd ranks give one weighted edge to the rank below. */
        x->weighted = 1;
        x->sources[0] = g;
        x->degrees[0] = 0;
        if (g % 2) {
            x->n = 2;
            x->sources[1] = g;
            x->degrees[1] = 1;
            x->dests[0] = g - 1;
            x->weights[0] = 7 + g;
        } else {
            x->n = 1;
            x->empty = 1;
        }
        break;
    case 3: /* The reverse ring, each edge given by its destination, unweighted. */
        x->n = 1;
        x->sources[0] = (g + 1) % size;
        x->degrees[0] = 1;
        x->dests[0] = g;
        x->weights[0] = 1;
        break;
    }
}

/* The neighbours of `me` in graph `which`, in the documented order: the
 * edges every giver gave, giver by giver, in the order given. */
static void expect(int which, int me, int *in, int *inw, int *nin, int *out, int *outw, int *nout) {
    *nin = *nout = 0;
    for (int g = 0; g < size; g++) {
        struct given x;
        give(which, g, &x);
        int k = 0;
        for (int i = 0; i < x.n; i++)
            for (int j = 0; j < x.degrees[i]; j++, k++) {
                if (x.sources[i] == me) {
                    out[*nout] = x.dests[k];
                    outw[(*nout)++] = x.weights[k];
                }
                if (x.dests[k] == me) {
                    in[*nin] = x.sources[i];
                    inw[(*nin)++] = x.weights[k];
                }
            }
    }
}

/* Among the first `i` of `list`, how many are `peer`. */
static int nth(const int *list, int i, int peer) {
    int k = 0;
    for (int j = 0; j < i; j++) k += list[j] == peer;
    return k;
}

static void check_graph(int which, int expect_weighted) {
    struct given x;
    give(which, rank, &x);
    const int *w = x.weighted ? (x.empty ? MPI_WEIGHTS_EMPTY : x.weights) : MPI_UNWEIGHTED;
    MPI_Comm g;
    int rc = MPI_Dist_graph_create(MPI_COMM_WORLD, x.n, x.sources, x.degrees, x.dests, w, MPI_INFO_NULL, 0, &g);
    CHECK(rc == MPI_SUCCESS && g != MPI_COMM_NULL, "graph %d: create %d", which, rc);
    if (rc != MPI_SUCCESS) return;

    int in[MAXE], inw[MAXE], nin, out[MAXE], outw[MAXE], nout;
    expect(which, rank, in, inw, &nin, out, outw, &nout);
    int topo, indeg, outdeg, weighted;
    MPI_Topo_test(g, &topo);
    MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted);
    CHECK(topo == MPI_DIST_GRAPH && indeg == nin && outdeg == nout && weighted == expect_weighted,
          "graph %d: topo %d, degrees %d %d (expected %d %d), weighted %d", which, topo, indeg, outdeg, nin, nout,
          weighted);
    int s[MAXE], sw[MAXE], d[MAXE], dw[MAXE];
    MPI_Dist_graph_neighbors(g, MAXE, s, sw, MAXE, d, dw);
    for (int i = 0; i < nin && i < indeg; i++)
        CHECK(s[i] == in[i] && sw[i] == inw[i], "graph %d: source %d is %d (%d), expected %d (%d)", which, i, s[i],
              sw[i], in[i], inw[i]);
    for (int i = 0; i < nout && i < outdeg; i++)
        CHECK(d[i] == out[i] && dw[i] == outw[i], "graph %d: destination %d is %d (%d), expected %d (%d)", which,
              i, d[i], dw[i], out[i], outw[i]);
    if (indeg != nin || outdeg != nout) {
        MPI_Comm_free(&g);
        return;
    }

    /* To the i-th destination d: (1000 * rank + which edge to d this is,
     * its weight). The j-th source s must send (1000 * s + which edge
     * from s this is, the same weight). */
    int *sb = malloc(sizeof(int) * (2 * nout + 1)), *rb = malloc(sizeof(int) * (2 * nin + 1));
    for (int i = 0; i < nout; i++) {
        sb[2 * i] = 1000 * rank + nth(out, i, out[i]);
        sb[2 * i + 1] = outw[i];
    }
    for (int j = 0; j < 2 * nin; j++) rb[j] = -1;
    MPI_Neighbor_alltoall(sb, 2, MPI_INT, rb, 2, MPI_INT, g);
    for (int j = 0; j < nin; j++)
        CHECK(rb[2 * j] == 1000 * in[j] + nth(in, j, in[j]) && rb[2 * j + 1] == inw[j],
              "graph %d: alltoall block %d is (%d, %d), expected (%d, %d)", which, j, rb[2 * j], rb[2 * j + 1],
              1000 * in[j] + nth(in, j, in[j]), inw[j]);
    int mine = 100 + rank;
    for (int j = 0; j < nin; j++) rb[j] = -1;
    MPI_Request req;
    MPI_Ineighbor_allgather(&mine, 1, MPI_INT, rb, 1, MPI_INT, g, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int j = 0; j < nin; j++) CHECK(rb[j] == 100 + in[j], "graph %d: allgather %d is %d", which, j, rb[j]);
    free(sb);
    free(rb);
    MPI_Comm_free(&g);
}

/* A failed MPI_Dist_graph_create: class `cls` everywhere, no
 * communicator, and `text` in the message of the process `at`, `others`
 * in the others'. */
static void fails(int rc, MPI_Comm g, int cls, int at, const char *text, const char *others, const char *what) {
    int got = -1, len;
    char msg[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &got);
    MPI_Error_string(rc, msg, &len);
    const char *want = rank == at || others == NULL ? text : others;
    CHECK(got == cls && g == MPI_COMM_NULL && strstr(msg, want), "%s: class %d, message '%s' (wanted '%s')", what,
          got, msg, want);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;

    check_graph(0, 0);
    check_graph(1, 1);
    check_graph(2, 1);
    check_graph(3, 0);

    /* The adjacent form keeps its weights: edge a -> b weighs 10a + b + 1. */
    int src[1] = {left}, srcw[1] = {10 * left + rank + 1}, dst[1] = {right}, dstw[1] = {10 * rank + right + 1};
    MPI_Comm adj;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, srcw, 1, dst, dstw, MPI_INFO_NULL, 0, &adj);
    int indeg, outdeg, weighted, s[1], sw[1] = {-1}, d[1], dw[1] = {-1};
    MPI_Dist_graph_neighbors_count(adj, &indeg, &outdeg, &weighted);
    MPI_Dist_graph_neighbors(adj, 1, s, sw, 1, d, dw);
    CHECK(weighted && indeg == 1 && outdeg == 1 && s[0] == left && sw[0] == srcw[0] && d[0] == right &&
              dw[0] == dstw[0],
          "adjacent: weighted %d, source %d (%d), destination %d (%d)", weighted, s[0], sw[0], d[0], dw[0]);
    MPI_Comm_free(&adj);

    /* Errors, returned. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char text[128];
    MPI_Comm g = MPI_COMM_WORLD;
    int one[1] = {0}, deg1[1] = {1}, bad[1] = {size}, neg[1] = {-1}, wt[1] = {5};
    /* Rank 0 names a destination past the last rank. */
    int rc = MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0, one, deg1, bad, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    snprintf(text, sizeof text, "destinations[0] is %d, which is not a rank", size);
    fails(rc, g, MPI_ERR_RANK, 0, text, "process 0 of the communicator gave arguments that are not valid",
          "bad rank");
    /* The last rank gives a negative degree. */
    g = MPI_COMM_WORLD;
    int me[1] = {rank};
    rc = MPI_Dist_graph_create(MPI_COMM_WORLD, 1, me, rank == size - 1 ? neg : deg1, me, MPI_UNWEIGHTED,
                               MPI_INFO_NULL, 0, &g);
    snprintf(text, sizeof text, "process %d of the communicator", size - 1);
    fails(rc, g, MPI_ERR_ARG, size - 1, "degrees[0] is -1; it must be 0 or more", text, "negative degree");
    /* Rank 0 gives weights, the others MPI_UNWEIGHTED, all with edges. */
    if (size > 1) {
        g = MPI_COMM_WORLD;
        rc = MPI_Dist_graph_create(MPI_COMM_WORLD, 1, me, deg1, me, rank == 0 ? wt : MPI_UNWEIGHTED, MPI_INFO_NULL,
                                   0, &g);
        fails(rc, g, MPI_ERR_ARG, 0, "process 0 gave weights for its edges and process 1 MPI_UNWEIGHTED", NULL,
              "mixed weights");
    }
    /* A negative weight. */
    int negw[1] = {-3};
    g = MPI_COMM_WORLD;
    rc = MPI_Dist_graph_create(MPI_COMM_WORLD, 1, me, deg1, me, negw, MPI_INFO_NULL, 0, &g);
    fails(rc, g, MPI_ERR_ARG, rank, "weights[0] is -3; weights must be 0 or more", NULL, "negative weight");
    /* The adjacent form: a negative degree, and weights on one side only. */
    g = MPI_COMM_NULL;
    rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, -1, src, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED,
                                        MPI_INFO_NULL, 0, &g);
    fails(rc, g, MPI_ERR_ARG, rank, "indegree is -1; it must be 0 or more", NULL, "adjacent degree");
    rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, MPI_UNWEIGHTED, 1, dst, dstw, MPI_INFO_NULL, 0,
                                        &g);
    fails(rc, g, MPI_ERR_ARG, rank, "one of sourceweights and destweights is MPI_UNWEIGHTED", NULL,
          "adjacent weights");

    /* Nothing was left behind: the world still works. */
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0 && all == 0) printf("dist_graph: ok\n");
    return failures ? 1 : 0;
}
