#!/bin/sh
# python_check.sh BUILD SOURCE: the Python package as a user installs it.
# The build is installed into a temporary prefix (`cmake --install`), a
# fresh virtual environment is made in a temporary folder with Debian's
# python3 (python3-venv; --system-site-packages for Debian's python3-pytest,
# python3-numpy and the setuptools that python3-pip brings), a copy of
# python/ is pip-installed into it with no network (--no-index
# --no-build-isolation: a pure-Python package needs only setuptools), and
# pytest runs python/tests against the installed package, which finds the
# prefix's libclformer.so.0 through pkg-config (PKG_CONFIG_PATH) and is
# compared with the prefix's command. PYTHON overrides the interpreter.
set -eu
B=$1 S=$(cd "$2" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/clf-python.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "python_check: $*" >&2; exit 1; }
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3) || fail "no python3: apt-get install python3 python3-venv"

"${CMAKE:-cmake}" --install "$B" --prefix "$T/prefix" > "$T/install.log" || fail "cmake --install: $(cat "$T/install.log")"
PC=$(dirname "$(find "$T/prefix" -name clformer.pc | head -1)")
[ -f "$PC/clformer.pc" ] || fail "no clformer.pc under $T/prefix"

"$PY" -m venv --system-site-packages "$T/venv" > "$T/venv.log" 2>&1 ||
    fail "$PY -m venv failed (apt-get install python3-venv): $(cat "$T/venv.log")"
V=$T/venv/bin/python
# a copy, so that the build leaves nothing in the source tree
cp -r "$S/python" "$T/src"
# without what an earlier `pip install ./python` in the checkout left:
# setuptools would install its stale build/lib copy of the modules
rm -rf "$T/src/tests" "$T/src/build" "$T/src"/*.egg-info
"$V" -m pip install --no-index --no-build-isolation --disable-pip-version-check -q "$T/src" > "$T/pip.log" 2>&1 ||
    fail "pip install ./python: $(cat "$T/pip.log")"
cd "$T"
WHERE=$(PKG_CONFIG_PATH=$PC "$V" -c 'import clformer, clformer._lib as l; l.library(); print(clformer.__file__)') ||
    fail "the installed package does not load the prefix's library"
case $WHERE in "$T/venv/"*) ;; *) fail "clformer was imported from $WHERE, not the virtual environment" ;; esac
"$V" -c 'import numpy, pytest' 2> "$T/imp.err" ||
    fail "the environment lacks numpy or pytest (apt-get install python3-numpy python3-pytest): $(cat "$T/imp.err")"
echo "python_check: pip installed clformer into $T/venv; the library from $PC/clformer.pc's libdir"
# no bytecode or pytest cache written into the source tree
PYTHONDONTWRITEBYTECODE=1 PKG_CONFIG_PATH=$PC CLFORMER_COMMAND=$T/prefix/bin/clformer \
    CLFORMER_INCLUDE=$T/prefix/include CC=${CC:-cc} \
    "$V" -m pytest -q -p no:cacheprovider --basetemp="$T/pytest" "$S/python/tests"
