/* test_gemm.c: clf_gemm and clf_gemm_batched against a plain-C reference
 * on odd shapes, every transpose combination, offsets, padded leading
 * dimensions, batches and operands that are views of one buffer; the same
 * refusals of bad arguments on each backend the device allows; how the
 * backend is chosen and refused; the host backend's large GEMMs through
 * oneDNN.
 *
 * Which backend runs the case matrix (full_backends): on a CPU device with
 * host-unified memory, where the host's BLAS is the default (CI's plain
 * PoCL and Intel runs), the host's BLAS, and CLBlast only a smoke check
 * (clblast_smoke_check): CI runs Intel's runtime and rusticl again shaped
 * as GPUs (CLF_DEVICE_LIMITS=gpu, no host-unified memory), where every
 * case runs on CLBlast, and CLBlast's kernels are slow to compile on PoCL
 * (each test is a process of its own: the full matrix cost ~90 s of CPU
 * there, cold cache), whose shaped run leaves this test (label kernel,
 * tests/CMakeLists.txt) to them. On any other device CLBlast runs every
 * case, and the host's BLAS too where the memory is the host's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/gemm_internal.h" /* clf_gemm_bias_fused, clf_gemm_dnnl_built */
#include "testutil.h"

/* c is (m, ldc) row-major; a is op(A) with A stored (m,lda) or (k,lda)
 * when transposed; b likewise. Accumulates in double. */
static void ref_gemm(float *c, const float *a, const float *b, size_t m, size_t n, size_t k, float alpha,
                     float beta, bool ta, bool tb, size_t lda, size_t ldb, size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double acc = 0;
            for (size_t p = 0; p < k; p++) {
                double x = ta ? a[p * lda + i] : a[i * lda + p];
                double y = tb ? b[j * ldb + p] : b[p * ldb + j];
                acc += x * y;
            }
            c[i * ldc + j] = (float)(alpha * acc + beta * c[i * ldc + j]);
        }
}

/* Every backend the context's device can run, CLBlast first; returns how
 * many. */
static int backends(const clf_ctx_t *ctx, enum clf_gemm_backend out[2])
{
    int n = 0;
    out[n++] = CLF_GEMM_CLBLAST;
    if (clf_ctx_device(ctx)->host_unified)
        out[n++] = CLF_GEMM_HOST;
    return n;
}

/* Whether the context took the host's BLAS at clf_ctx_init (a CPU whose
 * memory is the host's: clf_gemm_backend_choose's rule, which
 * default_and_environment checks; asked before any use()): there CLBlast
 * gets the smoke check alone, the GPU-shaped runs giving it every case. */
static bool host_by_default(const clf_ctx_t *ctx)
{
    return clf_ctx_gemm(ctx) == CLF_GEMM_HOST;
}

/* The backends that run every case of the matrix; returns how many. */
static int full_backends(const clf_ctx_t *ctx, enum clf_gemm_backend out[2])
{
    if (!host_by_default(ctx))
        return backends(ctx, out);
    out[0] = CLF_GEMM_HOST;
    return 1;
}

static void use(clf_ctx_t *ctx, enum clf_gemm_backend be)
{
    cr_assert_eq(clf_ctx_gemm_set(ctx, be), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_ctx_gemm(ctx), be);
}

struct gcase {
    size_t m, n, k, pad, off, batch;
    bool ta, tb;
    bool shared;  /* A, B and C in one buffer, one after the other */
};

static void check(clf_ctx_t *ctx, const struct gcase *g)
{
    size_t arows = g->ta ? g->k : g->m, acols = g->ta ? g->m : g->k;
    size_t brows = g->tb ? g->n : g->k, bcols = g->tb ? g->k : g->n;
    size_t lda = acols + g->pad, ldb = bcols + g->pad, ldc = g->n + g->pad;
    size_t sa = arows * lda + 3, sb = brows * ldb + 5, sc = g->m * ldc + 1;  /* odd strides */
    size_t na = g->off + sa * g->batch, nb = g->off + sb * g->batch, nc = g->off + sc * g->batch;
    /* shared: one array [A's na][B's nb][C's nc], else three */
    size_t nall = na + nb + nc;
    float *all = malloc(nall * 4), *want = malloc(nall * 4);
    float *a = all, *b = all + na, *c = all + na + nb;
    tu_fill(a, na, 1, -1, 1);
    tu_fill(b, nb, 2, -1, 1);
    tu_fill(c, nc, 3, -1, 1);
    memcpy(want, all, nall * 4);
    const float alpha = 0.75f, beta = g->batch % 2 ? 0.5f : 0.0f;
    for (size_t i = 0; i < g->batch; i++)
        ref_gemm(want + na + nb + g->off + i * sc, a + g->off + i * sa, b + g->off + i * sb, g->m, g->n, g->k,
                 alpha, beta, g->ta, g->tb, lda, ldb, ldc);
    clf_tensor tall = {0}, ta = {0}, tb = {0}, tc = {0};
    struct clf_mat ma, mb, mc;
    if (g->shared) {
        tall = tu_upload(ctx, all, nall);
        ma = (struct clf_mat){tall.buf, g->off, lda, g->ta, sa};
        mb = (struct clf_mat){tall.buf, na + g->off, ldb, g->tb, sb};
        mc = (struct clf_mat){tall.buf, na + nb + g->off, ldc, false, sc};
    } else {
        ta = tu_upload(ctx, a, na), tb = tu_upload(ctx, b, nb), tc = tu_upload(ctx, c, nc);
        ma = (struct clf_mat){ta.buf, g->off, lda, g->ta, sa};
        mb = (struct clf_mat){tb.buf, g->off, ldb, g->tb, sb};
        mc = (struct clf_mat){tc.buf, g->off, ldc, false, sc};
    }
    clf_status st = g->batch == 1 ? clf_gemm(ctx, g->m, g->n, g->k, alpha, &ma, &mb, beta, &mc)
                                  : clf_gemm_batched(ctx, g->m, g->n, g->k, alpha, &ma, &mb, beta, &mc, g->batch);
    cr_assert_eq(st, CLF_OK, "gemm: %s", clf_ctx_error(ctx));
    char what[160];
    snprintf(what, sizeof what, "gemm (%s) m=%zu n=%zu k=%zu ta=%d tb=%d pad=%zu off=%zu batch=%zu%s",
             clf_gemm_backend_str(clf_ctx_gemm(ctx)), g->m, g->n, g->k, g->ta, g->tb, g->pad, g->off, g->batch,
             g->shared ? " shared" : "");
    /* Elements outside C (padding, between batches, A and B) must be left untouched. */
    float *got = g->shared ? tu_download(ctx, &tall, nall) : tu_download(ctx, &tc, nc);
    const float *expect = g->shared ? want : want + na + nb;
    cr_assert(tu_close(what, got, expect, g->shared ? nall : nc, 1e-5, 1e-4), "%s", what);
    clf_tensor_free(&tall);
    clf_tensor_free(&ta);
    clf_tensor_free(&tb);
    clf_tensor_free(&tc);
    free(all), free(want), free(got);
}

static const size_t sizes[] = {1, 7, 33, 100, 257};

Test(gemm, odd_shapes_every_transpose)
{
    clf_ctx_t *ctx = tu_ctx();
    enum clf_gemm_backend be[2];
    for (int e = 0, ne = full_backends(ctx, be); e < ne; e++) {
        use(ctx, be[e]);
        for (int t = 0; t < 4; t++)
            for (int i = 0; i < 5; i++) {
                struct gcase g = {sizes[i], sizes[(i + 1) % 5], sizes[(i + 2) % 5], 0, 0, 1, t & 1, t & 2, false};
                check(ctx, &g);
            }
    }
    clf_ctx_free(ctx);
}

/* Where the host's BLAS is the default, CLBlast chosen instead still runs
 * and gives the right answer: two single GEMMs of one orientation, one
 * with offsets and padding, one on views of one buffer. Why so few: PoCL
 * compiles every kernel of CLBlast's GEMM program at its first use (~25 s
 * of CPU, cold cache), then each orientation's kernel again for its
 * work-group size (~3 s each), and the batched routine is a second
 * program (~50 s more). Elsewhere the full matrix above runs on CLBlast. */
Test(gemm, clblast_smoke_check)
{
    clf_ctx_t *ctx = tu_ctx();
    if (!host_by_default(ctx)) {
        clf_ctx_free(ctx);
        cr_skip_test("CLBlast runs every case on this device");
    }
    use(ctx, CLF_GEMM_CLBLAST);
    struct gcase padded = {33, 7, 100, 2, 3, 1, false, true, false}, shared = {7, 33, 100, 1, 5, 1, false, true, true};
    check(ctx, &padded);
    check(ctx, &shared);
    clf_ctx_free(ctx);
}

/* The host backend maps its operands for every call where the device's
 * buffers may move, and otherwise (PoCL, Intel's CPU runtime) uses the
 * addresses recorded at a buffer's first GEMM: the tests above run the
 * latter on every case's new buffers (freed handles are reused, so a stale
 * record would show); this one the former. */
Test(gemm, host_backend_with_a_map_per_call)
{
    tu_setting("CLF_GEMM_MAP", "always");
    clf_ctx_t *ctx = tu_ctx();
    if (!clf_ctx_device(ctx)->host_unified) {
        clf_ctx_free(ctx);
        cr_skip_test("the device does not share the host's memory");
    }
    use(ctx, CLF_GEMM_HOST);
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 5; i++) {
            struct gcase g = {sizes[i], sizes[(i + 3) % 5], sizes[(i + 1) % 5], 2, 5, 1 + (size_t)(i % 2), t & 1,
                              t & 2, i == 4};
            check(ctx, &g);
        }
    clf_ctx_free(ctx);
}

Test(gemm, offsets_and_leading_dimensions)
{
    clf_ctx_t *ctx = tu_ctx();
    enum clf_gemm_backend be[2];
    for (int e = 0, ne = full_backends(ctx, be); e < ne; e++) {
        use(ctx, be[e]);
        for (int t = 0; t < 4; t++) {
            struct gcase g = {33, 100, 7, 3, 11, 1, t & 1, t & 2, false};
            check(ctx, &g);
        }
    }
    clf_ctx_free(ctx);
}

Test(gemm, strided_batches)
{
    clf_ctx_t *ctx = tu_ctx();
    enum clf_gemm_backend be[2];
    for (int e = 0, ne = full_backends(ctx, be); e < ne; e++) {
        use(ctx, be[e]);
        for (int t = 0; t < 4; t++) {
            struct gcase g = {7, 33, 100, 1, 5, (size_t)(3 + t), t & 1, t & 2, false};
            check(ctx, &g);
        }
    }
    clf_ctx_free(ctx);
}

/* A, B and C as views of one buffer: the host backend maps it once. */
Test(gemm, operands_in_one_buffer)
{
    clf_ctx_t *ctx = tu_ctx();
    enum clf_gemm_backend be[2];
    for (int e = 0, ne = full_backends(ctx, be); e < ne; e++) {
        use(ctx, be[e]);
        for (int t = 0; t < 4; t++) {
            struct gcase single = {33, 7, 100, 2, 3, 1, t & 1, t & 2, true};
            struct gcase batched = {7, 33, 100, 1, 5, (size_t)(3 + t), t & 1, t & 2, true};
            check(ctx, &single);
            check(ctx, &batched);
        }
    }
    clf_ctx_free(ctx);
}

/* Attention's shape on a fused projection: one buffer holds QKV (rows,
 * 3D) and, after it, the scores (H, rows, rows); per head h, scores_h =
 * Q_h·K_hᵀ where Q_h and K_h are column slices of QKV (the batch stride
 * is d_k, the leading dimension 3D), then X·Xᵀ with A and B the very same
 * view, and a product whose A and B ranges overlap and interleave. */
Test(gemm, overlapping_views_of_one_buffer)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t rows = 19, H = 3, dk = 5, D = H * dk, ld = 3 * D;
    const size_t nqkv = rows * ld, ns = H * rows * rows, n = nqkv + ns;
    float *x = malloc(n * 4), *want = malloc(n * 4);
    enum clf_gemm_backend be[2];
    for (int e = 0, ne = full_backends(ctx, be); e < ne; e++) {
        use(ctx, be[e]);
        /* the scores of every head, batched over heads */
        tu_fill(x, n, 7, -1, 1);
        memcpy(want, x, n * 4);
        for (size_t h = 0; h < H; h++)
            ref_gemm(want + nqkv + h * rows * rows, x + h * dk, x + D + h * dk, rows, rows, dk, 0.5f, 0.0f, false,
                     true, ld, ld, rows);
        clf_tensor t = tu_upload(ctx, x, n);
        struct clf_mat q = {t.buf, 0, ld, false, dk}, k = {t.buf, D, ld, true, dk},
                       s = {t.buf, nqkv, rows, false, rows * rows};
        cr_assert_eq(clf_gemm_batched(ctx, rows, rows, dk, 0.5f, &q, &k, 0.0f, &s, H), CLF_OK, "%s",
                     clf_ctx_error(ctx));
        float *got = tu_download(ctx, &t, n);
        cr_assert(tu_close("scores from fused QKV", got, want, n, 1e-5, 1e-4), "backend %s",
                  clf_gemm_backend_str(be[e]));
        memcpy(x, got, n * 4);  /* what the buffer holds now */
        free(got);

        /* X·Xᵀ: A and B one view (QKV's first rows, all 3D columns), C
         * the scores' area */
        memcpy(want, x, n * 4);
        const size_t m = 11;
        ref_gemm(want + nqkv, x, x, m, m, ld, 1.0f, 0.0f, false, true, ld, ld, m);
        struct clf_mat xa = {t.buf, 0, ld, false, 0}, xb = {t.buf, 0, ld, true, 0}, xc = {t.buf, nqkv, m, false, 0};
        cr_assert_eq(clf_gemm(ctx, m, m, ld, 1.0f, &xa, &xb, 0.0f, &xc), CLF_OK, "%s", clf_ctx_error(ctx));
        got = tu_download(ctx, &t, n);
        cr_assert(tu_close("X·Xᵀ", got, want, n, 1e-5, 1e-4), "backend %s", clf_gemm_backend_str(be[e]));
        memcpy(x, got, n * 4);
        free(got);

        /* A from row 2, B from row 0 of the same buffer (their ranges
         * overlap), C accumulating (beta 1) in the scores' area */
        memcpy(want, x, n * 4);
        ref_gemm(want + nqkv + 1, x + 2 * ld, x, 6, 9, 8, -1.0f, 1.0f, false, false, ld, ld, 10);
        struct clf_mat oa = {t.buf, 2 * ld, ld, false, 0}, ob = {t.buf, 0, ld, false, 0},
                       oc = {t.buf, nqkv + 1, 10, false, 0};
        cr_assert_eq(clf_gemm(ctx, 6, 9, 8, -1.0f, &oa, &ob, 1.0f, &oc), CLF_OK, "%s", clf_ctx_error(ctx));
        got = tu_download(ctx, &t, n);
        cr_assert(tu_close("overlapping A and B", got, want, n, 1e-5, 1e-4), "backend %s",
                  clf_gemm_backend_str(be[e]));
        free(got);
        clf_tensor_free(&t);
    }
    free(x), free(want);
    clf_ctx_free(ctx);
}

Test(gemm, bad_arguments_are_refused_alike)
{
    clf_ctx_t *ctx = tu_ctx();
    float x[64] = {0};
    clf_tensor t = tu_upload(ctx, x, 64);
    enum clf_gemm_backend be[2];
    for (int e = 0, ne = backends(ctx, be); e < ne; e++) {
        use(ctx, be[e]);
        const char *name = clf_gemm_backend_str(be[e]);
        struct clf_mat a = {t.buf, 0, 2, false, 0}, b = {t.buf, 0, 8, false, 0}, c = {t.buf, 0, 8, false, 0};
        clf_status st = clf_gemm(ctx, 4, 8, 4, 1, &a, &b, 0, &c);  /* lda 2 < k 4 */
        cr_assert_eq(st, CLF_ERR_ARG, "%s", name);
        cr_assert(strstr(clf_ctx_error(ctx), "lda = 2 is less than 4"), "%s: %s", name, clf_ctx_error(ctx));
        struct clf_mat at = {t.buf, 0, 3, true, 0};  /* A stored k×m = 4×4: lda ≥ 4 */
        cr_assert_eq(clf_gemm(ctx, 4, 8, 4, 1, &at, &b, 0, &c), CLF_ERR_ARG, "%s", name);
        cr_assert(strstr(clf_ctx_error(ctx), "lda = 3"), "%s: %s", name, clf_ctx_error(ctx));
        struct clf_mat cbad = {t.buf, 0, 7, false, 0};  /* ldc 7 < n 8 */
        a.ld = 4;
        cr_assert_eq(clf_gemm(ctx, 4, 8, 4, 1, &a, &b, 0, &cbad), CLF_ERR_ARG, "%s", name);
        cr_assert(strstr(clf_ctx_error(ctx), "ldc = 7"), "%s: %s", name, clf_ctx_error(ctx));
        /* C at offset 40: 4 rows of 8 need 72 floats of a 64-float buffer */
        struct clf_mat cfar = {t.buf, 40, 8, false, 0};
        cr_assert_eq(clf_gemm(ctx, 4, 8, 4, 1, &a, &b, 0, &cfar), CLF_ERR_ARG, "%s", name);
        cr_assert(strstr(clf_ctx_error(ctx), "C runs past its buffer"), "%s: %s", name, clf_ctx_error(ctx));
        cr_assert(strstr(clf_ctx_error(ctx), "needs 72 floats, the buffer holds 64"), "%s: %s", name,
                  clf_ctx_error(ctx));
        /* a batch whose last matrix runs past: B's 3rd at 2·30 + 3·8 = 84 */
        struct clf_mat bb = {t.buf, 0, 8, false, 30}, cb = {t.buf, 0, 8, false, 0}, ab = {t.buf, 0, 4, false, 0};
        cr_assert_eq(clf_gemm_batched(ctx, 1, 8, 4, 1, &ab, &bb, 0, &cb, 3), CLF_ERR_ARG, "%s", name);
        cr_assert(strstr(clf_ctx_error(ctx), "B runs past its buffer"), "%s: %s", name, clf_ctx_error(ctx));
        cr_assert_eq(clf_gemm(ctx, 4, 8, 0, 1, &a, &b, 0, &c), CLF_ERR_ARG, "%s", name);
        cr_assert(strstr(clf_ctx_error(ctx), "k is 0"), "%s: %s", name, clf_ctx_error(ctx));
    }
    clf_tensor_free(&t);
    clf_ctx_free(ctx);
}

/* The default: the host's BLAS exactly on CPU devices with host-unified
 * memory; CLF_GEMM overrides it, and a word it does not know is refused. */
Test(gemm_backend, default_and_environment)
{
    tu_setting("CLF_GEMM", NULL);
    clf_ctx_t *ctx = tu_ctx();
    const struct clf_device_info *d = clf_ctx_device(ctx);
    bool host = (d->type & CL_DEVICE_TYPE_CPU) && d->host_unified;
    cr_assert_eq(clf_ctx_gemm(ctx), host ? CLF_GEMM_HOST : CLF_GEMM_CLBLAST, "%s device, host_unified %d: %s",
                 d->type & CL_DEVICE_TYPE_CPU ? "cpu" : "other", d->host_unified,
                 clf_gemm_backend_str(clf_ctx_gemm(ctx)));
    clf_ctx_free(ctx);

    tu_setting("CLF_GEMM", "clblast");
    ctx = tu_ctx();
    cr_assert_eq(clf_ctx_gemm(ctx), CLF_GEMM_CLBLAST);
    clf_ctx_free(ctx);

    tu_setting("CLF_GEMM", "cblas");
    ctx = NULL;
    cr_assert_eq(clf_ctx_init(&ctx, NULL), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(NULL), "CLF_GEMM=cblas"), "%s", clf_ctx_error(NULL));
    cr_assert(strstr(clf_ctx_error(NULL), "'host'"), "%s", clf_ctx_error(NULL));
}

/* A device whose memory is not the host's (here shaped so) refuses the
 * host's BLAS by name, however it is asked for. */
Test(gemm_backend, host_refused_without_unified_memory)
{
    tu_setting("CLF_GEMM", NULL);
    tu_setting("CLF_DEVICE_LIMITS", "unified=0");
    clf_ctx_t *ctx = tu_ctx();
    const struct clf_device_info *d = clf_ctx_device(ctx);
    cr_assert_not(d->host_unified);
    cr_assert_eq(clf_ctx_gemm(ctx), CLF_GEMM_CLBLAST);
    cr_assert_eq(clf_ctx_gemm_set(ctx, CLF_GEMM_HOST), CLF_ERR_UNSUPPORTED);
    cr_assert(strstr(clf_ctx_error(ctx), d->device_name), "%s", clf_ctx_error(ctx));
    cr_assert(strstr(clf_ctx_error(ctx), "does not share the host's memory"), "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_ctx_gemm(ctx), CLF_GEMM_CLBLAST);
    enum clf_gemm_backend be;
    cr_assert_eq(clf_gemm_backend_choose(d, "host", &be), CLF_ERR_UNSUPPORTED);
    cr_assert(strstr(clf_ctx_error(NULL), d->device_name), "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_gemm_backend_choose(d, "clblast", &be), CLF_OK);
    cr_assert_eq(be, CLF_GEMM_CLBLAST);
    char name[128];
    snprintf(name, sizeof name, "%s", d->device_name);
    clf_ctx_free(ctx);

    tu_setting("CLF_GEMM", "host");
    ctx = NULL;
    cr_assert_eq(clf_ctx_init(&ctx, NULL), CLF_ERR_UNSUPPORTED);
    cr_assert(strstr(clf_ctx_error(NULL), "CLF_GEMM=host"), "%s", clf_ctx_error(NULL));
    cr_assert(strstr(clf_ctx_error(NULL), name), "%s", clf_ctx_error(NULL));
}

/* Profiling times the host's GEMMs under their own names, as CLBlast's. */
Test(gemm_backend, host_gemm_is_profiled)
{
    clf_ctx_t *ctx = tu_ctx();
    if (!clf_ctx_device(ctx)->host_unified)
        cr_skip_test("the device's memory is not the host's");
    use(ctx, CLF_GEMM_HOST);
    cr_assert_eq(clf_ctx_profile_start(ctx), CLF_OK, "%s", clf_ctx_error(ctx));
    float x[64];
    tu_fill(x, 64, 5, -1, 1);
    clf_tensor t = tu_upload(ctx, x, 64);
    struct clf_mat a = {t.buf, 0, 4, false, 16}, b = {t.buf, 16, 4, true, 16}, c = {t.buf, 32, 4, false, 16};
    cr_assert_eq(clf_gemm(ctx, 4, 4, 4, 1, &a, &b, 0, &c), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_gemm_batched(ctx, 2, 4, 4, 1, &a, &b, 0, &c, 2), CLF_OK, "%s", clf_ctx_error(ctx));
    struct clf_profile_entry *p;
    size_t n;
    cr_assert_eq(clf_ctx_profile_report(ctx, &p, &n), CLF_OK, "%s", clf_ctx_error(ctx));
    bool single = false, batched = false;
    for (size_t i = 0; i < n; i++) {
        single |= !strcmp(p[i].name, "gemm NT (host BLAS)") && p[i].calls == 1;
        batched |= !strcmp(p[i].name, "batched gemm (host BLAS)") && p[i].calls == 1;
    }
    cr_assert(single && batched, "profile lacks the host GEMMs (%zu entries)", n);
    free(p);
    clf_tensor_free(&t);
    clf_ctx_free(ctx);
}

/* Calls of the profile (which starts afresh) whose names end in "(oneDNN)"
 * and in "(host BLAS)". */
static void profiled(clf_ctx_t *ctx, unsigned calls[2])
{
    struct clf_profile_entry *p;
    size_t n;
    cr_assert_eq(clf_ctx_profile_report(ctx, &p, &n), CLF_OK, "%s", clf_ctx_error(ctx));
    static const char *suffix[2] = {"(oneDNN)", "(host BLAS)"};
    calls[0] = calls[1] = 0;
    for (size_t i = 0; i < n; i++)
        for (int w = 0; w < 2; w++) {
            size_t l = strlen(p[i].name), s = strlen(suffix[w]);
            calls[w] += l >= s && !strcmp(p[i].name + l - s, suffix[w]) ? p[i].calls : 0;
        }
    free(p);
}

/* C = A·B + bias (a row) through clf_gemm_bias_fused, against the
 * reference, C's padding untouched. */
static void check_bias(clf_ctx_t *ctx, size_t m, size_t n, size_t k)
{
    const size_t lda = k + 1, ldb = n + 2, ldc = n + 3;
    float *a = malloc(m * lda * 4), *b = malloc(k * ldb * 4), *bias = malloc(n * 4), *c = malloc(m * ldc * 4),
          *want = malloc(m * ldc * 4);
    tu_fill(a, m * lda, 7, -1, 1);
    tu_fill(b, k * ldb, 8, -1, 1);
    tu_fill(bias, n, 9, -1, 1);
    tu_fill(c, m * ldc, 10, -1, 1);
    memcpy(want, c, m * ldc * 4);
    ref_gemm(want, a, b, m, n, k, 1.0f, 0.0f, false, false, lda, ldb, ldc);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            want[i * ldc + j] += bias[j];
    clf_tensor ta = tu_upload(ctx, a, m * lda), tb = tu_upload(ctx, b, k * ldb), tv = tu_upload(ctx, bias, n),
               tc = tu_upload(ctx, c, m * ldc);
    struct clf_mat ma = {ta.buf, 0, lda, false, 0}, mb = {tb.buf, 0, ldb, false, 0}, mv = {tv.buf, 0, n, false, 0},
                   mc = {tc.buf, 0, ldc, false, 0};
    cr_assert_eq(clf_gemm_bias_fused(ctx, m, n, k, &ma, &mb, &mv, &mc), CLF_OK, "%s", clf_ctx_error(ctx));
    float *got = tu_download(ctx, &tc, m * ldc);
    cr_assert(tu_close("gemm + bias", got, want, m * ldc, 1e-5, 1e-4));
    clf_tensor_free(&ta), clf_tensor_free(&tb), clf_tensor_free(&tv), clf_tensor_free(&tc);
    free(a), free(b), free(bias), free(c), free(want), free(got);
}

/* On the host backend a GEMM of at least 2^25 multiply-adds (training's)
 * runs through oneDNN's float32 matmul where the build has oneDNN: every
 * orientation with padded leading dimensions, offsets, alpha and beta, and
 * the bias added as C is stored; smaller ones, and every one under
 * CLF_GEMM_F32=openblas, stay on the host BLAS. The profile says who ran
 * each. */
Test(gemm, large_ones_on_the_host_through_onednn)
{
    clf_ctx_t *ctx = tu_ctx();
    if (!clf_ctx_device(ctx)->host_unified) {
        clf_ctx_free(ctx);
        cr_skip_test("the device does not share the host's memory");
    }
    use(ctx, CLF_GEMM_HOST);
    cr_assert_eq(clf_ctx_profile_start(ctx), CLF_OK, "%s", clf_ctx_error(ctx));
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            tu_setting("CLF_GEMM_F32", "openblas");
        for (int t = 0; t < 4; t++) {
            struct gcase g = {520, 263, 257, 3, 11, 1, t & 1, t & 2, t == 3}; /* 35.1M multiply-adds */
            check(ctx, &g);
        }
        check_bias(ctx, 600, 259, 256);
        struct gcase small = {100, 257, 33, 0, 0, 1, false, true, false};
        check(ctx, &small);
        const unsigned want = round == 0 && clf_gemm_dnnl_built() ? 5 : 0;
        unsigned calls[2];
        profiled(ctx, calls);
        cr_assert_eq(calls[0], want, "round %d: %u GEMMs through oneDNN, want %u", round, calls[0], want);
        cr_assert_eq(calls[1], 6 - want, "round %d: %u GEMMs on the host BLAS, want %u", round, calls[1], 6 - want);
    }
    clf_ctx_free(ctx);
}
