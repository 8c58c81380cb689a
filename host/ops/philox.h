/* philox.h (host): the host copy of the device's dropout generator, for
 * references and tests: the very text of cl/philox.h compiled as C. */
#ifndef CLF_OPS_PHILOX_HOST_H
#define CLF_OPS_PHILOX_HOST_H
#include "../../cl/philox.h"
#endif
