/* test_tune.c: tuning: the tuning file's round
 * trip (write, read, apply, and the GEMM still right through both CLBlast
 * kernels), refused files (corrupt, broken constraints, another device's),
 * our own kernels' parameters from the file reaching attention and the
 * row-wise ops (the table's search is test_tuning_table's), and the search
 * itself (clf_gemm_params_tune, clf_kernel_params_tune) on a budget it
 * cannot meet and cancelled by its progress callback: what comes back is
 * in force and measured. No speed is asserted: only that the search stops. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_attention.h"
#include "testutil.h"

static void fresh_cache(void)
{
    tu_setting("XDG_CACHE_HOME", tu_tmpdir());
    tu_setting("CLF_TUNING", NULL);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Parameters unlike both CLBlast's and the table's, all legal. */
static struct clf_gemm_params odd_params(void)
{
    struct clf_gemm_params p = clf_gemm_params_generic;
    p.xgemm.mwg = 16, p.xgemm.nwg = 16, p.xgemm.mdimc = 4, p.xgemm.ndimc = 4, p.xgemm.mdima = 4;
    p.xgemm.ndimb = 4, p.xgemm.kwg = 16, p.xgemm.kwi = 2, p.xgemm.vwm = 2, p.xgemm.vwn = 2;
    p.direct.wgd = 8, p.direct.mdimcd = 4, p.direct.ndimcd = 4, p.direct.mdimad = 4, p.direct.ndimbd = 4;
    p.direct.vwmd = 2, p.direct.vwnd = 2, p.direct.kwid = 2;
    p.min_indirect = 40;
    return p;
}

static struct clf_tuning_record record_for(const struct clf_device_info *d, struct clf_gemm_params p)
{
    struct clf_tuning_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.platform, sizeof r.platform, "%s", d->platform_name);
    snprintf(r.device, sizeof r.device, "%s", d->device_name);
    snprintf(r.driver, sizeof r.driver, "%s", d->driver_version);
    snprintf(r.clblast, sizeof r.clblast, "test");
    snprintf(r.created, sizeof r.created, "2026-01-01T00:00:00Z");
    r.minutes = 0.5;
    r.candidates = 7;
    r.gemm = p;
    r.nshapes = 1;
    r.shapes[0] = (struct clf_tuning_shape){"a \"quoted\" shape", 33, 17, 65, false, true, 1.5, 3.0, 4.0};
    return r;
}

/* C = A·op(B) on the device against a plain loop; m·n·k decides the kernel. */
static void check_gemm(clf_ctx_t *ctx, size_t m, size_t n, size_t k, bool tb)
{
    size_t na = m * k, nb = k * n, nc = m * n;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *want = malloc(nc * 4);
    tu_fill(a, na, 1, -1, 1);
    tu_fill(b, nb, 2, -1, 1);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t p = 0; p < k; p++)
                s += (double)a[i * k + p] * (tb ? b[j * k + p] : b[p * n + j]);
            want[i * n + j] = (float)s;
        }
    clf_tensor ta = tu_upload(ctx, a, na), tbm = tu_upload(ctx, b, nb), tc = tu_upload(ctx, want, nc);
    cr_assert_eq(clf_tensor_fill(ctx, &tc, 99.0f), CLF_OK);
    struct clf_mat ma = {ta.buf, 0, k, false, 0}, mb = {tbm.buf, 0, tb ? k : n, tb, 0}, mc = {tc.buf, 0, n, false, 0};
    cr_assert_eq(clf_gemm(ctx, m, n, k, 1.0f, &ma, &mb, 0.0f, &mc), CLF_OK, "%s", clf_ctx_error(ctx));
    float *got = tu_download(ctx, &tc, nc);
    tu_close("gemm", got, want, nc, 1e-4, 1e-4);
    free(got);
    clf_tensor_free(&ta);
    clf_tensor_free(&tbm);
    clf_tensor_free(&tc);
    free(a);
    free(b);
    free(want);
}

Test(tune, params_constraints)
{
    char why[256];
    cr_assert(clf_gemm_params_check(&clf_gemm_params_generic, NULL, why, sizeof why), "%s", why);
    struct clf_gemm_params p = odd_params();
    cr_assert(clf_gemm_params_check(&p, NULL, why, sizeof why), "%s", why);
    p.xgemm.mwg = 20;  /* not a multiple of MDIMC*VWM = 8 */
    cr_assert_not(clf_gemm_params_check(&p, NULL, why, sizeof why));
    cr_assert_not_null(strstr(why, "MWG"), "%s", why);
    p = odd_params();
    p.direct.wgd = 12;
    cr_assert_not(clf_gemm_params_check(&p, NULL, why, sizeof why));
    cr_assert_not_null(strstr(why, "WGD"), "%s", why);
    /* the device's work-group limit */
    struct clf_device_info d = {.max_work_group = 32, .local_mem = 1 << 20};
    p = odd_params();
    p.xgemm.mdimc = p.xgemm.mdima = 8;
    p.xgemm.ndimc = p.xgemm.ndimb = 8;
    p.xgemm.mwg = p.xgemm.nwg = 16;
    p.xgemm.vwm = p.xgemm.vwn = 2;
    p.xgemm.kwg = 16;
    cr_assert(clf_gemm_params_check(&p, NULL, why, sizeof why), "%s", why);
    cr_assert_not(clf_gemm_params_check(&p, &d, why, sizeof why));
    cr_assert_not_null(strstr(why, "work-group"), "%s", why);
    /* every entry of the built-in table is legal */
    size_t n;
    const struct clf_tuning_entry *t = clf_tuning_table(&n);
    for (size_t i = 0; i < n; i++) {
        cr_assert(!t[i].gemm || clf_gemm_params_check(t[i].gemm, NULL, why, sizeof why), "%s: %s", t[i].name, why);
        cr_assert(clf_kernel_params_check(&t[i].kernels, why, sizeof why), "%s: %s", t[i].name, why);
    }
}

Test(tune, file_round_trip_and_apply)
{
    fresh_cache();
    clf_ctx_t *ctx = tu_ctx();
    const struct clf_device_info *d = clf_ctx_device(ctx);
    char path[1024];
    cr_assert_eq(clf_tuning_path(d, path, sizeof path), CLF_OK);
    cr_assert_not_null(strstr(path, "/clformer/tuning-"));
    struct clf_tuning_record r = record_for(d, odd_params()), back;
    cr_assert_eq(clf_tuning_save(path, &r), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_tuning_load(path, d, &back), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(memcmp(&back.gemm, &r.gemm, sizeof r.gemm), 0);
    cr_assert_str_eq(back.device, d->device_name);
    cr_assert_str_eq(back.created, r.created);
    cr_assert_eq(back.candidates, 7);
    cr_assert_eq(back.nshapes, 1);
    cr_assert_str_eq(back.shapes[0].name, "a \"quoted\" shape");
    cr_assert(back.shapes[0].tb && !back.shapes[0].ta);
    cr_assert_float_eq(back.shapes[0].gflops_after, 3.0, 1e-9);

    struct clf_tuning_info info;
    cr_assert_eq(clf_tuning_query(ctx, &info), CLF_OK);
    cr_assert_eq(info.source, CLF_TUNING_FILE);
    cr_assert(info.file_present);
    cr_assert_eq(info.file_status, CLF_OK);
    cr_assert_eq(memcmp(&info.gemm, &r.gemm, sizeof r.gemm), 0);
    clf_ctx_free(ctx);

    /* a new context applies the file: GEMMs on both sides of the switch
     * (40³) stay right with these unusual tiles */
    ctx = tu_ctx();
    check_gemm(ctx, 7, 9, 5, false);       /* direct */
    check_gemm(ctx, 33, 65, 47, false);    /* indirect */
    check_gemm(ctx, 100, 257, 33, true);   /* indirect, B transposed */
    cr_assert_eq(clf_tuning_apply(ctx), CLF_OK, "%s", clf_ctx_error(ctx));

    bool removed;
    cr_assert_eq(clf_tuning_reset(ctx, &removed), CLF_OK);
    cr_assert(removed);
    cr_assert_eq(clf_tuning_query(ctx, &info), CLF_OK);
    cr_assert_not(info.file_present);
    cr_assert_neq(info.source, CLF_TUNING_FILE);
    cr_assert_eq(clf_tuning_reset(ctx, &removed), CLF_OK);
    cr_assert_not(removed);

    tu_setting("CLF_TUNING", "off");
    cr_assert_eq(clf_tuning_query(ctx, &info), CLF_OK);
    cr_assert_eq(info.source, CLF_TUNING_OFF);
    tu_setting("CLF_TUNING", NULL);
    clf_ctx_free(ctx);
}

/* Writes text as the device's tuning file and expects it refused with a
 * message naming the file and containing `needle`. */
static void expect_refused(clf_ctx_t *ctx, const char *text, const char *needle)
{
    struct clf_tuning_info info;
    char path[1024];
    cr_assert_eq(clf_tuning_path(clf_ctx_device(ctx), path, sizeof path), CLF_OK);
    write_text(path, text);
    cr_assert_eq(clf_tuning_query(ctx, &info), CLF_OK);
    cr_assert(info.file_present);
    cr_assert_eq(info.file_status, CLF_ERR_FORMAT, "%s", info.file_message);
    cr_assert_neq(info.source, CLF_TUNING_FILE);
    cr_assert_not_null(strstr(info.file_message, path), "%s", info.file_message);
    cr_assert_not_null(strstr(info.file_message, needle), "'%s' not in: %s", needle, info.file_message);
    /* applying falls back to the table or CLBlast without failing */
    cr_assert_eq(clf_tuning_apply(ctx), CLF_OK, "%s", clf_ctx_error(ctx));
}

Test(tune, corrupt_files_are_refused)
{
    fresh_cache();
    clf_ctx_t *ctx = tu_ctx();
    const struct clf_device_info *d = clf_ctx_device(ctx);
    char path[1024];
    cr_assert_eq(clf_tuning_path(d, path, sizeof path), CLF_OK);
    struct clf_tuning_record r = record_for(d, odd_params());
    cr_assert_eq(clf_tuning_save(path, &r), CLF_OK);

    /* cut short */
    FILE *f = fopen(path, "r");
    char full[8192];
    size_t len = fread(full, 1, sizeof full - 1, f);
    fclose(f);
    full[len] = 0;
    char cut[8192];
    snprintf(cut, sizeof cut, "%.*s", (int)(len / 2), full);
    expect_refused(ctx, cut, "not valid JSON");

    /* a parameter missing */
    char *edited = strdup(full);
    char *kwi = strstr(edited, "\"KWI\"");
    cr_assert_not_null(kwi);
    memcpy(kwi, "\"KWX\"", 5);
    expect_refused(ctx, edited, "KWI");
    free(edited);

    /* a broken constraint: MWG 20 with MDIMC*VWM = 8 */
    edited = strdup(full);
    char *mwg = strstr(edited, "\"MWG\": 16");
    cr_assert_not_null(mwg);
    memcpy(mwg, "\"MWG\": 20", 9);
    expect_refused(ctx, edited, "MWG");
    free(edited);

    /* a fraction */
    edited = strdup(full);
    char *vwm = strstr(edited, "\"VWM\": 2");
    cr_assert_not_null(vwm);
    char buf[8192];
    snprintf(buf, sizeof buf, "%.*s\"VWM\": 2.5%s", (int)(vwm - edited), edited, vwm + 8);
    expect_refused(ctx, buf, "VWM");
    free(edited);

    /* another device's file under this device's name */
    struct clf_tuning_record other = r;
    snprintf(other.device, sizeof other.device, "Some Other GPU");
    cr_assert_eq(clf_tuning_save(path, &other), CLF_OK);
    f = fopen(path, "r");
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    expect_refused(ctx, buf, "made for 'Some Other GPU'");

    expect_refused(ctx, "[1, 2, 3]", "not a clformer tuning file");
    clf_ctx_free(ctx);
}

/* Tiled attention forward with whatever tiles are in force on ctx, against
 * the plain-C reference. */
static void check_attention(clf_ctx_t *ctx)
{
    enum { B = 2, H = 2, N = 37, DK = 64 };
    const size_t n = (size_t)B * H * N * DK;
    float *q = malloc(n * 4), *k = malloc(n * 4), *v = malloc(n * 4), *want = malloc(n * 4);
    double *qd = malloc(n * 8), *kd = malloc(n * 8), *vd = malloc(n * 8), *od = malloc(n * 8);
    tu_fill(q, n, 3, -1, 1);
    tu_fill(k, n, 4, -1, 1);
    tu_fill(v, n, 5, -1, 1);
    for (size_t i = 0; i < n; i++)
        qd[i] = q[i], kd[i] = k[i], vd[i] = v[i];
    struct ref_attn_desc rd = {.batch = B, .heads = H, .n_q = N, .n_k = N, .d_k = DK, .causal = true, .window = -1};
    ref_attention_forward(od, NULL, qd, kd, vd, &rd);
    for (size_t i = 0; i < n; i++)
        want[i] = (float)od[i];
    clf_tensor tq = tu_upload(ctx, q, n), tk = tu_upload(ctx, k, n), tv = tu_upload(ctx, v, n),
               to = tu_upload(ctx, q, n), tl = tu_upload(ctx, q, (size_t)B * H * N);
    struct clf_attention_layout lq = {tq.buf, 0, H * N * DK, N * DK, DK}, lk = lq, lv = lq, lo = lq;
    lk.buf = tk.buf, lv.buf = tv.buf, lo.buf = to.buf;
    struct clf_attention_desc d = {.batch = B, .heads = H, .n_q = N, .n_k = N, .d_k = DK, .causal = true, .window = -1};
    cr_assert_eq(clf_attention_forward(ctx, &lo, &tl, &lq, &lk, &lv, &d), CLF_OK, "%s", clf_ctx_error(ctx));
    float *got = tu_download(ctx, &to, n);
    tu_close("attention with the file's tiles", got, want, n, 1e-4, 1e-4);
    clf_tensor *ts[] = {&tq, &tk, &tv, &to, &tl};
    for (size_t i = 0; i < 5; i++)
        clf_tensor_free(ts[i]);
    free(q), free(k), free(v), free(want), free(got), free(qd), free(kd), free(vd), free(od);
}

/* Softmax over rows wider than the row-op work-group cap, against C. */
static void check_softmax(clf_ctx_t *ctx)
{
    enum { R = 5, C = 300 };
    float x[R * C], want[R * C];
    tu_fill(x, R * C, 6, -8, 8);
    for (int r = 0; r < R; r++) {
        double mx = -1e30, sum = 0;
        for (int c = 0; c < C; c++)
            mx = fmax(mx, x[r * C + c]);
        for (int c = 0; c < C; c++)
            sum += exp(x[r * C + c] - mx);
        for (int c = 0; c < C; c++)
            want[r * C + c] = (float)(exp(x[r * C + c] - mx) / sum);
    }
    clf_tensor tx, ty;
    size_t shape[2] = {R, C};
    cr_assert_eq(clf_tensor_init(ctx, &tx, 2, shape), CLF_OK);
    cr_assert_eq(clf_tensor_init(ctx, &ty, 2, shape), CLF_OK);
    cr_assert_eq(clf_tensor_upload(ctx, &tx, x), CLF_OK);
    cr_assert_eq(clf_softmax_forward(ctx, &ty, &tx, NULL), CLF_OK, "%s", clf_ctx_error(ctx));
    float *got = tu_download(ctx, &ty, R * C);
    tu_close("softmax with the file's work-group cap", got, want, R * C, 1e-6, 1e-4);
    free(got);
    clf_tensor_free(&tx);
    clf_tensor_free(&ty);
}

Test(tune, kernel_params_from_the_file)
{
    fresh_cache();
    tu_setting("CLF_ATTN_TILE_Q", NULL);
    tu_setting("CLF_ATTN_TILE_K", NULL);
    tu_setting("CLF_OPS_CPU_WG", NULL);
    char why[256];
    const struct clf_kernel_params good = {32, 16, 8, 0};
    const struct clf_kernel_params bad[] = {{48, 16, 0, 0}, {32, 4, 0, 0}, {0, 0, 2048, 0}, {0, 0, 0, 16}};
    const char *named[] = {"ATTN_TILE_Q", "ATTN_TILE_K", "ROWS_WG", "ATTN_LANES"};
    cr_assert(clf_kernel_params_check(&good, why, sizeof why), "%s", why);
    for (int i = 0; i < 4; i++) {
        cr_assert_not(clf_kernel_params_check(&bad[i], why, sizeof why));
        cr_assert_not_null(strstr(why, named[i]), "%s", why);
    }

    clf_ctx_t *ctx = tu_ctx();
    struct clf_kernel_params none = clf_kernel_params_get(ctx);
    cr_assert_eq(none.attn_tile_q + none.attn_tile_k + none.rows_wg, 0, "no file, yet kernel parameters are set");
    cr_assert_eq(clf_kernel_params_set(ctx, &bad[0]), CLF_ERR_ARG);
    struct clf_attention_tuning at;
    cr_assert_eq(clf_attention_tuning_get(ctx, 64, &at), CLF_OK);
    cr_assert_str_neq(at.entry, "tuning file");

    char path[1024];
    cr_assert_eq(clf_tuning_path(clf_ctx_device(ctx), path, sizeof path), CLF_OK);
    struct clf_tuning_record r = record_for(clf_ctx_device(ctx), odd_params()), back;
    r.kernels = good;
    cr_assert_eq(clf_tuning_save(path, &r), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(clf_tuning_load(path, clf_ctx_device(ctx), &back), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(memcmp(&back.kernels, &good, sizeof good), 0);
    clf_ctx_free(ctx);

    /* a new context applies them: attention takes the file's tiles and stays
     * right, the row-wise ops their work-group cap */
    ctx = tu_ctx();
    struct clf_kernel_params got = clf_kernel_params_get(ctx);
    cr_assert_eq(memcmp(&got, &good, sizeof good), 0);
    cr_assert_eq(clf_attention_tuning_get(ctx, 64, &at), CLF_OK);
    cr_assert_str_eq(at.entry, "tuning file");
    cr_assert_eq(at.tile_q, 32);
    cr_assert_eq(at.tile_k, 16);
    check_attention(ctx);
    check_softmax(ctx);

    /* a file written before "Kernels" existed still tunes GEMM */
    FILE *f = fopen(path, "r");
    char full[8192], older[8192];
    size_t len = fread(full, 1, sizeof full - 1, f);
    fclose(f);
    full[len] = 0;
    char *line = strstr(full, "  \"Kernels\"");
    cr_assert_not_null(line);
    char *eol = strchr(line, '\n');
    snprintf(older, sizeof older, "%.*s%s", (int)(line - full), full, eol + 1);
    write_text(path, older);
    cr_assert_eq(clf_tuning_load(path, clf_ctx_device(ctx), &back), CLF_OK, "%s", clf_ctx_error(NULL));
    cr_assert_eq(back.kernels.attn_tile_q + back.kernels.attn_tile_k + back.kernels.rows_wg, 0);
    cr_assert_eq(memcmp(&back.gemm, &r.gemm, sizeof r.gemm), 0);

    /* a bad value in the file is refused, named */
    char *q = strstr(full, "\"ATTN_TILE_Q\": 32");
    cr_assert_not_null(q);
    memcpy(q, "\"ATTN_TILE_Q\": 48", 17);
    expect_refused(ctx, full, "ATTN_TILE_Q");
    clf_ctx_free(ctx);
}

/* A tuning that cannot be applied (here the table's CPU entry on a device
 * shaped to 8 KiB of local memory) must not stop the context, nor go
 * unsaid: clf_tuning_query reports it and GEMM runs on CLBlast's defaults. */
Test(tune, refused_tuning_is_recorded, .timeout = TU_TIMEOUT(60))
{
    fresh_cache();
    tu_setting("CLF_DEVICE_LIMITS", "local_mem=8K");
    clf_ctx_t *ctx = tu_ctx();
    struct clf_tuning_info *ti = malloc(sizeof *ti);
    cr_assert_eq(clf_tuning_query(ctx, ti), CLF_OK);
    if (!ti->entry)
        cr_skip_test("no table entry for this device");
    cr_assert_eq(ti->apply_status, CLF_ERR_ARG, "%s", clf_status_str(ti->apply_status));
    cr_assert_eq(ti->source, CLF_TUNING_CLBLAST);
    cr_assert(strstr(ti->apply_message, "local memory") && strstr(ti->apply_message, ti->entry->name), "%s",
              ti->apply_message);
    free(ti);
    /* and GEMM still works */
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, want[4] = {4, 5, 10, 11};
    clf_tensor ta = tu_upload(ctx, a, 6), tb = tu_upload(ctx, b, 6), tc = tu_upload(ctx, want, 4);
    struct clf_mat ma = {ta.buf, 0, 3, false, 0}, mb = {tb.buf, 0, 2, false, 0}, mc = {tc.buf, 0, 2, false, 0};
    cr_assert_eq(clf_tensor_fill(ctx, &tc, 0.0f), CLF_OK);
    cr_assert_eq(clf_gemm(ctx, 2, 2, 3, 1.0f, &ma, &mb, 0.0f, &mc), CLF_OK, "%s", clf_ctx_error(ctx));
    float *got = tu_download(ctx, &tc, 4);
    cr_assert(tu_close("gemm", got, want, 4, 1e-6, 1e-6));
    free(got);
    clf_tensor_free(&ta), clf_tensor_free(&tb), clf_tensor_free(&tc);
    clf_ctx_free(ctx);
}

/* Settings go over the tuning file and the table; an illegal one is ignored. */
Test(tune, settings_override_in_one_place)
{
    fresh_cache();
    tu_setting("CLF_ATTN_TILE_Q", NULL);
    tu_setting("CLF_ATTN_TILE_K", NULL);
    tu_setting("CLF_ATTN_LANES", NULL);
    clf_ctx_t *ctx = tu_ctx();
    size_t n;
    const struct clf_param_def *defs = clf_param_defs(&n), *tk = clf_param_find(CLF_PARAM_KERNELS, "ATTN_TILE_K");
    struct clf_params_found base, f;
    clf_params_in_force(ctx, &base);
    const struct clf_kernel_params file = {.attn_tile_k = 16};
    cr_assert_eq(clf_kernel_params_set(ctx, &file), CLF_OK);
    clf_params_in_force(ctx, &f);
    cr_assert_eq(f.values.kernels.attn_tile_k, 16);
    cr_assert_eq(f.origin[tk - defs].source, CLF_PARAM_FROM_FILE);
    cr_assert_eq(f.values.kernels.attn_tile_q, base.values.kernels.attn_tile_q);
    tu_setting("CLF_ATTN_TILE_K", "32");
    clf_params_in_force(ctx, &f);
    cr_assert_eq(f.values.kernels.attn_tile_k, 32);
    cr_assert_eq(f.origin[tk - defs].source, CLF_PARAM_FROM_SETTING);
    tu_setting("CLF_ATTN_TILE_K", "4");  /* below 8: ignored, the file's stays */
    clf_params_in_force(ctx, &f);
    cr_assert_eq(f.values.kernels.attn_tile_k, 16);
    tu_setting("CLF_ATTN_TILE_K", NULL);
    clf_ctx_free(ctx);
}

/* ------------------------------------------------ the GEMM search */

/* What the progress callback heard. */
struct heard {
    int calls;
    struct clf_tune_progress first, last;
    bool ordered;            /* stages and elapsed never went back; left_s within the budget */
    double budget;
    unsigned cancel_after;   /* answer "stop" once this many candidates were tried (0: never) */
};

static int hear(void *user, const struct clf_tune_progress *p)
{
    struct heard *h = user;
    if (!h->calls)
        h->first = *p;
    else if (p->stage < h->last.stage || p->elapsed_s < h->last.elapsed_s || p->tried < h->last.tried)
        h->ordered = false;
    if (!(p->left_s >= 0 && p->left_s <= h->budget) || !(p->elapsed_s >= 0) ||
        (p->candidate && !(p->candidate_s > 0 && p->best_s > 0)))
        h->ordered = false;
    h->last = *p;
    h->calls++;
    return h->cancel_after && p->tried >= h->cancel_after;
}

/* The result is in force and measured: legal for the device, every shape
 * timed before and after, and GEMMs right with it (both kernels). */
static void check_tuned(clf_ctx_t *ctx, const struct clf_gemm_tune_result *r)
{
    char why[256];
    cr_assert(clf_gemm_params_check(&r->best, clf_ctx_device(ctx), why, sizeof why), "%s", why);
    cr_assert_eq(r->nshapes, 8);
    for (int i = 0; i < r->nshapes; i++) {
        const struct clf_tuning_shape *s = &r->shapes[i];
        cr_assert(s->gflops_before > 0 && isfinite(s->gflops_before), "%s: before %g", s->name, s->gflops_before);
        cr_assert(s->gflops_after > 0 && isfinite(s->gflops_after), "%s: after %g", s->name, s->gflops_after);
        if (clf_ctx_device(ctx)->type & CL_DEVICE_TYPE_CPU)
            cr_assert(s->gflops_reference > 0, "%s: reference %g", s->name, s->gflops_reference);
    }
    enum clf_gemm_backend was = clf_ctx_gemm(ctx);
    cr_assert_eq(clf_ctx_gemm_set(ctx, CLF_GEMM_CLBLAST), CLF_OK);
    check_gemm(ctx, 3, 5, 7, false);      /* direct, or indirect when min_indirect is 0 */
    check_gemm(ctx, 65, 130, 33, true);
    cr_assert_eq(clf_ctx_gemm_set(ctx, was), CLF_OK);
}

/* A budget that setup alone overruns: no candidate is started past the
 * deadline (none tried: setup and the baseline compile and time kernels,
 * so their wall time is no measure of the deadline), and the starting
 * point (the prior) comes back measured and in force; the callback heard
 * every stage in order. */
Test(tune, gemm_search_tiny_deadline, .timeout = TU_TIMEOUT(300))
{
    clf_ctx_t *ctx = tu_ctx();
    const enum clf_gemm_backend was = clf_ctx_gemm(ctx);
    const struct clf_gemm_params prior = odd_params();
    struct heard h = {.ordered = true, .budget = 0.2};
    struct clf_tune_opts o = clf_tune_opts_default();
    cr_assert_eq(o.tokens, 2560);
    cr_assert_eq(o.seconds, 300);
    o.seconds = 0.2, o.tokens = 16, o.prior = &prior, o.nprior = 1, o.progress = hear, o.user = &h;
    struct clf_gemm_tune_result *r = malloc(sizeof *r);
    double t0 = clf_now();
    cr_assert_eq(clf_gemm_params_tune(ctx, &o, r), CLF_OK, "%s", clf_ctx_error(ctx));
    double took = clf_now() - t0;
    cr_assert_eq(r->tried, 0, "%u candidates started after the deadline", r->tried);
    cr_assert(!r->searched && !r->cancelled);
    cr_assert(!memcmp(&r->best, &prior, sizeof prior), "the prior is not what came back");
    cr_assert(r->seconds > 0 && r->seconds <= took, "%g s reported, %g s taken", r->seconds, took);
    cr_assert_geq(h.calls, 3);
    cr_assert(h.ordered, "the progress went back or out of range");
    cr_assert_eq(h.first.stage, CLF_TUNE_SETUP);
    cr_assert_eq(h.last.stage, CLF_TUNE_MEASURE);
    cr_assert_eq(h.last.nshapes, 8);
    cr_assert_eq(h.last.left_s, 0);
    cr_assert_leq(h.last.elapsed_s, r->seconds);
    cr_assert_eq(clf_ctx_gemm(ctx), was, "the context's GEMM backend was not restored");
    check_tuned(ctx, r);
    free(r);
    clf_ctx_free(ctx);
}

/* The callback stops the search after its first candidate (the prior's
 * Xgemm): that candidate, measured, is the result. */
Test(tune, gemm_search_cancelled_by_the_callback, .timeout = TU_TIMEOUT(300))
{
    clf_ctx_t *ctx = tu_ctx();
    const struct clf_gemm_params prior = odd_params();
    struct heard h = {.ordered = true, .budget = 600, .cancel_after = 1};
    struct clf_tune_opts o = clf_tune_opts_default();
    o.seconds = 600, o.tokens = 16, o.prior = &prior, o.nprior = 1, o.progress = hear, o.user = &h;
    struct clf_gemm_tune_result *r = malloc(sizeof *r);
    cr_assert_eq(clf_gemm_params_tune(ctx, &o, r), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert(r->cancelled);
    cr_assert_eq(r->tried, 1);
    cr_assert(r->searched && r->failed == 0, "the prior failed its check");
    cr_assert(!memcmp(&r->best.xgemm, &prior.xgemm, sizeof prior.xgemm));
    cr_assert_eq(r->best.min_indirect, 0, "only Xgemm was measured: every product should go to it");
    cr_assert_lt(r->seconds, 300, "the cancel did not stop the search");
    cr_assert(h.ordered);
    cr_assert_eq(h.last.stage, CLF_TUNE_MEASURE, "the callback should still hear of the measuring");
    check_tuned(ctx, r);
    free(r);
    clf_ctx_free(ctx);
}

/* Bad options are refused before anything runs, naming the field (both searches). */
Test(tune, search_bad_options)
{
    clf_ctx_t *ctx = tu_ctx();
    struct clf_gemm_tune_result *r = malloc(sizeof *r);
    struct clf_tune_opts o = clf_tune_opts_default();
    o.seconds = -1;
    cr_assert_eq(clf_gemm_params_tune(ctx, &o, r), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "seconds"), "%s", clf_ctx_error(ctx));
    o = clf_tune_opts_default();
    o.tokens = 8;
    cr_assert_eq(clf_gemm_params_tune(ctx, &o, r), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "tokens"), "%s", clf_ctx_error(ctx));
    o = clf_tune_opts_default();
    o.nprior = 1;  /* and no prior */
    cr_assert_eq(clf_gemm_params_tune(ctx, &o, r), CLF_ERR_ARG);
    free(r);
    struct clf_kernel_tune_result kr;
    o = clf_tune_opts_default();
    o.seconds = NAN;
    cr_assert_eq(clf_kernel_params_tune(ctx, &o, &kr), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "seconds"), "%s", clf_ctx_error(ctx));
    const struct clf_kernel_params bad = {.attn_tile_q = 3};
    o = clf_tune_opts_default();
    o.prior_kernels = &bad;
    cr_assert_eq(clf_kernel_params_tune(ctx, &o, &kr), CLF_ERR_ARG);
    cr_assert(strstr(clf_ctx_error(ctx), "prior_kernels"), "%s", clf_ctx_error(ctx));
    clf_ctx_free(ctx);
}

/* ------------------------------------------------ our kernels' search */

/* No budget: the built-in choice, timed, is the result and in force. */
Test(tune, kernel_search_tiny_deadline, .timeout = TU_TIMEOUT(300))
{
    clf_ctx_t *ctx = tu_ctx();
    struct heard h = {.ordered = true, .budget = 0};
    struct clf_tune_opts o = clf_tune_opts_default();
    o.seconds = 0, o.progress = hear, o.user = &h;
    struct clf_kernel_tune_result r;
    cr_assert_eq(clf_kernel_params_tune(ctx, &o, &r), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert_eq(r.tried, 0, "%u candidates started after the deadline", r.tried);
    cr_assert(!r.cancelled);
    cr_assert(r.attn_before_s > 0 && r.attn_after_s == r.attn_before_s, "%g %g", r.attn_before_s, r.attn_after_s);
    cr_assert(r.rows_before_s > 0 && r.rows_after_s == r.rows_before_s, "%g %g", r.rows_before_s, r.rows_after_s);
    const struct clf_kernel_params builtin = {0};
    cr_assert_eq(clf_kernel_params_set(ctx, &builtin), CLF_OK);
    struct clf_attention_tuning at;
    cr_assert_eq(clf_attention_tuning_get(ctx, 64, &at), CLF_OK);
    cr_assert_eq(r.best.attn_tile_q, at.tile_q);
    cr_assert_eq(r.best.attn_tile_k, at.tile_k);
    cr_assert_eq(r.best.rows_wg, 0);
    cr_assert(h.ordered, "the progress went back or out of range");
    cr_assert_eq(h.first.stage, CLF_TUNE_SETUP);
    cr_assert_eq(h.last.stage, CLF_TUNE_ROWS);
    cr_assert_eq(h.last.left_s, 0);
    clf_ctx_free(ctx);
}

/* The callback stops the search after its first candidate; what comes back
 * is in force on the context. */
Test(tune, kernel_search_cancelled_by_the_callback, .timeout = TU_TIMEOUT(300))
{
    clf_ctx_t *ctx = tu_ctx();
    struct heard h = {.ordered = true, .budget = 600, .cancel_after = 1};
    struct clf_tune_opts o = clf_tune_opts_default();
    o.seconds = 600, o.progress = hear, o.user = &h;
    struct clf_kernel_tune_result r;
    cr_assert_eq(clf_kernel_params_tune(ctx, &o, &r), CLF_OK, "%s", clf_ctx_error(ctx));
    cr_assert(r.cancelled);
    cr_assert_eq(r.tried, 1);
    cr_assert(r.attn_after_s > 0 && r.attn_after_s <= r.attn_before_s);
    cr_assert(h.ordered);
    cr_assert_eq(h.last.stage, CLF_TUNE_ROWS, "the callback should hear every stage");
    struct clf_kernel_params now = clf_kernel_params_get(ctx);
    cr_assert(!memcmp(&now, &r.best, sizeof now), "the result is not in force");
    clf_ctx_free(ctx);
}
