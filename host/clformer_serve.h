/* clformer_serve.h: a forwarder under an old name. Issue 49 moved
 * the public headers to include/clformer/; the code of this tree (host/,
 * tools/, cli/, bench/, tests/, fuzz/) still includes the old names through
 * -Ihost. This one stands for clformer/serve.h with the whole API, which
 * it included. Not installed: programs include <clformer/clformer.h>
 * (the stable tier) or <clformer/advanced.h>. */
#ifndef CLFORMER_OLD_CLFORMER_SERVE_H
#define CLFORMER_OLD_CLFORMER_SERVE_H
#include "clformer/advanced.h"
#endif
