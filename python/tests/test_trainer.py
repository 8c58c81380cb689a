"""clformer.Trainer against the command: the same losses as `clformer
train` for the same options, data and seed (its log.jsonl), new models and
fine-tuning alike; the loss falling on repeated updates of the same data;
a saved checkpoint that Translator and `clformer translate` load; errors
raised with the library's message. A tiny model on a few lines."""

import gzip
import json
import math
import os

import pytest

import clformer
from conftest import ROOT, run_command

LINES = 40
# options of the Trainer and the same as the command's flags
OPTIONS = dict(preset="tiny", config={"enc_layers": 1, "dec_layers": 1, "heads": 2, "d_ff": 48}, max_len=30,
               max_tokens=512, update_tokens=600, warmup=10, seed=3, lr_scale=0.5, clip=1.0, dropout=0.1,
               label_smoothing=0.2)
FLAGS = ["--preset", "tiny", "--layers", 1, "--heads", 2, "--d-ff", 48, "--max-len", 30, "--max-tokens", 512,
         "--update-tokens", 600, "--warmup", 10, "--seed", 3, "--lr-scale", 0.5, "--clip", 1, "--dropout", 0.1,
         "--label-smoothing", 0.2]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """(source, target, bpe model): the first lines of Multi30k's training
    pairs and a small SentencePiece model learned on them."""
    d = tmp_path_factory.mktemp("train")
    paths = []
    for side in ("en", "de"):
        with gzip.open(ROOT / ("data/multi30k/train.%s.gz" % side), "rt", encoding="utf-8") as f:
            lines = [next(f) for _ in range(LINES)]
        p = d / ("train." + side)
        p.write_text("".join(lines), encoding="utf-8")
        paths.append(p)
    bpe = d / "sub.model"
    assert clformer.learn_bpe(paths, bpe, vocab_size=400) == os.fspath(bpe)
    return paths[0], paths[1], bpe


def command_train(out, src, tgt, *flags):
    """`clformer train`'s log.jsonl records of updates."""
    run_command("train", "--src", src, "--tgt", tgt, "--out", out, "--val-src", "", "--val-tgt", "", "--quiet",
                *flags)
    with open(out / "log.jsonl", encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if "loss" in r]


def as_logged(u):
    """An Update as the command's log.jsonl spells it."""
    return {"step": u.step, "epoch": float("%.4f" % u.epochs), "loss": float("%.6f" % u.loss),
            "lr": float("%.6g" % u.lr), "tokens": round(u.tokens)}


def logged(r):
    return {k: r[k] for k in ("step", "epoch", "loss", "lr", "tokens")}


def test_losses_are_the_commands(data, tmp_path):
    src, tgt, bpe = data
    want = command_train(tmp_path / "cmd", src, tgt, "--bpe", bpe, "--steps", 4, *FLAGS)
    with clformer.Trainer(src, tgt, bpe, **OPTIONS) as t:
        got = [t.step() for _ in range(4)]
        s = t.state
        assert t.config["enc_layers"] == 1 and t.config["heads"] == 2 and t.config["vocab"] == 400
        assert t.config["dropout"] == pytest.approx(0.1) and t.max_len == 30 and 0 < t.pairs <= LINES
    assert [as_logged(u) for u in got] == [logged(r) for r in want]
    assert s.step == 4 and s.seed == 3 and s.max_tokens == 512 and s.update_tokens == 600
    assert s.loss == got[-1].loss and s.tokens == sum(u.tokens for u in got)


def test_loss_falls_on_the_same_data(data, tmp_path):
    src, tgt, bpe = data
    few = [tmp_path / "few.en", tmp_path / "few.de"]
    for p, full in zip(few, (src, tgt)):
        p.write_text("".join(full.read_text(encoding="utf-8").splitlines(True)[:8]), encoding="utf-8")
    with clformer.Trainer(*few, bpe, preset="tiny", warmup=4, dropout=0, lr_scale=0.1) as t:
        assert t.state.epoch_batches == 1  # every update the same batch
        losses = [t.step().loss for _ in range(8)]
    assert all(math.isfinite(x) for x in losses)
    assert all(b < a for a, b in zip(losses, losses[1:])), losses


def test_saved_checkpoint_translates(data, tmp_path):
    src, tgt, bpe = data
    with clformer.Trainer(src, tgt, bpe, preset="tiny", max_tokens=512, warmup=10) as t:
        for _ in range(3):
            t.step()
        ckpt = t.save(tmp_path / "run")
        assert ckpt == os.fspath(tmp_path / "run" / "ckpt-3.safetensors")
        assert t.save(tmp_path / "run") == ckpt  # again: the same bpe.model is left
    assert (tmp_path / "run" / "ckpt-3.optim.safetensors").exists()
    assert (tmp_path / "run" / "bpe.model").read_bytes() == bpe.read_bytes()
    sentences = src.read_text(encoding="utf-8").splitlines()[:3]
    with clformer.Translator(ckpt) as tr:
        got = [r.hypotheses[0] for r in tr.translate_batch(sentences, beam_size=1)]
    want = run_command("translate", "--model", ckpt, "--greedy", "--quiet", stdin="\n".join(sentences) + "\n")
    assert got == want.splitlines()


def test_finetuning_is_the_commands(data, tmp_path):
    src, tgt, bpe = data
    run = clformer.train(src, tgt, bpe, steps=2, out=tmp_path / "base", preset="tiny", max_tokens=512, warmup=10)
    assert [u.step for u in run.updates] == [1, 2] and run.checkpoint.endswith("ckpt-2.safetensors")
    want = command_train(tmp_path / "cmd", src, tgt, "--init", run.checkpoint, "--steps", 3, "--warmup", 5,
                         "--seed", 4, "--max-tokens", 256)
    with clformer.Trainer(src, tgt, init=run.checkpoint, warmup=5, seed=4, max_tokens=256) as t:
        assert t.config["vocab"] == 400 and t.max_len == 100
        got = [t.step() for _ in range(3)]
        ckpt = t.save(tmp_path / "tuned")
    assert [as_logged(u) for u in got] == [logged(r) for r in want]
    with clformer.Translator(ckpt) as tr:
        assert len(tr.translate_batch(["A dog runs."], beam_size=1)[0].hypotheses) == 1
    with pytest.raises(ValueError, match="leave preset and config out"):
        clformer.Trainer(src, tgt, init=run.checkpoint, preset="tiny")


def test_missing_data_file(data, tmp_path):
    src, tgt, bpe = data
    missing = tmp_path / "nothing.de"
    with pytest.raises(FileNotFoundError) as e:
        clformer.Trainer(src, missing, bpe, preset="tiny")
    assert isinstance(e.value, clformer.Error) and e.value.status == "CLF_ERR_IO"
    assert str(missing) in e.value.message
    with pytest.raises(FileNotFoundError) as e:
        clformer.Trainer(src, tgt, tmp_path / "nothing.model", preset="tiny")
    assert str(tmp_path / "nothing.model") in e.value.message


def test_line_counts_differ(data, tmp_path):
    src, tgt, bpe = data
    short = tmp_path / "short.de"
    short.write_text("".join(tgt.read_text(encoding="utf-8").splitlines(True)[:3]), encoding="utf-8")
    with pytest.raises(clformer.Error) as e:
        clformer.Trainer(src, short, bpe, preset="tiny")
    assert e.value.status == "CLF_ERR_FORMAT"
    assert "line counts differ: %s has %d lines, %s has 3 lines" % (src, LINES, short) in e.value.message


def test_bad_device(data):
    src, tgt, bpe = data
    with pytest.raises(clformer.DeviceError, match="no-such-device") as e:
        clformer.Trainer(src, tgt, bpe, preset="tiny", device="no-such-device")
    assert e.value.status == "CLF_ERR_NO_DEVICE"
    with pytest.raises(ValueError, match="negative"):
        clformer.Trainer(src, tgt, bpe, preset="tiny", device=-1)


@pytest.mark.parametrize("options, message", [
    ({"tokenizer": None}, "a new model needs a tokenizer"),
    ({"preset": "huge"}, "huge"),
    ({"config": {"layers": 2}}, "'layers' is not a field"),
    ({"config": {"vocab": 10}}, "vocab comes from the tokenizer"),
    ({"config": {"heads": 5}}, "heads"),
    ({"max_tokens": 0}, "max_tokens wants an integer >= 1"),
    ({"warmup": 0}, "warmup wants an integer >= 1"),
    ({"clip": -1}, "clip wants a number >= 0"),
    ({"max_len": 1}, "max_len wants an integer >= 2"),
])
def test_bad_options(data, options, message):
    src, tgt, bpe = data
    kwargs = {"tokenizer": bpe, "preset": "tiny", **options}
    with pytest.raises(clformer.InvalidArgumentError, match=message):
        clformer.Trainer(src, tgt, **kwargs)


def test_closed(data):
    src, tgt, bpe = data
    with clformer.Trainer(src, tgt, bpe, preset="tiny", max_tokens=512) as t:
        pass
    with pytest.raises(clformer.InvalidArgumentError, match="closed"):
        t.step()
    t.close()
