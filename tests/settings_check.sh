#!/bin/sh
# settings_check.sh SOURCE_DIR: the rule of host/runtime/settings.c that an
# assert there cannot enforce in a release build: the library reads the
# environment only through clf_setting_get, and every name it asks for is
# a row of settings.c's table, as is every tunable's variable (tunables.c
# reads them through its table). Then
# the same check on a copy with an unlisted name, which must fail, so the
# checker is known to catch one.
set -u
check() {
    root=$1 bad=0
    for f in $(grep -rl 'getenv(' "$root/host" | grep -v '/runtime/settings.c$'); do
        echo "settings_check: $f calls getenv: read the variable through clf_setting_get (settings.c)"; bad=1
    done
    for name in $(grep -rhoE 'clf_setting_get\("[A-Za-z0-9_]+"\)' "$root/host" | sed -E 's/.*\("(.*)"\)/\1/' | sort -u); do
        grep -q "{\"$name\"," "$root/host/runtime/settings.c" ||
            { echo "settings_check: $name is read but not listed in host/runtime/settings.c"; bad=1; }
    done
    for name in $(grep -hoE '"CLF_[A-Z0-9_]+"' "$root/host/runtime/tunables.c" | tr -d '"' | sort -u); do
        grep -q "{\"$name\"," "$root/host/runtime/settings.c" ||
            { echo "settings_check: the tunable's $name is not listed in host/runtime/settings.c"; bad=1; }
    done
    return $bad
}
src=$1
check "$src" || exit 1
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/host/runtime" && cp "$src/host/runtime/settings.c" "$src/host/runtime/tunables.c" "$tmp/host/runtime/"
echo 'static const char *x(void) { return clf_setting_get("CLF_NOT_LISTED"); }' > "$tmp/host/runtime/probe.c"
if check "$tmp" > "$tmp/out"; then
    echo "settings_check: the checker missed an unlisted name"; exit 1
fi
grep -q CLF_NOT_LISTED "$tmp/out" || { echo "settings_check: the checker failed for another reason:"; cat "$tmp/out"; exit 1; }
echo "settings_check: every variable the library reads is listed"
