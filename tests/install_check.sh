#!/bin/sh
# install_check.sh BUILD SOURCE CC SANITIZE: the build installed as others
# would use it. `cmake --install BUILD` into a temporary prefix must hold
# libclformer.so with its soname, libclformer.a, the public headers alone
# (include/clformer/ as in the tree, each compiling alone against the
# prefix; headers_check.sh holds them to more), the command,
# clformer.pc and the CMake package. examples/translate.c built there
# with `pkg-config --cflags --libs clformer`, with --static (on
# libclformer.a), with a tiny project calling find_package(clformer), and
# its in-tree build must each print exactly what `clformer translate`
# prints for the first lines of test_2016_flickr on the imported Marian
# fixture; docs/c-api.md shows the example as it is. The example uses the
# stable tier alone, so it is built with no OpenCL to be had: a CL/cl.h
# that is an #error first on its include path, no OpenCL in clformer.pc's
# Requires, no OpenCL looked for by find_package(clformer). A user of the
# advanced tier (<clformer/advanced.h>) is built with clformer-advanced.pc
# and with find_package(clformer COMPONENTS advanced) (clformer::advanced)
# and runs; built with the trap, it must fail, so the trap is known to
# work. A sanitizer build's library
# needs its runtime in every program: SANITIZE ON builds the examples with
# -fsanitize=address,undefined and the build's LeakSanitizer defaults
# (cmake/sanitizer_options.c).
set -eu
B=$1 S=$2 CC=$3 SAN=$4
T=$(mktemp -d "${TMPDIR:-/tmp}/clf-install.XXXXXX")
trap 'rm -rf "$T"' EXIT
P=$T/prefix
fail() { echo "install_check: $*" >&2; exit 1; }

"${CMAKE:-cmake}" --install "$B" --prefix "$P" > "$T/install.log" || fail "cmake --install failed: $(cat "$T/install.log")"
LIB=$(dirname "$(find "$P" -name libclformer.a | head -1)")
[ -f "$LIB/libclformer.a" ] || fail "no libclformer.a under $P"
SONAME=$(readelf -d "$LIB/libclformer.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$SONAME" = libclformer.so.0 ] || fail "libclformer.so's soname is '$SONAME', not libclformer.so.0"
[ -x "$P/bin/clformer" ] || fail "no bin/clformer under $P"

# the public headers, and only them: the tree's include/clformer/ (the
# stable tier, and advanced.h with advanced/), paths from include/
(cd "$S/include" && find clformer -name '*.h' | LC_ALL=C sort) > "$T/want.h"
(cd "$P/include" && find clformer ! -type d | LC_ALL=C sort) > "$T/got.h"
cmp -s "$T/want.h" "$T/got.h" || fail "include/clformer holds $(tr '\n' ' ' < "$T/got.h"), not $(tr '\n' ' ' < "$T/want.h")"
export PKG_CONFIG_PATH="$LIB/pkgconfig"
CFLAGS_PC=$(pkg-config --cflags clformer) || fail "pkg-config does not find clformer.pc in $LIB/pkgconfig"
# each alone, with what pkg-config says
for h in $(cat "$T/got.h"); do
    printf '#include <%s>\n' "$h" > "$T/h.c"
    # shellcheck disable=SC2086
    "$CC" -std=c11 -Wall -Werror -fsyntax-only $CFLAGS_PC "$T/h.c" 2> "$T/h.err" ||
        fail "<$h> does not compile alone against the prefix: $(cat "$T/h.err")"
done

# libclformer.so exports exactly what the installed headers declare: their
# functions (GCC's -aux-info lists each declaration with its file) and
# their extern variables, nothing the library keeps inside
for h in $(cat "$T/got.h"); do printf '#include <%s>\n' "$h"; done > "$T/all.c"
AUX_CC=$CC
"$AUX_CC" -fsyntax-only -aux-info "$T/aux.txt" "$T/all.c" -I"$P/include" 2> /dev/null || AUX_CC=gcc
# shellcheck disable=SC2086
"$AUX_CC" -std=c11 -fsyntax-only -aux-info "$T/aux.txt" $CFLAGS_PC "$T/all.c" 2> "$T/aux.err" ||
    fail "listing the public headers' functions needs GCC's -aux-info ($CC, then gcc): $(cat "$T/aux.err")"
grep -E "/include/clformer/[a-z_/]*\.h:" "$T/aux.txt" | grep -v 'static ' |
    awk 'match($0, /clf_[a-z0-9_]+ \(/) { print substr($0, RSTART, RLENGTH - 2) }' > "$T/api.txt"
# shellcheck disable=SC2086
"$AUX_CC" -std=c11 -E -P $CFLAGS_PC "$T/all.c" | tr '\n' ' ' |
    grep -oE 'extern [^;(){}]*[ *]clf_[a-z0-9_]+ *(\[[^]]*\])? *;' |
    sed -E 's/.*[ *](clf_[a-z0-9_]+) *(\[[^]]*\])? *;$/\1/' >> "$T/api.txt" || true
sort -u "$T/api.txt" > "$T/api.want"
[ "$(wc -l < "$T/api.want")" -gt 100 ] || fail "only $(wc -l < "$T/api.want") public symbols found in the headers"
nm -D --defined-only "$LIB/libclformer.so" | awk '{ print $3 }' | sort -u > "$T/api.got"
if ! cmp -s "$T/api.want" "$T/api.got"; then
    fail "libclformer.so's exported symbols are not the public headers' (< declared, not exported; > exported, not declared):
$(diff "$T/api.want" "$T/api.got" | grep '^[<>]')"
fi
echo "install_check: libclformer.so exports the $(wc -l < "$T/api.want") functions and variables of the public headers, nothing else"

SANFLAGS= SANSRC=
if [ "$SAN" = ON ]; then
    SANFLAGS="-fsanitize=address,undefined"
    SANSRC="$S/cmake/sanitizer_options.c"
    echo "install_check: a sanitizer build: the examples are built with $SANFLAGS"
fi

# the two tiers: a CL/cl.h that stops the compiler where it is reached, and
# a user of the advanced tier, which must reach the real one
mkdir -p "$T/nocl/CL"
echo '#error "install_check: <CL/cl.h> reached"' > "$T/nocl/CL/cl.h"
cat > "$T/adv.c" <<'EOF'
#include <clformer/advanced.h>
#include <stdio.h>

int main(void) {
    cl_int err = CL_INVALID_VALUE;  /* OpenCL's own type and value */
    printf("%s\n", clf_cl_error_str(err));
    return 0;
}
EOF
pkg-config --print-requires clformer | grep -qi opencl &&
    fail "clformer.pc Requires OpenCL, which the stable tier does not use: $(pkg-config --print-requires clformer)"
pkg-config --libs clformer-advanced | grep -q -- -lOpenCL ||
    fail "clformer-advanced.pc does not bring OpenCL: $(pkg-config --libs clformer-advanced 2>&1)"

# pkg-config: the stable tier, no OpenCL header reachable
# shellcheck disable=SC2086
"$CC" -std=c11 -Wall -Wextra -Werror $SANFLAGS -I"$T/nocl" -o "$T/ex_pc" "$S/examples/translate.c" $SANSRC \
    $(pkg-config --cflags --libs clformer) 2> "$T/pc.err" || fail "the example with pkg-config: $(cat "$T/pc.err")"
# the advanced tier: clformer-advanced.pc; with the trap, <CL/cl.h> is reached
# shellcheck disable=SC2086
"$CC" -std=c11 -Wall -Wextra -Werror $SANFLAGS -o "$T/adv_pc" "$T/adv.c" $SANSRC \
    $(pkg-config --cflags --libs clformer-advanced) 2> "$T/adv.err" ||
    fail "the advanced tier's user with clformer-advanced.pc: $(cat "$T/adv.err")"
# shellcheck disable=SC2086
"$CC" -std=c11 -fsyntax-only -I"$T/nocl" "$T/adv.c" $(pkg-config --cflags clformer-advanced) > "$T/trap.err" 2>&1 &&
    fail "the advanced tier compiled with the CL/cl.h trap first on the path: the trap does not work"
grep -q "install_check: <CL/cl.h> reached" "$T/trap.err" || fail "the trap failed otherwise: $(cat "$T/trap.err")"

# pkg-config --static: libclformer.a and what Requires.private and
# Libs.private name for it
# shellcheck disable=SC2086
"$CC" -std=c11 -Wall -Wextra -Werror $SANFLAGS -o "$T/ex_static" "$S/examples/translate.c" $SANSRC \
    -I"$T/nocl" $(pkg-config --cflags clformer) -Wl,-Bstatic -lclformer -Wl,-Bdynamic \
    $(pkg-config --static --libs clformer | sed 's/-lclformer //') 2> "$T/st.err" ||
    fail "the example with pkg-config --static: $(cat "$T/st.err")"
ldd "$T/ex_static" | grep -q libclformer && fail "the example built with --static still needs libclformer.so"

# find_package(clformer): the stable tier, with no OpenCL looked for and
# the trap first on the path; then the advanced component
mkdir "$T/consumer"
cp "$S/examples/translate.c" "$T/adv.c" $SANSRC "$T/consumer/"
cat > "$T/consumer/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(clformer 0.1 REQUIRED)
if(TARGET OpenCL::OpenCL OR DEFINED OpenCL_INCLUDE_DIR OR TARGET clformer::advanced)
  message(FATAL_ERROR "find_package(clformer) looked for OpenCL or defined clformer::advanced")
endif()
add_executable(ex translate.c $( [ -n "$SANSRC" ] && echo sanitizer_options.c))
target_include_directories(ex BEFORE PRIVATE "$T/nocl")
target_link_libraries(ex PRIVATE clformer::clformer)
find_package(clformer 0.1 REQUIRED COMPONENTS advanced)
add_executable(adv adv.c $( [ -n "$SANSRC" ] && echo sanitizer_options.c))
target_link_libraries(adv PRIVATE clformer::advanced)
EOF
"${CMAKE:-cmake}" -S "$T/consumer" -B "$T/consumer/build" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" \
    -DCMAKE_C_FLAGS="$SANFLAGS" -DCMAKE_EXE_LINKER_FLAGS="$SANFLAGS" > "$T/cm.log" 2>&1 &&
    "${CMAKE:-cmake}" --build "$T/consumer/build" >> "$T/cm.log" 2>&1 || fail "the find_package(clformer) project: $(cat "$T/cm.log")"

# docs/c-api.md ("Use it from C") shows the example as tested here
sed -n '/^#include <clformer/,$p' "$S/examples/translate.c" > "$T/ex.c"
sed -n '/^    #include <clformer/,/^    }$/p' "$S/docs/c-api.md" | sed 's/^    //' > "$T/readme.c"
cmp -s "$T/ex.c" "$T/readme.c" || fail "docs/c-api.md's example is not examples/translate.c: $(diff "$T/ex.c" "$T/readme.c")"

for adv in "$T/adv_pc" "$T/consumer/build/adv"; do
    [ "$(LD_LIBRARY_PATH="$LIB" "$adv" 2>&1)" = CL_INVALID_VALUE ] ||
        fail "$adv printed '$(LD_LIBRARY_PATH="$LIB" "$adv" 2>&1)', not CL_INVALID_VALUE"
done
echo "install_check: the stable tier built with no <CL/cl.h> reachable; the advanced tier's user with clformer-advanced.pc and clformer::advanced"

# the same output as the installed command's
"$P/bin/clformer" import "$S/tests/fixtures/marian/relu_separate" -o "$T/imp" > /dev/null 2> "$T/imp.err" ||
    fail "clformer import: $(cat "$T/imp.err")"
gzip -dc "$S/data/multi30k/test_2016_flickr.en.gz" | head -n 6 > "$T/src.en"
M=$T/imp/model.safetensors
"$P/bin/clformer" translate --model "$M" --input "$T/src.en" --quiet > "$T/want.txt" 2> "$T/tr.err" ||
    fail "clformer translate: $(cat "$T/tr.err")"
[ "$(wc -l < "$T/want.txt")" -eq 6 ] || fail "clformer translate printed $(wc -l < "$T/want.txt") lines, not 6"
for ex in "$T/ex_pc" "$T/ex_static" "$T/consumer/build/ex" "$B/examples/example_translate"; do
    LD_LIBRARY_PATH="$LIB" "$ex" "$M" auto < "$T/src.en" > "$T/got.txt" 2> "$T/ex.err" ||
        fail "$ex: $(cat "$T/ex.err")"
    cmp -s "$T/want.txt" "$T/got.txt" ||
        fail "$ex does not print what clformer translate prints: $(diff "$T/want.txt" "$T/got.txt")"
    echo "install_check: $ex: the command's 6 lines"
done
echo "install_check: $P held the libraries, $(wc -l < "$T/got.h") public headers, the command, clformer.pc and the CMake package"
