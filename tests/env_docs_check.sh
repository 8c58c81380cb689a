#!/bin/sh
# env_docs_check.sh CLFORMER SOURCE_DIR: docs/environment_variables.md is
# what `clformer settings --markdown` prints from host/runtime/settings.c's
# table, so the page cannot drift from the variables the library reads;
# `clformer settings` lists every row with its value (one set here must
# show). Then the comparison against a changed copy, which must fail, so
# the check is known to catch a stale page.
set -u
bin=$1 src=$2
page=$src/docs/environment_variables.md
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
"$bin" settings --markdown > "$tmp/gen.md" || { echo "env_docs_check: clformer settings --markdown failed"; exit 1; }
same() { cmp -s "$1" "$tmp/gen.md"; }
if ! same "$page"; then
    echo "env_docs_check: $page is stale; regenerate it: clformer settings --markdown > docs/environment_variables.md"
    diff -u "$page" "$tmp/gen.md" | head -40
    exit 1
fi
for name in $(grep -oE '^    \{"[A-Z0-9_]+",' "$src/host/runtime/settings.c" | tr -d ' {",'); do
    grep -q "^## \`$name\`\$" "$tmp/gen.md" || { echo "env_docs_check: $name has no section in the page"; exit 1; }
done
CLF_SEARCH=host "$bin" settings > "$tmp/plain.txt" || { echo "env_docs_check: clformer settings failed"; exit 1; }
grep -q '^CLF_SEARCH=host$' "$tmp/plain.txt" || { echo "env_docs_check: clformer settings does not show CLF_SEARCH=host"; exit 1; }
grep -q '^CLF_FAULT_QUEUE (unset)$' "$tmp/plain.txt" || { echo "env_docs_check: clformer settings does not show an unset one"; exit 1; }
{ cat "$page"; echo "a line the table does not have"; } > "$tmp/stale.md"
same "$tmp/stale.md" && { echo "env_docs_check: the comparison missed a changed page"; exit 1; }
echo "env_docs_check: docs/environment_variables.md is clformer settings --markdown's output"
