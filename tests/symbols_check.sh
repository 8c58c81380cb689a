#!/bin/sh
# symbols_check.sh LIBCLFORMER.a LIBCLFORMER.so: every symbol the installed
# libraries define for others to link against starts with `clf` (public
# clf_ functions and the library's internal clf_ ones alike), so that a
# program linking libclformer.a cannot collide with a `model_alloc` or a
# `decoder_init` of its own. Then the same check on an object with an
# unprefixed function, which must fail, so the checker is known to catch one.
#
# Allowed besides, because the toolchain emits them and no name of ours is in
# them (host/text/spm.cc is C++):
#   - weak (W, V) and unique (u) C++ symbols, `_Z...`: template
#     instantiations, inline functions and type information of the standard
#     library and of SentencePiece's headers, emitted in every object that
#     uses them and merged by the linker. A strong (T, D, B) `_Z` symbol is
#     still refused: that would be a C++ function of ours.
#   - `DW.ref.*`: the exception-handling personality references GCC emits
#     as weak hidden data for C++ objects.
#   - `__odr_asan.clf*`: in a sanitizer build (CLF_SANITIZE), the marker
#     AddressSanitizer defines beside each of our global variables to catch
#     a second definition; it carries the variable's own (clf) name.
set -u
CC=${CC:-cc}
bad_symbols() {  # nm's lines (value type name) on stdin -> the refused names
    awk 'NF >= 3 { t = $2; n = $3
                   if (n ~ /^clf/) next
                   if (n ~ /^DW\.ref\./) next
                   if (n ~ /^__odr_asan\.clf/) next
                   if (n ~ /^_Z/ && (t == "W" || t == "V" || t == "u")) next
                   print t, n }'
}
check() {  # file...
    out=$(for f in "$@"; do nm -g --defined-only "$f" 2>/dev/null | bad_symbols | sed "s|^|$(basename "$f"): |"; done)
    [ -z "$out" ] && return 0
    echo "$out" | sed 's/^/symbols_check: not prefixed clf: /'
    return 1
}
[ $# -ge 1 ] || { echo "usage: symbols_check.sh LIB..."; exit 2; }
for f in "$@"; do
    [ -f "$f" ] || { echo "symbols_check: $f is missing"; exit 1; }
    nm -g --defined-only "$f" | grep -q ' clf_ctx_init$' ||
        { echo "symbols_check: $f defines no clf_ctx_init: nm read nothing from it"; exit 1; }
done
check "$@" || exit 1
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
printf 'int clf_probe_ok(void) { return 1; }\nint model_probe(void) { return 2; }\n' > "$tmp/probe.c"
$CC -c "$tmp/probe.c" -o "$tmp/probe.o" || { echo "symbols_check: cannot compile the probe with $CC"; exit 1; }
if check "$tmp/probe.o" > "$tmp/out"; then
    echo "symbols_check: the checker missed an unprefixed symbol"; exit 1
fi
grep -q model_probe "$tmp/out" && ! grep -q clf_probe_ok "$tmp/out" ||
    { echo "symbols_check: the checker failed for another reason:"; cat "$tmp/out"; exit 1; }
echo "symbols_check: every symbol $* define(s) starts with clf"
