#!/usr/bin/env bash
# gpu-check.sh: build clformer, run its tests and benchmarks on a GPU machine
# that has a compiler and a driver but no package registry.
#
#   scripts/gpu-check.sh carry DIR     here, where apt works: DIR/debs gets the
#                                      .deb files the build needs, DIR/cmake.tar.gz
#                                      a CMake >= 3.25 (PyPI's static build)
#   scripts/gpu-check.sh run OUTDIR [DEBDIR] [--device D] [--tests REGEX] [--quick] [--unpack-all]
#                                      there: unpacks what the system lacks from
#                                      DEBDIR (DIR/debs; CMake from DIR if the
#                                      system's is missing or older than 3.25)
#                                      into a prefix, finds the
#                                      vendor's OpenCL library, builds, runs
#                                      `clformer devices`, the suite and
#                                      `clformer bench all --json` on the GPU;
#                                      logs, JSON and summary.txt go to OUTDIR
#
# --device D (default gpu) runs on another device: `--device cpu` is the dry
# run on PoCL, where a missing GPU library is no error. --tests limits the
# suite to ctest -R REGEX, --quick the benchmarks to their short sizes (both
# for dry runs only). --unpack-all unpacks every .deb even when the system has
# the package (to prove the prefix works on a machine that has everything).
# CLF_GPU_CHECK_BUILD chooses the build folder (default build-gpu).
set -euo pipefail
cd "$(dirname "$0")/.."

# What the build and tests need beyond a compiler, make and the driver: the
# ICD loader and headers, CLBlast, SentencePiece, OpenBLAS, zlib's headers,
# pkg-config and Criterion with the libraries those link to that a bare
# Debian/Ubuntu lacks (libc6, libstdc++6, libgcc-s1, zlib1g, libffi8,
# libssl3, libpcre2-8-0 and libquadmath0 are taken as there).
DEBS=(ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers opencl-headers
      libclblast1 libclblast-dev libsentencepiece0 libsentencepiece-dev
      libopenblas0-pthread libopenblas-pthread-dev libgfortran5 zlib1g-dev
      pkgconf pkgconf-bin libpkgconf3
      libcriterion3 libcriterion-dev libnanomsg5 libgit2-1.5 libhttp-parser2.9 libssh2-1
      libmbedtls14 libmbedcrypto7 libmbedx509-1
      libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1)
CMAKE_WHEEL="cmake>=3.25,<4"

die() { echo "gpu-check.sh: $*" >&2; exit 1; }

# glibc's version line: sed reads all of ldd's output, where head would close
# the pipe early and pipefail end the script on ldd's SIGPIPE
glibc() { ldd --version 2>&1 | sed -n 1p; }

carry() {
    local dir=${1:?usage: gpu-check.sh carry DIR}
    mkdir -p "$dir/debs"
    (cd "$dir/debs" && apt-get download "${DEBS[@]}") ||
        die "apt-get download failed: run 'sudo apt-get update' (package names are Debian 12's)"
    { . /etc/os-release; echo "$PRETTY_NAME"; glibc; } > "$dir/debs/SOURCE"
    # CMake from PyPI: one static binary, runs on any glibc >= 2.17
    local tmp
    tmp=$(mktemp -d)
    python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
        -d "$tmp" "$CMAKE_WHEEL" >&2 || die "pip could not download $CMAKE_WHEEL"
    python3 - "$tmp"/cmake-*.whl "$tmp/cmake" <<'EOF'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for e in z.infolist():
        p = e.filename
        if p.startswith("cmake/data/") and not e.is_dir() and "/Help/" not in p and "/doc/" not in p \
                and not p.startswith(("cmake/data/bin/cpack", "cmake/data/bin/ccmake", "cmake/data/share/vim")):
            out = os.path.join(sys.argv[2], p[len("cmake/data/"):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "wb") as f:
                f.write(z.read(e))
            os.chmod(out, 0o755 if "/bin/" in p else 0o644)
EOF
    tar -C "$tmp" -czf "$dir/cmake.tar.gz" cmake
    rm -rf "$tmp"
    echo "gpu-check.sh: $(ls "$dir"/debs/*.deb | wc -l) packages and CMake, $(du -sh "$dir" | cut -f1) in $dir"
}

# Unpacks the packages the system lacks (all with --unpack-all) into $PREFIX
# and makes their paths point there: .pc files, CMake configs, and -dev
# symlinks whose library the system already has.
unpack() {
    local debdir=$1 pkg deb f path
    rm -rf "$PREFIX"
    mkdir -p "$PREFIX"
    for deb in "$debdir"/*.deb; do
        pkg=$(dpkg-deb -f "$deb" Package)
        if [ -z "$UNPACK_ALL" ] && dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
            continue
        fi
        dpkg-deb -x "$deb" "$PREFIX"
        UNPACKED+=("$pkg")
    done
    # a link into /usr: to the prefix's copy, else the system's, else (libX.so)
    # to the system's libX.so.N of another version
    find "$PREFIX" -xtype l | while read -r f; do
        path=$(readlink "$f")
        case $path in /*) ;; *) path=$(dirname "${f#"$PREFIX"}")/$path ;; esac
        [ -e "$PREFIX$path" ] && { ln -sfn "$PREFIX$path" "$f"; continue; }
        [ -e "$path" ] && { ln -sfn "$path" "$f"; continue; }
        path=$(ldconfig -p | awk -v n="$(basename "$f")." 'index($1, n) == 1 && /x86-64/ {print $NF; exit}')
        if [ -n "$path" ]; then ln -sfn "$path" "$f"; fi
    done
    # shared linking only: Requires.private would ask for every -dev of every dependency
    find "$PREFIX" -name '*.pc' -print0 | xargs -0 -r sed -i -E \
        -e "s#=/usr(/|\$)#=$PREFIX/usr\\1#" -e "s#(-[IL])/usr/#\\1$PREFIX/usr/#g" -e '/^(Requires|Libs)\.private:/d'
    { grep -rl --include='*.cmake' '"/usr/' "$PREFIX" || true; } | while read -r f; do
        grep -o '"/usr/[^"]*"' "$f" | tr -d '"' | sort -u | while read -r path; do
            if [ ! -e "$path" ] && [ -e "$PREFIX$path" ]; then sed -i "s#\"$path\"#\"$PREFIX$path\"#g" "$f"; fi
        done
    done
}

# Writes an .icd file for each vendor library found, beside the system's.
find_gpu_libs() {
    local vendors=$OUT/vendors lib d
    mkdir -p "$vendors"
    for f in /etc/OpenCL/vendors/*.icd; do [ -e "$f" ] && cp -f "$f" "$vendors/"; done
    local nvidia_dirs=(/usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64)
    lib=""
    for d in "${nvidia_dirs[@]}"; do [ -e "$d/libnvidia-opencl.so.1" ] && { lib=$d/libnvidia-opencl.so.1; break; }; done
    [ -n "$lib" ] || lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libnvidia-opencl.so.1" && /x86-64/ {print $NF; exit}')
    [ -n "$lib" ] && GPU_LIBS+=("nvidia:$lib")
    lib=$(ls /opt/rocm*/lib/libamdocl64.so /opt/rocm*/opencl/lib/libamdocl64.so 2>/dev/null | head -1 || true)
    [ -n "$lib" ] && GPU_LIBS+=("amd:$lib")
    lib=$(ls /usr/lib/x86_64-linux-gnu/intel-opencl/libigdrcl.so /usr/local/lib/intel-opencl/libigdrcl.so 2>/dev/null | head -1 || true)
    [ -n "$lib" ] || lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libigdrcl.so" {print $NF; exit}')
    [ -n "$lib" ] && GPU_LIBS+=("intel-gpu:$lib")
    for entry in "${GPU_LIBS[@]}"; do
        echo "${entry#*:}" > "$vendors/${entry%%:*}.icd"
        LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(dirname "${entry#*:}")
    done
    export OCL_ICD_VENDORS=$vendors LD_LIBRARY_PATH
    if [ ${#GPU_LIBS[@]} -eq 0 ]; then
        note "no GPU OpenCL library found: looked for libnvidia-opencl.so.1 in ${nvidia_dirs[*]} and ldconfig -p," \
             "libamdocl64.so in /opt/rocm*/lib and /opt/rocm*/opencl/lib, libigdrcl.so in" \
             "/usr/lib/x86_64-linux-gnu/intel-opencl, /usr/local/lib/intel-opencl and ldconfig -p"
        return 1
    fi
    note "GPU OpenCL libraries: ${GPU_LIBS[*]}"
}

note() { echo "$*" | tee -a "$OUT/summary.txt"; }

# CMakeLists.txt asks for 3.25
cmake_new_enough() {
    command -v cmake >/dev/null || return 1
    local v
    v=$(cmake --version | awk 'NR == 1 {print $3}')
    [ "$(printf '%s\n' 3.25 "$v" | sort -V | head -1)" = 3.25 ]
}

# stage NAME LOG CMD...: runs CMD with its output in OUTDIR/LOG, notes the result
stage() {
    local name=$1 log=$OUT/$2 rc=0
    shift 2
    echo "gpu-check.sh: $name ..." >&2
    "$@" > "$log" 2>&1 || rc=$?
    if [ $rc -eq 0 ]; then note "ok      $name"; else note "FAILED  $name (exit $rc; $log)"; FAILED=1; fi
    return $rc
}

run() {
    local debdir="" device=gpu tests="" quick=() outarg=${1:?usage: gpu-check.sh run OUTDIR [DEBDIR] [options]}
    shift
    UNPACK_ALL=""
    while [ $# -gt 0 ]; do
        case $1 in
        --device) device=$2; shift 2 ;;
        --tests) tests=$2; shift 2 ;;
        --quick) quick=(--quick); shift ;;
        --unpack-all) UNPACK_ALL=1; shift ;;
        -*) die "unknown option $1" ;;
        *) debdir=$1; shift ;;
        esac
    done
    mkdir -p "$outarg"
    OUT=$(cd "$outarg" && pwd)
    local build=${CLF_GPU_CHECK_BUILD:-build-gpu}
    PREFIX=$(mkdir -p "$build" && cd "$build" && pwd)/prefix
    UNPACKED=() GPU_LIBS=() FAILED=0
    : > "$OUT/summary.txt"
    note "gpu-check on $(hostname), $(. /etc/os-release && echo "$PRETTY_NAME"), $(glibc), $(nproc) cores"
    [ -f "$debdir/SOURCE" ] && note "packages from: $(paste -sd';' "$debdir/SOURCE")"

    local carried=${debdir:+$(dirname "$debdir")}
    if [ -n "$carried" ] && [ -f "$carried/cmake.tar.gz" ] && ! cmake_new_enough; then
        tar -C "$build" -xzf "$carried/cmake.tar.gz"
        PATH=$(cd "$build/cmake/bin" && pwd):$PATH
        note "CMake: the carried one ($(cmake --version | head -1))"
    fi
    for tool in make cc c++; do command -v "$tool" >/dev/null || die "no $tool on this machine"; done
    cmake_new_enough || die "no CMake >= 3.25 on this machine (carry brings one: DEBDIR's folder/cmake.tar.gz)"

    if [ -n "$debdir" ]; then
        unpack "$debdir"
        note "unpacked into $PREFIX: ${UNPACKED[*]:-nothing (the system has every package)}"
        export PATH=$PREFIX/usr/bin:$PATH CPATH=$PREFIX/usr/include${CPATH:+:$CPATH}
        export PKG_CONFIG_PATH=$(find "$PREFIX" -type d -name pkgconfig | paste -sd:)${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
        local libdirs
        libdirs=$(find "$PREFIX" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd:)
        export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        export LIBRARY_PATH=$libdirs${LIBRARY_PATH:+:$LIBRARY_PATH}
        export CMAKE_PREFIX_PATH=$PREFIX/usr
    fi
    local gpu_found=1
    find_gpu_libs || gpu_found=0
    [ $gpu_found -eq 1 ] || [ "$device" != gpu ] || FAILED=1

    stage "build" build.log bash -c "cmake -S . -B '$build' -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
                                     cmake --build '$build' -j $(nproc)" || { note "see $OUT/build.log"; exit 1; }
    stage "clformer devices" devices.txt "$build/clformer" devices || true
    "$build/clformer" devices --json > "$OUT/devices.json" 2>/dev/null || true
    if [ "$device" = gpu ] && ! grep -q '"type": "gpu"' "$OUT/devices.json"; then
        note "no GPU among the OpenCL devices (devices.txt); vendors folder: $(ls "$OUT/vendors" | paste -sd' ')"
        exit 1
    fi
    local select=(-LE oclgrind)
    [ -n "$tests" ] && select+=(-R "$tests")
    stage "tests on $device (ctest ${select[*]})" ctest.log \
        env CLF_DEVICE="$device" ctest --test-dir "$build" --output-on-failure -j "$(( $(nproc) > 3 ? $(nproc) / 2 : 1 ))" "${select[@]}" || true
    note "        $(grep -E 'tests passed|Total Test time' "$OUT/ctest.log" | paste -sd';' || true)"
    stage "clformer bench all --json on $device" bench.log \
        bash -c "'$build/clformer' bench all --json --device '$device' ${quick[*]} > '$OUT/bench.json'" || true
    note "$( [ $FAILED -eq 0 ] && echo "gpu-check passed" || echo "gpu-check FAILED") (logs in $OUT)"
    exit $FAILED
}

case "${1:-}" in
carry) shift; carry "$@" ;;
run) shift; run "$@" ;;
*) sed -n '2,22p' "$0" >&2; exit 2 ;;
esac
