/* test_kernels_small.c: every kernel in cl/, forward and backward, once
 * or twice on tiny odd shapes (1, 3, 5, 7, 33: no multiple of any tile),
 * each checked against the plain-C references (tests/ref_ops.c,
 * tests/ref_attention.c; the layer norm and FFN backward against central
 * finite differences of their double references). Small enough to run
 * under Oclgrind's simulator in CI (ctest label `oclgrind`, see
 * tests/CMakeLists.txt), where any report of a data race, an uninitialised
 * value, an out-of-bounds access, barrier divergence or a bad API call
 * fails the run; and fast on PoCL, where it runs with the other tests.
 *
 * Which test launches which kernel:
 *   elementwise.cl  add, bias_add, residual, dropout,
 *                   column_fill                              small/elementwise
 *                   colsum_part(4), colsum_final             small/elementwise (bias backward),
 *                                                            small/layernorm (dgain, dbias)
 *   softmax.cl      softmax_fwd (with and without valid lengths), softmax_bwd,
 *                   logsoftmax_fwd; lse_rows                 small/softmax, _wide, _one_item; small/topk
 *   layernorm.cl    ln_fwd, ln_res_fwd, ln_bwd, ln_bwd_drop,
 *                   ln_param_part                            small/layernorm, _wide, _one_item
 *   ffn.cl          ffn_act, ffn_dact (ReLU), ffn_dact_z     small/ffn, small/ffn_silu, small/ffn_gelu
 *   embed.cl        pos_sinusoid, embed_fwd, embed_bwd_table, embed_bwd_pos
 *                   (QUAD 0: d = 7, 13; QUAD 1: d = 8, 12; the
 *                   backward's flattened items ending mid-group) small/embed
 *   loss.cl         loss_rows, loss_sum (pad rows, smoothing) small/loss, _wide, _one_row, _bias,
 *                   (one work-item per row: WG 1's float8 shape) small/loss_one_item
 *   adam.cl         adam_sq_part, adam_norm, adam_update     small/adam
 *   attention.cl,   attn_fwd, attn_bwd_delta, attn_bwd_fused (one item per
 *   attention_bwd.cl  row), attn_bwd_dkdv, attn_bwd_dq (GPUs' lanes, or
 *                   CLF_ATTN_BWD=split)                      small/attention_fused_backward, _split_backward
 *                   (every mask combination; d_k 8, 4 and 3: the float8,
 *                   float4 and scalar paths; the device's tiles and small
 *                   ones, so that rows cross tile edges)  small/attention, small/attention_small_tiles
 *                   attn_mask_scores (+ softmax_fwd)         small/attention_naive, _masked
 *   kv_cache.cl     attn_cache_append, attn_cache_gather4,   small/decode (append + step, beam reorder,
 *                   attn_cache_move4                         a row moved in place, beams read in
 *                                                            their ancestors' rows),
 *                                                            small/decode_rows_at_own_positions
 *   decode_attn.cl  attn_dec_part, attn_dec_combine (d_k 8, 4, 3; one part
 *                   and three; self with and without a window, cross with
 *                   a row of no key; 70 keys: two batches of the GPU
 *                   shape's lane scores)                     small/decode_attn, small/decode (one part)
 *   topk.cl         topk_rows (ties, skip, rows shorter than k; also shifted by
 *                   softmax.cl's lse_rows)                    small/topk, _wide, _one_item
 *   gemm_half.cl    to_half, from_half_bias (strided source and destination,
 *                   with and without a bias; ties, subnormals) small/half_convert
 *                   (no half arithmetic: they run where cl_khr_fp16 is
 *                   missing too, Oclgrind included; the Hgemm between them
 *                   only in test_compute, on devices with it)
 * CLBlast's GEMM (not ours) runs in small/gemm and inside FFN, loss, the
 * naive attention and decoding. Adam's CONTIG=1 variant of adam_sq_part is
 * compiled for CPU devices only, so it runs on PoCL, not under Oclgrind
 * (a GPU to the library).
 *
 * One case of the loss and of the naive attention per test (each test is a
 * process of its own): run twice in one process, Oclgrind 21.10's
 * --uninitialized flags the second call's reads of buffers that its
 * kernels have just written (loss_sum reading part, softmax_fwd reading
 * the scores), even when loss_rows writes constants there; each case alone
 * gives no report. Its shadow memory goes stale when freed buffers are
 * reused (both ops allocate scratch per call). */
#include "attention/attention_internal.h"
#include "ops_testutil.h"
#include "ref_attention.h"
#include "runtime/program.h"
#include "runtime/scratch.h"

/* ------------------------------------------------------------ helpers */

/* Central differences of f at v (n values), into grad (n, doubles). */
typedef double (*fd_fn)(const void *arg, const double *v);
static void fd_grad(double *grad, fd_fn f, const void *arg, const double *v0, size_t n)
{
    const double h = 1e-5;
    double *v = malloc(n * sizeof *v);
    memcpy(v, v0, n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i] = v0[i] + h;
        double a = f(arg, v);
        v[i] = v0[i] - h;
        double b = f(arg, v);
        v[i] = v0[i];
        grad[i] = (a - b) / (2 * h);
    }
    free(v);
}

static double *dcat(const float *const *parts, const size_t *len, int nparts, size_t *total)
{
    size_t n = 0;
    for (int i = 0; i < nparts; i++)
        n += len[i];
    double *v = malloc(n * sizeof *v), *p = v;
    for (int i = 0; i < nparts; i++)
        for (size_t j = 0; j < len[i]; j++)
            *p++ = parts[i][j];
    *total = n;
    return v;
}

/* ------------------------------------------------------------ half conversions */

static void half_launch(clf_ctx_t *ctx, const char *name, const struct clf_arg *args, int nargs, size_t n)
{
    cl_kernel k;
    cr_assert_eq(clf_kernel_get(ctx, "gemm_half.cl", NULL, name, &k), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_kernel_set_args(ctx, k, name, args, nargs), CLF_OK, "%s", clf_ctx_error(ctx));
    size_t local = clf_kernel_wg_limit(ctx, k, 64);
    cr_assert_eq(clf_kernel_launch(ctx, k, name, 1, &n, &local), CLF_OK, "%s", clf_ctx_error(ctx));
}

/* src (rows, cols) at offset so, rows ld apart, to half and back into dst
 * (rows, cols) at offset do, rows ldd apart, without and with a bias:
 * exactly the values rounded to half (plus the bias, in float). */
Test(small, half_convert)
{
    clf_ctx_t *ctx = tu_ctx();
    const cl_uint rows = 7, cols = 5, ld = 9, so = 3, ldd = 6, dof = 2, bo = 1, n = rows * cols;
    const size_t ns = so + rows * ld, nd = dof + rows * ldd;
    float *src = ot_rand(ns, 11, -3, 3), *bias = ot_rand(bo + cols, 12, -1, 1);
    /* ties to even (1 + 2^-11 down to 1, 1 + 3·2^-11 up), subnormals, the largest half */
    const float special[6] = {1 + 0x1p-11f, 1 + 0x1p-10f + 0x1p-11f, 3e-6f, -0x1p-24f * 2.5f, 65504, -0x1p-15f};
    for (int i = 0; i < 6; i++)
        src[so + (size_t)(i % rows) * ld + (size_t)(i % cols)] = special[i];
    float *zero = calloc(nd, sizeof *zero);
    clf_tensor ts = ot_up2(ctx, src, 1, ns), tb = ot_up2(ctx, bias, 1, bo + cols), td0 = ot_up2(ctx, zero, 1, nd),
               td1 = ot_up2(ctx, zero, 1, nd);
    cl_int err;
    cl_mem h = clCreateBuffer(clf_ctx_cl_context(ctx), CL_MEM_READ_WRITE, n * 2, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    const struct clf_arg a1[] = {CLF_ARG(h), CLF_ARG(ts.buf), CLF_ARG(so), CLF_ARG(ld), CLF_ARG(rows), CLF_ARG(cols)};
    half_launch(ctx, "to_half", a1, 6, n);
    for (cl_uint has = 0; has < 2; has++) {
        clf_tensor *td = has ? &td1 : &td0;
        const struct clf_arg a2[] = {CLF_ARG(td->buf), CLF_ARG(dof), CLF_ARG(ldd),  CLF_ARG(h),   CLF_ARG(tb.buf),
                                     CLF_ARG(bo),      CLF_ARG(has), CLF_ARG(rows), CLF_ARG(cols)};
        half_launch(ctx, "from_half_bias", a2, 9, n);
        float *want = calloc(nd, sizeof *want);
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++)
                want[dof + r * ldd + c] = ref_half_round(src[so + r * ld + c]) + (has ? bias[bo + c] : 0.0f);
        cr_expect(ot_check(ctx, has ? "from_half_bias (bias)" : "from_half_bias", td, want, nd, 0, 0));
        free(want);
    }
    clReleaseMemObject(h);
    clf_tensor_free(&ts), clf_tensor_free(&tb), clf_tensor_free(&td0), clf_tensor_free(&td1);
    free(src), free(bias), free(zero);
    clf_ctx_free(ctx);
}

/* ------------------------------------------------------------ elementwise */

Test(small, elementwise)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t rows = 33, cols = 7, n = rows * cols; /* n = 231: a partial block of four */
    float *a = ot_rand(n, 1, -1, 1), *b = ot_rand(n, 2, -1, 1), *bias = ot_rand(cols, 3, -1, 1),
          *db0 = ot_rand(cols, 4, -1, 1), *want = malloc(n * 4);
    clf_tensor ta = ot_up2(ctx, a, rows, cols), tb = ot_up2(ctx, b, rows, cols), ty = ot_up2(ctx, NULL, rows, cols),
               tbias = ot_up2(ctx, bias, 1, cols), tdb = ot_up2(ctx, db0, 1, cols);
    cr_assert_eq(clf_add(ctx, &ty, &ta, &tb), CLF_OK, "%s", clf_ctx_error(ctx));
    for (size_t i = 0; i < n; i++)
        want[i] = a[i] + b[i];
    cr_expect(ot_check(ctx, "add", &ty, want, n, 0, 0));
    cr_assert_eq(clf_bias_add(ctx, &ty, &tbias), CLF_OK, "%s", clf_ctx_error(ctx));
    ref_bias_add(want, bias, rows, cols);
    cr_expect(ot_check(ctx, "bias_add", &ty, want, n, 1e-6, 1e-6));
    cr_assert_eq(clf_bias_backward(ctx, &tdb, &ta), CLF_OK, "%s", clf_ctx_error(ctx));
    ref_bias_backward(db0, a, rows, cols);
    cr_expect(ot_check(ctx, "bias_backward", &tdb, db0, cols, 1e-5, 1e-5));
    {  /* 8 columns: colsum_part4, four per work-item */
        float *d8 = ot_rand(8, 5, -1, 1);
        clf_tensor a8 = ot_up2(ctx, a, 28, 8), db8 = ot_up2(ctx, d8, 1, 8);  /* 224 of a's 231 floats */
        cr_assert_eq(clf_bias_backward(ctx, &db8, &a8), CLF_OK, "%s", clf_ctx_error(ctx));
        ref_bias_backward(d8, a, 28, 8);
        cr_expect(ot_check(ctx, "bias_backward (8 columns)", &db8, d8, 8, 1e-5, 1e-5));
        clf_tensor_free(&a8), clf_tensor_free(&db8);
        free(d8);
    }
    struct clf_dropout drop = {0.25f, 99, 3, 4};
    cr_assert_eq(clf_residual_forward(ctx, &ty, &ta, &tb, &drop), CLF_OK, "%s", clf_ctx_error(ctx));
    ref_residual_forward(want, a, b, n, &drop);
    cr_expect(ot_check(ctx, "residual_forward", &ty, want, n, 1e-6, 1e-6));
    cr_assert_eq(clf_residual_backward(ctx, &ty, &ta, &drop), CLF_OK, "%s", clf_ctx_error(ctx));
    ref_residual_backward(want, a, n, &drop);
    cr_expect(ot_check(ctx, "residual_backward", &ty, want, n, 1e-6, 1e-6));
    cr_assert_eq(clf_column_fill(ctx, &ty, 6, -1e30f), CLF_OK, "%s", clf_ctx_error(ctx)); /* the last column */
    for (size_t r = 0; r < rows; r++)
        want[r * cols + 6] = -1e30f;
    cr_expect(ot_check(ctx, "column_fill", &ty, want, n, 0, 0));
    clf_tensor_free(&ta), clf_tensor_free(&tb), clf_tensor_free(&ty), clf_tensor_free(&tbias), clf_tensor_free(&tdb);
    free(a), free(b), free(bias), free(db0), free(want);
    clf_ctx_free(ctx);
}

/* ---------------------------------------------------------------- softmax */

/* valid lengths: full, 1, none, a few, past the row, negative, all but one */
static void softmax_case(clf_ctx_t *ctx, size_t rows, size_t cols)
{
    const size_t n = rows * cols;
    int32_t valid[7] = {(int32_t)cols, 1, 0, 7, (int32_t)cols + 7, -2, (int32_t)cols - 1};
    cr_assert(rows <= 7);
    float *x = ot_rand(n, 5, -3, 3), *dy = ot_rand(n, 6, -1, 1), *y = malloc(n * 4), *want = malloc(n * 4);
    clf_tensor tv = tu_upload_ints(ctx, valid, rows);
    clf_tensor tx = ot_up2(ctx, x, rows, cols), ty = ot_up2(ctx, NULL, rows, cols), tdy = ot_up2(ctx, dy, rows, cols);
    cr_assert_eq(clf_softmax_forward(ctx, &ty, &tx, &tv), CLF_OK, "%s", clf_ctx_error(ctx));
    ref_softmax_forward(want, x, rows, cols, valid);
    cr_expect(ot_check(ctx, "softmax valid", &ty, want, n, 1e-6, 1e-5));
    cr_assert_eq(clf_softmax_forward(ctx, &ty, &tx, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    ref_softmax_forward(y, x, rows, cols, NULL);
    cr_expect(ot_check(ctx, "softmax", &ty, y, n, 1e-6, 1e-5));
    cr_assert_eq(clf_softmax_backward(ctx, &tdy, &ty, &tdy), CLF_OK, "%s", clf_ctx_error(ctx)); /* dx aliases dy */
    ref_softmax_backward(want, y, dy, rows, cols);
    cr_expect(ot_check(ctx, "softmax_backward", &tdy, want, n, 1e-6, 1e-5));
    cr_assert_eq(clf_logsoftmax_forward(ctx, &tx, &tx), CLF_OK, "%s", clf_ctx_error(ctx)); /* in place */
    ref_logsoftmax_forward(want, x, rows, cols);
    cr_expect(ot_check(ctx, "logsoftmax", &tx, want, n, 1e-5, 1e-5));
    clf_tensor_free(&tv);
    clf_tensor_free(&tx), clf_tensor_free(&ty), clf_tensor_free(&tdy);
    free(x), free(dy), free(y), free(want);
}

Test(small, softmax)
{
    clf_ctx_t *ctx = tu_ctx();
    softmax_case(ctx, 7, 33);
    clf_ctx_free(ctx);
}

/* rows longer than the widest work-group (256): each item takes two strides */
Test(small, softmax_wide)
{
    clf_ctx_t *ctx = tu_ctx();
    softmax_case(ctx, 3, 257);
    clf_ctx_free(ctx);
}

/* one work-item per row, as PoCL's CPU device runs the row ops by default */
Test(small, softmax_one_item)
{
    tu_setting("CLF_OPS_CPU_WG", "1");
    clf_ctx_t *ctx = tu_ctx();
    softmax_case(ctx, 7, 33);
    clf_ctx_free(ctx);
}

/* ------------------------------------------------------------- layer norm */

struct ln_fd {
    size_t rows, d;
    const float *w; /* (rows, d): L = Σ w ⊙ y */
};

/* v = [x (rows, d) | gain (d) | bias (d)] */
static double ln_loss(const void *arg, const double *v)
{
    const struct ln_fd *a = arg;
    double *y = malloc(a->d * sizeof *y), l = 0;
    for (size_t r = 0; r < a->rows; r++) {
        ref_layernorm_row_d(y, v + r * a->d, v + a->rows * a->d, v + (a->rows + 1) * a->d, a->d, 1e-5);
        for (size_t j = 0; j < a->d; j++)
            l += a->w[r * a->d + j] * y[j];
    }
    free(y);
    return l;
}

static void layernorm_case(clf_ctx_t *ctx, size_t rows, size_t d)
{
    const size_t n = rows * d;
    float *x = ot_rand(n, 7, -2, 2), *g = ot_rand(d, 8, 0.5f, 1.5f), *b = ot_rand(d, 9, -1, 1),
          *w = ot_rand(n, 10, -1, 1), *dg0 = ot_rand(d, 11, -1, 1), *db0 = ot_rand(d, 12, -1, 1);
    float *y = malloc(n * 4), *mu = malloc(rows * 4), *rs = malloc(rows * 4);
    ref_layernorm_forward(y, mu, rs, x, g, b, rows, d, 1e-5f);
    clf_tensor tx = ot_up2(ctx, x, rows, d), tg = ot_up2(ctx, g, 1, d), tb = ot_up2(ctx, b, 1, d),
               ty = ot_up2(ctx, NULL, rows, d), tm = ot_up2(ctx, NULL, rows, 1), tr = ot_up2(ctx, NULL, rows, 1),
               tw = ot_up2(ctx, w, rows, d), tdg = ot_up2(ctx, dg0, 1, d), tdb = ot_up2(ctx, db0, 1, d);
    cr_assert_eq(clf_layernorm_forward(ctx, &ty, &tm, &tr, &tx, &tg, &tb, 1e-5f), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_expect(ot_check(ctx, "layernorm y", &ty, y, n, 1e-5, 1e-5));
    cr_expect(ot_check(ctx, "layernorm mean", &tm, mu, rows, 1e-6, 1e-5));
    cr_expect(ot_check(ctx, "layernorm rstd", &tr, rs, rows, 1e-6, 1e-5));
    cr_assert_eq(clf_layernorm_backward(ctx, &tw, &tdg, &tdb, &tw, &tx, &tm, &tr, &tg), CLF_OK, "%s",
                 clf_ctx_error(ctx));
    const float *parts[3] = {x, g, b};
    size_t len[3] = {n, d, d}, nv;
    double *v = dcat(parts, len, 3, &nv), *grad = malloc(nv * sizeof *grad);
    struct ln_fd arg = {rows, d, w};
    fd_grad(grad, ln_loss, &arg, v, nv);
    float *wdx = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        wdx[i] = (float)grad[i];
    for (size_t j = 0; j < d; j++)
        dg0[j] += (float)grad[n + j], db0[j] += (float)grad[n + d + j];
    cr_expect(ot_check(ctx, "layernorm dx", &tw, wdx, n, 2e-4, 1e-3));
    cr_expect(ot_check(ctx, "layernorm dgain", &tdg, dg0, d, 2e-4, 1e-3));
    cr_expect(ot_check(ctx, "layernorm dbias", &tdb, db0, d, 2e-4, 1e-3));
    clf_tensor_free(&tx), clf_tensor_free(&tg), clf_tensor_free(&tb), clf_tensor_free(&ty), clf_tensor_free(&tm);
    clf_tensor_free(&tr), clf_tensor_free(&tw), clf_tensor_free(&tdg), clf_tensor_free(&tdb);
    free(x), free(g), free(b), free(w), free(dg0), free(db0), free(y), free(mu), free(rs), free(v), free(grad);
    free(wdx);
}

/* the post-norm residual in one kernel against the unfused kernels and
 * the reference: with dropout (rows starting mid-block) and without */
static void residual_ln_cases(clf_ctx_t *ctx, size_t rows, size_t d, bool alias)
{
    const struct clf_dropout drop = {0.25f, 0xfeedULL, 2, 9};
    cr_expect(ot_residual_ln_case(ctx, rows, d, alias, NULL));
    cr_expect(ot_residual_ln_case(ctx, rows, d, !alias, &drop));
}

Test(small, layernorm)
{
    clf_ctx_t *ctx = tu_ctx();
    layernorm_case(ctx, 5, 33);
    residual_ln_cases(ctx, 5, 33, true);
    clf_ctx_free(ctx);
}

/* d past the widest work-group (256); 33 rows: three row chunks for dgain */
Test(small, layernorm_wide)
{
    clf_ctx_t *ctx = tu_ctx();
    layernorm_case(ctx, 33, 257);
    residual_ln_cases(ctx, 33, 257, false);
    clf_ctx_free(ctx);
}

/* one work-item per row, as PoCL's CPU device runs the row ops by default */
Test(small, layernorm_one_item)
{
    tu_setting("CLF_OPS_CPU_WG", "1");
    clf_ctx_t *ctx = tu_ctx();
    layernorm_case(ctx, 5, 33);
    residual_ln_cases(ctx, 5, 33, true);
    clf_ctx_free(ctx);
}

/* -------------------------------------------------------------------- FFN */

struct ffn_fd {
    size_t rows, d, dff;
    const float *w;
    const struct clf_dropout *drop;
    int act;
};

/* v = [x | w1 | b1 | w2 | b2] */
static double ffn_loss(const void *arg, const double *v)
{
    const struct ffn_fd *a = arg;
    size_t rows = a->rows, d = a->d, dff = a->dff;
    const double *x = v, *w1 = x + rows * d, *b1 = w1 + d * dff, *w2 = b1 + dff, *b2 = w2 + dff * d;
    double *y = malloc(rows * d * sizeof *y), l = 0;
    ref_ffn_forward_d_act(y, x, w1, b1, w2, b2, rows, d, dff, a->drop, a->act);
    for (size_t i = 0; i < rows * d; i++)
        l += a->w[i] * y[i];
    free(y);
    return l;
}

static void ffn_case(enum clf_activation act)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t rows = 3, d = 5, dff = 7; /* rows·dff = 21: a partial block of four */
    struct clf_dropout drop = {0.2f, 5, 1, 2};
    size_t len[5] = {rows * d, d * dff, dff, dff * d, d};
    float *h[5], *g0[5];
    for (int i = 0; i < 5; i++)
        h[i] = ot_rand(len[i], 60 + i, -1, 1), g0[i] = ot_rand(len[i], 70 + i, -1, 1);
    float *w = ot_rand(rows * d, 80, -1, 1), *y = malloc(rows * d * 4), *hid = malloc(rows * dff * 4);
    ref_ffn_forward_act(y, hid, h[0], h[1], h[2], h[3], h[4], rows, d, dff, &drop, act);
    struct clf_ffn_params p = {ot_up2(ctx, h[1], d, dff), ot_up2(ctx, h[2], 1, dff), ot_up2(ctx, h[3], dff, d),
                               ot_up2(ctx, h[4], 1, d), act};
    struct clf_ffn_params g = {ot_up2(ctx, g0[1], d, dff), ot_up2(ctx, g0[2], 1, dff), ot_up2(ctx, g0[3], dff, d),
                               ot_up2(ctx, g0[4], 1, d), act};
    clf_tensor tx = ot_up2(ctx, h[0], rows, d), ty = ot_up2(ctx, NULL, rows, d), th = ot_up2(ctx, NULL, rows, dff),
               tw = ot_up2(ctx, w, rows, d), tdx = ot_up2(ctx, g0[0], rows, d);
    cr_assert_eq(clf_ffn_forward(ctx, &ty, &th, &tx, &p, &drop), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_expect(ot_check(ctx, "ffn y", &ty, y, rows * d, 1e-5, 1e-5));
    cr_expect(ot_check(ctx, "ffn hidden", &th, hid, rows * dff, 1e-5, 1e-5));
    cr_assert_eq(clf_ffn_backward(ctx, &tdx, &g, &tw, &tx, &th, &p, &drop), CLF_OK, "%s", clf_ctx_error(ctx));
    size_t nv;
    double *v = dcat((const float *const *)h, len, 5, &nv), *grad = malloc(nv * sizeof *grad);
    struct ffn_fd arg = {rows, d, dff, w, &drop, act};
    fd_grad(grad, ffn_loss, &arg, v, nv);
    const clf_tensor *got[5] = {&tdx, &g.w1, &g.b1, &g.w2, &g.b2};
    const double *gp = grad;
    for (int i = 0; i < 5; i++) {
        for (size_t j = 0; j < len[i]; j++) /* dx is overwritten, parameter gradients added to */
            g0[i][j] = (float)((i ? g0[i][j] : 0) + gp[j]);
        gp += len[i];
        char what[48];
        snprintf(what, sizeof what, "ffn (activation %d) backward tensor %d", (int)act, i);
        cr_expect(ot_check(ctx, what, got[i], g0[i], len[i], 1e-4, 1e-3));
    }
    clf_tensor_free(&p.w1), clf_tensor_free(&p.b1), clf_tensor_free(&p.w2), clf_tensor_free(&p.b2);
    clf_tensor_free(&g.w1), clf_tensor_free(&g.b1), clf_tensor_free(&g.w2), clf_tensor_free(&g.b2);
    clf_tensor_free(&tx), clf_tensor_free(&ty), clf_tensor_free(&th), clf_tensor_free(&tw), clf_tensor_free(&tdx);
    for (int i = 0; i < 5; i++)
        free(h[i]), free(g0[i]);
    free(w), free(y), free(hid), free(v), free(grad);
    clf_ctx_free(ctx);
}

Test(small, ffn) { ffn_case(CLF_ACT_RELU); }
Test(small, ffn_silu) { ffn_case(CLF_ACT_SILU); }
Test(small, ffn_gelu) { ffn_case(CLF_ACT_GELU); }

/* ------------------------------------------------------------- embeddings */

static void embed_case(clf_ctx_t *ctx, size_t d, bool learned, enum clf_pos_layout layout)
{
    const size_t batch = 2, len = 3, vocab = 11, max_len = 7;
    struct clf_embed_desc desc = {.batch = batch,
                                  .len = len,
                                  .pos_offset = learned ? 2 : 5,
                                  .scale = sqrtf((float)d),
                                  .drop = {0.2f, 1234, 5, 6},
                                  .layout = layout};
    const int32_t ids[6] = {3, 0, 3, 10, 3, 0}; /* repeats: rows of one id are summed */
    char what[64];
    snprintf(what, sizeof what, "embed d=%zu learned=%d layout=%d", d, learned, (int)layout);
    ot_embed_case(ctx, what, ids, vocab, d, max_len, learned, &desc, d, 2e-5);
}

/* The backward's work-items are (distinct id or position, columns),
 * flattened: 13 distinct ids of 33 rows and 11 positions, with d = 13
 * (169 and 143 items) and 12 (three quads: 39 and 33), cross work-group
 * edges at odd places. */
static void embed_many_case(clf_ctx_t *ctx, size_t d)
{
    const size_t batch = 3, len = 11, vocab = 17, rows = batch * len;
    struct clf_embed_desc desc = {.batch = batch,
                                  .len = len,
                                  .pos_offset = 1,
                                  .scale = 1.5f,
                                  .drop = {0.2f, 99, 2, 3},
                                  .layout = CLF_POS_INTERLEAVED};
    int32_t ids[33];
    for (size_t r = 0; r < rows; r++)
        ids[r] = (int32_t)(r * 5 % 13); /* 0..12, each two or three times */
    char what[64];
    snprintf(what, sizeof what, "embed 13 ids d=%zu", d);
    ot_embed_case(ctx, what, ids, vocab, d, len + 1, true, &desc, d, 2e-5);
}

Test(small, embed)
{
    clf_ctx_t *ctx = tu_ctx();
    embed_case(ctx, 7, false, CLF_POS_INTERLEAVED); /* QUAD 0, sinusoids */
    embed_case(ctx, 7, false, CLF_POS_HALVES);      /* Marian's sinusoids, odd d */
    embed_case(ctx, 7, true, CLF_POS_INTERLEAVED);  /* QUAD 0, learned positions */
    embed_case(ctx, 8, true, CLF_POS_INTERLEAVED);  /* QUAD 1 */
    embed_many_case(ctx, 13);                       /* QUAD 0 */
    embed_many_case(ctx, 12);                       /* QUAD 1 */
    clf_ctx_free(ctx);
}

/* ------------------------------------------------------------------- loss */

static void loss_case(size_t N, size_t V, size_t d, float eps, bool bias)
{
    clf_ctx_t *ctx = tu_ctx();
    int32_t *tg = malloc(N * sizeof *tg);
    for (size_t r = 0; r < N; r++) /* pad rows (id 1) among real ones; targets at both ends of the row */
        tg[r] = r % 3 == 2 ? 1 : (int32_t)(r % 2 ? V - 1 : (r * 5) % V);
    ot_loss_case_bias(ctx, N, V, d, eps, tg, bias);
    free(tg);
    clf_ctx_free(ctx);
}

Test(small, loss) { loss_case(7, 33, 5, 0.1f, false); }

/* a bias on the logits: bias_add after the GEMM, its column sums after */
Test(small, loss_bias) { loss_case(7, 33, 5, 0.1f, true); }

/* V past the widest work-group (256): targets in both strides */
Test(small, loss_wide) { loss_case(5, 257, 4, 0.1f, false); }

Test(small, loss_one_row) { loss_case(1, 3, 1, 0.0f, false); }

/* The CPU shape of loss_rows (WG 1: one work-item per row, float8 passes):
 * V = 45 is one block of 32, one vector of 8 and five scalars. Under the
 * CPU-limits run it takes this shape; CLF_OPS_CPU_WG does not apply to the
 * GPU-limits run, which takes the wide one. */
Test(small, loss_one_item)
{
    tu_setting("CLF_OPS_CPU_WG", "1");
    loss_case(7, 45, 5, 0.1f, false);
}

/* ------------------------------------------------------------------- Adam */

Test(small, adam)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t n = 33;
    struct clf_adam_desc d = clf_adam_defaults(1e-2f);
    d.clip_norm = 0.5f, d.weight_decay = 0.01f;
    float *p = ot_rand(n, 1, -1, 1), *m = calloc(n, 4), *v = calloc(n, 4);
    size_t ns = clf_adam_scratch_size(ctx, n);
    clf_tensor tp = tu_upload(ctx, p, n), tm = tu_upload(ctx, m, n), tv = tu_upload(ctx, v, n),
               ts = ot_up2(ctx, NULL, 1, ns);
    for (uint32_t step = 1; step <= 2; step++) {
        float *g = ot_rand(n, 100 + step, -2, 2); /* norm ≈ 6.6: clipped to 0.5 */
        double norm = 0;
        for (size_t i = 0; i < n; i++)
            norm += (double)g[i] * g[i];
        norm = sqrt(norm);
        d.step = step;
        ref_adam_step(p, m, v, g, n, &d);
        clf_tensor tg = tu_upload(ctx, g, n);
        cr_assert_eq(clf_adam_step(ctx, &tp, &tm, &tv, &tg, &ts, &d), CLF_OK, "%s", clf_ctx_error(ctx));
        float *s = tu_download(ctx, &ts, ns);
        cr_expect(fabs(s[0] - norm) <= 1e-5 * norm, "norm %g, want %g", (double)s[0], norm);
        free(s), free(g);
        clf_tensor_free(&tg);
    }
    cr_expect(ot_check(ctx, "adam params", &tp, p, n, 1e-6, 0));
    cr_expect(ot_check(ctx, "adam m", &tm, m, n, 1e-6, 0));
    cr_expect(ot_check(ctx, "adam v", &tv, v, n, 1e-6, 0));
    clf_tensor_free(&tp), clf_tensor_free(&tm), clf_tensor_free(&tv), clf_tensor_free(&ts);
    free(p), free(m), free(v);
    clf_ctx_free(ctx);
}

/* ------------------------------------------------------------------- GEMM */

/* CLBlast's kernels, not ours: one tiny product */
Test(small, gemm)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t m = 7, n = 5, k = 3;
    float *a = ot_rand(m * k, 1, -1, 1), *b = ot_rand(k * n, 2, -1, 1), *want = calloc(m * n, 4);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            for (size_t l = 0; l < k; l++)
                want[i * n + j] += a[i * k + l] * b[l * n + j];
    clf_tensor ta = ot_up2(ctx, a, m, k), tb = ot_up2(ctx, b, k, n), tc = ot_up2(ctx, NULL, m, n);
    struct clf_mat ma = {ta.buf, 0, k, false, 0}, mb = {tb.buf, 0, n, false, 0}, mc = {tc.buf, 0, n, false, 0};
    cr_assert_eq(clf_gemm(ctx, m, n, k, 1.0f, &ma, &mb, 0.0f, &mc), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_expect(ot_check(ctx, "gemm", &tc, want, m * n, 1e-5, 1e-5));
    clf_tensor_free(&ta), clf_tensor_free(&tb), clf_tensor_free(&tc);
    free(a), free(b), free(want);
    clf_ctx_free(ctx);
}

/* -------------------------------------------------------------- attention */

struct acase {
    size_t B, H, nq, nk, dk;
    int32_t kl[2]; /* key lengths of the two sequences; kl[0] < 0: no padding mask */
    bool causal;
    int window;
    size_t qoff;
};

static const struct acase attn_cases[] = {
    /* B, H, nq, nk, dk, key_len, causal, window, qoff */
    {2, 2, 7, 33, 8, {-1, 0}, false, -1, 0},  /* none */
    {2, 1, 33, 33, 4, {33, 7}, false, -1, 0}, /* padding */
    {1, 2, 33, 33, 3, {-1, 0}, true, -1, 0},  /* causal */
    {2, 1, 33, 33, 8, {-1, 0}, false, 3, 0},  /* restricted */
    {2, 1, 33, 33, 4, {0, 20}, true, -1, 0},  /* padding + causal; a sequence with no key */
    {2, 1, 7, 33, 8, {33, 5}, false, 2, 9},   /* padding + restricted, queries at 9.. */
    {1, 1, 33, 33, 3, {-1, 0}, true, 5, 0},   /* causal + restricted */
    {2, 2, 5, 33, 8, {30, 1}, true, 4, 28},   /* all three, queries at 28.. */
    {1, 1, 1, 1, 4, {-1, 0}, false, -1, 0},   /* one query, one key */
};

static void attn_run(clf_ctx_t *ctx, const struct acase *c, bool naive)
{
    size_t nq = c->B * c->H * c->nq * c->dk, nk = c->B * c->H * c->nk * c->dk, rows = c->B * c->H * c->nq;
    float *q = ot_rand(nq, 1 + c->nq, -2, 2), *k = ot_rand(nk, 2 + c->nk, -2, 2), *v = ot_rand(nk, 3, -1, 1),
          *g = ot_rand(nq, 4, -1, 1);
    double *qd = ref_to_double(q, nq), *kd = ref_to_double(k, nk), *vd = ref_to_double(v, nk),
           *gd = ref_to_double(g, nq), *o = malloc(nq * 8), *lse = malloc(rows * 8), *dq = malloc(nq * 8),
           *dk = malloc(nk * 8), *dv = malloc(nk * 8);
    bool pad = c->kl[0] >= 0;
    struct ref_attn_desc rd = {c->B, c->H, c->nq, c->nk, c->dk, pad ? c->kl : NULL, c->causal, c->window, c->qoff, 0};
    ref_attention_forward(o, lse, qd, kd, vd, &rd);
    ref_attention_backward(dq, dk, dv, gd, qd, kd, vd, &rd);
    clf_tensor kl = pad ? tu_upload_ints(ctx, c->kl, c->B) : (clf_tensor){0};
    clf_tensor tq = tu_upload(ctx, q, nq), tk = tu_upload(ctx, k, nk), tv = tu_upload(ctx, v, nk),
               tg = tu_upload(ctx, g, nq), to = tu_upload(ctx, g, nq), tl = tu_upload(ctx, g, rows);
    struct clf_attention_desc d = {.batch = c->B,
                                   .heads = c->H,
                                   .n_q = c->nq,
                                   .n_k = c->nk,
                                   .d_k = c->dk,
                                   .key_len = pad ? &kl : NULL,
                                   .causal = c->causal,
                                   .window = c->window,
                                   .q_pos_offset = c->qoff};
    size_t sq = c->nq * c->dk, sk = c->nk * c->dk;
    struct clf_attention_layout lq = {tq.buf, 0, c->H * sq, sq, c->dk}, lk = {tk.buf, 0, c->H * sk, sk, c->dk},
                                lv = {tv.buf, 0, c->H * sk, sk, c->dk}, lg = {tg.buf, 0, c->H * sq, sq, c->dk},
                                lo = {to.buf, 0, c->H * sq, sq, c->dk};
    char what[160];
    snprintf(what, sizeof what, "%s B=%zu H=%zu nq=%zu nk=%zu dk=%zu kl=%d,%d causal=%d window=%d qoff=%zu",
             naive ? "naive" : "tiled", c->B, c->H, c->nq, c->nk, c->dk, c->kl[0], c->kl[1], c->causal, c->window,
             c->qoff);
    float *of = ref_to_float(o, nq);
    if (naive) {
        struct clf_attention_naive_workspace nws;
        cr_assert_eq(clf_attention_naive_workspace_init(ctx, &nws, c->B, c->H, c->nq, c->nk), CLF_OK, "%s",
                     clf_ctx_error(ctx));
        cr_assert_eq(clf_attention_naive_forward(ctx, &lo, &nws, &lq, &lk, &lv, &d), CLF_OK, "%s", clf_ctx_error(ctx));
        cr_expect(ot_check(ctx, what, &to, of, nq, 2e-5, 1e-4), "%s: o", what);
        clf_attention_naive_workspace_free(&nws);
    } else {
        cr_assert_eq(clf_attention_forward(ctx, &lo, &tl, &lq, &lk, &lv, &d), CLF_OK, "%s", clf_ctx_error(ctx));
        float *lf = ref_to_float(lse, rows);
        cr_expect(ot_check(ctx, what, &to, of, nq, 2e-5, 1e-4), "%s: o", what);
        cr_expect(ot_check(ctx, what, &tl, lf, rows, 2e-5, 1e-5), "%s: lse", what);
        struct clf_attention_workspace ws;
        cr_assert_eq(clf_attention_workspace_init(ctx, &ws, c->B, c->H, c->nq), CLF_OK, "%s", clf_ctx_error(ctx));
        /* gradients overwrite: start them as NaN */
        float *junk = malloc((nq > nk ? nq : nk) * 4);
        for (size_t i = 0; i < (nq > nk ? nq : nk); i++)
            junk[i] = NAN;
        clf_tensor gq = tu_upload(ctx, junk, nq), gk = tu_upload(ctx, junk, nk), gv = tu_upload(ctx, junk, nk);
        struct clf_attention_layout ldq = lq, ldk = lk, ldv = lv;
        ldq.buf = gq.buf, ldk.buf = gk.buf, ldv.buf = gv.buf;
        cr_assert_eq(clf_attention_backward(ctx, &ldq, &ldk, &ldv, &lg, &lq, &lk, &lv, &lo, &tl, &ws, &d), CLF_OK,
                     "%s", clf_ctx_error(ctx));
        float *f = ref_to_float(dq, nq);
        cr_expect(ot_check(ctx, what, &gq, f, nq, 2e-5, 2e-4), "%s: dq", what);
        free(f), f = ref_to_float(dk, nk);
        cr_expect(ot_check(ctx, what, &gk, f, nk, 2e-5, 2e-4), "%s: dk", what);
        free(f), f = ref_to_float(dv, nk);
        cr_expect(ot_check(ctx, what, &gv, f, nk, 2e-5, 2e-4), "%s: dv", what);
        free(f), free(lf), free(junk);
        clf_tensor_free(&gq), clf_tensor_free(&gk), clf_tensor_free(&gv);
        clf_attention_workspace_free(&ws);
    }
    clf_tensor_free(&kl);
    clf_tensor_free(&tq), clf_tensor_free(&tk), clf_tensor_free(&tv), clf_tensor_free(&tg), clf_tensor_free(&to);
    clf_tensor_free(&tl);
    free(q), free(k), free(v), free(g), free(qd), free(kd), free(vd), free(gd), free(o), free(lse), free(dq), free(dk);
    free(dv), free(of);
}

/* Every case of attn_cases, tiled, on a fresh context (the settings in
 * force); where `kernel` is given, it must have run. */
static void attn_run_all_with(const char *kernel)
{
    clf_ctx_t *ctx = tu_ctx();
    if (kernel)
        cr_assert_eq(clf_ctx_profile_start(ctx), CLF_OK, "%s", clf_ctx_error(ctx));
    for (size_t i = 0; i < sizeof attn_cases / sizeof attn_cases[0]; i++)
        attn_run(ctx, &attn_cases[i], false);
    if (kernel) {
        struct clf_profile_entry *prof = NULL;
        size_t nprof = 0;
        cr_assert_eq(clf_ctx_profile_report(ctx, &prof, &nprof), CLF_OK, "%s", clf_ctx_error(ctx));
        unsigned calls = tu_profile_calls(prof, nprof, kernel);
        free(prof);
        cr_assert_gt(calls, 0, "%s did not run", kernel);
    }
    clf_ctx_free(ctx);
}

static void attn_run_all(void)
{
    attn_run_all_with(NULL);
}

Test(small, attention)
{
    attn_run_all();
}

/* Tiles of 16 query and 8 key rows: 33 rows span three query tiles and five
 * key tiles, so the masks cut tiles at every edge and whole tiles are
 * skipped. */
Test(small, attention_small_tiles)
{
    tu_setting("CLF_ATTN_TILE_Q", "16");
    tu_setting("CLF_ATTN_TILE_K", "8");
    attn_run_all();
}

/* The backward with one work-item per row, fused (CLF_ATTN_BWD=fused:
 * attn_bwd_fused, the default where the device vectorises inside a
 * work-item, PoCL and Intel's runtime; forced here so that Oclgrind and
 * rusticl, whose default is the split form, check it too) and split
 * (attn_bwd_dkdv, attn_bwd_dq), with the small tiles so their loops cross
 * every edge. */
static void attn_backward_form(const char *form)
{
    tu_setting("CLF_ATTN_TILE_Q", "16");
    tu_setting("CLF_ATTN_TILE_K", "8");
    tu_setting("CLF_ATTN_LANES", "1");
    tu_setting("CLF_ATTN_BWD", form);
    attn_run_all_with(!strcmp(form, "fused") ? "attn_bwd_fused" : "attn_bwd_dkdv");
}

Test(small, attention_fused_backward)
{
    attn_backward_form("fused");
}

Test(small, attention_split_backward)
{
    attn_backward_form("split");
}

Test(small, attention_naive)
{
    clf_ctx_t *ctx = tu_ctx();
    attn_run(ctx, &attn_cases[0], true);
    clf_ctx_free(ctx);
}

Test(small, attention_naive_masked)
{
    clf_ctx_t *ctx = tu_ctx();
    attn_run(ctx, &attn_cases[7], true);
    clf_ctx_free(ctx);
}

/* ------------------------------------------------------------- decoding */

/* Self-attention decoding, one position at a time, against the full causal
 * multi-head forward of the double reference; after two steps the beams are
 * reselected (new row b continues old row perm[b]). */
static void topk_case(size_t rows, size_t cols, size_t k, int skip)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t n = rows * cols;
    float *x = ot_rand(n, 9, -3, 3), *wv = malloc(rows * k * 4), *wa = malloc(rows * 4);
    int32_t *wi = malloc(rows * k * 4), *gi = malloc(rows * k * 4);
    for (size_t e = 0; e < n; e += 2)  /* ties */
        x[e] = (float)(int)x[e];
    ref_topk(wv, wi, wa, x, rows, cols, k, skip, 0);
    clf_tensor tx = ot_up2(ctx, x, rows, cols), tv = ot_up2(ctx, NULL, rows, k), ta = ot_up2(ctx, NULL, rows, 1);
    for (size_t e = 0; e < rows * k; e++)  /* output garbage the kernel must overwrite */
        gi[e] = -7;
    clf_tensor ti = tu_upload_ints(ctx, gi, rows * k);
    cr_assert_eq(clf_topk_rows(ctx, &tv, &ti, &ta, &tx, NULL, k, skip, 0), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_expect(ot_check(ctx, "topk values", &tv, wv, rows * k, 0, 0));
    cr_expect(ot_check(ctx, "topk picked", &ta, wa, rows, 0, 0));
    cr_assert_eq(clf_tensor_download_i32(ctx, &ti, gi), CLF_OK);
    cr_expect_eq(memcmp(gi, wi, rows * k * 4), 0, "topk columns differ");
    cr_expect(ot_topk_shift_case(ctx, x, rows, cols, k, skip, 0));
    clf_tensor_free(&ti);
    clf_tensor_free(&tx), clf_tensor_free(&tv), clf_tensor_free(&ta);
    free(x), free(wv), free(wa), free(wi), free(gi);
    clf_ctx_free(ctx);
}

Test(small, topk)
{
    topk_case(5, 33, 4, 2);
    topk_case(3, 3, 5, -1);  /* fewer columns than k */
}

/* rows longer than the widest work-group: each item takes two strides */
Test(small, topk_wide) { topk_case(2, 257, 8, -1); }

/* one work-item per row, as PoCL's CPU device runs the row ops by default */
Test(small, topk_one_item)
{
    tu_setting("CLF_OPS_CPU_WG", "1");
    topk_case(5, 33, 4, 2);
}

/* Steps of self-attention decoding against the reference, with the cache's
 * rows reordered twice (full attention only): rows swap after two steps
 * (attn_cache_gather4, through the spare buffer), then row 0 takes row 1's
 * place after three (attn_cache_move4, in place); each row then follows
 * the sequence x[swap[again[b]]]. Then the same with the two rows one group
 * of beams (clf_kv_cache_share): nothing copied, attn_dec_part reads the
 * keys in their ancestors' rows (kv_rows). */
Test(small, decode)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t B = 2, H = 2, D = 8, T = 5;
    const int32_t swap[2] = {1, 0}, again[2] = {1, 1};
    float *w_in = ot_rand(D * 3 * D, 1, -0.7f, 0.7f), *b_in = ot_rand(3 * D, 2, -0.5f, 0.5f),
          *w_out = ot_rand(D * D, 3, -0.35f, 0.35f), *b_out = ot_rand(D, 4, -0.5f, 0.5f),
          *x = ot_rand(B * T * D, 5, -1, 1), *xs[3] = {x, malloc(B * T * D * 4), malloc(B * T * D * 4)};
    for (size_t b = 0; b < B; b++) {
        memcpy(xs[1] + b * T * D, x + swap[b] * T * D, T * D * 4);
        memcpy(xs[2] + b * T * D, x + swap[again[b]] * T * D, T * D * 4);
    }
    struct clf_mha_params p = {ot_up2(ctx, w_in, D, 3 * D), ot_up2(ctx, b_in, 1, 3 * D), ot_up2(ctx, w_out, D, D),
                               ot_up2(ctx, b_out, 1, D)};
    double *P[4] = {ref_to_double(w_in, D * 3 * D), ref_to_double(b_in, 3 * D), ref_to_double(w_out, D * D),
                    ref_to_double(b_out, D)};
    const int windows[3] = {-1, 1, -1};  /* the third: beams */
    for (int wi = 0; wi < 3; wi++) {
        struct ref_mha_desc rd = {B, H, D, T, T, NULL, true, windows[wi]};
        double *y[3];
        for (int k = 0; k < 3; k++) {
            double *xd = ref_to_double(xs[k], B * T * D);
            y[k] = malloc(B * T * D * 8);
            ref_mha_forward(y[k], xd, NULL, P[0], P[1], P[2], P[3], &rd);
            free(xd);
        }
        struct clf_kv_cache c;
        cr_assert_eq(clf_kv_cache_init(ctx, &c, B, H, D, T, true, 0), CLF_OK, "%s", clf_ctx_error(ctx));
        if (wi == 2)
            cr_assert_eq(clf_kv_cache_share(ctx, &c, B), CLF_OK, "%s", clf_ctx_error(ctx));
        const bool reorders = wi != 1;
        for (size_t t = 0; t < T; t++) {
            int k = reorders ? (t >= 3 ? 2 : t >= 2) : 0; /* which sequences the rows follow */
            if (reorders && (t == 2 || t == 3))
                cr_assert_eq(clf_kv_cache_reorder(ctx, &c, t == 2 ? swap : again, B), CLF_OK, "%s",
                             clf_ctx_error(ctx));
            float xt[2 * 8], want[2 * 8];
            for (size_t b = 0; b < B; b++)
                for (size_t j = 0; j < D; j++) {
                    xt[b * D + j] = xs[k][(b * T + t) * D + j];
                    want[b * D + j] = (float)y[k][(b * T + t) * D + j];
                }
            clf_tensor tx = ot_up2(ctx, xt, B, D), ty = ot_up2(ctx, NULL, B, D);
            cr_assert_eq(clf_mha_decode_step(ctx, &ty, &tx, &c, &p, windows[wi], t), CLF_OK, "%s",
                         clf_ctx_error(ctx));
            char what[64];
            snprintf(what, sizeof what, "decode window=%d step %zu", windows[wi], t);
            cr_expect(ot_check(ctx, what, &ty, want, B * D, 1e-5, 1e-4));
            clf_tensor_free(&tx), clf_tensor_free(&ty);
        }
        clf_kv_cache_free(&c);
        free(y[0]), free(y[1]), free(y[2]);
    }
    clf_tensor_free(&p.w_in), clf_tensor_free(&p.b_in), clf_tensor_free(&p.w_out), clf_tensor_free(&p.b_out);
    for (int i = 0; i < 4; i++)
        free(P[i]);
    free(w_in), free(b_in), free(w_out), free(b_out), free(x), free(xs[1]), free(xs[2]);
    clf_ctx_free(ctx);
}

/* Rows at positions of their own (a sentence joining a decoding under
 * way): row 0 decodes from step 0, row 1 is added at step 2 and decodes its
 * own positions 0.. beside it (clf_kv_cache_add, clf_kv_cache_rows_at:
 * attn_cache_append at each row's position, the attention through a
 * padding mask); each row's outputs are the reference's of its sequence. */
Test(small, decode_rows_at_own_positions)
{
    clf_ctx_t *ctx = tu_ctx();
    const size_t B = 2, H = 2, D = 8, T = 5, LATE = 2;
    float *w_in = ot_rand(D * 3 * D, 1, -0.7f, 0.7f), *b_in = ot_rand(3 * D, 2, -0.5f, 0.5f),
          *w_out = ot_rand(D * D, 3, -0.35f, 0.35f), *b_out = ot_rand(D, 4, -0.5f, 0.5f),
          *x = ot_rand(B * T * D, 5, -1, 1);
    struct clf_mha_params p = {ot_up2(ctx, w_in, D, 3 * D), ot_up2(ctx, b_in, 1, 3 * D), ot_up2(ctx, w_out, D, D),
                               ot_up2(ctx, b_out, 1, D)};
    double *P[4] = {ref_to_double(w_in, D * 3 * D), ref_to_double(b_in, 3 * D), ref_to_double(w_out, D * D),
                    ref_to_double(b_out, D)};
    struct ref_mha_desc rd = {B, H, D, T, T, NULL, true, -1};
    double *y = malloc(B * T * D * 8), *xd = ref_to_double(x, B * T * D);
    ref_mha_forward(y, xd, NULL, P[0], P[1], P[2], P[3], &rd);
    struct clf_kv_cache c;
    cr_assert_eq(clf_kv_cache_init(ctx, &c, B, H, D, T, true, 0), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_kv_cache_keep(ctx, &c, NULL, 0), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(clf_kv_cache_add(ctx, &c, 1, NULL, 0, NULL, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    for (size_t t = 0; t < T; t++) {
        if (t == LATE)
            cr_assert_eq(clf_kv_cache_add(ctx, &c, 1, NULL, 0, NULL, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
        const size_t rows = c.batch, at[2] = {t, t - LATE};
        int32_t lens[2] = {(int32_t)t + 1, (int32_t)(t - LATE) + 1};
        clf_tensor tl = tu_upload_ints(ctx, lens, rows);
        clf_kv_cache_rows_at(&c, rows > 1 ? &tl : NULL);
        float xt[2 * 8], want[2 * 8];
        for (size_t b = 0; b < rows; b++)
            for (size_t j = 0; j < D; j++) {
                xt[b * D + j] = x[(b * T + at[b]) * D + j];
                want[b * D + j] = (float)y[(b * T + at[b]) * D + j];
            }
        clf_tensor tx = ot_up2(ctx, xt, rows, D), ty = ot_up2(ctx, NULL, rows, D);
        cr_assert_eq(clf_mha_decode_step(ctx, &ty, &tx, &c, &p, -1, t), CLF_OK, "%s", clf_ctx_error(ctx));
        char what[64];
        snprintf(what, sizeof what, "decode, row 1 from step %zu: step %zu", LATE, t);
        cr_expect(ot_check(ctx, what, &ty, want, rows * D, 1e-5, 1e-4));
        clf_tensor_free(&tx), clf_tensor_free(&ty), clf_tensor_free(&tl);
    }
    {  /* not with a restricted window: refused, naming it */
        int32_t lens[2] = {1, 1};
        clf_tensor tl = tu_upload_ints(ctx, lens, 2), tx = ot_up2(ctx, x, B, D), ty = ot_up2(ctx, NULL, B, D);
        clf_kv_cache_rows_at(&c, &tl);
        cr_assert_eq(clf_mha_decode_step(ctx, &ty, &tx, &c, &p, 1, 0), CLF_ERR_ARG);
        cr_expect(strstr(clf_ctx_error(ctx), "window"), "%s", clf_ctx_error(ctx));
        clf_tensor_free(&tx), clf_tensor_free(&ty), clf_tensor_free(&tl);
    }
    clf_kv_cache_free(&c);
    clf_tensor_free(&p.w_in), clf_tensor_free(&p.b_in), clf_tensor_free(&p.w_out), clf_tensor_free(&p.b_out);
    for (int i = 0; i < 4; i++)
        free(P[i]);
    free(y), free(xd), free(w_in), free(b_in), free(w_out), free(b_out), free(x);
    clf_ctx_free(ctx);
}

/* Decoding's attention against the reference: one part (o and lse written
 * by attn_dec_part) and three (the combination), on key ranges shorter
 * than a part, equal to it and cut across parts; 70 keys in one part take
 * two batches of the lane scores (SCORE_LANES, GPU limits: groups of 64),
 * which reuse their local partials. The arena's PART slot is
 * grown once first, so that no call frees a buffer another has written
 * (Oclgrind's shadow memory of a freed buffer goes stale). */
Test(small, decode_attn)
{
    clf_ctx_t *ctx = tu_ctx();
    cl_mem part;
    cr_assert_eq(clf_scratch_get(ctx, CLF_SCRATCH_PART, 64 * 1024, &part), CLF_OK, "%s", clf_ctx_error(ctx));
    const size_t dks[] = {8, 4, 3}, ns[] = {1, 7, 33, 70}, parts[] = {1, 3};
    for (size_t di = 0; di < 3; di++)
        for (size_t ni = 0; ni < 4; ni++) {
            size_t n = ns[ni];
            const int32_t kl[2] = {(int32_t)n, 0};
            struct ot_dcase cases[] = {
                {2, 2, dks[di], n, NULL, true, -1, n - 1, 1}, /* self */
                {1, 2, dks[di], n, NULL, true, 2, n - 1, 1},  /* self, restricted */
                {2, 1, dks[di], n, kl, false, -1, 0, 1},      /* cross, a row with no key */
                {2, 1, dks[di], n, kl, false, -1, 0, 3},      /* cross, 3 beams on one memory */
            };
            for (size_t ci = 0; ci < 4; ci++)
                for (size_t pi = 0; pi < 2; pi++)
                    ot_decode_attn_case(ctx, &cases[ci], parts[pi], false);
        }
    clf_ctx_free(ctx);
}
