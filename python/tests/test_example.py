"""docs/python.md's ("Use it from Python") examples: examples/translate.py
prints what `clformer translate` prints, examples/train.py the losses
`clformer train` logs and a checkpoint that translates, and docs/python.md
shows both as they are."""

import gzip
import json
import subprocess
import sys

import pytest

import clformer
from conftest import ROOT, run_command


@pytest.mark.parametrize("name", ["translate.py", "train.py"])
def test_docs_show_the_example(name):
    example = (ROOT / "examples" / name).read_text(encoding="utf-8")
    page = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    block = "".join("    " + line if line.strip() else line for line in example.splitlines(True))
    assert block in page.split("# Use it from Python", 1)[1], "docs/python.md's example is not examples/" + name


def test_example_is_the_command(model, source_file):
    want = run_command("translate", "--model", model, "--input", source_file, "--quiet")
    with open(source_file, encoding="utf-8") as f:
        p = subprocess.run([sys.executable, str(ROOT / "examples/translate.py"), str(model)], stdin=f,
                           capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout == want


def test_training_example_is_the_command(tmp_path):
    pair = [tmp_path / "train.en", tmp_path / "train.de"]
    for p in pair:
        with gzip.open(ROOT / ("data/multi30k/" + p.name + ".gz"), "rt", encoding="utf-8") as f:
            p.write_text("".join(next(f) for _ in range(40)), encoding="utf-8")
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, str(ROOT / "examples/train.py"), *map(str, pair), str(out), "3"],
                       capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert p.returncode == 0, p.stderr
    *losses, ckpt = p.stdout.splitlines()
    run_command("train", "--src", pair[0], "--tgt", pair[1], "--bpe", out / "bpe.model", "--preset", "tiny",
                "--max-tokens", 512, "--warmup", 10, "--steps", 3, "--out", tmp_path / "cmd", "--val-src", "",
                "--val-tgt", "", "--quiet")
    with open(tmp_path / "cmd" / "log.jsonl", encoding="utf-8") as f:
        want = ["%d %.6f" % (r["step"], r["loss"]) for r in map(json.loads, f)]
    assert len(want) == 3 and losses == want and ckpt == str(out / "ckpt-3.safetensors")
    with clformer.Translator(ckpt) as t:
        assert len(t.translate_batch(["A dog runs."], beam_size=1)) == 1
