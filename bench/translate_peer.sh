#!/usr/bin/env bash
# translate_peer.sh: `clformer bench translate` beside CTranslate2 on the
# same random weights and synthetic input, each compute type, alternating
# rounds in one sitting (bench/peers/README.md describes the pairing).
#
#   bench/translate_peer.sh [OUT] (ROUNDS, TYPES, PRESET, THREADS, CLF from the environment)
#
# Writes OUT (default a temporary folder): cpu.txt (model and ISA flags),
# ct2-TYPE-rN.jsonl and ours-TYPE-rN.json (ours with the peer's figures on
# each row). Needs /usr/bin/python3 with ctranslate2, numpy, safetensors.
# Time it on a quiet machine only.
set -euo pipefail
cd "$(dirname "$0")/.."
CLF=${CLF:-build/clformer}
ROUNDS=${ROUNDS:-2} TYPES=${TYPES:-"float32 int8"} PRESET=${PRESET:-small}
out=${1:-$(mktemp -d)}
mkdir -p "$out/in"
"$CLF" bench translate --preset "$PRESET" --export "$out/in" > /dev/null
{ lscpu | sed -n 's/^Model name: *//p'; grep -m1 '^flags' /proc/cpuinfo | grep -oE ' (avx2|fma|avx512f|avx512_vnni|avx_vnni|avx512_bf16|amx_int8|amx_bf16)\b' | tr -d '\n'; echo; } > "$out/cpu.txt"
for r in $(seq 1 "$ROUNDS"); do
    for t in $TYPES; do
        THREADS=${THREADS:-2} /usr/bin/python3 bench/peers/ct2_peer.py "$out/in/model.safetensors" "$out/in/input.ids" \
            --ids --max-extra 3 --compute-type "$t" > "$out/ct2-$t-r$r.jsonl"
        "$CLF" bench translate --preset "$PRESET" --compute-type "$t" --peer "$out/ct2-$t-r$r.jsonl" --json \
            > "$out/ours-$t-r$r.json"
    done
done
echo "translate_peer.sh: results in $out ($(cat "$out/cpu.txt" | tr '\n' ' '))"
