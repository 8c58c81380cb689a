#!/usr/bin/env bash
# gpu-check.sh: build clformer, benchmark, tune and test it on a GPU machine
# that has a compiler and a driver but no package registry, in one command
# that ends within a time budget.
#
#   scripts/gpu-check.sh carry DIR     here, where apt works: DIR/debs gets the
#                                      .deb files the build needs, DIR/cmake.tar.gz
#                                      a CMake >= 3.25 (PyPI's static build)
#   scripts/gpu-check.sh run OUTDIR [DEBDIR] [--device D] [--seconds S] [--tune-minutes M]
#                                   [--tests REGEX] [--quick] [--unpack-all] [--model CKPT]
#                                      there: unpacks what the system lacks from
#                                      DEBDIR (DIR/debs; CMake from DIR only if the
#                                      system's is missing or older than 3.25)
#                                      into a prefix, finds the drivers' OpenCL
#                                      libraries, builds with Ninja (else make),
#                                      then, most valuable first, each step
#                                      bounded: `clformer bench all --quick`,
#                                      with --model CKPT test_2016_flickr
#                                      translated (beam 4, greedy; float32,
#                                      and float16 where the device has it),
#                                      sentences/s and BLEU,
#                                      `clformer tune --minutes M` (default 2) and
#                                      `tune --show`, bench gemm on CLBlast's
#                                      defaults and tuned, the suite (ctest
#                                      --stop-time, less the oclgrind, host, fuzz
#                                      and mpi labels), and with the time left
#                                      `clformer bench all` at full sizes
#
# OUTDIR gets at most 8 files: summary.txt (the machine, nvidia-smi -L, the
# ICD files used, each step's result and time, the devices, tune --show, the
# benchmarks' figures, the suite's failures), build.log, run.log (the
# commands' stderr), bench-quick.json, tune.log, tuning.json (the device's
# tuning file, an entry for host/runtime/tuning_table.c), ctest.log and
# bench.json. The build folder (CLF_GPU_CHECK_BUILD, default build-gpu) holds
# the rest: the prefix, the .icd files (vendors/), the kernel cache and the
# tuning file (cache/), the intermediate reports (gpu-check/).
#
# --seconds S (default 540) is the budget from start to verdict: every step
# runs under timeout, never past it, the ones before the suite stop 2 minutes
# short of it, and tune gets fewer minutes rather than being cut. --device D
# (default gpu) runs on another device: `--device cpu` is the dry run on
# PoCL, where a missing GPU library is no error. --tests limits the suite to
# ctest -R REGEX, --quick leaves out the benchmarks' full sizes (both for dry
# runs). --unpack-all unpacks every .deb even when the system has the package
# (to prove the prefix works on a machine that has everything). --model CKPT
# (a checkpoint with its tokenizer beside it, `clformer quantize --to
# float16` halving what travels) adds the translations, their hypotheses in
# the build folder's gpu-check/.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the build and tests need beyond a compiler, Ninja or make and the driver: the
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
        path=$(ldconfig -p | awk -v n="$(basename "$f")." '!found && index($1, n) == 1 && /x86-64/ {print $NF; found = 1}')
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

# The GPU drivers' OpenCL libraries, found by glob (a mount may hold only the
# versioned file, libnvidia-opencl.so.550.54.15): an .icd file for each in
# $BUILD/vendors beside copies of the system's, OCL_ICD_VENDORS pointing
# there (ocl-icd, Khronos's loader) and OCL_ICD_FILENAMES naming them
# (Khronos's loader, newer ocl-icd).
find_gpu_libs() {
    local vendors=$BUILD/vendors lib d f
    rm -rf "$vendors"
    mkdir -p "$vendors"
    for f in /etc/OpenCL/vendors/*.icd; do [ -e "$f" ] && cp -f "$f" "$vendors/"; done
    local nvidia_dirs=(/usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib)
    lib=""
    for d in "${nvidia_dirs[@]}"; do
        lib=$(newest "$d"/libnvidia-opencl.so*)
        [ -n "$lib" ] && break
    done
    [ -n "$lib" ] || lib=$(ldconfig -p 2>/dev/null | awk '!found && $1 ~ /^libnvidia-opencl\.so/ && /x86-64/ {print $NF; found = 1}')
    if [ -n "$lib" ]; then
        GPU_LIBS+=("nvidia:$lib")
        soname_links "$(dirname "$lib")"
    fi
    lib=$(newest /opt/rocm*/lib/libamdocl64.so /opt/rocm*/opencl/lib/libamdocl64.so)
    [ -n "$lib" ] && GPU_LIBS+=("amd:$lib")
    lib=$(newest /usr/lib/x86_64-linux-gnu/intel-opencl/libigdrcl.so /usr/local/lib/intel-opencl/libigdrcl.so)
    [ -n "$lib" ] || lib=$(ldconfig -p 2>/dev/null | awk '!found && $1 == "libigdrcl.so" {print $NF; found = 1}')
    [ -n "$lib" ] && GPU_LIBS+=("intel-gpu:$lib")
    local files=()
    for entry in "${GPU_LIBS[@]}"; do
        echo "${entry#*:}" > "$vendors/${entry%%:*}.icd"
        files+=("${entry#*:}")
        LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(dirname "${entry#*:}")
    done
    OCL_ICD_FILENAMES=$(IFS=:; echo "${files[*]}")
    export OCL_ICD_VENDORS=$vendors OCL_ICD_FILENAMES LD_LIBRARY_PATH
    for f in "$vendors"/*.icd; do [ -e "$f" ] && note "        $f: $(cat "$f")"; done
    note "        OCL_ICD_VENDORS=$OCL_ICD_VENDORS OCL_ICD_FILENAMES=${OCL_ICD_FILENAMES:-(none)}"
    if [ ${#GPU_LIBS[@]} -eq 0 ]; then
        note "no GPU OpenCL library found: looked for libnvidia-opencl.so* in ${nvidia_dirs[*]} and ldconfig -p," \
             "libamdocl64.so in /opt/rocm*/lib and /opt/rocm*/opencl/lib, libigdrcl.so in" \
             "/usr/lib/x86_64-linux-gnu/intel-opencl, /usr/local/lib/intel-opencl and ldconfig -p"
        return 1
    fi
    note "GPU OpenCL libraries: ${GPU_LIBS[*]}"
}

# The last by version of the files a glob names that exist, or nothing.
newest() { local f; for f in "$@"; do if [ -e "$f" ]; then echo "$f"; fi; done | sort -V | tail -1; }

# A driver loads its siblings (libcuda.so.1, libnvidia-ptxjitcompiler.so.1)
# by soname: where DIR holds only the versioned files, links named by soname
# in $BUILD/driver-libs point at them, and LD_LIBRARY_PATH reaches them.
soname_links() {
    local dir=$1 links=$BUILD/driver-libs f so
    rm -rf "$links"
    command -v objdump >/dev/null || return 0
    mkdir -p "$links"
    for f in "$dir"/libnvidia*.so.* "$dir"/libcuda*.so.*; do
        [ -f "$f" ] || continue
        so=$(objdump -p "$f" 2>/dev/null | awk '$1 == "SONAME" {print $2}')
        if [ -n "$so" ] && [ ! -e "$dir/$so" ]; then ln -sfn "$f" "$links/$so"; fi
    done
    if [ -n "$(ls -A "$links")" ]; then
        LD_LIBRARY_PATH=$links${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        note "        soname links for $dir's versioned files: $(ls "$links" | paste -sd' ')"
    fi
    return 0
}

# One line of the summary, also on the console (fd 3: steps' output is redirected).
note() { echo "$*" >> "$OUT/summary.txt"; echo "$*" >&3; }
# A command's output into the summary, indented; its failure is noted, not fatal.
block() { { "$@" 2>&1 || echo "(exit $?)"; } | sed 's/^/    /' >> "$OUT/summary.txt"; }
section() { note ""; note "== $* =="; }

# CMakeLists.txt asks for 3.25
cmake_new_enough() {
    command -v cmake >/dev/null || return 1
    local v
    v=$(cmake --version | awk 'NR == 1 {print $3}')
    [ "$(printf '%s\n' 3.25 "$v" | sort -V | head -1)" = 3.25 ]
}

left() { echo $(( DEADLINE - $(date +%s) )); }
# The time a step of at most CAP seconds gets: never closer to the deadline
# than RESERVE seconds, kept for what follows.
limit() { local t=$(( $(left) - RESERVE )); echo $(( t < $1 ? t : $1 )); }

# step NAME CAP CMD...: runs CMD under timeout for limit CAP seconds; notes
# ok, FAILED or CUT with its time. With under MIN_S seconds (default 15) to
# give it, the step is skipped. The caller redirects CMD's output. Exit
# statuses listed in JUDGED are the caller's to judge (ctest's 8: a test did
# not pass).
step() {
    local name=$1 t rc=0 t0
    t=$(limit "$2")
    shift 2
    if [ "$t" -lt "${MIN_S:-15}" ]; then
        note "SKIPPED $name: $(left) s of the budget left"
        INCOMPLETE=1
        return 3
    fi
    t0=$(date +%s)
    echo "gpu-check.sh: $name (at most $t s) ..." >&3
    timeout -k 10 "$t" "$@" || rc=$?
    if [ "$rc" = 0 ]; then note "ok      $name ($(( $(date +%s) - t0 )) s)"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then note "CUT     $name at its limit of $t s"; INCOMPLETE=1
    elif [[ " ${JUDGED:-} " = *" $rc "* ]]; then note "done    $name (exit $rc after $(( $(date +%s) - t0 )) s)"
    else note "FAILED  $name (exit $rc after $(( $(date +%s) - t0 )) s)"; FAILED=1; fi
    return $rc
}

# suite_results LOG RC TOTAL: ctest's tally of the TOTAL tests selected, and
# every test that did not pass: a Timeout after ctest passed its stop time
# was cut by the budget (INCOMPLETE), any other a failure, as is ctest ending
# without a tally unless its step was cut or skipped (RC 124, 137, 3).
suite_results() {
    local log=$1 rc=$2 total=$3 failed
    if grep -q 'tests passed' "$log"; then
        grep -E 'tests passed|Total Test time' "$log" | sed 's/^/    /' >> "$OUT/summary.txt"
        note "    $(grep -c '^ *[0-9]*/[0-9]* Test *#' "$log") of the $total tests selected ran"
    else
        note "    no tally: ctest did not finish (ctest.log)"
        case $rc in 124 | 137 | 3) ;; *) FAILED=1 ;; esac
    fi
    failed=$(sed -n '/The following tests FAILED/,$ {/^[[:space:]]*[0-9]* - /p}' "$log")
    if grep -q 'The stop time has been passed' "$log"; then
        note "    the stop time came before the suite's end: tests not started are left out of the tally," \
             "a Timeout below was cut there"
        INCOMPLETE=1
        grep -v '(Timeout)' <<< "$failed" | grep -q . && FAILED=1
    else
        [ -z "$failed" ] || FAILED=1
    fi
    [ -z "$failed" ] || { note "    did not pass:"; sed 's/^[[:space:]]*/        /' <<< "$failed" >> "$OUT/summary.txt"; }
    return 0
}

# The verdict, the files left in OUTDIR, and the exit status.
finish() {
    section "verdict"
    if [ "$FAILED" = 1 ]; then note "gpu-check FAILED"
    elif [ "$INCOMPLETE" = 1 ]; then note "gpu-check INCOMPLETE: a step was cut or skipped by the time budget"
    else note "gpu-check passed"; fi
    note "$(( $(date +%s) - START )) s in all; in $OUT: $(ls "$OUT" | paste -sd' ')"
    [ "$FAILED" = 0 ] && [ "$INCOMPLETE" = 0 ]
    exit
}

# The reports' figures as a table (clformer bench compare), into the summary.
figures() {
    local json
    for json in "$@"; do
        [ -s "$json" ] || { note "    (no figures: $(basename "$json") is empty)"; return 0; }
    done
    block "$CLF" bench compare "$@" --svg "$WORK/compare.svg"
}

# bench all NAME FILE CAP ARGS...: a step whose benchmarks start only in the
# first half of its time (--seconds), so that it ends in a whole report.
bench_all() {
    local name=$1 json=$2 cap=$3
    shift 3
    step "$name" "$cap" "$CLF" bench all --json --seconds $(( $(limit "$cap") / 2 )) "$@" \
        > "$json" 2>> "$OUT/run.log" || true
    [ -s "$json" ] || { rm -f "$json"; return 0; }
    if grep -q '"started": false' "$json"; then
        note "        some benchmarks were not started: the step's time was spent"
        INCOMPLETE=1
    fi
    figures "$json"
}

# translations CKPT DEVICE: test_2016_flickr with beam 4 and greedy, in
# float32 and float16, each timed whole (loading included) with its BLEU; a
# device without cl_khr_fp16 refuses float16, which is noted, not failed.
translations() {
    local ckpt=$1 device=$2 data=data/multi30k/test_2016_flickr ct search hyp t0 rate failed
    section "translate $data.en.gz with $ckpt"
    [ -f "$ckpt" ] || { note "no such checkpoint: $ckpt"; FAILED=1; return 0; }
    for ct in float32 float16; do
        for search in beam4 greedy; do
            local args=(translate --model "$ckpt" --input "$data.en.gz" --device "$device" --compute-type "$ct" --quiet)
            [ "$search" = greedy ] && args+=(--greedy)
            hyp=$WORK/hyp-$ct-$search.de failed=$FAILED t0=$(date +%s.%N)
            if step "translate $ct $search" 120 "$CLF" "${args[@]}" > "$hyp" 2> "$WORK/translate.err"; then
                rate=$(awk -v a="$t0" -v b="$(date +%s.%N)" -v n="$(wc -l < "$hyp")" 'BEGIN {printf "%.1f", n / (b - a)}')
                note "        $rate sentences/s (loading included); $("$CLF" bleu "$data.de.gz" -i "$hyp" -m bleu chrf \
                    -f text 2>&1 | paste -sd' ')"
            else
                [ $? = 3 ] && return 0  # skipped: the budget is spent
                note "        $(tail -1 "$WORK/translate.err")"
                if [ "$ct" = float16 ] && grep -q cl_khr_fp16 "$WORK/translate.err"; then
                    FAILED=$failed  # the device lacks half precision: said, not a failure
                    break
                fi
            fi
        done
    done
}

run() {
    local debdir="" device=gpu tests="" quick="" tune_minutes=2 seconds=540 model=""
    local outarg=${1:?usage: gpu-check.sh run OUTDIR [DEBDIR] [options]}
    shift
    UNPACK_ALL=""
    while [ $# -gt 0 ]; do
        case $1 in
        --device) device=$2; shift 2 ;;
        --tests) tests=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        --model) model=$2; shift 2 ;;
        --unpack-all) UNPACK_ALL=1; shift ;;
        --tune-minutes) tune_minutes=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        -*) die "unknown option $1" ;;
        *) debdir=$1; shift ;;
        esac
    done
    [[ $seconds =~ ^[0-9]+$ ]] || die "--seconds wants a whole number of seconds, not '$seconds'"
    [[ $tune_minutes =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--tune-minutes wants a number, not '$tune_minutes'"
    START=$(date +%s)
    DEADLINE=$((START + seconds))
    # the least the suite is left: the steps before it stop this far from the deadline
    RESERVE=10 SUITE_MIN=120 FAILED=0 INCOMPLETE=0
    mkdir -p "$outarg"
    OUT=$(cd "$outarg" && pwd)
    BUILD=$(mkdir -p "${CLF_GPU_CHECK_BUILD:-build-gpu}" && cd "${CLF_GPU_CHECK_BUILD:-build-gpu}" && pwd)
    PREFIX=$BUILD/prefix WORK=$BUILD/gpu-check CLF=$BUILD/clformer
    UNPACKED=() GPU_LIBS=()
    # this script's files only, so that a reused OUTDIR holds this run's
    rm -f "$OUT"/{summary.txt,build.log,run.log,bench-quick.json,tune.log,tuning.json,ctest.log,bench.json}
    rm -rf "$WORK"
    mkdir -p "$WORK"
    # kernels and the tuning file in the build folder, not in $HOME
    export XDG_CACHE_HOME=$BUILD/cache
    exec 3>&2
    note "gpu-check on $(hostname), $(. /etc/os-release && echo "$PRETTY_NAME"), $(glibc), $(nproc) cores," \
         "$(date -u '+%Y-%m-%d %H:%M:%S') UTC; device $device; budget $seconds s"
    local smi
    smi=$(command -v nvidia-smi || newest /usr/local/nvidia/bin/nvidia-smi /usr/bin/nvidia-smi)
    if [ -n "$smi" ]; then
        note "nvidia-smi -L:"
        block "$smi" -L
        block "$smi" --query-gpu=name,driver_version,memory.total --format=csv,noheader
    else
        note "nvidia-smi: not on this machine"
    fi
    [ -f "$debdir/SOURCE" ] && note "packages from: $(paste -sd';' "$debdir/SOURCE")"

    local carried=${debdir:+$(dirname "$debdir")}
    if [ -n "$carried" ] && [ -f "$carried/cmake.tar.gz" ] && ! cmake_new_enough; then
        rm -rf "$BUILD/cmake"
        tar -C "$BUILD" -xzf "$carried/cmake.tar.gz"
        PATH=$BUILD/cmake/bin:$PATH
        note "CMake: the carried one ($(cmake --version | head -1)), the machine's is missing or older than 3.25"
    fi
    cmake_new_enough || die "no CMake >= 3.25 on this machine (carry brings one: DEBDIR's folder/cmake.tar.gz)"
    command -v cmake >/dev/null && note "CMake: $(command -v cmake) ($(cmake --version | awk 'NR == 1 {print $3}'))"
    local generator
    if command -v ninja >/dev/null; then generator=Ninja
    elif command -v make >/dev/null; then generator="Unix Makefiles"
    else die "neither ninja nor make on this machine"; fi
    for tool in cc c++; do command -v "$tool" >/dev/null || die "no $tool on this machine"; done

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
    section "OpenCL drivers"
    find_gpu_libs || [ "$device" != gpu ] || FAILED=1

    section "build"
    # configured afresh every run: the cache holds paths into the prefix, which
    # is unpacked afresh (a reused folder keeps its objects; Ninja rebuilds
    # only what the new command lines change)
    rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles"
    step "build ($generator, Release, -DCLF_MPI=OFF, $(nproc) jobs)" "$seconds" bash -c \
        'cmake -S . -B "$1" -G "$2" -DCMAKE_BUILD_TYPE=Release -DCLF_MPI=OFF && cmake --build "$1" -j "$3"' \
        _ "$BUILD" "$generator" "$(nproc)" > "$OUT/build.log" 2>&1 || { block tail -20 "$OUT/build.log"; finish; }
    local loader
    loader=$(ldd "$CLF" | awk '/libOpenCL/ {print $3}')
    note "OpenCL loader: $loader"
    # ocl-icd 2.3.1 (Debian 12's, the carried one) reads only the .icd files;
    # Khronos's loader reads both, and lists such a platform twice
    if [ -n "$OCL_ICD_FILENAMES" ] && grep -q OCL_ICD_FILENAMES "$loader" 2>/dev/null; then
        note "        it reads OCL_ICD_FILENAMES as well as the .icd files: the GPU may be listed twice"
    fi

    section "clformer devices"
    block "$CLF" devices
    "$CLF" devices --json > "$WORK/devices.json" 2>> "$OUT/run.log" || true
    if [[ $device =~ ^(gpu|cpu)$ ]] && ! grep -q "\"type\": \"$device\"" "$WORK/devices.json"; then
        note "no $device among the OpenCL devices; the .icd files are in $BUILD/vendors"
        FAILED=1
        finish
    fi

    # The benchmark's figures first, at their short sizes, with GEMM as the
    # machine has it before tuning: if anything later runs long, these are in.
    section "clformer bench all --quick (before tuning)"
    RESERVE=$SUITE_MIN
    bench_all "bench all --quick" "$OUT/bench-quick.json" 180 --quick --device "$device"

    # A real model's translations: what a user of this GPU gets
    [ -n "$model" ] && translations "$model" "$device"

    # Tuning: CLBlast's GEMM parameters, attention tiles and lanes, row-op
    # work-groups; the file it writes is the device's entry for the table.
    # A tune cut short saves nothing: it gets fewer minutes instead (skipped
    # under half a minute), and 2 more for what it does around them (the
    # baseline, compiles, the report).
    local minutes
    minutes=$(awk -v m="$tune_minutes" -v s="$(( $(left) - RESERVE - 120 ))" \
        'BEGIN {r = m; if (s < m * 60) m = s / 60; if (m < r && m < 0.5) m = 0; printf "%.2g", m}')
    section "clformer tune --minutes $tune_minutes"
    if [ "$minutes" = 0 ]; then
        note "SKIPPED tune: $(left) s of the budget left"
        INCOMPLETE=1
    else
        [ "$minutes" = "$(awk -v m="$tune_minutes" 'BEGIN {printf "%.2g", m}')" ] ||
            note "(--minutes $tune_minutes shortened to $minutes to fit the budget)"
        step "tune --minutes $minutes" "$(awk -v m="$minutes" 'BEGIN {printf "%d", m * 60 + 120}')" \
            "$CLF" tune --minutes "$minutes" --device "$device" > "$OUT/tune.log" 2>&1 || true
    fi
    local tuned
    tuned=$(newest "$XDG_CACHE_HOME"/clformer/tuning-*.json)
    if [ -n "$tuned" ]; then cp "$tuned" "$OUT/tuning.json"; note "tuning file: $tuned (copied to tuning.json)"; fi
    note "clformer tune --show:"
    block "$CLF" tune --show --device "$device"

    # GEMM tuned against CLBlast's defaults (CLF_TUNING=off) on bench gemm's
    # shapes, in fresh processes, both through CLBlast (a CPU device would
    # otherwise run its BLAS)
    section "bench gemm: CLBlast's defaults (A) against the tuning file (B)"
    if [ -n "$tuned" ]; then
        local gemm=(bench gemm --json --device "$device" ${quick:+--quick})
        step "bench gemm, CLBlast's defaults" 90 env CLF_GEMM=clblast CLF_TUNING=off "$CLF" "${gemm[@]}" \
            > "$WORK/gemm-default.json" 2>> "$OUT/run.log" || true
        step "bench gemm, tuned" 90 env CLF_GEMM=clblast "$CLF" "${gemm[@]}" \
            > "$WORK/gemm-tuned.json" 2>> "$OUT/run.log" || true
        figures "$WORK/gemm-default.json" "$WORK/gemm-tuned.json"
    else
        note "SKIPPED: no tuning file"
    fi

    # The suite, bounded: ctest starts no test after its stop time and cuts
    # the running ones there (as Timeout); timeout is the backstop.
    section "the suite on $device"
    local select=(-LE 'oclgrind|host|fuzz|mpi') stop total rc=0
    [ -n "$tests" ] && select+=(-R "$tests")
    total=$(ctest --test-dir "$BUILD" -N "${select[@]}" | awk '/^Total Tests:/ {print $3}')
    RESERVE=15
    stop=$(date -d "@$(( $(date +%s) + $(limit "$seconds") - 15 ))" +%H:%M:%S)
    JUDGED=8 step "ctest ${select[*]} --stop-time $stop ($total tests)" "$seconds" \
        env CLF_DEVICE="$device" ctest --test-dir "$BUILD" --output-on-failure \
        -j "$(( $(nproc) > 3 ? $(nproc) / 2 : 1 ))" "${select[@]}" --stop-time "$stop" \
        > "$OUT/ctest.log" 2>&1 || rc=$?
    suite_results "$OUT/ctest.log" "$rc" "$total"

    # The rest of the budget: every benchmark at its full sizes, tuned.
    if [ -z "$quick" ]; then
        section "clformer bench all (full sizes, tuned)"
        RESERVE=10
        MIN_S=60 bench_all "bench all" "$OUT/bench.json" "$seconds" --device "$device"
    fi
    finish
}

case "${1:-}" in
carry) shift; carry "$@" ;;
run) shift; run "$@" ;;
*) sed -n '2,41p' "$0" >&2; exit 2 ;;
esac
