#!/bin/sh
# fuzz/run.sh [SECONDS] [HARNESS...]: fuzzes for longer than CI's replay.
# Configures build-fuzz/ with clang and -DCLF_FUZZ=ON (libFuzzer with
# AddressSanitizer and UBSan), then runs each harness (default: all) for
# SECONDS (default 1800), one after another at the lowest priority. New
# inputs go to build-fuzz/corpus/<h>/ first; those that add coverage are
# then merged into fuzz/corpus/<h>/ (commit them). A crash, leak, timeout or
# sanitizer report is saved in fuzz/crashers/<h>/, which ctest's
# fuzz_replay_<h> replays too: fix the bug, keep the input, commit both.
# Extra libFuzzer flags: FUZZ_FLAGS="-jobs=2 -workers=2" fuzz/run.sh 600 json
set -eu
cd "$(dirname "$0")/.."
secs=1800
case "${1:-}" in ''|*[!0-9]*) ;; *) secs=$1; shift ;; esac
all="safetensors checkpoint tuning lines corpus bleu json options kernel_cache numbers"
harnesses=${*:-$all}

CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCLF_FUZZ=ON -DCLF_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=
for h in $harnesses; do targets="$targets fuzz_$h"; done
cmake --build build-fuzz -j2 --target $targets

# a private cache folder (tuning files, kernel binaries) for the harnesses
# that open a device
export XDG_CACHE_HOME="$PWD/build-fuzz/cache"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp"
status=0
for h in $harnesses; do
  bin=build-fuzz/fuzz/fuzz_$h
  work=build-fuzz/corpus/$h
  mkdir -p "$work" "fuzz/crashers/$h"
  case $h in
    safetensors|checkpoint|tuning|json) dict=-dict=fuzz/dict/json.dict ;;
    options) dict=-dict=fuzz/dict/options.dict ;;
    numbers) dict=-close_fd_mask=2 ;;  # its refusals print; libFuzzer keeps its own output
    *) dict= ;;
  esac
  echo "== $h: $secs s"
  # shellcheck disable=SC2086  # FUZZ_FLAGS and dict are lists of flags
  if ! nice -n 19 "$bin" -max_total_time="$secs" -timeout=20 -print_final_stats=1 \
      -artifact_prefix="fuzz/crashers/$h/" $dict ${FUZZ_FLAGS:-} "$work" "fuzz/corpus/$h"; then
    echo "== $h: a finding, saved in fuzz/crashers/$h/"
    status=1
  fi
  nice -n 19 "$bin" -merge=1 "fuzz/corpus/$h" "$work" 2>&1 | grep -E "MERGE-OUTER: [0-9]+ new files" || true
  rmdir "fuzz/crashers/$h" 2>/dev/null || true
done
exit $status
