"""examples/translate.py, the README's "Use it from Python", prints what
`clformer translate` prints, and the README shows it as it is."""

import subprocess
import sys

from conftest import ROOT, run_command


def test_readme_shows_the_example():
    example = (ROOT / "examples/translate.py").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = "".join("    " + line if line.strip() else line for line in example.splitlines(True))
    assert block in readme.split("## Use it from Python", 1)[1], "README's Python example is not examples/translate.py"


def test_example_is_the_command(model, source_file):
    want = run_command("translate", "--model", model, "--input", source_file, "--quiet")
    with open(source_file, encoding="utf-8") as f:
        p = subprocess.run([sys.executable, str(ROOT / "examples/translate.py"), str(model)], stdin=f,
                           capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout == want
