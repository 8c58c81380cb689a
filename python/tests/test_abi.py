"""The package's ctypes structures are the installed headers' structs:
their sizes, field offsets and field sizes compiled from the headers
(CLFORMER_INCLUDE: the folder holding clformer/clformer.h; default:
pkg-config's) with the C compiler (CC, default cc). Likewise every enum
value and macro the package mirrors (_lib's module-level CLF_* and CL_*
integers), the whole of enum clf_status, and the compute types' names."""

import ctypes
import os
import shlex
import subprocess

from clformer import _lib

STRUCTS = {"clf_device_info": _lib.DeviceInfo, "clf_translate_opts": _lib.TranslateOpts,
           "clf_batching": _lib.Batching, "clf_model_config": _lib.ModelConfig, "clf_train_hooks": _lib.TrainHooks,
           "clf_train_opts": _lib.TrainOpts, "clf_train_state": _lib.TrainState,
           "clf_corpus_summary": _lib.CorpusSummary, "clf_tok_ids": _lib.TokIds,
           "clf_spm_learn_opts": _lib.SpmLearnOpts, "clf_translate_file": _lib.TranslateFile,
           "clf_train_setup": _lib.TrainSetup, "clf_train_setup_hooks": _lib.TrainSetupHooks,
           "clf_train_setup_report": _lib.TrainSetupReport,
           "clf_queue_opts": _lib.QueueOpts, "clf_queue_submit_opts": _lib.QueueSubmitOpts}


def cflags():
    inc = os.environ.get("CLFORMER_INCLUDE")
    if inc:
        return ["-I" + inc]
    p = subprocess.run(["pkg-config", "--cflags", "clformer"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, "set CLFORMER_INCLUDE to the folder holding clformer/clformer.h: " + p.stderr
    return shlex.split(p.stdout)


def compile_and_run(tmp_path, name, lines):
    """Compiles lines as tmp_path/name.c against the headers; its stdout.
    A compile error fails the test with the compiler's message (a name the
    package mirrors that the headers lack shows there)."""
    (tmp_path / (name + ".c")).write_text("\n".join(lines) + "\n")
    cc = os.environ.get("CC", "cc")
    p = subprocess.run([cc, "-std=c11", *cflags(), "-o", str(tmp_path / name), str(tmp_path / (name + ".c"))],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, "%s.c does not compile against the headers:\n%s" % (name, p.stderr)
    return subprocess.run([str(tmp_path / name)], capture_output=True, text=True, check=True, timeout=30).stdout


def mirrored_constants():
    """_lib's module-level integers named as the headers name them."""
    return {k: v for k, v in vars(_lib).items()
            if k.startswith(("CLF_", "CL_")) and isinstance(v, int) and not isinstance(v, bool)}


def test_constants_match_the_headers(tmp_path):
    names = mirrored_constants()
    assert "CLF_ERR_UNSUPPORTED" in names and "CLF_COMPUTE_NTYPES" in names
    lines = ["#include <stdio.h>", "#include <clformer/clformer.h>", "#include <clformer/advanced.h>",
             "int main(void) {"]
    lines += ['printf("%s %%lld\\n", (long long)(%s));' % (k, k) for k in names]
    lines.append("return 0; }")
    got = compile_and_run(tmp_path, "constants", lines).splitlines()
    want = ["%s %d" % kv for kv in names.items()]
    wrong = ["%s: Python %s, C %s" % (w.split()[0], w.split()[1], g.split()[1])
             for w, g in zip(want, got) if w != g]
    assert len(got) == len(want) and not wrong, "_lib's constants differ from the headers': %s" % wrong


def test_every_status_is_mirrored():
    """Each value of enum clf_status, as clf_status_str names them (up to
    the first it does not know), is _lib's constant of that name; a status
    added to the C enum and not here fails."""
    names = mirrored_constants()
    seen = []
    for st in range(64):
        name = _lib.status_name(st)
        if name == "CLF_ERR_UNKNOWN":
            break
        assert names.get(name) == st, "status %d, %s, is not _lib.%s = %d" % (st, name, name, st)
        seen.append(name)
    mirrored = sorted(k for k in names if k == "CLF_OK" or k.startswith("CLF_ERR_"))
    assert sorted(seen) == mirrored, "the library's statuses %s, _lib's %s" % (seen, mirrored)
    assert _lib.status_name(len(seen)) == "CLF_ERR_UNKNOWN"


def test_compute_type_names():
    """translator.COMPUTE_TYPES after "default" and "auto" are enum
    clf_compute_type's names, in order (clf_compute_type_str)."""
    from clformer import translator
    lib = _lib.library()
    names = [_lib.text(lib.clf_compute_type_str(i)) for i in range(_lib.CLF_COMPUTE_NTYPES)]
    assert list(translator.COMPUTE_TYPES) == ["default", "auto"] + names


def test_train_opts_default():
    """clf_train_opts_default is what clformer/train.h, docs/c-api.md and
    Trainer's docstring say: the values Trainer leaves when given None."""
    o = _lib.library().clf_train_opts_default()
    got = {f: getattr(o, f) for f in ("dropout", "label_smoothing", "seed", "max_tokens", "update_tokens", "warmup",
                                      "lr_scale", "clip", "rank", "ranks")}
    assert got == {"dropout": -1, "label_smoothing": -1, "seed": 1, "max_tokens": 4096, "update_tokens": 0,
                   "warmup": 800, "lr_scale": 1, "clip": 0, "rank": 0, "ranks": 1}
    assert not o.config and o.init is None and not o.hooks.backward and not o.hooks.reduce



def test_train_setup_default():
    """clf_train_setup_default: this process learns, max_len -1 (the
    default), the options clf_train_opts_default's, nothing else set."""
    s = _lib.library().clf_train_setup_default()
    assert s.learner and s.max_len == -1 and not s.resume and s.val_pairs == 0 and s.learn_vocab == 0
    assert s.source is None and s.tokenizer is None and s.preset is None and not s.report
    assert s.opts.seed == 1 and s.opts.max_tokens == 4096 and s.opts.ranks == 1 and not s.hooks.stage

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
