/* clock.h: the library's name for clformer/advanced/clock.h, clf_now (the
 * monotonic clock in seconds, clock.c), which is public so that the clformer
 * command measures with the same definition (issue 49). */
#ifndef CLF_BASE_CLOCK_H
#define CLF_BASE_CLOCK_H

#include "clformer/advanced/clock.h"

#endif
