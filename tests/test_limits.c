/* test_limits.c: CLF_DEVICE_LIMITS (GPU-shaped limits on any device): the
 * parsing, the refusals, and what the context and its users then see. Each
 * test sets the variable itself (Criterion runs each in its own process). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* The device's own description, whatever CLF_DEVICE_LIMITS the run has. */
static struct clf_device_info own_device(void)
{
    cr_assert_eq(unsetenv("CLF_DEVICE_LIMITS"), 0);
    clf_ctx_t *ctx = tu_ctx();
    struct clf_device_info d = *clf_ctx_device(ctx);
    clf_ctx_free(ctx);
    return d;
}

Test(limits, gpu_word_shapes_the_context)
{
    struct clf_device_info own = own_device();
    cr_assert_eq(own.shaped[0], 0);
    if (own.local_mem < 48 * 1024 || own.max_work_group < 256)
        cr_skip_test("the device has less than the gpu shape asks for");
    cr_assert_eq(setenv("CLF_DEVICE_LIMITS", "gpu", 1), 0);
    clf_ctx_t *ctx = tu_ctx();
    const struct clf_device_info *d = clf_ctx_device(ctx);
    cr_assert(d->type & CL_DEVICE_TYPE_GPU);
    cr_assert_eq(d->local_mem, 48 * 1024);
    cr_assert_eq(d->max_work_group, 256);
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
    clf_ctx_free(ctx);
}

Test(limits, later_items_override_and_sizes_take_suffixes)
{
    struct clf_device_info d = own_device();
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
}

Test(limits, malformed_items_are_named)
{
    struct clf_device_info d = own_device(), before = d;
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
    cr_assert_eq(setenv("CLF_DEVICE_LIMITS", "gpu,max_wg=-4", 1), 0);
    clf_ctx_t *ctx = NULL;
    cr_assert_eq(clf_ctx_init(&ctx, NULL), CLF_ERR_ARG);
    cr_assert_null(ctx);
    cr_assert(strstr(clf_ctx_error(NULL), "'max_wg=-4'"), "%s", clf_ctx_error(NULL));
}

Test(limits, raising_a_limit_is_refused_with_the_real_value)
{
    struct clf_device_info d = own_device();
    char spec[64], real[32];
    snprintf(spec, sizeof spec, "local_mem=%lluK", (unsigned long long)d.local_mem / 1024 + 1);
    snprintf(real, sizeof real, "(%llu)", (unsigned long long)d.local_mem);
    cr_assert_eq(setenv("CLF_DEVICE_LIMITS", spec, 1), 0);
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
    /* the list stays usable: the device keeps its own limits there */
    struct clf_device_info *list;
    int n;
    cr_assert_eq(clf_devices_list(&list, &n), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(list[0].shaped[0], 0);
    free(list);
}
