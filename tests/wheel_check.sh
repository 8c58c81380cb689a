#!/bin/sh
# wheel_check.sh BUILD SOURCE: the platform wheel (scripts/wheel.sh) as a
# user installs it, with no C install. The wheel is made from BUILD's
# library (--no-build: ctest has built it) and must carry
# clformer/libclformer.so.0; it is pip-installed into a fresh virtual
# environment (plain: the package needs nothing but the standard library)
# in a temporary folder, with no network. There, with CLFORMER_LIBRARY,
# LD_LIBRARY_PATH and PKG_CONFIG_PATH unset, clformer.Translator must load
# the wheel's own copy (not one the system's loader or pkg-config would
# find) and print what BUILD's `clformer translate` prints for the first
# lines of test_2016_flickr on the imported Marian fixture. Last, the
# wheel's copy replaced by a file that is no library must raise
# LibraryNotFound naming it and the system packages it needs, rather than
# load another. PYTHON overrides the interpreter.
set -eu
B=$(cd "$1" && pwd) S=$(cd "$2" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/clf-wheel-check.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "wheel_check: $*" >&2; exit 1; }
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3) || fail "no python3: apt-get install python3 python3-venv"

W=$(PYTHON=$PY sh "$S/scripts/wheel.sh" --no-build "$B" "$T/dist" 2> "$T/wheel.err") ||
    fail "scripts/wheel.sh: $(cat "$T/wheel.err")"
"$PY" -m zipfile -l "$W" > "$T/wheel.txt" || fail "$W is not a zip"
grep -q '^clformer/libclformer.so.0 ' "$T/wheel.txt" || fail "$W does not carry clformer/libclformer.so.0: $(cat "$T/wheel.txt")"

# --without-pip and the system's pip pointed at it (pip --python, pip 22.3
# and later): a venv that installs its own pip took 10 to 15 s here
"$PY" -m venv --without-pip "$T/venv" > "$T/venv.log" 2>&1 ||
    fail "$PY -m venv failed (apt-get install python3-venv): $(cat "$T/venv.log")"
V=$T/venv/bin/python
"$PY" -m pip --python "$V" install --no-index --no-deps --disable-pip-version-check -q "$W" > "$T/pip.log" 2>&1 ||
    fail "pip --python $V install $W (python3-pip 22.3 or later): $(cat "$T/pip.log")"

"$B/clformer" import "$S/tests/fixtures/marian/relu_separate" -o "$T/imp" > /dev/null 2> "$T/imp.err" ||
    fail "clformer import: $(cat "$T/imp.err")"
M=$T/imp/model.safetensors
gzip -dc "$S/data/multi30k/test_2016_flickr.en.gz" | head -n 6 > "$T/src.en"
"$B/clformer" translate --model "$M" --input "$T/src.en" --quiet > "$T/want.txt" 2> "$T/tr.err" ||
    fail "clformer translate: $(cat "$T/tr.err")"
[ "$(wc -l < "$T/want.txt")" -eq 6 ] || fail "clformer translate printed $(wc -l < "$T/want.txt") lines, not 6"

cat > "$T/translate.py" <<'PYEOF'
import sys

import clformer
import clformer._lib as lib

model, source, where = sys.argv[1:]
with open(source, encoding="utf-8") as f:
    lines = f.read().splitlines()
with clformer.Translator(model) as t:
    for r in t.translate_batch(lines):
        print(r.hypotheses[0])
with open(where, "w", encoding="utf-8") as f:
    f.write("%s\n%s\n" % lib.loaded)
PYEOF
# from $T, so that no clformer/ of the checkout is on the path; no bytecode left in the venv
run_py() {
    (cd "$T" && env -u CLFORMER_LIBRARY -u LD_LIBRARY_PATH -u PKG_CONFIG_PATH -u PYTHONPATH PYTHONDONTWRITEBYTECODE=1 \
        "$V" "$@")
}
run_py "$T/translate.py" "$M" "$T/src.en" "$T/where.txt" > "$T/got.txt" 2> "$T/py.err" ||
    fail "translating with the installed wheel: $(cat "$T/py.err")"
SITE=$(run_py -c 'import os, clformer; print(os.path.dirname(clformer.__file__))')
case $SITE in "$T/venv/"*) ;; *) fail "clformer was imported from $SITE, not the virtual environment" ;; esac
[ "$(sed -n 1p "$T/where.txt")" = "$SITE/libclformer.so.0" ] ||
    fail "the package loaded $(tr '\n' ' ' < "$T/where.txt"), not the wheel's $SITE/libclformer.so.0"
cmp -s "$T/want.txt" "$T/got.txt" ||
    fail "the wheel's Translator does not print what clformer translate prints: $(diff "$T/want.txt" "$T/got.txt")"
echo "wheel_check: $(basename "$W") in a fresh venv, its own library ($(sed -n 2p "$T/where.txt")): the command's 6 lines"

# a wheel whose library does not load stops there, and says what it needs
echo "not a library" > "$SITE/libclformer.so.0"
run_py -c 'import clformer
try:
    clformer.devices()
except clformer.LibraryNotFound as e:
    print(e)' > "$T/broken.txt" 2>&1 || fail "with a broken library: $(cat "$T/broken.txt")"
if ! grep -q "wheel's own libclformer.so.0" "$T/broken.txt" || ! grep -q "ocl-icd-libopencl1" "$T/broken.txt"; then
    fail "a broken bundled library did not raise LibraryNotFound naming it and ocl-icd-libopencl1: $(cat "$T/broken.txt")"
fi
echo "wheel_check: a broken bundled library raises LibraryNotFound naming it and the system packages"
