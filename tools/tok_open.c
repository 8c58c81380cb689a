/* tok_open.c: cli_tok_open, opening the tokenizer a checkpoint was made
 * with, for the commands that read or write text (translate, train --init).
 * An imported Marian model's checkpoint says so in its metadata
 * (tokenizer = marian) and keeps its tokenizer files beside it; ours name
 * their SentencePiece model in the metadata key `bpe` (default bpe.model). */
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* dirname() of a copy of path, into out. */
static void dir_of(const char *path, char *out, size_t len)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    snprintf(out, len, "%s", dirname(tmp));
}

bool cli_tok_path(const char *ckpt, const char *bpe_override, char *path, size_t len)
{
    char kind[64] = "", dir[4096], name[256] = "bpe.model";
    clf_checkpoint_meta(ckpt, "tokenizer", kind, sizeof kind);
    const bool marian = !strcmp(kind, "marian");
    dir_of(ckpt, dir, sizeof dir);
    if (bpe_override)  /* for Marian, the directory holding source.spm, target.spm and vocab.json */
        snprintf(path, len, "%s", bpe_override);
    else if (marian)
        snprintf(path, len, "%s", dir);
    else {  /* the subword model written beside the checkpoint by `clformer train` */
        clf_checkpoint_meta(ckpt, "bpe", name, sizeof name);
        snprintf(path, len, "%s/%s", dir, name);
    }
    return marian;
}

int cli_tok_open(const char *ckpt, const char *bpe_override, clf_tok_t **out)
{
    char kind[64] = "", path[4400], what[4500];
    clf_status st;
    *out = NULL;
    clf_checkpoint_meta(ckpt, "tokenizer", kind, sizeof kind);
    if (kind[0] && strcmp(kind, "spm") && strcmp(kind, "marian")) {
        fprintf(stderr, "clformer: %s names a tokenizer '%s' this build does not know (want spm or marian)\n", ckpt,
                kind);
        return 1;
    }
    if (cli_tok_path(ckpt, bpe_override, path, sizeof path)) {
        if ((st = clf_tok_marian_load(out, path)) != CLF_OK) {
            snprintf(what, sizeof what, "loading the Marian tokenizer of %s from %s (source.spm, target.spm, vocab.json)",
                     ckpt, path);
            return cli_fail(NULL, st, what);
        }
        return 0;
    }
    if ((st = clf_tok_spm_load(out, path)) != CLF_OK) {
        snprintf(what, sizeof what, "loading the subword model %s (pass the one %s was trained with: --bpe)", path,
                 ckpt);
        return cli_fail(NULL, st, what);
    }
    return 0;
}
