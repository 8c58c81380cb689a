/* test_inputs.c: inputs at the edges, through the `clformer` command: a
 * source longer than the model takes, a 10 MB line, a file of empty lines,
 * a beam wider than the search supports, a token budget per batch, and
 * bench all given a time budget already spent, train's pairs checked before
 * subwords are learned from them, average's and quantize's output
 * folders, and a folder given as the model. Each is handled by a
 * documented rule (truncate and say so, skip and count, leave out and
 * say so) or refused with a message that names the line, file or flag. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clformer_json.h"
#include "testutil.h"

#define CLI CLF_BINARY_DIR "/clformer"
#define DATA CLF_SOURCE_DIR "/data/multi30k"

static char dir[256];

/* A tiny model trained for two updates on the validation pairs: enough to
 * decode deterministically. */
static void tiny_model(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    char cmd[2048], err[512];
    snprintf(err, sizeof err, "%s/train.err", dir);
    snprintf(cmd, sizeof cmd,
             "%s train --src %s/val.en.gz --tgt %s/val.de.gz --val-src '' --val-tgt '' --preset tiny "
             "--vocab 400 --steps 2 --quiet --out %s/m",
             CLI, DATA, DATA, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
}

static void write_file(const char *name, const char *text, size_t repeat, const char *tail)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (size_t i = 0; i < repeat; i++)
        fputs(text, f);
    fputs(tail, f);
    fclose(f);
}

/* Runs `clformer translate --model … ARGS < INPUT`; stdout into out.txt. */
static int translate(const char *input, const char *args, char **msg)
{
    char cmd[2048], err[512];
    snprintf(err, sizeof err, "%s/translate.err", dir);
    snprintf(cmd, sizeof cmd, "%s translate --model %s/m/ckpt-2.safetensors %s < %s/%s > %s/out.txt", CLI, dir,
             args, dir, input, dir);
    int rc = tu_run(cmd, err);
    *msg = tu_slurp(err);
    return rc;
}

static size_t output_lines(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    char *s = tu_slurp(path);
    size_t n = 0;
    for (char *p = s; *p; p++)
        n += *p == '\n';
    free(s);
    return n;
}

TestSuite(inputs, .init = tiny_model, .timeout = TU_TIMEOUT(300));

Test(inputs, a_source_longer_than_the_model_is_truncated_and_named)
{
    write_file("long.en", "a man rides a horse ", 100, "\ntwo dogs\n");
    char *msg;
    cr_assert_eq(translate("long.en", "--greedy", &msg), 0, "%s", msg);
    cr_assert(strstr(msg, "line 1 has") && strstr(msg, "truncated"), "no word of the truncation:\n%s", msg);
    cr_assert_null(strstr(msg, "line 2"), "the short line was named too:\n%s", msg);
    cr_assert_eq(output_lines(), 2);
    free(msg);
}

Test(inputs, a_ten_megabyte_line_is_translated_truncated)
{
    char *chunk = malloc(1024 * 1024 + 1);
    memset(chunk, 'x', 1024 * 1024);
    chunk[1024 * 1024] = 0;
    write_file("huge.en", chunk, 10, "\ntwo dogs\n");
    free(chunk);
    char *msg;
    cr_assert_eq(translate("huge.en", "--greedy", &msg), 0, "%s", msg);
    cr_assert(strstr(msg, "line 1 has") && strstr(msg, "truncated"), "%s", msg);
    cr_assert_eq(output_lines(), 2);
    free(msg);
}

Test(inputs, empty_lines_give_one_output_line_each)
{
    /* the rule: an empty source is translated (as the EOS alone), so the
     * output keeps the input's line numbers */
    write_file("empty.en", "\n", 3, "");
    char *msg;
    cr_assert_eq(translate("empty.en", "--greedy", &msg), 0, "%s", msg);
    cr_assert_eq(output_lines(), 3);
    free(msg);
}

Test(inputs, a_beam_wider_than_the_search_is_refused_naming_the_flag)
{
    write_file("one.en", "", 0, "two dogs\n");
    char *msg;
    cr_assert_eq(translate("one.en", "--beam 100000", &msg), 2, "%s", msg);
    cr_assert(strstr(msg, "--beam <= 32"), "%s", msg);
    free(msg);
}

Test(inputs, a_token_budget_per_batch_changes_no_output)
{
    char a[512], b[512];
    char *msg;
    snprintf(a, sizeof a, "%s/all.txt", dir);
    snprintf(b, sizeof b, "%s/budget.txt", dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "zcat %s/val.en.gz | head -n 60 > %s/val.en", DATA, dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(translate("val.en", "--beam 2 --batch 64", &msg), 0, "%s", msg);
    snprintf(cmd, sizeof cmd, "mv %s/out.txt %s", dir, a);
    cr_assert_eq(system(cmd), 0);
    /* batches of at most 40 padded source tokens: one to three sentences */
    cr_assert_eq(translate("val.en", "--beam 2 --batch 64 --max-tokens 40", &msg), 0, "%s", msg);
    snprintf(cmd, sizeof cmd, "mv %s/out.txt %s", dir, b);
    cr_assert_eq(system(cmd), 0);
    char *x = tu_slurp(a), *y = tu_slurp(b);
    cr_assert(*x);
    cr_assert_str_eq(x, y, "translations differ with --max-tokens 40");
    free(x), free(y), free(msg);
}

Test(inputs, train_and_data_skip_and_count_what_they_cannot_use)
{
    write_file("pairs.en", "a dog runs\n", 1, "");
    write_file("pairs.de", "ein hund rennt\nein mann\n\n", 1, "");
    char path[512];
    snprintf(path, sizeof path, "%s/pairs.en", dir);
    FILE *f = fopen(path, "a");
    for (int i = 0; i < 60; i++)
        fputs("a man rides a horse ", f);
    fputs("\ntwo dogs\n", f);
    fclose(f);
    char cmd[2048], err[512], out[512];
    snprintf(err, sizeof err, "%s/data.err", dir);
    snprintf(out, sizeof out, "%s/data.out", dir);
    snprintf(cmd, sizeof cmd, "%s data %s/pairs.en %s/pairs.de --model %s/m/bpe.model > %s", CLI, dir, dir, dir, out);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    char *s = tu_slurp(out);
    cr_assert(strstr(s, "kept 1 pairs; skipped 1 with an empty side, 1 longer than 100"), "%s", s);
    free(s);
    /* a file of empty lines: nothing to learn from, said with both names */
    write_file("blank.en", "\n", 4, "");
    snprintf(cmd, sizeof cmd, "%s data %s/blank.en %s/blank.en --model %s/m/bpe.model", CLI, dir, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 1);
    s = tu_slurp(err);
    cr_assert(strstr(s, "no usable pairs") && strstr(s, "blank.en"), "%s", s);
    free(s);
    snprintf(cmd, sizeof cmd, "%s train --src %s/blank.en --tgt %s/blank.en --val-src '' --val-tgt '' --preset tiny "
                              "--bpe %s/m/bpe.model --steps 1 --quiet --out %s/blank",
             CLI, dir, dir, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 1);
    s = tu_slurp(err);
    cr_assert(strstr(s, "no usable pairs") && strstr(s, "blank.en"), "%s", s);
    free(s);
}

/* Train reads its pairs before it learns subwords from them: mismatched
 * line counts are named (both files and counts) before any learning, and a
 * --vocab the corpus cannot fill is refused naming the flag. */
Test(inputs, train_names_bad_pairs_before_learning_and_a_vocab_too_large)
{
    write_file("three.en", "a dog runs\na man\ntwo cats\n", 1, "");
    write_file("two.de", "ein hund rennt\nein mann\n", 1, "");
    char cmd[2048], err[512];
    snprintf(err, sizeof err, "%s/lines.err", dir);
    snprintf(cmd, sizeof cmd, "%s train --src %s/three.en --tgt %s/two.de --val-src '' --val-tgt '' --preset tiny "
                              "--steps 1 --out %s/lines",
             CLI, dir, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 1);
    char *s = tu_slurp(err);
    cr_assert(strstr(s, "three.en has 3 lines") && strstr(s, "two.de has 2 lines"), "%s", s);
    cr_assert_null(strstr(s, "learning"), "the counts are checked before any learning: %s", s);
    free(s);
    write_file("two.en", "a dog runs\na man\n", 1, "");
    snprintf(cmd, sizeof cmd, "%s train --src %s/two.en --tgt %s/two.de --val-src '' --val-tgt '' --preset tiny "
                              "--vocab 5000 --steps 1 --out %s/vocab",
             CLI, dir, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 1);
    s = tu_slurp(err);
    cr_assert(strstr(s, "--vocab 5000"), "%s", s);
    free(s);
}

/* A pair wider than --max-tokens is refused, naming its line and the budget
 * it needs, before the run's folder gets anything (it used to train with
 * that pair alone in a batch past the budget; fairseq refuses it too). */
Test(inputs, train_refuses_a_pair_wider_than_max_tokens)
{
    write_file("p.en", "a dog\na man runs across a very long and winding road today\n", 1, "");
    write_file("p.de", "ein hund\nein mann\n", 1, "");
    char cmd[2048], err[512], bpe[300];
    snprintf(err, sizeof err, "%s/wide.err", dir);
    snprintf(bpe, sizeof bpe, "%s/m/bpe.model", dir);
    snprintf(cmd, sizeof cmd, "%s train --src %s/p.en --tgt %s/p.de --val-src '' --val-tgt '' --preset tiny --bpe %s "
                              "--max-tokens 6 --steps 1 --out %s/wide",
             CLI, dir, dir, bpe, dir);
    cr_assert_eq(tu_run(cmd, err), 1);
    char *s = tu_slurp(err);
    cr_assert(strstr(s, "pair at line 2") && strstr(s, "more than max_tokens 6"), "%s", s);
    free(s);
    snprintf(cmd, sizeof cmd, "%s/wide/log.jsonl", dir);
    cr_assert_neq(access(cmd, F_OK), 0, "the refused run wrote %s", cmd);
    /* a budget that holds it trains */
    snprintf(cmd, sizeof cmd, "%s train --src %s/p.en --tgt %s/p.de --val-src '' --val-tgt '' --preset tiny --bpe %s "
                              "--max-tokens 100 --steps 1 --quiet --out %s/wide",
             CLI, dir, dir, bpe, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
}

/* `average -o` and `quantize -o` make OUT's folder, as train makes --out. */
Test(inputs, average_and_quantize_make_the_folder_of_their_output)
{
    char cmd[2048], err[512], path[512];
    snprintf(err, sizeof err, "%s/avg.err", dir);
    snprintf(cmd, sizeof cmd, "%s average -o %s/new/deeper/avg.safetensors %s/m/ckpt-2.safetensors", CLI, dir, dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    snprintf(path, sizeof path, "%s/new/deeper/avg.safetensors", dir);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fclose(f);
    snprintf(path, sizeof path, "%s/new/deeper/bpe.model", dir);
    f = fopen(path, "rb");
    cr_assert_not_null(f, "the tokenizer beside it: %s", path);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s quantize %s/m/ckpt-2.safetensors -o %s/q/int8/model.safetensors --to int8", CLI, dir,
             dir);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    snprintf(path, sizeof path, "%s/q/int8/bpe.model", dir);
    f = fopen(path, "rb");
    cr_assert_not_null(f, "the tokenizer beside the quantized model: %s", path);
    fclose(f);
}

/* A folder given as --model is refused as such (it read as a file of
 * LONG_MAX bytes once). */
Test(inputs, a_directory_as_the_model_is_refused_naming_it)
{
    char cmd[2048], err[512];
    snprintf(err, sizeof err, "%s/dir.err", dir);
    snprintf(cmd, sizeof cmd, "%s translate --model %s/m < /dev/null", CLI, dir);
    cr_assert_eq(tu_run(cmd, err), 1);
    char *msg = tu_slurp(err);
    cr_assert(strstr(msg, "/m: a directory, not a checkpoint: give a .safetensors file"), "%s", msg);
    free(msg);
}

/* Numeric option values are read whole: trailing text, a number where an
 * integer is wanted, or an empty value is refused naming the flag. */
Test(options, malformed_numbers_are_refused_naming_the_flag)
{
    const struct { const char *args, *says; } cases[] = {
        {"train --steps 5x", "--steps wants an integer, not '5x'"},
        {"train --dropout 0.1.2", "--dropout wants a number, not '0.1.2'"},
        {"train --vocab 99999999999", "--vocab wants an integer from"},
        {"train --max-tokens ''", "--max-tokens wants an integer, not ''"},
        {"translate --model x --beam four", "--beam wants an integer, not 'four'"},
        {"translate --model x --alpha nan", "--alpha wants a number, not 'nan'"},
    };
    char cmd[512], err[512];
    snprintf(err, sizeof err, "%s/err.txt", tu_tmpdir());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s", CLI, cases[i].args);
        cr_assert_eq(tu_run(cmd, err), 2, "%s did not exit with 2", cases[i].args);
        char *msg = tu_slurp(err);
        cr_assert(strstr(msg, cases[i].says), "%s:\n%s", cases[i].args, msg);
        free(msg);
    }
}

/* bench all held to a budget already spent (--seconds 0) starts no
 * benchmark and still writes a whole report: each benchmark an "error"
 * member and "started": false in runs, none with an exit status. */
Test(options, bench_all_past_its_seconds_starts_nothing_and_writes_a_whole_report)
{
    char cmd[1024], out[512], err[512], why[256];
    const char *tmp = tu_tmpdir();
    snprintf(out, sizeof out, "%s/all.json", tmp);
    snprintf(err, sizeof err, "%s/all.err", tmp);
    snprintf(cmd, sizeof cmd, "%s bench all --json --quick --seconds 0 > %s", CLI, out);
    cr_assert_eq(tu_run(cmd, err), 0, "%s", tu_slurp(err));
    char *json = tu_slurp(out), *msg = tu_slurp(err);
    cr_assert(clf_json_check(json, strlen(json), why, sizeof why), "%s:\n%s", why, json);
    cr_assert(strstr(json, "{\"bench\": \"gemm\", \"error\": \"not started: --seconds 0 spent\"}"), "%s", json);
    cr_assert(strstr(json, "{\"bench\": \"translate\", \"started\": false}"), "%s", json);
    cr_assert_null(strstr(json, "\"exit\""), "%s", json);
    cr_assert(strstr(msg, "benchmarks not started: --seconds 0 spent"), "%s", msg);
    free(json);
    free(msg);
}
