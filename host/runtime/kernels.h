/* kernels.h: the table of cl/ files embedded at build time (see
 * cmake/embed.cmake). Terminated by an entry whose name is NULL. */
#ifndef CLF_RUNTIME_KERNELS_H
#define CLF_RUNTIME_KERNELS_H

#include <stddef.h>

struct clf_embedded_file {
    const char *name;  /* file name under cl/, such as "softmax.cl" */
    const char *data;  /* its bytes, NUL-terminated */
    size_t size;       /* without the terminating NUL */
};

extern const struct clf_embedded_file clf_embedded_files[];

#endif
