"""The package against the command: the same translations on the same
checkpoint and options, ids as text, numpy ids, errors raised with the
library's message, and threads."""

import json
import subprocess
import sys
import threading

import numpy as np
import pytest

import clformer
from conftest import ROOT, command_path, run_command


def command_translate(model, source_file, *flags):
    return run_command("translate", "--model", model, "--input", source_file, "--quiet", *flags).splitlines()


def firsts(results):
    return [r.hypotheses[0] for r in results]


def test_devices_are_the_commands():
    got = clformer.devices()
    want = json.loads(run_command("devices", "--json"))
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        for key in ("index", "platform", "name", "type", "vendor", "compute_units", "global_mem", "max_work_group",
                    "host_unified", "gemm", "shaped", "default"):
            assert g[key] == w[key], key
    assert sum(d.default for d in got) == 1


def test_text_is_the_commands(translator, model, source, source_file):
    want = command_translate(model, source_file)
    assert len(want) == len(source)
    assert firsts(translator.translate_batch(source)) == want


def test_options_are_the_commands(translator, model, source, source_file):
    assert firsts(translator.translate_batch(source, beam_size=1)) == command_translate(model, source_file,
                                                                                         "--greedy")
    want = command_translate(model, source_file, "--beam", 3, "--alpha", 0.6, "--length-penalty", "paper",
                             "--max-length", 13, "--min-length", 2, "--batch", 2)
    got = translator.translate_batch(source, beam_size=3, length_penalty=0.6, length_penalty_kind="paper",
                                     max_decoding_length=12, min_decoding_length=2, max_batch_size=2)
    assert firsts(got) == want
    assert firsts(translator.translate_batch(source, batch_type="tokens", max_batch_size=40)) == \
        command_translate(model, source_file, "--max-tokens", 40)


def test_nbest_and_scores_are_the_commands(translator, model, source, source_file):
    want = [line.split("\t") for line in command_translate(model, source_file, "--nbest", 3)]
    got = translator.translate_batch(source, num_hypotheses=3, return_scores=True)
    assert len(want) == 3 * len(source)
    for i, r in enumerate(got):
        assert r.hypotheses == [w[2] for w in want[3 * i:3 * i + 3]]
        assert ["%.4f" % s for s in r.scores] == [w[1] for w in want[3 * i:3 * i + 3]]
        assert r["hypotheses"] == r.hypotheses and r["scores"] == r.scores
    assert translator.translate_batch(source[:1])[0].scores == []


def test_file_is_the_commands(translator, model, source, source_file, tmp_path):
    out = tmp_path / "out.de"
    assert translator.translate_file(source_file, out) == len(source)
    assert out.read_text(encoding="utf-8").splitlines() == command_translate(model, source_file)
    assert translator.translate_file(source_file, out, num_hypotheses=3) == len(source)
    assert out.read_text(encoding="utf-8").splitlines() == command_translate(model, source_file, "--nbest", 3)
    assert [p.name for p in tmp_path.iterdir()] == ["out.de"]  # no temporary left


def test_file_in_shards_is_the_whole_file(translator, source_file, tmp_path):
    whole, out = tmp_path / "whole.de", tmp_path / "sharded.de"
    translator.translate_file(source_file, whole, beam_size=1, num_hypotheses=1)
    for k in range(4):  # 6 lines: shards of 2, 2, 1, 1
        lines = translator.translate_file(source_file, out, beam_size=1, shard=k, num_shards=4)
    assert (tmp_path / "sharded.de.shard-4-of-4").read_text(encoding="utf-8").count("\n") == 1
    clformer.join_shards(out, 4, lines)
    assert out.read_bytes() == whole.read_bytes()
    assert not list(tmp_path.glob("sharded.de.shard-*"))
    out.unlink()
    translator.translate_file(source_file, out, beam_size=1, shard=0, num_shards=2)
    with pytest.raises(clformer.FileError, match="shard-2-of-2 is missing"):
        clformer.join_shards(out, 2, lines)
    assert not out.exists()
    with pytest.raises(clformer.InvalidArgumentError, match="shard"):
        translator.translate_file(source_file, out, shard=2, num_shards=2)
    for k in range(8):  # more shards than lines: the last two empty
        translator.translate_file(source_file, out, beam_size=1, shard=k, num_shards=8)
    assert (tmp_path / "sharded.de.shard-8-of-8").read_bytes() == b""
    clformer.join_shards(out, 8, lines)
    assert out.read_bytes() == whole.read_bytes()


def test_ids_are_text(translator, source):
    text = firsts(translator.translate_batch(source))
    ids = [translator.encode(s) for s in source]
    assert all(isinstance(x, int) for x in ids[0]) and len(ids[0]) > 0
    assert firsts(translator.translate_batch(ids)) == text
    for dtype in (np.int32, np.int64, np.uint16):
        assert firsts(translator.translate_batch([np.array(x, dtype=dtype) for x in ids])) == text


def test_long_sources_are_cut(translator, source):
    limit = translator.max_source_length
    long_text = " ".join([source[0]] * (limit // len(translator.encode(source[0])) + 2))
    long_ids = translator.encode(long_text)
    assert len(long_ids) > limit
    want = firsts(translator.translate_batch([long_ids[:limit]], beam_size=1))
    assert firsts(translator.translate_batch([long_ids], beam_size=1)) == want
    assert firsts(translator.translate_batch([long_text], beam_size=1)) == want


def test_bad_sources(translator, source):
    with pytest.raises(TypeError, match="wrap one sentence"):
        translator.translate_batch(source[0])
    with pytest.raises(TypeError, match="mixes"):
        translator.translate_batch([source[0], [5, 6]])
    with pytest.raises(TypeError, match="integer dtype"):
        translator.translate_batch([np.array([5.0, 6.0])])
    with pytest.raises(TypeError, match="subword ids"):
        translator.translate_batch([["▁A", "▁dog"]])
    with pytest.raises(ValueError, match="id 100000 is outside the source vocabulary"):
        translator.translate_batch([[5, 100000]])
    # a NUL would end the C string there: the rest of the sentence lost, silently
    with pytest.raises(ValueError, match=r"source\[1\] holds a NUL"):
        translator.translate_batch([source[0], "A dog\0 runs"])
    with pytest.raises(ValueError, match="NUL"):
        translator.encode("A dog\0 runs")
    assert translator.translate_batch([]) == []


@pytest.mark.parametrize("options, message", [
    ({"beam_size": 0}, "beam_size wants an integer from 1 to 32"),
    ({"beam_size": 33}, "beam_size wants an integer from 1 to 32"),
    ({"beam_size": 2, "num_hypotheses": 3}, "num_hypotheses wants an integer from 1 to 2"),
    ({"max_batch_size": 0}, "max_batch_size wants an integer >= 1"),
    ({"batch_type": "sentences"}, "batch_type wants"),
    ({"length_penalty_kind": "gnmt"}, "length_penalty_kind wants"),
    ({"length_penalty": "1"}, "length_penalty wants a number"),
    ({"max_decoding_length": 0}, "max_decoding_length wants an integer >= 1"),
    ({"min_decoding_length": -1}, "min_decoding_length wants an integer >= 0"),
])
def test_bad_options(translator, source, options, message):
    with pytest.raises(clformer.InvalidArgumentError, match=message) as e:
        translator.translate_batch(source, **options)
    assert isinstance(e.value, ValueError) and isinstance(e.value, clformer.Error)


def test_missing_checkpoint(tmp_path):
    missing = tmp_path / "nothing.safetensors"
    with pytest.raises(FileNotFoundError) as e:
        clformer.Translator(missing)
    assert isinstance(e.value, clformer.Error) and e.value.status == "CLF_ERR_IO"
    assert str(missing) in e.value.message and "cannot open" in e.value.message


def test_not_a_checkpoint(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not json")
    with pytest.raises(clformer.Error) as e:
        clformer.Translator(bad)
    assert str(bad) in e.value.message and e.value.status.startswith("CLF_ERR_")


def test_wrong_tokenizer(model):
    with pytest.raises(clformer.Error, match="pass the") as e:
        clformer.Translator(model, tokenizer=ROOT / "tests/fixtures/marian/swish_shared")
    assert e.value.status == "CLF_ERR_ARG" and isinstance(e.value, ValueError)


def test_bad_device(model):
    with pytest.raises(clformer.DeviceError, match="no-such-device") as e:
        clformer.Translator(model, device="no-such-device")
    assert e.value.status == "CLF_ERR_NO_DEVICE"
    with pytest.raises(clformer.DeviceError):
        clformer.Translator(model, device=len(clformer.devices()))
    with pytest.raises(ValueError, match="negative"):
        clformer.Translator(model, device=-1)
    with pytest.raises(ValueError, match="device wants"):
        clformer.Translator(model, device=1.5)


def test_device_by_index_and_name(model, source, translator):
    want = firsts(translator.translate_batch(source[:2]))
    d = translator.device
    for request in (d.index, d.name):
        with clformer.Translator(model, device=request) as t:
            assert t.device.index == d.index
            assert firsts(t.translate_batch(source[:2])) == want


def test_compute_types(model, source, translator, source_file):
    want = firsts(translator.translate_batch(source[:2]))
    for ct in ("default", "float32"):
        with clformer.Translator(model, compute_type=ct) as t:
            assert t.compute_type == "float32" and firsts(t.translate_batch(source[:2])) == want
    # int8 and bfloat16 as the command runs them where the device and the
    # build can, else refused with the command's own reason
    for ct in ("int8", "bfloat16", "float16"):
        p = subprocess.run([command_path(), "translate", "--model", str(model), "--input", str(source_file),
                            "--compute-type", ct], capture_output=True, text=True, timeout=300)
        if p.returncode == 0:
            with clformer.Translator(model, compute_type=ct) as t:
                assert t.compute_type == ct
                assert firsts(t.translate_batch(source)) == p.stdout.splitlines()
        else:
            with pytest.raises(clformer.UnsupportedError) as e:
                clformer.Translator(model, compute_type=ct)
            assert e.value.message in p.stderr, (e.value.message, p.stderr)
    with pytest.raises(ValueError, match="compute_type 'int4' is not one of 'default', 'auto', 'float32', 'int8'"):
        clformer.Translator(model, compute_type="int4")


def test_closed(model, source):
    with clformer.Translator(model) as t:
        pass
    with pytest.raises(clformer.InvalidArgumentError, match="closed"):
        t.translate_batch(source)
    t.close()


def test_threads_on_one_translator(translator, source):
    want = [firsts(translator.translate_batch(source[k:] + source[:k])) for k in range(4)]
    got, errors = [None] * 4, []

    def work(k):
        try:
            got[k] = firsts(translator.translate_batch(source[k:] + source[:k]))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not errors and got == want


def test_one_translator_per_thread(model, source, translator):
    want = firsts(translator.translate_batch(source))
    got, errors = [None] * 2, []

    def work(k):
        try:
            with clformer.Translator(model) as t:
                got[k] = firsts(t.translate_batch(source))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not errors and got == [want, want]


def test_library_not_found(tmp_path):
    code = "import clformer\ntry:\n    clformer.devices()\nexcept clformer.LibraryNotFound as e:\n    print(e)\n"
    env = {"CLFORMER_LIBRARY": str(tmp_path / "libclformer.so.0"), "PATH": "/usr/bin:/bin"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "Set CLFORMER_LIBRARY" in p.stdout and str(tmp_path) in p.stdout


def test_batches_are_continuous_as_the_commands(translator):
    """The command's default batching (CLF_BATCHING_DEFAULT) is continuous:
    the package's too, for either batch_type."""
    assert translator._batching(8, "examples").continuous
    assert translator._batching(64, "tokens").continuous
