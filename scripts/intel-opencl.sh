#!/usr/bin/env bash
# intel-opencl.sh: Intel's OpenCL CPU runtime, from PyPI's wheels, beside the
# system's OpenCL implementations, without root.
#
#   eval "$(scripts/intel-opencl.sh env)"   install once if needed, then print
#                                           the export lines that make the ICD
#                                           loader see Intel's CPU device too
#   scripts/intel-opencl.sh install         install once if needed, print the folder
#
# It downloads intel-opencl-rt, intel-cmplr-lib-rt and tbb (Debian's libtbb12
# is too old) with `python3 -m pip download`, unpacks only their lib/ folders
# into ${XDG_CACHE_HOME:-~/.cache}/clformer/intel-opencl/<version>/lib (the
# wheel's own libOpenCL.so is left out: it would shadow the system's ICD
# loader) and writes vendors/intel-cpu.icd next to copies of the system's .icd
# files, so OCL_ICD_VENDORS=<that folder> keeps PoCL and any GPU.
# LD_LIBRARY_PATH is not needed: libintelocl.so finds its companions through
# its RUNPATH ($ORIGIN), libcommon_clang.so through $ORIGIN/../lib. The install
# is built in a temporary folder and renamed into place; a marker written last
# makes an interrupted one start again.
#
# CLF_INTEL_OPENCL=off skips it (env prints nothing). CLF_INTEL_OPENCL_VERSION
# and CLF_TBB_VERSION choose other wheels.
set -euo pipefail

VERSION=${CLF_INTEL_OPENCL_VERSION:-2026.2.0}
TBB_VERSION=${CLF_TBB_VERSION:-2023.2.0}
ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/clformer/intel-opencl
DIR=$ROOT/$VERSION
MARKER=$DIR/.installed

say() { echo "intel-opencl.sh: $*" >&2; }
die() { say "$*"; say "to run without Intel's runtime: CLF_INTEL_OPENCL=off"; exit 1; }

install() {
    [ -f "$MARKER" ] && return 0
    [ "$(uname -m)" = x86_64 ] || die "Intel's OpenCL CPU runtime exists for x86-64 only (this is $(uname -m))"
    command -v python3 >/dev/null || die "python3 is missing: sudo apt-get install python3 python3-pip"
    python3 -m pip --version >/dev/null 2>&1 || die "pip is missing: sudo apt-get install python3-pip"
    mkdir -p "$ROOT"
    local tmp
    tmp=$(mktemp -d "$ROOT/.install-XXXXXX")
    chmod 755 "$tmp"
    trap 'rm -rf "$tmp"' EXIT
    say "downloading intel-opencl-rt $VERSION, intel-cmplr-lib-rt $VERSION and tbb $TBB_VERSION from PyPI (~270 MB, once)"
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp/wheels" \
        "intel-opencl-rt==$VERSION" "intel-cmplr-lib-rt==$VERSION" "tbb==$TBB_VERSION" >&2 ||
        die "pip could not download the wheels (no network or no access to PyPI?)"
    # Only */data/lib/*; what a zip stores twice (the .so -> .so.N symlinks it
    # cannot keep) becomes a symlink again; left out: the wheel's ICD loader,
    # the compiler's LTO plugin (93 MB) and gdb helpers.
    python3 - "$tmp/lib" "$tmp"/wheels/*.whl <<'EOF' || die "could not unpack the wheels"
import os, re, sys, zipfile
out = sys.argv[1]
os.makedirs(out)
skip = re.compile(r"^(libOpenCL\.so.*|icx-lto\.so|.*-gdb\.py)$")
for whl in sys.argv[2:]:
    seen = {}
    with zipfile.ZipFile(whl) as z:
        for e in sorted(z.infolist(), key=lambda e: len(e.filename)):
            parts = e.filename.split("/")
            if len(parts) != 4 or parts[1:3] != ["data", "lib"] or skip.match(parts[3]) or e.is_dir():
                continue
            dest = os.path.join(out, parts[3])
            key = (e.CRC, e.file_size)
            if key in seen:
                os.symlink(seen[key], dest)
                continue
            seen[key] = parts[3]
            with z.open(e) as src, open(dest, "wb") as dst:
                dst.write(src.read())
            os.chmod(dest, 0o755)
EOF
    rm -rf "$tmp/wheels"
    rm -rf "$DIR"
    mv "$tmp" "$DIR"
    trap - EXIT
    touch "$MARKER"
    say "installed in $DIR"
}

# The vendors folder is rewritten on every call, so a driver installed after
# Intel's runtime is still seen.
write_vendors() {
    local sys=/etc/OpenCL/vendors
    [ -n "${OCL_ICD_VENDORS:-}" ] && [ -d "$OCL_ICD_VENDORS" ] && sys=$OCL_ICD_VENDORS
    mkdir -p "$DIR/vendors"
    if [ "$sys" != "$DIR/vendors" ]; then
        for f in "$sys"/*.icd; do
            [ -e "$f" ] && cp -f "$f" "$DIR/vendors/"
        done
    fi
    echo "$DIR/lib/libintelocl.so" > "$DIR/vendors/intel-cpu.icd"
}

case "${1:-}" in
env)
    if [ "${CLF_INTEL_OPENCL:-}" = off ]; then
        say "skipped (CLF_INTEL_OPENCL=off)"
        exit 0
    fi
    install
    write_vendors
    echo "export OCL_ICD_VENDORS='$DIR/vendors'"
    ;;
install)
    install
    write_vendors
    echo "$DIR"
    ;;
*)
    echo "usage: eval \"\$(scripts/intel-opencl.sh env)\" | scripts/intel-opencl.sh install" >&2
    exit 2
    ;;
esac
