/* make_seeds.c: writes the seeds of fuzz/corpus/tuning/ that no real run
 * leaves lying around: tuning files as clf_tuning_save writes them, one for each
 * of the first entries of the built-in table, with measured shapes and
 * kernel parameters. Built with the tests (fuzz_make_seeds); the output is
 * committed, so this runs only when the format changes:
 *   build/fuzz/fuzz_make_seeds fuzz/corpus/tuning */
#include <stdio.h>
#include <string.h>

#include "clformer.h"
#include "clformer_tune.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds OUTDIR\n");
        return 2;
    }
    size_t n;
    const struct clf_tuning_entry *t = clf_tuning_table(&n);
    for (size_t i = 0, made = 0; i < n && made < 4; i++) {
        if (!t[i].gemm)  /* entries that set only the kernels' values */
            continue;
        struct clf_tuning_record r;
        memset(&r, 0, sizeof r);
        snprintf(r.platform, sizeof r.platform, "Portable Computing Language");
        snprintf(r.device, sizeof r.device, "cpu-haswell-%s", t[i].name);
        snprintf(r.driver, sizeof r.driver, "3.1+debian");
        snprintf(r.clblast, sizeof r.clblast, "1.5.2-2");
        snprintf(r.created, sizeof r.created, "2024-01-0%zuT12:00:00Z", made + 1);
        r.minutes = 1.5 * (double)(i + 1);
        r.candidates = 40 + (unsigned)i;
        r.gemm = *t[i].gemm;
        r.kernels = (struct clf_kernel_params){.attn_tile_q = i ? 32 : 0, .attn_tile_k = i ? 64 : 0,
                                               .rows_wg = i % 2 ? 0 : 16};
        r.nshapes = 2;
        r.shapes[0] = (struct clf_tuning_shape){"attn proj", 512, 256, 256, false, true, 10.5, 12.25, 30};
        r.shapes[1] = (struct clf_tuning_shape){"ffn up", 512, 1024, 256, false, false, 11, 13.5, 0};
        char path[4096];
        snprintf(path, sizeof path, "%s/tuning-%zu.json", argv[1], made++);
        if (clf_tuning_save(path, &r) != CLF_OK) {
            fprintf(stderr, "%s: %s\n", path, clf_ctx_error(NULL));
            return 1;
        }
    }
    return 0;
}
