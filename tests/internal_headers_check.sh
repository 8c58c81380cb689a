#!/bin/sh
# internal_headers_check.sh SOURCE CC: every header under SOURCE/host/
# (the library's internal ones and the old public names' forwarders)
# compiles alone, first thing in a file, as C11 with -Wall -Wextra
# -Werror, with the library's include folders and definitions: each
# includes what it uses, so that a file can include just the parts it
# needs (issue 49 split host/runtime/internal.h, which every layer
# included whole). headers_check.sh does the same, and more, for the
# public headers under include/. Unused static tables and functions are
# allowed: a generated table (text/unicode_tables.h) is one.
set -eu
S=$1 CC=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/clf-iheaders.XXXXXX")
trap 'rm -rf "$T"' EXIT
(cd "$S/host" && find . -name '*.h' | sed 's|^\./||' | LC_ALL=C sort) > "$T/all"
n=$(wc -l < "$T/all")
[ "$n" -ge 40 ] || { echo "internal_headers_check: only $n headers under $S/host"; exit 1; }
# the compile below must catch a header that leans on an earlier include
printf 'size_t clf_probe(void);\n' > "$T/probe.h"
printf '#include "probe.h"\n' > "$T/h.c"
if "$CC" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$T" "$T/h.c" > /dev/null 2>&1; then
    echo "internal_headers_check: a header using size_t without <stddef.h> compiled alone: the check proves nothing"
    exit 1
fi
bad=0
for h in $(cat "$T/all"); do
    printf '#include "%s"\n' "$h" > "$T/h.c"
    if ! "$CC" -std=c11 -Wall -Wextra -Werror -Wno-unused-function -Wno-unused-const-variable \
            -D_POSIX_C_SOURCE=200809L -DCL_TARGET_OPENCL_VERSION=120 -fsyntax-only \
            -I"$S/include" -I"$S/host" "$T/h.c" > "$T/err" 2>&1; then
        echo "internal_headers_check: host/$h does not compile alone:"
        head -5 "$T/err"
        bad=$((bad + 1))
    fi
done
[ "$bad" -eq 0 ] || { echo "internal_headers_check: $bad of $n headers under host/ need others included first"; exit 1; }
echo "internal_headers_check: $n headers under host/ compile alone as C11"
