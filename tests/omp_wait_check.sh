#!/bin/sh
# omp_wait_check.sh CLFORMER [SANITIZED]: the command makes oneDNN's OpenMP threads wait
# passively (tools/clformer.c): libgomp, shown by OMP_DISPLAY_ENV, must have
# started with GOMP_SPINCOUNT 0 when the user set no policy, and must keep a
# policy the user set (ACTIVE spins 30000000000 times); under Valgrind (where
# it is installed, and the build is not sanitized: SANITIZED ON) the command
# must still run, not execute Valgrind's tool.
set -u
got=$(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose "$1" --help 2>&1 >/dev/null | grep GOMP_SPINCOUNT | tail -1)
case $got in *"'0'"*) ;; *) echo "omp_wait_check: with no policy set, libgomp started with '$got', want GOMP_SPINCOUNT = '0'"; exit 1 ;; esac
got=$(OMP_WAIT_POLICY=active OMP_DISPLAY_ENV=verbose "$1" --help 2>&1 >/dev/null | grep GOMP_SPINCOUNT)
case $got in *"'30000000000'"*) ;; *) echo "omp_wait_check: OMP_WAIT_POLICY=active gave '$got', want the user's policy kept"; exit 1 ;; esac
if [ "${2:-OFF}" != ON ] && command -v valgrind > /dev/null; then
    env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT valgrind -q "$1" --help 2>&1 | grep -q '^usage: clformer' ||
        { echo "omp_wait_check: under valgrind, 'clformer --help' printed no usage"; exit 1; }
fi
echo "omp_wait_check: passive by default, the user's policy kept"
