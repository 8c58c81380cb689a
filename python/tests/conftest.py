"""What the tests share: the command (the reference the package must
match), a Marian fixture imported with it, the first lines of
test_2016_flickr, and one Translator on them.

CLFORMER_COMMAND names the clformer command (default: the one on PATH);
the library is found as the package finds it (CLFORMER_LIBRARY, ...);
the device is CLF_DEVICE's, as the command's is."""

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import clformer

ROOT = Path(__file__).resolve().parents[2]
LINES = 6


def run_command(*args, stdin=None):
    """The command's stdout; a failure fails the test with its stderr."""
    p = subprocess.run([command_path(), *map(str, args)], input=stdin, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, "clformer %s: %s" % (" ".join(map(str, args)), p.stderr)
    return p.stdout


def command_path():
    c = os.environ.get("CLFORMER_COMMAND") or shutil.which("clformer")
    assert c, "set CLFORMER_COMMAND to the clformer command the package is tested against"
    return c


@pytest.fixture(scope="session")
def model(tmp_path_factory):
    out = tmp_path_factory.mktemp("imported") / "relu_separate"
    run_command("import", ROOT / "tests/fixtures/marian/relu_separate", "-o", out)
    return out / "model.safetensors"


@pytest.fixture(scope="session")
def source():
    with gzip.open(ROOT / "data/multi30k/test_2016_flickr.en.gz", "rt", encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(LINES)]


@pytest.fixture(scope="session")
def source_file(tmp_path_factory, source):
    p = tmp_path_factory.mktemp("src") / "src.en"
    p.write_text("".join(s + "\n" for s in source), encoding="utf-8")
    return p


@pytest.fixture(scope="session")
def translator(model):
    with clformer.Translator(model) as t:
        yield t
