/* The UCX headers the bindings cover: UCP, and UCT's resource listing
   (components, memory domains, transports and devices). */
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>
