#!/bin/sh
# headers_check.sh SOURCE CC CXX: every public header under
# SOURCE/include/clformer/ compiles alone, first thing in a file, as C11 and
# as C++17 with -Wall -Wextra -Werror -pedantic; its functions have C
# linkage when C++ includes it (the extern "C" guards: a C++ object that
# takes their addresses refers to them by their plain names, no _Z
# mangling); and the stable tier (include/clformer/*.h but advanced.h)
# compiles with no OpenCL header to be found: an include folder put first
# holds a CL/cl.h that is an #error. That the trap fires is checked too:
# advanced/runtime.h, which includes <CL/cl.h>, must fail there, so the
# stable headers passing it is known to mean something. And no two of them
# include each other, directly or around a longer cycle.
set -eu
S=$1 CC=$2 CXX=$3
I=$S/include
T=$(mktemp -d "${TMPDIR:-/tmp}/clf-headers.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "headers_check: $*" >&2; exit 1; }

mkdir -p "$T/nocl/CL"
echo '#error "clformer_headers_check: <CL/cl.h> reached"' > "$T/nocl/CL/cl.h"
(cd "$I" && find clformer -name '*.h' | LC_ALL=C sort) > "$T/all"
grep -v -e '^clformer/advanced/' -e '^clformer/advanced\.h$' "$T/all" > "$T/stable" || true
[ "$(wc -l < "$T/all")" -ge 10 ] || fail "only $(wc -l < "$T/all") headers under $I/clformer"
grep -qx clformer/clformer.h "$T/stable" || fail "no stable umbrella $I/clformer/clformer.h"
grep -qx clformer/advanced/runtime.h "$T/all" || fail "no $I/clformer/advanced/runtime.h"

# no include cycle among them (issue 49: clformer.h and
# clformer_translate.h included each other): tsort reports a cycle
for h in $(cat "$T/all"); do
    echo "$h $h"
    sed -n 's/^#include "\(clformer\/[a-z_/]*\.h\)".*/\1/p' "$I/$h" | sed "s|^|$h |"
done > "$T/edges"
tsort "$T/edges" > /dev/null 2> "$T/err" || fail "the public headers include each other in a cycle: $(cat "$T/err")"
[ -s "$T/err" ] && fail "the public headers include each other in a cycle: $(cat "$T/err")"

WARN="-Wall -Wextra -Werror -pedantic"
for h in $(cat "$T/all"); do
    printf '#include <%s>\n' "$h" > "$T/h.c"
    cp "$T/h.c" "$T/h.cc"
    # shellcheck disable=SC2086
    "$CC" -std=c11 $WARN -fsyntax-only -I"$I" "$T/h.c" 2> "$T/err" ||
        fail "<$h> does not compile alone as C11: $(cat "$T/err")"
    # shellcheck disable=SC2086
    "$CXX" -std=c++17 $WARN -fsyntax-only -I"$I" "$T/h.cc" 2> "$T/err" ||
        fail "<$h> does not compile alone as C++17: $(cat "$T/err")"
done
for h in $(cat "$T/stable"); do
    printf '#include <%s>\n' "$h" > "$T/h.c"
    cp "$T/h.c" "$T/h.cc"
    # shellcheck disable=SC2086
    "$CC" -std=c11 $WARN -fsyntax-only -I"$T/nocl" -I"$I" "$T/h.c" 2> "$T/err" ||
        fail "<$h> is the stable tier but needs OpenCL's headers (C): $(cat "$T/err")"
    # shellcheck disable=SC2086
    "$CXX" -std=c++17 $WARN -fsyntax-only -I"$T/nocl" -I"$I" "$T/h.cc" 2> "$T/err" ||
        fail "<$h> is the stable tier but needs OpenCL's headers (C++): $(cat "$T/err")"
done
printf '#include <clformer/advanced/runtime.h>\n' > "$T/trap.c"
if "$CC" -std=c11 -fsyntax-only -I"$T/nocl" -I"$I" "$T/trap.c" > "$T/err" 2>&1; then
    fail "the trap did not fire: <clformer/advanced/runtime.h> compiled with $T/nocl first"
fi
grep -q clformer_headers_check "$T/err" || fail "advanced/runtime.h failed otherwise than at the trap: $(cat "$T/err")"

# C linkage: every function the headers declare (GCC's -aux-info lists each
# declaration with its file), its address taken in one C++ object
for h in $(cat "$T/all"); do printf '#include <%s>\n' "$h"; done > "$T/all.c"
AUX_CC=$CC
"$AUX_CC" -std=c11 -fsyntax-only -aux-info "$T/aux.txt" -I"$I" "$T/all.c" 2> /dev/null || AUX_CC=gcc
"$AUX_CC" -std=c11 -fsyntax-only -aux-info "$T/aux.txt" -I"$I" "$T/all.c" 2> "$T/err" ||
    fail "listing the headers' functions needs GCC's -aux-info ($CC, then gcc): $(cat "$T/err")"
grep -E "/include/clformer/[a-z_/]*\.h:" "$T/aux.txt" | grep -v 'static ' |
    awk 'match($0, /clf_[a-z0-9_]+ \(/) { print substr($0, RSTART, RLENGTH - 2) }' | sort -u > "$T/fns"
[ "$(wc -l < "$T/fns")" -gt 100 ] || fail "only $(wc -l < "$T/fns") functions found in the headers"
{
    cat "$T/all.c"
    echo 'extern const void *const clf_headers_check_refs[];'
    echo 'const void *const clf_headers_check_refs[] = {'
    sed 's/.*/    reinterpret_cast<const void *>(\&&),/' "$T/fns"
    echo '};'
} > "$T/refs.cc"
"$CXX" -std=c++17 -c -I"$I" "$T/refs.cc" -o "$T/refs.o" 2> "$T/err" ||
    fail "a C++ object taking the functions' addresses does not compile: $(cat "$T/err")"
nm -u "$T/refs.o" | awk '{ print $2 }' > "$T/undef"
if grep -q '^_Z.*clf_' "$T/undef"; then
    fail "functions with C++ linkage in C++ (no extern \"C\" around them): $(grep '^_Z.*clf_' "$T/undef" | tr '\n' ' ')"
fi
grep '^clf_' "$T/undef" | sort -u > "$T/plain"
cmp -s "$T/fns" "$T/plain" || fail "the C++ object does not refer to every function by its C name: $(diff "$T/fns" "$T/plain" | grep '^[<>]' | head)"
echo "headers_check: $(wc -l < "$T/all") headers compile alone as C11 and C++17, $(wc -l < "$T/stable") of them (the stable tier) without OpenCL's, none in an include cycle; $(wc -l < "$T/fns") functions have C linkage in C++"
