/* The UCX headers the bindings cover. */
#include <ucp/api/ucp.h>
