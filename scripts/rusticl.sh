#!/usr/bin/env bash
# rusticl.sh: Mesa's OpenCL implementation, rusticl, on llvmpipe (Mesa's
# software device), for the test suite. rusticl compiles kernels the way
# Mesa's GPU drivers do (clang -> SPIR-V -> NIR -> the back end), so it is
# CI's stand-in for AMD (radeonsi) and Intel (iris) GPUs under Mesa. It needs
# Debian 13's Mesa (glibc 2.38), newer than Debian 12's, so it runs in a
# Debian 13 root made with debootstrap from Debian's packages and kept in
# ${XDG_CACHE_HOME:-~/.cache}/clformer/rusticl-trixie (made once, topped up
# when PACKAGES grows). The checkout is bound into the root at its own path,
# so a build folder in it means the same inside and out.
#
#   scripts/rusticl.sh up          make the root if missing, mount /proc,
#                                  /sys, /dev and the checkout into it
#   scripts/rusticl.sh build DIR   build the checkout in DIR (inside the root,
#                                  with Debian 13's compiler and libraries;
#                                  the tests' time limits eight times
#                                  longer: llvmpipe runs a training step
#                                  several times slower than PoCL, and its
#                                  compiler is cold every run (at 4x,
#                                  test_attention's bit_identical_runs
#                                  ran out of its 240 s, compiling beside
#                                  test_queue's 1000-sentence case in a
#                                  fresh clone's CI; the limits catch hangs,
#                                  they time nothing)
#   scripts/rusticl.sh exec CMD... run CMD in the root, in the current folder,
#                                  with RUSTICL_ENABLE=llvmpipe
#   scripts/rusticl.sh down        unmount (run.sh does this on exit)
#
# CLF_ZINK=on (by hand only, not a CI stage): `up` adds Mesa's Vulkan
# drivers to the root and `exec` runs rusticl on Zink on lavapipe (OpenCL
# on Vulkan on the CPU) instead of llvmpipe. It lists a device, but
# lavapipe fails some of our kernels and then crashes: docs/gpus.md.
#
# Needs root (mount, chroot) and debootstrap. CLF_RUSTICL=off makes run.sh
# skip the stage; CLF_RUSTICL_ROOT puts the root elsewhere.
set -euo pipefail

SUITE=trixie
ROOT=${CLF_RUSTICL_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/clformer/rusticl-$SUITE}
SRC=$(cd "$(dirname "$0")/.." && pwd)
# Debian 13's sentencepiece.pc requires protobuf-lite: without libprotobuf-dev
# CMake says "SentencePiece not found". The sentencepiece tools are
# test_spm's reference.
PACKAGES=(mesa-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-headers clinfo
          build-essential cmake pkg-config libclblast-dev libopenblas-dev zlib1g-dev
          libsentencepiece-dev libprotobuf-dev sentencepiece libcriterion-dev)
MARKER=$ROOT/.clformer-packages

say() { echo "rusticl.sh: $*" >&2; }
die() { say "$*"; say "to run without rusticl: CLF_RUSTICL=off"; exit 1; }

# The Debian mirror this machine's apt uses, so that the root comes from the
# same place (debootstrap's own default where none is found).
mirror() {
    local uri
    uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n 1)
    [ -n "$uri" ] || uri=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | grep -v security | head -n 1)
    echo "$uri"
}

make_root() {
    local want="${PACKAGES[*]}"
    [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$want" ] && return 0
    [ "$(id -u)" -eq 0 ] || die "making the Debian 13 root needs root (debootstrap, chroot): run as root or with sudo"
    if [ -f "$MARKER" ]; then
        say "adding packages to $ROOT"
        chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${PACKAGES[@]}" >&2 || die "apt-get install in $ROOT failed"
    else
        command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
        local tmp=$ROOT.tmp
        ! grep -q " $tmp/" /proc/mounts || die "$tmp has mounts (see /proc/mounts): unmount them first"
        rm -rf --one-file-system "$tmp"
        mkdir -p "$(dirname "$ROOT")"
        say "making a Debian 13 root in $ROOT (about 1.5 GB, a few minutes, once)"
        local list
        list=$(IFS=,; echo "${PACKAGES[*]}")
        # shellcheck disable=SC2046
        debootstrap --variant=minbase --include="$list" "$SUITE" "$tmp" $(mirror) >"$tmp.log" 2>&1 ||
            { tail -n 20 "$tmp.log" >&2; die "debootstrap failed (log: $tmp.log)"; }
        rm -f "$tmp.log"
        # an unfinished root may still have the host's folders bound in:
        # never delete through a mount
        down
        ! grep -q " $ROOT/" /proc/mounts || die "$ROOT still has mounts (see /proc/mounts): unmount them first"
        rm -rf --one-file-system "$ROOT"
        mv "$tmp" "$ROOT"
    fi
    echo "$want" >"$MARKER.tmp" && mv "$MARKER.tmp" "$MARKER"
}

mounted() { mountpoint -q "$ROOT$1"; }

# Zink's packages, apart from PACKAGES so that the CI root stays as it is.
zink() { [ "${CLF_ZINK:-off}" = on ]; }
ZINK_PACKAGES=(mesa-vulkan-drivers)

up() {
    make_root
    if zink && ! chroot "$ROOT" dpkg -s "${ZINK_PACKAGES[@]}" >/dev/null 2>&1; then
        say "adding ${ZINK_PACKAGES[*]} to $ROOT (CLF_ZINK=on)"
        chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${ZINK_PACKAGES[@]}" >&2 || die "apt-get install ${ZINK_PACKAGES[*]} in $ROOT failed"
    fi
    local m
    for m in /proc /sys /dev "$SRC"; do
        mounted "$m" && continue
        mkdir -p "$ROOT$m"
        if [ "$m" = /proc ]; then
            mount -t proc proc "$ROOT/proc"
        else
            mount --bind "$m" "$ROOT$m"
        fi
    done
}

down() {
    local m
    for m in "$SRC" /dev /sys /proc; do
        mounted "$m" && umount -l "$ROOT$m"
    done
    return 0
}

case "${1:-}" in
up) up ;;
down) down ;;
build)
    [ $# -eq 2 ] || die "usage: scripts/rusticl.sh build DIR"
    up
    dir=$2
    [[ $dir == /* ]] || dir=$SRC/$dir
    chroot "$ROOT" /usr/bin/env -C "$SRC" sh -c \
        'mkdir -p "$1" &&
         cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLF_MPI=OFF -DCLF_TEST_TIME_SCALE=8 \
               >"$1/configure.log" 2>&1 ||
             { tail -n 30 "$1/configure.log"; exit 1; }
         cmake --build "$1" -j "$(nproc)"' sh "$dir"
    ;;
exec)
    shift
    [ $# -gt 0 ] || die "usage: scripts/rusticl.sh exec CMD..."
    mounted "$SRC" || die "the root is not up: scripts/rusticl.sh up"
    # the host's ICD settings (Intel's runtime) name folders the root lacks.
    # Zink: it took all three (Mesa 25.0.7): without LIBGL_ALWAYS_SOFTWARE
    # Zink refuses lavapipe ("ZINK: failed to choose pdev"), without
    # GALLIUM_DRIVER=zink the software device is llvmpipe, and
    # RUSTICL_ENABLE=zink alone lists no device.
    drv=(RUSTICL_ENABLE=llvmpipe)
    zink && drv=("RUSTICL_ENABLE=zink,llvmpipe" GALLIUM_DRIVER=zink LIBGL_ALWAYS_SOFTWARE=1)
    exec chroot "$ROOT" /usr/bin/env -C "$PWD" -u OCL_ICD_VENDORS -u OCL_ICD_FILENAMES -u LD_LIBRARY_PATH \
        "${drv[@]}" "$@"
    ;;
*)
    echo "usage: scripts/rusticl.sh up|build DIR|exec CMD...|down" >&2
    exit 2
    ;;
esac
