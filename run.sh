#!/usr/bin/env bash
# run.sh: the two things a fresh Debian machine needs, in one place.
#   ./run.sh main   install what is missing, build, run the main job: train the
#                   small preset on the bundled Multi30k EN->DE for MINUTES
#                   (default 30) on the best device found, translate
#                   test_2016_flickr with beam search, and print BLEU
#   ./run.sh test   install what is missing, build, run every test
# BUILD_DIR (default build), JOBS (default: the number of cores), MINUTES and
# OUT (default runs/main) may be set.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(build-essential cmake pkg-config
          ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev
          libopenblas-dev zlib1g-dev libsentencepiece-dev sentencepiece libcriterion-dev)
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

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
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build "$BUILD_DIR" -j "$JOBS"
}

case "${1:-}" in
main)
    install_missing
    build
    OUT=${OUT:-runs/main}
    MINUTES=${MINUTES:-30}
    data=data/multi30k
    "$BUILD_DIR"/clformer devices
    # a short budget wants smaller batches and a shorter warm-up than the paper's 25k tokens and 4000 steps
    "$BUILD_DIR"/clformer train --preset small --minutes "$MINUTES" --out "$OUT" --max-tokens 2500 --warmup 400 \
        --val-every 0 --save-minutes 2 --keep 3
    # the paper averaged its last checkpoints; here the last three, two minutes apart
    "$BUILD_DIR"/clformer average -o "$OUT/average.safetensors" --dir "$OUT" --last 3
    "$BUILD_DIR"/clformer translate --model "$OUT/average.safetensors" --input $data/test_2016_flickr.en.gz \
        > "$OUT/test_2016_flickr.hyp.de"
    "$BUILD_DIR"/clformer bleu $data/test_2016_flickr.de.gz -i "$OUT/test_2016_flickr.hyp.de" -m bleu chrf -f text
    ;;
test)
    install_missing
    build
    (cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS")
    ;;
*)
    echo "usage: ./run.sh main|test" >&2
    exit 2
    ;;
esac
