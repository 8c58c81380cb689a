/* common.h: the prelude every clformer kernel includes. OpenCL C 1.2.
 * Tunables are -D build options; each has an #ifndef default here or in
 * its kernel file so that a file compiles on its own. */
#ifndef CLF_CL_COMMON_H
#define CLF_CL_COMMON_H

/* Masks and running maxima use a large finite negative number, never
 * -INFINITY, so that -cl-fast-relaxed-math cannot turn them into NaN. */
#define CLF_NEG_LARGE (-1.0e30f)

/* Work-group size of row-wise kernels (one group per row). */
#ifndef WG
#define WG 64
#endif

#endif
