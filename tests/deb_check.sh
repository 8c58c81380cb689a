#!/bin/sh
# deb_check.sh BUILD SOURCE CC: the Debian packages `cpack -G DEB` makes
# (cmake/package.cmake). In a temporary folder: libclformer0, libclformer-dev
# and clformer must be made, each holding its own files (dpkg-deb -c) and
# declaring its Depends (dpkg-deb -f: the shared libraries' packages from
# dpkg-shlibdeps, the -dev package the library of its version); apt-get must
# accept the three for installing on this machine (--simulate: a real
# install needs root and changes the machine, and a clean Debian 12 root,
# debootstrap's, costs minutes and a mirror); and, unpacked into a
# temporary root (dpkg -x), the packaged command must list this machine's
# devices and the example built with the packaged clformer.pc must print
# what the packaged command prints for the first lines of test_2016_flickr.
set -eu
B=$1 S=$(cd "$2" && pwd) CC=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/clf-deb.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "deb_check: $*" >&2; exit 1; }
V=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$B/CPackConfig.cmake")
[ -n "$V" ] || fail "no CPACK_PACKAGE_VERSION in $B/CPackConfig.cmake"
ARCH=$(dpkg --print-architecture)
command -v dpkg-shlibdeps > /dev/null || fail "no dpkg-shlibdeps: apt-get install dpkg-dev"

(cd "$B" && "${CPACK:-cpack}" -G DEB -B "$T/out") > "$T/cpack.log" 2>&1 || fail "cpack -G DEB: $(cat "$T/cpack.log")"
LIB=$T/out/libclformer0_${V}_$ARCH.deb DEV=$T/out/libclformer-dev_${V}_$ARCH.deb CMD=$T/out/clformer_${V}_$ARCH.deb
for d in "$LIB" "$DEV" "$CMD"; do
    [ -f "$d" ] || fail "cpack made $(cd "$T/out" && ls ./*.deb | tr '\n' ' '), not $(basename "$d")"
done

# contents: what each package must hold, and what it must not
contents() { dpkg-deb -c "$1" | awk '{ print $6 }' | sed 's|^\./||'; }
has() { contents "$1" | grep -Eq "$2" || fail "$(basename "$1") holds no $2: $(contents "$1" | tr '\n' ' ')"; }
hasnt() { contents "$1" | grep -Eq "$2" && fail "$(basename "$1") holds $2: $(contents "$1" | tr '\n' ' ')"; return 0; }
has "$LIB" '/libclformer\.so\.0$'
has "$LIB" "/libclformer\.so\.$V\$"
hasnt "$LIB" '/libclformer\.(so|a)$|include/|bin/'
has "$DEV" '^usr/include/clformer/clformer\.h$'
has "$DEV" '/libclformer\.so$'
has "$DEV" '/libclformer\.a$'
has "$DEV" '/pkgconfig/clformer\.pc$'
has "$DEV" '/pkgconfig/clformer-advanced\.pc$'
has "$DEV" '/cmake/clformer/clformerConfig\.cmake$'
has "$DEV" '/cmake/clformer/clformerAdvancedTargets\.cmake$'
hasnt "$DEV" '\.so\.|bin/'
has "$CMD" '^usr/bin/clformer$'
hasnt "$CMD" 'lib/|include/'
[ "$(contents "$DEV" | grep -c '^usr/include/clformer/.*\.h$')" -eq "$(find "$S"/include/clformer -name '*.h' | wc -l)" ] ||
    fail "libclformer-dev does not hold the public headers alone"

# Depends
dep() { dpkg-deb -f "$1" Depends; }
for d in "$LIB" "$CMD"; do
    for want in libc6 ocl-icd-libopencl1 libclblast1 libsentencepiece0 libopenblas zlib1g; do
        dep "$d" | grep -q "$want" || fail "$(basename "$d") does not depend on $want: $(dep "$d")"
    done
done
dep "$DEV" | grep -q "libclformer0 (= $V)" || fail "libclformer-dev does not depend on libclformer0 (= $V): $(dep "$DEV")"
dep "$CMD" | grep -q libclformer0 && fail "clformer depends on libclformer0, but it links the library statically"
[ "$(dpkg-deb -f "$LIB" Package)" = libclformer0 ] || fail "the library's package is not libclformer0"
dpkg-deb -I "$LIB" shlibs > "$T/shlibs" 2>&1 && grep -q '^libclformer 0 libclformer0' "$T/shlibs" ||
    fail "libclformer0 has no shlibs file naming libclformer 0: $(cat "$T/shlibs")"

# what apt would do with them here
apt-get install --simulate -q "$LIB" "$DEV" "$CMD" > "$T/apt.log" 2>&1 || fail "apt-get install --simulate: $(cat "$T/apt.log")"
for p in libclformer0 libclformer-dev clformer; do
    grep -Eq "^Inst $p |^Conf $p " "$T/apt.log" || fail "apt-get would not install $p: $(cat "$T/apt.log")"
done
echo "deb_check: apt-get --simulate installs the three packages here"

# unpacked into a temporary root and used from there
R=$T/root
for d in "$LIB" "$DEV" "$CMD"; do dpkg -x "$d" "$R"; done
RLIB=$(dirname "$(find "$R" -name libclformer.so.0 | head -1)")
LD_LIBRARY_PATH=$RLIB "$R/usr/bin/clformer" devices > "$T/devices.txt" 2>&1 ||
    fail "the packaged clformer devices: $(cat "$T/devices.txt")"
grep -q '^\*' "$T/devices.txt" || fail "the packaged clformer devices marks no default device: $(cat "$T/devices.txt")"
# shellcheck disable=SC2046
"$CC" -std=c11 -o "$T/ex" "$S/examples/translate.c" $(PKG_CONFIG_PATH=$RLIB/pkgconfig pkg-config --cflags --libs clformer) \
    2> "$T/cc.err" || fail "the example with the packaged clformer.pc: $(cat "$T/cc.err")"
"$R/usr/bin/clformer" import "$S/tests/fixtures/marian/relu_separate" -o "$T/imp" > /dev/null 2> "$T/imp.err" ||
    fail "the packaged clformer import: $(cat "$T/imp.err")"
gzip -dc "$S/data/multi30k/test_2016_flickr.en.gz" | head -n 4 > "$T/src.en"
"$R/usr/bin/clformer" translate --model "$T/imp/model.safetensors" --input "$T/src.en" --quiet > "$T/want.txt" \
    2> "$T/tr.err" || fail "the packaged clformer translate: $(cat "$T/tr.err")"
LD_LIBRARY_PATH=$RLIB "$T/ex" "$T/imp/model.safetensors" auto < "$T/src.en" > "$T/got.txt" 2> "$T/ex.err" ||
    fail "the example on the packaged library: $(cat "$T/ex.err")"
[ "$(wc -l < "$T/want.txt")" -eq 4 ] && cmp -s "$T/want.txt" "$T/got.txt" ||
    fail "the example on the packaged library does not print the packaged command's 4 lines: $(diff "$T/want.txt" "$T/got.txt")"
echo "deb_check: $(cd "$T/out" && ls ./*.deb | tr '\n' ' '): contents, Depends, the command and the library unpacked"
