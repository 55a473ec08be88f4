/* The check every test program uses: on a false condition, print where and
 * what (with the rank) and count a failure. The including file declares
 * `static int rank, failures`. */
#ifndef OXMPI_TEST_CHECK_H
#define OXMPI_TEST_CHECK_H

#include <stdio.h>

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            failures++;                                                    \
        }                                                                  \
    } while (0)

#endif
