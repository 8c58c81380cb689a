/* fuzz_json.c: the library's JSON reader (host/base/json.c), which
 * reads tuning files and benchmark reports (and, soon, safetensors headers
 * and checkpoint metadata), straight from memory: clf_json_parse and a
 * walk over the whole tree with the lookups, clf_json_check, and
 * clf_report_parse, which reads `clformer bench --json` reports for
 * `clformer bench compare`. The parse and the check must agree. */
#include <stdlib.h>
#include <string.h>

#include "clformer.h"
#include "clformer_tune.h"
#include "fuzz.h"
#include "clformer_json.h"
#include "report.h"

static void walk(const struct clf_json *j, int depth)
{
    if (depth > 10000)
        abort();
    switch (j->type) {
    case CLF_JSON_STRING:
        if (!j->string)
            abort();
        (void)strlen(j->string);
        break;
    case CLF_JSON_ARRAY:
    case CLF_JSON_OBJECT:
        for (size_t i = 0; i < j->count; i++) {
            if (j->type == CLF_JSON_OBJECT) {
                double num;
                if (!clf_json_get(j, j->keys[i]))
                    abort();
                (void)clf_json_str(j, j->keys[i]);
                (void)clf_json_num(j, j->keys[i], &num);
            }
            walk(&j->items[i], depth + 1);
        }
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct clf_json root;
    char err[256];
    bool parsed = clf_json_parse(text, size, &root, err, sizeof err);
    if (parsed) {
        walk(&root, 0);
        clf_json_free(&root);
    }
    if (clf_json_check(text, size, err, sizeof err) != parsed)
        abort();
    struct report r;
    if (report_parse(text, size, "fuzz", &r, err, sizeof err)) {
        struct comparison c;
        struct report two[2] = {r, r};
        if (report_compare(two, 2, 0, &c, err, sizeof err))
            comparison_free(&c);
        report_free(&r);
    }
    return 0;
}
