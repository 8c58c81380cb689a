#!/bin/sh
# oclgrind_check.sh OCLGRIND TEST_EXE [OCLGRIND OPTIONS...]: runs the
# small-shape kernel tests (test_kernels_small) on Oclgrind's simulated
# device with its checkers on; ctest fails the test on any report it prints
# (FAIL_REGULAR_EXPRESSION in tests/CMakeLists.txt) or on a failed test.
#
# small/decode runs without --uninitialized: there the checker reports
# values that were just written (the K and V columns of the step's
# projection in bias_add, then attn_cache_append, attn_fwd and CLBlast's
# GEMM), also since a beam reorder copies only the positions appended so
# far; its shadow memory goes stale across the decode steps' reused
# buffers. Data races, bounds and API use are still checked there.
set -u
oclgrind=$1
exe=$2
shift 2
rc=0
"$oclgrind" --data-races --uninitialized --check-api "$@" "$exe" --jobs=1 \
    --filter 'small/!(decode)' || rc=1
"$oclgrind" --data-races --check-api "$@" "$exe" --jobs=1 \
    --filter 'small/decode' || rc=1
exit $rc
