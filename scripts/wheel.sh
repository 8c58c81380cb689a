#!/bin/sh
# scripts/wheel.sh [--no-build] [BUILD [OUTDIR]]: a platform wheel of the
# Python package (python/) that carries the build's libclformer.so.0, so
# that `pip install clformer-*.whl` into a fresh virtual environment
# translates with no `cmake --install`, no CLFORMER_LIBRARY (the package
# loads the copy beside it: python/clformer/_lib.py). BUILD (default
# build/) is configured and its library built first unless --no-build;
# the wheel is written to OUTDIR (default BUILD/dist) and its path
# printed. The kernels are embedded in the library (cmake/embed.cmake), so
# it is the one file to ship.
#
# It is not a manylinux wheel: the library links the system's OpenCL ICD
# loader, CLBlast, SentencePiece, OpenBLAS, zlib (and oneDNN, OpenMP where
# built with them) rather than carrying them, so it installs where those
# Debian packages are (docs/python.md); the wheel's
# clformer/system-packages.txt names them, as dpkg knows them here.
# Offline: pip's --no-index --no-build-isolation, with Debian's
# python3-setuptools and python3-wheel (PYTHON, default /usr/bin/python3).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NOW=1
[ "${1:-}" = --no-build ] && { NOW=0; shift; }
[ $# -le 2 ] || { echo "usage: scripts/wheel.sh [--no-build] [BUILD [OUTDIR]]" >&2; exit 2; }
B=${1:-$ROOT/build}
O=${2:-$B/dist}
CMAKE=${CMAKE:-cmake}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
fail() { echo "wheel.sh: $*" >&2; exit 1; }

if [ $NOW = 1 ]; then
    [ -f "$B/CMakeCache.txt" ] || "$CMAKE" -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release || fail "configuring $B"
    "$CMAKE" --build "$B" --target clformer_shared -j "$(nproc)" || fail "building $B's library"
fi
[ -f "$B/CMakeCache.txt" ] || fail "$B is not a CMake build folder"
grep -q '^CLF_SANITIZE:[A-Z]*=ON' "$B/CMakeCache.txt" &&
    fail "$B is a sanitizer build: its library needs AddressSanitizer's runtime loaded before Python"
B=$(cd "$B" && pwd)
mkdir -p "$O"
O=$(cd "$O" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/clf-wheel.XXXXXX")
trap 'rm -rf "$T"' EXIT

# the library as `cmake --install` gives it (its build-tree RUNPATH gone),
# without debug sections
"$CMAKE" --install "$B" --component runtime --prefix "$T/prefix" --strip > "$T/install.log" 2>&1 ||
    fail "cmake --install $B --component runtime: $(cat "$T/install.log")"
SO=$(find "$T/prefix" -name libclformer.so.0 | head -1)
[ -n "$SO" ] || fail "no libclformer.so.0 in $B's runtime component (build it: cmake --build $B)"

# a copy of python/, less what a checkout's earlier `pip install ./python` left
cp -r "$ROOT/python" "$T/src"
rm -rf "$T/src/tests" "$T/src/build" "$T/src"/*.egg-info "$T/src/clformer/__pycache__"
cp -L "$SO" "$T/src/clformer/libclformer.so.0"

# the Debian packages of the libraries it links (DT_NEEDED), where dpkg
# knows them: one dpkg -S for all (a quarter second each); Debian 12
# registers some libraries under /lib, some under /usr/lib
ldd "$SO" > "$T/ldd.txt" || fail "ldd $SO: a library it links is missing here"
for n in $(readelf -d "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    # the dynamic loader (ldd: "/lib64/ld-linux-x86-64.so.2 (0x...)") is libc6's
    p=$(awk -v n="$n" '$1 == n && $2 == "=>" { print $3 } $1 ~ "/" n "$" { print $1 }' "$T/ldd.txt" | head -1)
    if [ -z "$p" ] || [ "$p" = "not" ]; then fail "$n, which libclformer links, is not found here"; fi
    echo "$n $p $(readlink -f "$p")"
done > "$T/needs.txt"
if command -v dpkg > /dev/null; then
    # shellcheck disable=SC2046
    dpkg -S $(awk '{ for (i = 2; i <= 3; i++) { print $i; print ($i ~ /^\/usr\//) ? substr($i, 5) : "/usr" $i } }' \
              "$T/needs.txt" | sort -u) > "$T/owners.txt" 2> /dev/null || true
fi
touch "$T/owners.txt"
awk 'NR == FNR { split($0, a, ": "); sub(/:.*/, "", a[1]); owner[a[2]] = a[1]; next }
     { pkg = $1 " (no package)"
       for (i = 2; i <= 3; i++) { u = ($i ~ /^\/usr\//) ? substr($i, 5) : "/usr" $i
                                  if ($i in owner) { pkg = owner[$i]; break } if (u in owner) { pkg = owner[u]; break } }
       print pkg }' "$T/owners.txt" "$T/needs.txt" | sort -u > "$T/src/clformer/system-packages.txt"

"$PY" -m pip wheel --no-index --no-build-isolation --no-deps --disable-pip-version-check -w "$T/dist" "$T/src" \
    > "$T/pip.log" 2>&1 || fail "pip wheel (needs python3-setuptools, python3-wheel): $(cat "$T/pip.log")"
W=$(find "$T/dist" -name 'clformer-*.whl' | head -1)
case $W in *-py3-none-linux_*.whl) ;; *) fail "pip made '$W', not a py3-none-linux platform wheel" ;; esac
# written beside an earlier one of the same name, then renamed over it
cp "$W" "$O/.$(basename "$W").tmp" && mv "$O/.$(basename "$W").tmp" "$O/$(basename "$W")"
echo "$O/$(basename "$W")"
