#!/bin/sh
# command_docs_check.sh CLFORMER SOURCE_DIR: docs/commands/ is what
# scripts/command_docs.sh writes from this build's `clformer --help` and
# each `clformer COMMAND --help`, so a usage text changed in tools/ without
# regenerating the pages fails here, naming the command; each of bench's
# benchmarks answers --help on stdout with status 0. Then the same
# comparison against a changed copy, which must fail, so the check is known
# to catch a stale page.
set -u
bin=$1 src=$2
docs=$src/docs/commands
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
sh "$src/scripts/command_docs.sh" "$bin" "$tmp/gen" || { echo "command_docs_check: scripts/command_docs.sh failed"; exit 1; }
regen="scripts/command_docs.sh build/clformer"

# stale: prints each page of $1 that differs from the generated one, or is
# missing from $1, or is in $1 and not generated; status 1 when one is
stale() {
    bad=0
    for page in "$tmp/gen"/*.md; do
        f=$(basename "$page")
        if ! cmp -s "$page" "$1/$f"; then
            echo "docs/commands/$f is stale (clformer ${f%.md} --help changed?)"
            diff -u "$1/$f" "$page" 2>&1 | head -20
            bad=1
        fi
    done
    for page in "$1"/*.md; do
        [ -e "$tmp/gen/$(basename "$page")" ] || { echo "docs/commands/$(basename "$page"): no such command"; bad=1; }
    done
    return $bad
}
n=$(ls "$tmp/gen"/*.md | wc -l)
[ "$n" -ge 10 ] || { echo "command_docs_check: only $n pages generated"; exit 1; }
if ! stale "$docs"; then
    echo "command_docs_check: regenerate the pages: $regen"
    exit 1
fi
# every command clformer --help lists has its page and a row in the index
for name in $("$bin" --help | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z0-9-]*\)  .*/\1/p'); do
    [ -f "$docs/$name.md" ] || { echo "command_docs_check: no page for $name"; exit 1; }
    grep -q "^| \[\`$name\`\]($name.md) |" "$docs/README.md" || { echo "command_docs_check: $name not in the index"; exit 1; }
done
# bench's benchmarks each answer --help as the commands do (bench/bench.c):
# their usage line on stdout, nothing on stderr, status 0, before anything
# is measured; a wrong use stays a usage error, on stderr with status 2
whats=$("$bin" bench --help | sed -n '/WHAT is one of:$/,/^[a-z]/s/^  \([a-z][a-z0-9]*\)  .*/\1/p')
[ "$(printf '%s\n' "$whats" | wc -l)" -ge 10 ] || { echo "command_docs_check: bench --help lists: $whats"; exit 1; }
for w in $whats; do
    out=$("$bin" bench "$w" --help 2> "$tmp/err") || { echo "command_docs_check: bench $w --help failed"; exit 1; }
    printf '%s\n' "$out" | head -1 | grep -q "^usage: .*clformer bench $w" ||
        { echo "command_docs_check: bench $w --help printed no usage on stdout: $out"; exit 1; }
    [ -s "$tmp/err" ] && { echo "command_docs_check: bench $w --help wrote on stderr: $(cat "$tmp/err")"; exit 1; }
done
"$bin" bench nosuch > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q "^usage: clformer bench" "$tmp/err" ||
    { echo "command_docs_check: bench nosuch: status $rc, stdout '$(cat "$tmp/out")', want 2 and usage on stderr"; exit 1; }
cp -r "$docs" "$tmp/changed"
echo "a line the usage text does not have" >> "$tmp/changed/translate.md"
stale "$tmp/changed" > /dev/null && { echo "command_docs_check: the comparison missed a changed page"; exit 1; }
touch "$tmp/changed/nosuch.md" && rm "$tmp/changed/translate.md" && cp "$docs/translate.md" "$tmp/changed/"
stale "$tmp/changed" > /dev/null && { echo "command_docs_check: the comparison missed a page of no command"; exit 1; }
echo "command_docs_check: docs/commands/ ($n pages) is what $regen writes; bench's $(printf '%s\n' "$whats" | wc -l) benchmarks answer --help"
