"""The package's ctypes structures are the installed headers' structs:
their sizes, field offsets and field sizes compiled from the headers
(CLFORMER_INCLUDE: the folder holding clformer/clformer.h; default:
pkg-config's) with the C compiler (CC, default cc)."""

import ctypes
import os
import shlex
import subprocess

from clformer import _lib

STRUCTS = {"clf_device_info": _lib.DeviceInfo, "clf_translate_opts": _lib.TranslateOpts,
           "clf_batching": _lib.Batching, "clf_model_config": _lib.ModelConfig, "clf_train_hooks": _lib.TrainHooks,
           "clf_train_opts": _lib.TrainOpts, "clf_train_state": _lib.TrainState,
           "clf_corpus_summary": _lib.CorpusSummary, "clf_tok_ids": _lib.TokIds,
           "clf_spm_learn_opts": _lib.SpmLearnOpts, "clf_translate_file": _lib.TranslateFile}


def cflags():
    inc = os.environ.get("CLFORMER_INCLUDE")
    if inc:
        return ["-I" + inc]
    p = subprocess.run(["pkg-config", "--cflags", "clformer"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, "set CLFORMER_INCLUDE to the folder holding clformer/clformer.h: " + p.stderr
    return shlex.split(p.stdout)


def test_structs_match_the_headers(tmp_path):
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <clformer/clformer.h>", "int main(void) {"]
    for name, cls in STRUCTS.items():
        lines.append('printf("%s %%zu\\n", sizeof(struct %s));' % (name, name))
        for field, _ in cls._fields_:
            lines.append('printf("%s.%s %%zu %%zu\\n", offsetof(struct %s, %s), sizeof(((struct %s *)0)->%s));'
                         % (name, field, name, field, name, field))
    lines.append("return 0; }")
    (tmp_path / "abi.c").write_text("\n".join(lines) + "\n")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-std=c11", *cflags(), "-o", str(tmp_path / "abi"), str(tmp_path / "abi.c")], check=True,
                   timeout=120)
    got = subprocess.run([str(tmp_path / "abi")], capture_output=True, text=True, check=True, timeout=30).stdout
    want = []
    for name, cls in STRUCTS.items():
        want.append("%s %d" % (name, ctypes.sizeof(cls)))
        want += ["%s.%s %d %d" % (name, f, getattr(cls, f).offset, getattr(cls, f).size) for f, _ in cls._fields_]
    assert got.splitlines() == want
