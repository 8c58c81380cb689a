#!/bin/sh
# oclgrind_check.sh OCLGRIND TEST_EXE [OCLGRIND OPTIONS...]: runs the
# small-shape kernel tests (test_kernels_small) on Oclgrind's simulated
# device with its checkers on; ctest fails the test on any report it prints
# (FAIL_REGULAR_EXPRESSION in tests/CMakeLists.txt) or on a failed test.
#
# The tiled attention kernels (attn_fwd, attn_bwd_*; the tests attention,
# attention_small_tiles and decode) run without --uninitialized: Oclgrind
# 21.10's uninitialised-value checker crashes (SIGSEGV in
# Uninitialized::instructionExecuted) on attn_fwd's tile softmax, even with
# -cl-opt-disable. Data races, bounds and API use are still checked there.
set -u
oclgrind=$1
exe=$2
shift 2
rc=0
"$oclgrind" --data-races --uninitialized --check-api "$@" "$exe" --jobs=1 \
    --filter 'small/!(attention|attention_small_tiles|decode)' || rc=1
"$oclgrind" --data-races --check-api "$@" "$exe" --jobs=1 \
    --filter 'small/@(attention|attention_small_tiles|decode)' || rc=1
exit $rc
