/* test_limits.c: CLF_DEVICE_LIMITS (GPU-shaped limits on any device): the
 * parsing, the refusals, and what the context and its users then see. Each
 * test sets the variable itself (Criterion runs each in its own process). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

Test(limits, gpu_word_shapes_the_context)
{
    struct clf_device_info own = tu_own_device();
    cr_assert_eq(own.shaped[0], 0);
    tu_setting("CLF_DEVICE_LIMITS", "gpu");
    clf_ctx_t *ctx = tu_ctx();
    const struct clf_device_info *d = clf_ctx_device(ctx);
    cr_assert(d->type & CL_DEVICE_TYPE_GPU);
    /* 48 KiB and 256, or less where the device has less */
    cr_assert_eq(d->local_mem, own.local_mem < 48 * 1024 ? own.local_mem : 48 * 1024);
    cr_assert_eq(d->max_work_group, own.max_work_group < 256 ? own.max_work_group : 256);
    cr_assert_not(d->host_unified);
    cr_assert_str_eq(d->shaped, "gpu");
    cr_assert_eq(d->max_alloc, own.max_alloc);
    /* the GEMM table has CPU entries only: a GPU-shaped CPU gets none */
    struct clf_tuning_info *ti = malloc(sizeof *ti);
    cr_assert_eq(clf_tuning_query(ctx, ti), CLF_OK);
    cr_assert_null(ti->entry, "table entry '%s' applied to a GPU-shaped device", ti->entry->name);
    free(ti);
    struct clf_attention_tuning at;
    cr_assert_eq(clf_attention_tuning_get(ctx, 64, &at), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_leq(at.tile_q, 256);
    cr_assert_leq(at.tile_k, 256);
    /* GPUs run the split kernels: several work-items per query row (per key
     * row in dK/dV) */
    cr_assert_geq(at.lanes, 2, "a GPU-shaped device runs %zu lane(s) per query row", at.lanes);
    cr_assert_leq(at.tile_q * at.lanes, d->max_work_group);
    cr_assert_leq(at.tile_k * at.lanes, d->max_work_group);
    clf_ctx_free(ctx);
}

/* llvmpipe (rusticl) has 32 KiB of local memory: `gpu` takes what it has,
 * an explicit value above it is still refused */
Test(limits, gpu_word_clamps_to_a_smaller_device)
{
    struct clf_device_info d = tu_own_device(), small;
    d.local_mem = 32 * 1024;
    d.max_work_group = 128;
    small = d;
    cr_assert_eq(clf_device_shape(&d, "gpu"), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(d.local_mem, 32 * 1024);
    cr_assert_eq(d.max_work_group, 128);
    cr_assert(d.type & CL_DEVICE_TYPE_GPU);
    d = small;
    cr_assert_eq(clf_device_shape(&d, "gpu,max_wg=64"), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(d.max_work_group, 64);
    d = small;
    cr_assert_eq(clf_device_shape(&d, "gpu,local_mem=48K"), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(NULL), "local_mem=48K"), "%s", clf_ctx_error(NULL));
    cr_assert_eq(memcmp(&d, &small, sizeof d), 0, "a refused shape changed the device");
    d = small;
    cr_assert_eq(clf_device_shape(&d, "max_wg=256,gpu"), CLF_OK, "the word gpu after max_wg= is a shape again");
    cr_assert_eq(d.max_work_group, 128);
}

Test(limits, later_items_override_and_sizes_take_suffixes)
{
    struct clf_device_info d = tu_own_device();
    if (d.local_mem < 32 * 1024 || d.max_work_group < 128)
        cr_skip_test("the device is smaller than the test's shape");
    cr_assert_eq(clf_device_shape(&d, "gpu, local_mem=32K,max_wg=128"), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(d.local_mem, 32 * 1024);
    cr_assert_eq(d.max_work_group, 128);
    cr_assert(d.type & CL_DEVICE_TYPE_GPU);
    cr_assert_eq(clf_device_shape(&d, "type=cpu"), CLF_OK);
    cr_assert_eq(d.type, CL_DEVICE_TYPE_CPU);
    cr_assert_eq(clf_device_shape(&d, "max_alloc=1M"), CLF_OK);
    cr_assert_eq(d.max_alloc, 1024 * 1024);
    /* less device memory than one allocation's limit lowers that too */
    d = tu_own_device();
    cr_assert_eq(clf_device_shape(&d, "global_mem=64M"), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(d.global_mem, 64 * 1024 * 1024);
    cr_assert_eq(d.max_alloc, 64 * 1024 * 1024);
    cr_assert_eq(clf_device_shape(&d, "max_alloc=16M,global_mem=32M"), CLF_OK);
    cr_assert_eq(d.global_mem, 32 * 1024 * 1024);
    cr_assert_eq(d.max_alloc, 16 * 1024 * 1024);
    char raise[64];
    snprintf(raise, sizeof raise, "global_mem=%lluK", (unsigned long long)tu_own_device().global_mem / 1024 + 1);
    cr_assert_eq(clf_device_shape(&d, raise), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(NULL), "global_mem"), "%s", clf_ctx_error(NULL));
}

Test(limits, malformed_items_are_named)
{
    struct clf_device_info d = tu_own_device(), before = d;
    static const char *bad[][2] = {
        {"gpu,local_mem=lots", "'local_mem=lots'"}, {"max_wg=0", "'max_wg=0'"},
        {"type=fpga", "'type=fpga'"},               {"colour=red", "'colour=red'"},
        {"gpu,unified=2", "'unified=2'"},           {"local_mem", "'local_mem'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(clf_device_shape(&d, bad[i][0]), CLF_ERR_ARG, "%s accepted", bad[i][0]);
        const char *m = clf_ctx_error(NULL);
        cr_assert(strstr(m, "CLF_DEVICE_LIMITS") && strstr(m, bad[i][1]), "%s: %s", bad[i][0], m);
        cr_assert_eq(memcmp(&d, &before, sizeof d), 0, "%s changed the device", bad[i][0]);
    }
    /* the context refuses a malformed variable before anything else */
    tu_setting("CLF_DEVICE_LIMITS", "gpu,max_wg=-4");
    clf_ctx_t *ctx = NULL;
    cr_assert_eq(clf_ctx_init(&ctx, NULL), CLF_ERR_ARG);
    cr_assert_null(ctx);
    cr_assert(strstr(clf_ctx_error(NULL), "'max_wg=-4'"), "%s", clf_ctx_error(NULL));
}

Test(limits, raising_a_limit_is_refused_with_the_real_value)
{
    struct clf_device_info d = tu_own_device();
    char spec[64], real[32];
    snprintf(spec, sizeof spec, "local_mem=%lluK", (unsigned long long)d.local_mem / 1024 + 1);
    snprintf(real, sizeof real, "(%llu)", (unsigned long long)d.local_mem);
    tu_setting("CLF_DEVICE_LIMITS", spec);
    clf_ctx_t *ctx = NULL;
    cr_assert_eq(clf_ctx_init(&ctx, NULL), CLF_ERR_ARG);
    const char *m = clf_ctx_error(NULL);
    cr_assert(strstr(m, "CLF_DEVICE_LIMITS") && strstr(m, spec) && strstr(m, real) && strstr(m, d.device_name),
              "%s", m);
    snprintf(spec, sizeof spec, "max_wg=%zu", d.max_work_group * 2);
    snprintf(real, sizeof real, "(%zu)", d.max_work_group);
    cr_assert_eq(clf_device_shape(&d, spec), CLF_ERR_ARG);
    m = clf_ctx_error(NULL);
    cr_assert(strstr(m, "max_wg") && strstr(m, real), "%s", m);
    /* the list stays usable: the device keeps its own limits there (other
     * devices, with more local memory, may be shaped by the same text) */
    struct clf_device_info *list;
    int n;
    cr_assert_eq(clf_devices_list(&list, &n), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_lt(d.index, n);
    cr_assert_eq(list[d.index].shaped[0], 0);
    cr_assert_eq(list[d.index].local_mem, d.local_mem);
    free(list);
}

/* Limits too small for a kernel: a clear error naming the kernel, the
 * device and the limit; where a smaller tile fits, it is used. */
Test(limits, too_small_for_attention_is_a_clear_error)
{
    struct clf_device_info own = tu_own_device();
    if (own.local_mem < 8 * 1024 || own.max_work_group < 256)
        cr_skip_test("the device is smaller than the test's shapes");
    tu_setting("CLF_DEVICE_LIMITS", "gpu,local_mem=1K");
    clf_ctx_t *ctx = tu_ctx();
    struct clf_attention_tuning t;
    cr_assert_eq(clf_attention_tuning_get(ctx, 64, &t), CLF_ERR_UNSUPPORTED);
    const char *m = clf_ctx_error(ctx);
    cr_assert(strstr(m, "attn_") && strstr(m, own.device_name) && strstr(m, "local_mem") && strstr(m, "1024") &&
                  strstr(m, "d_k 64"),
              "%s", m);
    clf_ctx_free(ctx);

    tu_setting("CLF_DEVICE_LIMITS", "gpu,max_wg=4");
    ctx = tu_ctx();
    cr_assert_eq(clf_attention_tuning_get(ctx, 64, &t), CLF_ERR_UNSUPPORTED);
    m = clf_ctx_error(ctx);
    cr_assert(strstr(m, "attn_bwd_dkdv") && strstr(m, own.device_name) && strstr(m, "max_wg"), "%s", m);
    /* a row op only narrows its work-groups */
    float x[3 * 40], want[3 * 40];
    for (int i = 0; i < 3 * 40; i++)
        x[i] = (float)(i % 7) * 0.25f;
    for (int r = 0; r < 3; r++) {
        double s = 0;
        for (int c = 0; c < 40; c++)
            s += exp(x[r * 40 + c]);
        for (int c = 0; c < 40; c++)
            want[r * 40 + c] = (float)(exp(x[r * 40 + c]) / s);
    }
    clf_tensor tx = tu_upload(ctx, x, 120), ty = tu_upload(ctx, x, 120);
    tx.ndim = ty.ndim = 2;
    tx.shape[0] = ty.shape[0] = 3;
    tx.shape[1] = ty.shape[1] = 40;
    cr_assert_eq(clf_softmax_forward(ctx, &ty, &tx, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    float *got = tu_download(ctx, &ty, 120);
    cr_assert(tu_close("softmax under max_wg=4", got, want, 120, 1e-6, 1e-5));
    free(got);
    clf_tensor_free(&tx), clf_tensor_free(&ty);
    clf_ctx_free(ctx);

    /* 8 KiB: smaller tiles than the table's fit, and are used */
    tu_setting("CLF_DEVICE_LIMITS", "gpu,local_mem=8K");
    ctx = tu_ctx();
    cr_assert_eq(clf_attention_tuning_get(ctx, 64, &t), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_leq((2 * t.tile_k * 64 + t.tile_q * (t.tile_k * t.lanes + t.lanes - 1) + t.tile_q * (t.tile_k + 1)) * 4,
                  8 * 1024);
    cr_assert_leq((2 * t.tile_q * 64 + 2 * t.tile_q + t.tile_k * (t.tile_q * t.lanes + t.lanes - 1) +
                   t.tile_k * (t.tile_q + 1)) * 4, 8 * 1024);
    clf_ctx_free(ctx);
}
