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

int cli_tok_open(const char *ckpt, const char *bpe_override, clf_tok_t **out)
{
    char kind[64] = "", dir[4096], name[256] = "bpe.model", path[4400], what[4500];
    clf_status st;
    *out = NULL;
    clf_checkpoint_meta(ckpt, "tokenizer", kind, sizeof kind);
    dir_of(ckpt, dir, sizeof dir);
    if (!strcmp(kind, "marian")) {
        /* --bpe, if given, names the directory holding source.spm, target.spm and vocab.json */
        const char *from = bpe_override ? bpe_override : dir;
        if ((st = clf_tok_marian_load(out, from)) != CLF_OK) {
            snprintf(what, sizeof what, "loading the Marian tokenizer of %s from %s (source.spm, target.spm, vocab.json)",
                     ckpt, from);
            return cli_fail(NULL, st, what);
        }
        return 0;
    }
    if (kind[0] && strcmp(kind, "spm")) {
        fprintf(stderr, "clformer: %s names a tokenizer '%s' this build does not know (want spm or marian)\n", ckpt,
                kind);
        return 1;
    }
    if (!bpe_override) {  /* the subword model written beside the checkpoint by `clformer train` */
        clf_checkpoint_meta(ckpt, "bpe", name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        bpe_override = path;
    }
    if ((st = clf_tok_spm_load(out, bpe_override)) != CLF_OK) {
        snprintf(what, sizeof what, "loading the subword model %s (pass the one %s was trained with: --bpe)",
                 bpe_override, ckpt);
        return cli_fail(NULL, st, what);
    }
    return 0;
}
