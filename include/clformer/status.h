/* clformer/status.h: statuses and the last failure's message, which every
 * other public header uses (the text pipeline uses only this). */
#ifndef CLFORMER_STATUS_H
#define CLFORMER_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)  /* exported: clformer/device.h says why */

typedef enum clf_status {
    CLF_OK = 0,
    CLF_ERR_ARG,         /* a bad argument: shape, size, option */
    CLF_ERR_NO_DEVICE,   /* no OpenCL device, or none matches the request */
    CLF_ERR_OPENCL,      /* an OpenCL call failed */
    CLF_ERR_BUILD,       /* a kernel did not compile; the message holds the log */
    CLF_ERR_BLAS,        /* CLBlast (the GEMM backend on GPUs) refused or failed */
    CLF_ERR_MEMORY,      /* host or device allocation failed */
    CLF_ERR_IO,          /* a file could not be read or written */
    CLF_ERR_FORMAT,      /* a file's contents are malformed */
    CLF_ERR_UNSUPPORTED, /* the device cannot do what was asked */
} clf_status;

/* The status's name, such as "CLF_ERR_BUILD". */
const char *clf_status_str(clf_status s);

/* A device context (clformer/device.h); opaque. */
typedef struct clf_ctx clf_ctx_t;

/* The last failure's message; ctx may be NULL (the per-thread message). */
const char *clf_ctx_error(const clf_ctx_t *ctx);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
